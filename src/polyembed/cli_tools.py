"""The `polyembed` commands for using a model at scale: export (ONNX), mine (bitext), serve (HTTP); the
modular recipe's `train modular pipeline`, which runs several training methods in turn, and its data step
`data translate`.

Thin typer wrappers like the rest of the CLI; they register on `polyembed.cli_app.app`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import typer

from polyembed.cli_app import (
    BUILTIN_DEFAULT_MODEL,
    DeviceOption,
    ModelOption,
    app,
    clean_errors,
    data_app,
    note_default_model,
)
from polyembed.cli_train import add_group_command, config_flags
from polyembed.data.calibration import CALIBRATION_SIZE


@app.command("export")
@clean_errors
def export_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder for the ONNX export.")],
    context: typer.Context,
    model: ModelOption = BUILTIN_DEFAULT_MODEL,
    quantize: Annotated[bool, typer.Option(help="Also write the dynamically quantised int8 graph.")] = True,
    optimize: Annotated[bool, typer.Option(help="Fuse attention/LayerNorm/GELU with onnxruntime first.")] = True,
    openvino: Annotated[
        bool, typer.Option(help="Also write OpenVINO IR of each graph (openvino/), as optimum-intel reads it.")
    ] = False,
    overwrite: Annotated[bool, typer.Option(help="Replace an earlier export in --output.")] = False,
    float32_share: Annotated[float | None, typer.Option(
        help="int8 graph: keep float32 the feed-forward output projections whose input range is at least this "
             "share of the widest layer's (default one half; 0: all of them, most accurate; 1: the widest only, "
             "fastest).")] = None,
    static_int8: Annotated[bool, typer.Option(
        help="Also write int8 graphs whose activation ranges are calibrated on sentences: "
             "onnx/model_qint8_static.onnx (onnxruntime) and, with --openvino, an NNCF graph "
             "(*_qint8_quantized.xml in openvino/; OpenVINO runs only such a graph on int8 kernels).")
    ] = False,
    calibration_file: Annotated[Path | None, typer.Option(
        help="--static-int8: calibrate on this file's sentences (one a line, like what the model will encode; "
             "default: stsb-multi-mt's train split, 11 languages, from the data root).", show_default=False)] = None,
    calibration_size: Annotated[int, typer.Option(
        help="--static-int8: how many sentences to calibrate on (spread over the file).", min=1)] = CALIBRATION_SIZE,
) -> None:
    """Export a model to ONNX in sentence-transformers' layout (onnx/model.onnx, onnx/model_qint8.onnx, optionally
    openvino/*.xml); `load_model(FOLDER)`, `-m FOLDER` and `SentenceTransformer(FOLDER, backend=...)` run it.

    Examples:
    polyembed export -m runs/sw/model -o exports/sw
    polyembed export -m runs/sw/model -o exports/sw --openvino --overwrite
    polyembed export -m runs/sw/model -o exports/sw --openvino --static-int8 --calibration-file sw.txt
    polyembed export -m runs/sw/model -o exports/sw-fp32 --no-quantize"""
    note_default_model(context)
    from polyembed.errors import PolyembedError
    from polyembed.models.onnx_export import export_onnx

    source = context.get_parameter_source("calibration_size")
    if source is not None and source.name == "COMMANDLINE" and not static_int8:
        raise PolyembedError(f"--calibration-size {calibration_size}: sizes the static int8 graphs' calibration; "
                             "add --static-int8")
    share = {} if float32_share is None else {"float32_share": float32_share}
    folder = export_onnx(model, output, quantize=quantize, optimize=optimize, openvino=openvino, overwrite=overwrite,
                         static_int8=static_int8, calibration_file=calibration_file,
                         calibration_size=calibration_size, **share)
    files = ", ".join(sorted(p.relative_to(folder).as_posix() for pattern in ("onnx/*.onnx", "openvino/*.xml")
                             for p in folder.glob(pattern)))
    typer.echo(f"wrote {folder} ({files})")


@app.command("mine")
@clean_errors
def mine_command(
    source: Annotated[Path, typer.Argument(help="Source-language text, one sentence per line.")],
    target: Annotated[Path, typer.Argument(help="Target-language text, one sentence per line.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="TSV: score, source, target (best first).")],
    context: typer.Context,
    model: ModelOption = BUILTIN_DEFAULT_MODEL,
    source_language: Annotated[str | None, typer.Option(help="Language of SOURCE (routed models).")] = None,
    target_language: Annotated[str | None, typer.Option(help="Language of TARGET (routed models).")] = None,
    source_embeddings: Annotated[
        Path | None, typer.Option(help="Rows of SOURCE already encoded (skips encoding that side): a .npy file "
                                       "or an `encode --shard-size` folder.")
    ] = None,
    target_embeddings: Annotated[Path | None, typer.Option(help="Rows of TARGET already encoded (.npy or shard "
                                                                "folder).")] = None,
    k: Annotated[int, typer.Option("--k", help="Neighbours per sentence for the margin.", min=1)] = 4,
    margin: Annotated[Literal["ratio", "distance", "absolute"], typer.Option(
        help="How a pair's cosine is scored against its neighbours' (LASER's margins).")] = "ratio",
    mode: Annotated[Literal["forward", "backward", "intersect", "max"], typer.Option(
        help="Which direction's best match is kept (max: 1-1 over both).")] = "max",
    threshold: Annotated[float | None, typer.Option(help="Keep pairs scoring at least this (ratio: ~1.06).")] = None,
    index: Annotated[
        str, typer.Option(help="faiss index over each side: auto (by its size: exact up to 50k sentences, IVF up "
                          "to 4 million, IVF-SQ8 when memory is short, OPQ + IVF-PQ beyond), flat, ivf, ivf-sq8, "
                          "pq, hnsw, or a faiss factory string.")
    ] = "auto",
    search_parameters: Annotated[str | None, typer.Option(
        help="faiss search parameters of an approximate index, e.g. nprobe=64 (more: slower, closer to exact); "
             "default: the index's own.", show_default=False)] = None,
    shard_size: Annotated[int, typer.Option(
        help="Sentences searched per shard; each shard's neighbours are kept in OUTPUT.work/ until the TSV is "
             "written, so the same command after a kill picks up at the next shard (rounded up to a multiple of "
             "4096).", min=1)] = 65_536,
    batch_size: Annotated[int, typer.Option(help="Sentences encoded together.", min=1)] = 64,
    cache: Annotated[bool, typer.Option(help="Keep embeddings in the persistent store (re-mining is free).")] = False,
    workers: Annotated[int, typer.Option(help="Encode each side with N shard workers (as `encode --workers`).",
                                         min=1)] = 1,
    backend: Annotated[Literal["processes", "ray"], typer.Option(
        help="Shard workers as local processes or ray tasks.")] = "processes",
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster to encode on ('auto': the running one); default: local Ray.")
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing TSV that polyembed wrote (never another "
                                                 "file).")] = False,
    device: DeviceOption = None,
) -> None:
    """Mine translation pairs from two monolingual files (LASER-style margin scoring over faiss kNN). Embeddings
    given as .npy files or `encode --shard-size` folders are read memory-mapped; rerun the same command after a
    kill to resume the search.

    Examples:
    polyembed mine en.txt sw.txt -o pairs.tsv -m runs/sw/model --threshold 1.06
    polyembed mine en.txt sw.txt -o pairs.tsv --source-language en --target-language sw  # routed
    polyembed mine src.txt tgt.txt -o pairs.tsv --source-embeddings src/ --target-embeddings tgt/
    polyembed mine en.txt sw.txt -o p.tsv --source-embeddings en/ --target-embeddings sw/ --index pq
    polyembed mine en.txt sw.txt -o p.tsv --index ivf --search-parameters nprobe=64 --shard-size 8192"""
    note_default_model(context)
    from polyembed.device import choose_device

    choose_device(device)
    from polyembed.config import build_config
    from polyembed.mining.bitext import MineOptions, mine_files

    options, _ = build_config(MineOptions, None, {
        "source_language": source_language, "target_language": target_language, "k": k, "margin": margin,
        "mode": mode, "threshold": threshold, "index": index, "search_parameters": search_parameters,
        "shard_size": shard_size, "batch_size": batch_size, "cache": cache, "workers": workers, "backend": backend,
        "ray_address": ray_address})
    result = mine_files(model, source, target, output, source_embeddings=source_embeddings,
                        target_embeddings=target_embeddings, options=options, overwrite=overwrite)
    typer.echo(
        f"wrote {result.pairs} pairs to {result.output} ({result.source_sentences} x {result.target_sentences} "
        f"sentences, {result.index} index)"
    )


@app.command("serve")
@clean_errors
def serve_command(
    context: typer.Context,
    model: Annotated[str, typer.Option("--model", "-m", help="Built-in name, folder, or Hugging Face id.",
                                       envvar="POLYEMBED_MODEL")] = BUILTIN_DEFAULT_MODEL,
    host: Annotated[str, typer.Option(help="Address to listen on (0.0.0.0: every interface).",
                                      envvar="POLYEMBED_HOST")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", min=1, max=65535, envvar="POLYEMBED_PORT")] = 8000,
    api_key: Annotated[str | None, typer.Option(
        help="Key every request must carry as 'Authorization: Bearer KEY' (else 401), except GET /health, /ready "
        "and /metrics. Prefer the environment variable: a flag shows in the process list.",
        envvar="POLYEMBED_API_KEY", show_default=False)] = None,
    served_model_name: Annotated[str | None, typer.Option(
        help="Model name in /v1/models, /health and every answer (default: what -m said). The 'model' a request "
        "names is not checked (one model is served).", envvar="POLYEMBED_SERVED_MODEL_NAME")] = None,
    max_inputs: Annotated[int, typer.Option(help="Most inputs in one request.", min=1,
                                            envvar="POLYEMBED_MAX_INPUTS")] = 2048,
    max_input_chars: Annotated[int, typer.Option(help="Longest input, in characters.", min=1,
                                                 envvar="POLYEMBED_MAX_INPUT_CHARS")] = 20_000,
    max_batch_size: Annotated[int, typer.Option(help="Most sentences encoded together.", min=1,
                                                envvar="POLYEMBED_MAX_BATCH_SIZE")] = 64,
    max_batch_tokens: Annotated[int, typer.Option(
        help="Most padded tokens (longest input x inputs) in one model call; larger batches are split by length.",
        min=1, envvar="POLYEMBED_MAX_BATCH_TOKENS")] = 16_384,
    call_overhead_tokens: Annotated[float, typer.Option(
        help="What one more model call costs, in padded tokens: a batch is split into calls of similar-length "
        "inputs where that saves more padding (0: wherever it saves any).", min=0,
        envvar="POLYEMBED_CALL_OVERHEAD_TOKENS")] = 64.0,
    max_wait_ms: Annotated[float, typer.Option(
        help="How long the first request of a batch waits for others (requests queued during the previous batch "
        "join at once; 0: an idle server starts at once).", min=0, max=10_000, envvar="POLYEMBED_MAX_WAIT_MS")] = 5.0,
    max_request_tokens: Annotated[int, typer.Option(
        help="Most tokens in one request, all inputs together (more: 413).", min=1,
        envvar="POLYEMBED_MAX_REQUEST_TOKENS")] = 65_536,
    max_body_bytes: Annotated[int, typer.Option(
        help="Largest request body in bytes, counted as it arrives (more: 413).", min=1,
        envvar="POLYEMBED_MAX_BODY_BYTES")] = 16 * 2**20,
    body_timeout: Annotated[float, typer.Option(
        help="Seconds a request's body may take to arrive after its headers (slower: 408, and its concurrency slot "
        "is freed).", min=0.01, max=3600, envvar="POLYEMBED_BODY_TIMEOUT")] = 30.0,
    max_header_bytes: Annotated[int, typer.Option(
        help="Largest request head in bytes, request line and header fields (more: 431).", min=1024,
        envvar="POLYEMBED_MAX_HEADER_BYTES")] = 64 * 2**10,
    max_headers: Annotated[int, typer.Option(help="Most header fields in one request (more: 431).", min=1,
                                             envvar="POLYEMBED_MAX_HEADERS")] = 100,
    max_concurrent_requests: Annotated[int, typer.Option(
        help="Requests accepted at once, waiting or encoding (more: 429 with Retry-After).", min=1,
        envvar="POLYEMBED_MAX_CONCURRENT_REQUESTS")] = 256,
    max_queue_seconds: Annotated[float, typer.Option(
        help="Longest estimated wait behind queued work (queued tokens / recent tokens per second) at which a request "
        "is still accepted (more: 429 with Retry-After).", min=0.01, max=3600,
        envvar="POLYEMBED_MAX_QUEUE_SECONDS")] = 1.0,
    resume_queue_seconds: Annotated[float, typer.Option(
        help="After a request is refused at --max-queue-seconds, requests get a 429 until the queued work has "
        "drained to this wait (>= --max-queue-seconds: no drain), so an overload leaves no standing queue.",
        min=0, max=3600, envvar="POLYEMBED_RESUME_QUEUE_SECONDS")] = 0.25,
    queue_target_seconds: Annotated[float, typer.Option(
        help="Wait the queue may keep for longer than a second (0: none): a queue above it for a second is an "
        "overload, and requests get a 429 while the wait is above it, until it has stayed below for a second.",
        min=0, max=3600, envvar="POLYEMBED_QUEUE_TARGET_SECONDS")] = 0.0,
    backend: Annotated[Literal["auto", "torch", "onnx", "onnx-int8", "openvino", "openvino-int8"], typer.Option(
        help="Runtime: torch; onnx (fp32) or onnx-int8 on onnxruntime; openvino or openvino-int8 on OpenVINO (the "
        "static int8 graph where the export has one; a torch model is exported once into the cache); auto (an "
        "ONNX export runs its own graph, int8 where it has one; anything else torch). The startup log and "
        "/v1/models say which.", envvar="POLYEMBED_BACKEND")] = "auto",
    shutdown_timeout: Annotated[float, typer.Option(
        help="On SIGTERM / Ctrl-C: seconds accepted requests get to finish; new connections are refused.",
        min=0, envvar="POLYEMBED_SHUTDOWN_TIMEOUT")] = 30.0,
    access_log: Annotated[bool, typer.Option(
        help="Log a line per request (uvicorn's access log). Off, a server near capacity on one core has the time "
        "of that line's formatting and writing for encoding.", envvar="POLYEMBED_ACCESS_LOG")] = True,
    device: Annotated[str | None, typer.Option(
        help="cpu, cuda, cuda:N or mps. Default: the accelerator there is (cuda, then mps), else cpu.",
        envvar="POLYEMBED_DEVICE")] = None,
    prompt_name: Annotated[str | None, typer.Option(
        help="The model's prompt to prepend to every input, by name (e5: query or passage). Default: the model's "
        "default prompt.", envvar="POLYEMBED_PROMPT_NAME")] = None,
) -> None:
    """Serve a model over HTTP: OpenAI-compatible POST /v1/embeddings (plus `language`), GET /v1/models, GET /health
    (alive), GET /ready (model loaded and warmed up) and GET /metrics (Prometheus). Every option can also be set
    by its POLYEMBED_* environment variable (the flag wins), as in a container.

    Examples:
    polyembed serve -m runs/sw/model --port 8000
    polyembed serve -m exports/sw --backend onnx-int8 --host 0.0.0.0 --api-key $KEY
    POLYEMBED_MODEL=runs/sw/model polyembed serve      # every option has its variable"""
    note_default_model(context)
    import os

    from polyembed import serve  # noqa: F401 - first: without the serve extra it says which extra to install
    from polyembed.device import choose_device
    from polyembed.errors import PolyembedError

    choose_device(device)
    import uvicorn

    from polyembed.config import build_config
    from polyembed.models.backends import load_with_backend
    from polyembed.models.encoder import with_prompt
    from polyembed.serve import ServerLimits, create_app
    from polyembed.serve.app import check_served_model_name
    from polyembed.serve.auth import check_api_key, warn_if_open
    from polyembed.serve.protocol import head_limited_protocol

    def given_as(parameter: str, flag: str) -> str:
        """How the user gave an option, for its error message: the flag, or its environment variable."""
        source = context.get_parameter_source(parameter)
        return f"POLYEMBED_{parameter.upper()}" if source is not None and source.name == "ENVIRONMENT" else flag

    if api_key is None and os.environ.get("POLYEMBED_API_KEY") == "":  # click reads an empty variable as unset
        raise PolyembedError("POLYEMBED_API_KEY is set but empty: give the key clients must send, or unset it to "
                             "serve without one")
    if api_key is not None:
        check_api_key(api_key, given_as("api_key", "--api-key"))
    if served_model_name is not None:
        check_served_model_name(served_model_name, given_as("served_model_name", "--served-model-name"))
    limits, _ = build_config(ServerLimits, None, {
        "max_inputs": max_inputs, "max_input_chars": max_input_chars, "max_batch_size": max_batch_size,
        "max_batch_tokens": max_batch_tokens, "call_overhead_tokens": call_overhead_tokens,
        "max_wait_ms": max_wait_ms, "max_request_tokens": max_request_tokens, "max_body_bytes": max_body_bytes,
        "max_concurrent_requests": max_concurrent_requests, "max_queue_seconds": max_queue_seconds,
        "resume_queue_seconds": resume_queue_seconds, "queue_target_seconds": queue_target_seconds,
        "body_timeout_seconds": body_timeout, "max_header_bytes": max_header_bytes, "max_headers": max_headers})
    warn_if_open(host, api_key is not None)
    encoder = with_prompt(load_with_backend(model, backend), prompt_name,
                          given_as("prompt_name", "--prompt-name"))
    served = create_app(encoder, limits, api_key=api_key, served_model_name=served_model_name)
    # uvicorn drains on SIGTERM / Ctrl-C: it closes the listening socket, lets accepted requests finish (at most
    # shutdown_timeout s), then runs the app's shutdown. Its httptools protocol, with the request head capped as it
    # arrives (httptools has no limit of its own).
    # uvicorn types the timeout as an int but waits with asyncio.wait_for, which takes a float
    uvicorn.run(served, host=host, port=port, log_level="info",
                access_log=access_log, timeout_graceful_shutdown=shutdown_timeout,  # type: ignore[arg-type]
                http=head_limited_protocol(limits.max_header_bytes, limits.max_headers))


def _modular_pipeline_command() -> Callable[..., None]:
    from polyembed.methods.modular.pipeline import ModularPipelineConfig

    @clean_errors
    @config_flags(ModularPipelineConfig)
    def modular_pipeline_command(config_file: Path | None, overrides: dict) -> None:
        """Every stage of the modular recipe (vocabulary, LA, SE, CLA) for a list of languages, then one bundle;
        rerun the same command to resume. Paper: https://arxiv.org/abs/2407.14878

        Examples:
        polyembed train modular pipeline --languages de,ru,kk --output-dir runs/modular
        polyembed train modular pipeline --languages kk --preset smoke --output-dir runs/smoke
        polyembed train modular pipeline --languages yo --student runs/yo/model --skip-la all"""
        from polyembed.config import build_config
        from polyembed.methods.modular.pipeline import run_pipeline

        config, _ = build_config(ModularPipelineConfig, config_file, overrides)
        summary = run_pipeline(config)
        for language, row in summary["languages"].items():
            stages = ", ".join(f"{name} {run['wall_seconds']} s" for name, run in row["stages"].items())
            typer.echo(f"{language}: {row['encoder_parameters']:,} parameters ({stages})")
        typer.echo(f"bundle written to {summary['bundle']} (base model: {summary['base_parameters']:,} parameters)")

    return modular_pipeline_command


add_group_command("modular", "pipeline", _modular_pipeline_command)


@data_app.command("translate")
@clean_errors
def translate_command(
    source: Annotated[Path, typer.Argument(help="Text (one sentence per line) or a paraphrase TSV (two columns).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="TSV to write (replaced whole, or left alone).")],
    model: Annotated[str, typer.Option("--model", "-m", help="A Hugging Face seq2seq MT model: folder or id.")],
    source_code: Annotated[str | None, typer.Option(help="The model's code of the input language (NLLB: "
                                                    "eng_Latn).")] = None,
    target_code: Annotated[str | None, typer.Option(help="The model's code of the output language (NLLB: "
                                                    "kaz_Cyrl), forced as the first generated token.")] = None,
    cross_lingual: Annotated[bool, typer.Option(help="Paraphrase TSV: write translation<TAB>the other source "
                                                "sentence (CLA paraphrase pairs) instead of both translated.")] = False,
    batch_size: Annotated[int, typer.Option(help="Sentences translated together.", min=1)] = 16,
    max_length: Annotated[int, typer.Option(help="Longest input and output, in tokens.", min=8)] = 256,
    num_beams: Annotated[int, typer.Option(help="Beam size (1: greedy).", min=1)] = 1,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing TSV that polyembed wrote (never another "
                                                 "file).")] = False,
    device: DeviceOption = None,
) -> None:
    """Machine-translate training text (the modular paper's data step): text -> bitext TSV, paraphrase TSV ->
    paraphrase TSV of the target language.

    Examples:
    polyembed data translate en.txt -o kk.tsv -m nllb/ --source-code eng_Latn --target-code kaz_Cyrl
    polyembed data translate pairs.tsv -o kk-pairs.tsv -m nllb/ --target-code kaz_Cyrl --num-beams 4"""
    from polyembed.device import choose_device

    choose_device(device)
    from polyembed.data.translate import load_translator, translate_file
    from polyembed.errors import PolyembedError
    from polyembed.outputs import check_output_file

    if not source.is_file():
        raise PolyembedError(f"{source}: no such file")
    if not output.parent.is_dir():
        raise PolyembedError(f"--output {output}: folder {output.parent} does not exist")
    output = check_output_file(output, "--output", inputs=[source], overwrite=overwrite)
    translator = load_translator(model, source_code, target_code, max_length, num_beams)
    result = translate_file(source, output, translator, cross_lingual=cross_lingual, batch_size=batch_size)
    typer.echo(f"wrote {result.rows} rows to {result.output} ({result.sentences} distinct sentences translated)")


@app.command("align")
@clean_errors
def align_command(
    context: typer.Context,
    source: Annotated[Path, typer.Argument(help="'source ||| target' lines, or the source side (with TARGET).")],
    target: Annotated[Path | None, typer.Argument(help="The target side, line-aligned with SOURCE.")] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Pharaoh links, one line per pair, 0-indexed.")] = (
        Path("alignment.txt")),
    aligner: Annotated[Literal["argmax", "itermax", "match", "eflomal"], typer.Option(
        help="Word aligner: argmax, itermax or match (SimAlign-style, from -m's token embeddings), or eflomal "
             "(statistical).")] = "itermax",
    model: Annotated[str, typer.Option("--model", "-m", help="Encoder for the embedding aligners.")] = (
        BUILTIN_DEFAULT_MODEL),
    aligner_layer: Annotated[int, typer.Option(help="Hidden layer whose token vectors align (0: embeddings).",
                                               min=0)] = 8,
    alignment_threshold: Annotated[float, typer.Option(
        help="Keep links scoring at least this ((cos+1)/2; eflomal: 1 where both directions link, 0.5 where one "
             "does).", min=0, max=1)] = 0.0,
    scores: Annotated[bool, typer.Option(help="Write i-j:score instead of i-j.")] = False,
    symmetrization: Annotated[
        Literal["grow-diag-final-and", "intersection", "union", "forward", "reverse"],
        typer.Option(help="eflomal: how the two directions' links combine.")] = "grow-diag-final-and",
    batch_size: Annotated[int, typer.Option(help="Sentence pairs encoded together.", min=1)] = 32,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing file that polyembed wrote (never another "
                                                 "file).")] = False,
    device: DeviceOption = None,
) -> None:
    """Word-align sentence pairs (SimAlign-style from a model's token embeddings, or eflomal).

    The options have the names `polyembed train wacse` gives its aligner (--aligner, --aligner-layer,
    --alignment-threshold), so links checked here are the links a WACSE run trains on.

    Examples:
    polyembed align pairs.txt -o links.txt -m me5-small --aligner itermax
    polyembed align source.txt target.txt -o links.txt --aligner eflomal     # two line-aligned files
    polyembed align pairs.txt -o links.txt --aligner-layer 6 --alignment-threshold 0.8 --scores"""
    note_default_model(context)
    from polyembed.device import choose_device

    choose_device(device)
    from polyembed.alignment import EmbeddingAligner, eflomal_align, format_links, read_sentence_pairs
    from polyembed.errors import PolyembedError
    from polyembed.outputs import check_output_file, write_output_file

    if not output.parent.is_dir():
        raise PolyembedError(f"--output {output}: folder {output.parent} does not exist")
    output = check_output_file(output, "--output", inputs=[source, target], overwrite=overwrite)
    pairs = read_sentence_pairs(source, target)
    if aligner == "eflomal":
        alignments = eflomal_align(pairs, symmetrization)
    else:
        embedding_aligner = EmbeddingAligner(model, layer=aligner_layer, method=aligner, batch_size=batch_size)

        alignments = embedding_aligner.align(pairs, show_progress=True)
    with write_output_file(output) as handle:
        for alignment in alignments:
            links = alignment.links(alignment_threshold)
            handle.write(format_links(links, alignment.scores if scores else None) + "\n")
    typer.echo(f"wrote {len(alignments)} alignments to {output} ({aligner})")

