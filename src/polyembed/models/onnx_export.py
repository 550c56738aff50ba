"""ONNX export with an int8 variant (and OpenVINO IR of both), and an encoder that runs it on onnxruntime or
OpenVINO.

Why our own export: sentence-transformers' ONNX backend goes through optimum, whose ONNX package pins an older
transformers than polyembed's. The transformer is exported with `torch.onnx` (input ids + attention mask ->
last hidden state), fused by onnxruntime's transformer graph optimizer (attention, LayerNorm, GELU), and
quantised with onnxruntime's dynamic int8 quantiser (weights int8, activations quantised per batch; the
feed-forward output projections whose inputs are widest stay float32). Pooling,
the prompt prefix (e5's "query: "), Dense projections after pooling (a distilled student's map into its
teacher's space) and normalisation stay in Python (numpy), read from the sentence-transformers modules, so the
exported model embeds exactly as the original does up to numerical error.

The folder has sentence-transformers' layout for its ONNX and OpenVINO backends: the model's module and
tokenizer files (without its torch weights), `onnx/model.onnx` (fp32, optimised), `onnx/model_qint8.onnx`,
with `openvino=True` also `openvino/openvino_model.xml` and `openvino/openvino_model_qint8.xml` (OpenVINO IR of
the two graphs), with `static_int8=True` int8 graphs with calibrated activation ranges
(`onnx/model_qint8_static.onnx`, `openvino/openvino_model_qint8_quantized.xml`: `static_quantization`), plus
`polyembed_onnx.json` and `.polyembed-outputs.json` (what produced the export and each file's checksum, checked
when the export is loaded: `verify_export`; a folder without it does not load). `load_model(folder)` gives an
`OnnxEncoder` on the int8 graph, `load_model(folder / "onnx/model.onnx")` on the fp32 one, a `.xml` file runs on
OpenVINO. Exports of the older layout (graphs at the top, `model.int8.onnx`) still load when they have their
checksum record; those without one must be exported again.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field, replace
from itertools import dropwhile
from pathlib import Path
from typing import Any

import numpy as np

from polyembed.data.calibration import CALIBRATION_SIZE, calibration_sentences
from polyembed.device import CPU
from polyembed.environment import require
from polyembed.errors import PolyembedError, argument
from polyembed.messages import hide_progress
from polyembed.models.cards import CARD_FILE, export_card_text
from polyembed.models.encoder import SentenceEncoder, normalize_rows, register_encoder_kind
from polyembed.models.export_files import (  # noqa: F401  (the export's layout, kept importable from here)
    CONFIG_FILE,
    FP32_FILE,
    GRAPH_FOLDERS,
    INT8_FILE,
    LEGACY_FILES,
    OPENVINO_FP32_FILE,
    OPENVINO_INT8_FILE,
    ExportIntegrityError,
    export_folder,
    present_graph,
    verify_export,
)

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
POOLING_MODES = ("mean", "cls", "max")
DENSE_ACTIVATIONS = {"torch.nn.modules.linear.Identity": "identity", "torch.nn.modules.activation.Tanh": "tanh"}
"""The activations of a Dense module the ONNX encoder applies (sentence-transformers' config names them)."""
EXPORT_RECIPE = 2
"""Raised whenever the graphs an export makes change (2: float32 only where activations are wide), so that the
cache's exports (`polyembed.models.backends`) are made again."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OnnxSettings:
    """What the encoder needs besides the graph: how to pool, prefix and normalise, as the source model did."""

    source: str
    pooling: str
    normalize: bool
    prompt: str
    max_seq_length: int
    dimension: int
    quantized: bool
    dense: list[str] = field(default_factory=list)
    """The folders (inside the export) of the Dense modules applied after pooling, in order; exports made before
    Dense modules were carried have none."""


def _settings_from(model: Any, source: str, quantize: bool) -> OnnxSettings:
    """Read pooling / normalisation / prompt from a SentenceTransformer; refuse modules the export cannot carry."""
    names = [type(module).__name__ for module in model]
    tail = names[2:]
    dense = len(tail) - len(list(dropwhile(lambda name: name == "Dense", tail)))
    if names[:2] != ["Transformer", "Pooling"] or tail[dense:] not in ([], ["Normalize"]):
        raise PolyembedError(
            f"{source}: ONNX export handles Transformer + Pooling (+ Dense) (+ Normalize) models; this one has "
            f"{' + '.join(names)}"
        )
    for module in list(model)[2:2 + dense]:
        activation = module.get_config_dict().get("activation_function")
        if activation not in DENSE_ACTIVATIONS:
            raise PolyembedError(f"{source}: a Dense module with activation {activation} is not supported by the "
                                 f"ONNX encoder ({', '.join(DENSE_ACTIVATIONS.values())})")
    dimension = int(model[1].get_config_dict()["embedding_dimension"])
    if dense:
        dimension = int(model[1 + dense].get_config_dict()["out_features"])
    pooling = model[1].get_config_dict()
    mode = pooling.get("pooling_mode")
    if mode not in POOLING_MODES:
        raise PolyembedError(f"{source}: pooling '{mode}' is not supported by the ONNX encoder ({POOLING_MODES})")
    prompt = model.prompts.get(model.default_prompt_name, "") if model.default_prompt_name else ""
    if prompt and not pooling.get("include_prompt", True):
        raise PolyembedError(f"{source}: pooling that leaves out the prompt tokens is not supported")
    return OnnxSettings(
        source=source,
        pooling=mode,
        normalize="Normalize" in names,
        prompt=prompt,
        max_seq_length=int(model.max_seq_length),
        dimension=dimension,
        quantized=quantize,
    )


def _export_graph(transformer: Any, tokenizer: Any, path: Path) -> None:
    """torch.onnx export of the HF encoder with dynamic batch and sequence axes."""
    import torch

    class LastHiddenState(torch.nn.Module):
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    wrapper = LastHiddenState(transformer).eval()  # eval: export restores the module's mode afterwards
    sample = tokenizer(["an example sentence", "two"], return_tensors="pt", padding=True).to(transformer.device)
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(
        wrapper,
        (sample["input_ids"], sample["attention_mask"]),
        str(path),
        input_names=["input_ids", "attention_mask"],
        output_names=["last_hidden_state"],
        dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
        opset_version=17,
        dynamo=False,
    )


def _optimize_graph(path: Path, config: Any) -> None:
    """onnxruntime's transformer optimizer (fused attention, LayerNorm, GELU), in place."""
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(
        str(path), model_type="bert", num_heads=int(config.num_attention_heads), hidden_size=int(config.hidden_size)
    )
    optimized.save_model_to_file(str(path))


def _feed_forward_output_matmuls(path: Path) -> list[str]:
    """Names of the MatMul nodes of each layer's feed-forward output projection, in layer order (torch.onnx names
    nodes after module paths: `.../layer.N/output/dense/MatMul`, the attention's own `attention/output`
    excluded)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return [node.name for node in graph.node if node.op_type == "MatMul" and "/output/dense/" in node.name
            and "/attention/" not in node.name]


CALIBRATION_TEXTS = (
    "The committee will publish its report on the new railway line next spring.",
    "Die Kinder spielten den ganzen Nachmittag im Garten hinter dem Haus.",
    "Правительство объявило о новых мерах поддержки малого бизнеса.",
    "我们明天早上八点在火车站见面。",
    "يعمل الباحثون على لقاح جديد ضد الملاريا.",
    "Mvua kubwa ilinyesha jana usiku katika mji wa Mombasa.",
    "मैं हर सुबह अपने दादाजी के साथ पार्क में टहलता हूँ।",
    "¿Dónde está la biblioteca más cercana a la universidad?",
)
"""Sentences in several languages and scripts, run once through the float32 graph to see each layer's range."""
WIDE_SHARE = 0.5
"""A feed-forward output projection stays float32 where its input's range is at least this share of the widest."""


def wide_layers(ranges: list[float], share: float = WIDE_SHARE) -> list[int]:
    """Indices of the layers whose activation range is at least `share` of the widest (the widest always)."""
    widest = max(ranges, default=0.0)
    return [i for i, width in enumerate(ranges) if width >= share * widest]


def _activation_ranges(path: Path, tokenizer: Any, nodes: list[str]) -> list[float]:
    """max - min of each node's first input over the real tokens of CALIBRATION_TEXTS, on the float32 graph."""
    import tempfile

    import onnx
    import onnxruntime as ort

    model = onnx.load(str(path))
    inputs = {node.name: node.input[0] for node in model.graph.node if node.name in nodes}
    tensors = [inputs[name] for name in nodes]
    model.graph.output.extend(onnx.helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None) for t in tensors)
    batch = tokenizer(list(CALIBRATION_TEXTS), padding=True, truncation=True, return_tensors="np")
    mask = batch["attention_mask"].astype(bool)
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:  # external data: any size of graph
        probe = Path(scratch) / "probe.onnx"
        onnx.save_model(model, str(probe), save_as_external_data=True)
        session = ort.InferenceSession(str(probe), providers=["CPUExecutionProvider"])
        outputs = session.run(tensors, {"input_ids": batch["input_ids"].astype(np.int64),
                                        "attention_mask": batch["attention_mask"].astype(np.int64)})
        del session
    return [float(np.ptp(output[mask])) for output in outputs]


def float32_projections(path: Path, tokenizer: Any, share: float = WIDE_SHARE) -> list[str]:
    """The feed-forward output projections the int8 graph keeps float32: those whose input is wide.

    Why: dynamic quantisation gives each batch's activations 256 levels between their min and max, so the
    rounding step grows with the range, and the error a layer adds with its square. The input of a feed-forward
    output projection (after GELU) is where a few layers carry outliers many times wider than the rest; keeping
    just those in float32 keeps nearly all of the accuracy that keeping every one does, at a fraction of its
    cost in speed (docs/benchmarks.md, the export and int8-dev tables and their notes). `share` 0 keeps every one
    float32 (exports made before 2026-11-28), 1 only the widest."""
    nodes = _feed_forward_output_matmuls(path)
    if not nodes:
        return []
    ranges = _activation_ranges(path, tokenizer, nodes)
    kept = [nodes[i] for i in wide_layers(ranges, share)]
    logger.info("export: %d of %d feed-forward output projections stay float32 (input range %s)", len(kept),
                len(nodes), ", ".join(f"{width:.1f}" for width in ranges))
    return kept


def export_onnx(
    model: str | Any, out_dir: str | Path, *, quantize: bool = True, optimize: bool = True, openvino: bool = False,
    overwrite: bool = False, float32_share: float = WIDE_SHARE, static_int8: bool = False,
    calibration_file: str | Path | None = None, calibration_size: int = CALIBRATION_SIZE,
) -> Path:
    """Export a sentence-transformers model (name, folder or encoder) to `out_dir` in sentence-transformers'
    layout: the model's module and tokenizer files, `onnx/model.onnx`, with `quantize` also
    `onnx/model_qint8.onnx`, with `openvino` the OpenVINO IR of each under `openvino/`, and the settings file,
    staged in a hidden folder and then moved in file by file with a manifest of their checksums
    (`polyembed.outputs.publishing`). An earlier export in `out_dir` is replaced only with `overwrite`, and then
    only its own files: anything a user added stays. `float32_share`: the int8 graph keeps float32 the
    feed-forward output projections whose input range is at least this share of the widest
    (`float32_projections`; 0: all of them, the most accurate and slowest). `static_int8`: also the int8 graphs
    whose activation ranges are calibrated on `calibration_size` sentences of `calibration_file` (one a line;
    default: `polyembed.data.calibration`), for onnxruntime and with `openvino` for OpenVINO."""
    from polyembed.models.language_embedding import language_embedding_ids
    from polyembed.models.loading import as_sentence_transformer
    from polyembed.outputs import STAGING_PREFIX, check_output_dir, publishing, remove_stale_staging

    given = model if isinstance(model, str | Path) else getattr(model, "path", None)
    if given is not None and is_onnx_export(given):
        raise PolyembedError(f"{argument('--model')} {given}: already an ONNX export; export the model it was made "
                             "from")
    if not 0.0 <= float32_share <= 1.0:
        raise PolyembedError(f"{argument('--float32-share', 'float32_share')} {float32_share}: a share between 0 "
                             "and 1")
    require(("onnx", "onnxruntime"), "polyembed export", extra="export")
    output = argument("--output", "out_dir")
    out_dir = check_output_dir(out_dir, output)
    remove_stale_staging(out_dir)  # a killed export's hidden staging folder (hundreds of MB)
    present = [p for p in out_dir.iterdir() if not p.name.startswith(STAGING_PREFIX)] if out_dir.is_dir() else []
    if present:
        if not is_onnx_export(out_dir):
            raise PolyembedError(f"{output} {out_dir}: a folder of other files; polyembed never replaces those")
        if not overwrite:
            raise PolyembedError(f"{output} {out_dir}: an earlier export is there (add "
                                 f"{argument('--overwrite')} to replace it)")
    if openvino:
        _require_openvino(argument("--openvino", "openvino"))
    if calibration_file is not None and not static_int8:
        raise PolyembedError(f"{argument('--calibration-file')} {calibration_file}: calibrates the static int8 "
                             f"graphs; add {argument('--static-int8')}")
    if calibration_size < 1:
        raise PolyembedError(f"{argument('--calibration-size')} {calibration_size}: at least 1 sentence")
    if static_int8:  # before the model loads: a missing or broken file is reported at once
        if openvino:
            require(("nncf",), f"{argument('--static-int8')} with {argument('--openvino')}", extra="export")
        sentences, calibration = calibration_sentences(calibration_file, calibration_size)

    st_model, source = as_sentence_transformer(model, "export")
    if language_embedding_ids(st_model):
        raise PolyembedError(f"{source}: a model with language embeddings needs each sentence's language, which "
                             "the ONNX graph does not take; serve the model folder instead")
    settings = _settings_from(st_model, source, quantize)
    transformer = st_model[0].auto_model
    tokenizer = st_model.tokenizer
    produced_by = {"model": source, "quantize": quantize, "optimize": optimize, "openvino": openvino,
                   **({"static_int8": True, "calibration": calibration} if static_int8 else {})}
    with publishing(out_dir, output, produced_by) as staging:  # replaces only the export's own files
        # The module, config and tokenizer files sentence-transformers' backends read; the graphs replace the
        # torch weights, so those stay with the source model.
        st_model.save(str(staging), create_model_card=False)
        for name in WEIGHT_FILES:
            (staging / name).unlink(missing_ok=True)
        settings = replace(settings, dense=_dense_folders(staging))
        (staging / FP32_FILE).parent.mkdir()
        logger.info("export: tracing %s to %s", source, FP32_FILE)
        _export_graph(transformer, tokenizer, staging / FP32_FILE)
        if optimize:
            logger.info("export: fusing %s (onnxruntime's transformer optimiser)", FP32_FILE)
            _optimize_graph(staging / FP32_FILE, transformer.config)
        # the feed-forward output projections with wide inputs stay float32 in the int8 graphs (float32_projections)
        kept = float32_projections(staging / FP32_FILE, tokenizer, float32_share) if quantize or static_int8 else []
        if quantize:
            logger.info("export: quantising to %s", INT8_FILE)
            from onnx import TensorProto
            from onnxruntime.quantization import QuantType, quantize_dynamic

            # Per-channel weight scales. Fused operators (com.microsoft) escape shape inference: their outputs are
            # declared float.
            quantize_dynamic(
                str(staging / FP32_FILE), str(staging / INT8_FILE), weight_type=QuantType.QInt8, per_channel=True,
                nodes_to_exclude=kept, extra_options={"DefaultTensorType": TensorProto.FLOAT},
            )
        files = {FP32_FILE: "float32 graph" + (", fused by onnxruntime's optimiser" if optimize else "")}
        if quantize:
            layers = ", ".join(name.split("/layer.")[-1].split("/")[0] for name in kept) or "none"
            files[INT8_FILE] = (f"int8 weights (per channel); float32 feed-forward output projections where their "
                                f"input is widest (layers {layers})")
        if openvino:
            for graph, ir in ((FP32_FILE, OPENVINO_FP32_FILE), (INT8_FILE, OPENVINO_INT8_FILE))[:1 + quantize]:
                logger.info("export: OpenVINO IR of %s to %s", graph, ir)
                _write_openvino_ir(staging / graph, staging / ir)
                files[ir] = f"OpenVINO IR of `{graph}` (with its `.bin`)"
        if static_int8:
            from polyembed.models.static_quantization import write_static_graphs

            files |= write_static_graphs(staging, FP32_FILE, tokenizer, settings, sentences, calibration, kept,
                                         openvino)
        (staging / CONFIG_FILE).write_text(json.dumps(asdict(settings), indent=2), encoding="utf-8")
        files[CONFIG_FILE] = "pooling, prompt, normalisation and length of the source model"
        (staging / CARD_FILE).write_text(export_card_text(str(out_dir), asdict(settings), files), encoding="utf-8")
    return out_dir


def _dense_folders(folder: Path) -> list[str]:
    """The saved model's Dense module folders, in pipeline order (sentence-transformers' modules.json)."""
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    return [entry["path"] for entry in modules if str(entry.get("type", "")).endswith(".Dense")]


def _read_dense(folder: Path, path: str) -> tuple[np.ndarray, np.ndarray | None, str]:
    """A Dense module's weight, bias and activation from its saved folder (safetensors, as sentence-transformers
    writes it)."""
    from safetensors.numpy import load_file

    config = json.loads((folder / path / "config.json").read_text(encoding="utf-8"))
    weights = folder / path / "model.safetensors"
    if not weights.is_file():
        raise PolyembedError(f"{weights}: missing (export the model again with `polyembed export`)")
    tensors = load_file(str(weights))
    bias = tensors.get("linear.bias")
    return (tensors["linear.weight"].astype(np.float32), None if bias is None else bias.astype(np.float32),
            DENSE_ACTIVATIONS[config["activation_function"]])


def _require_openvino(option: str) -> None:
    require(("openvino",), option, extra="export")


def _write_openvino_ir(graph: Path, xml: Path) -> None:
    """OpenVINO's IR (`.xml` + `.bin`) of an ONNX graph, weights kept at their precision (no fp16 compression):
    what optimum-intel, and so sentence-transformers' openvino backend, loads without converting."""
    import openvino

    xml.parent.mkdir(exist_ok=True)
    openvino.save_model(openvino.convert_model(str(graph)), str(xml), compress_to_fp16=False)


@register_encoder_kind
class OnnxEncoder(SentenceEncoder):
    """A SentenceEncoder on an exported graph (ONNX on onnxruntime or OpenVINO, or OpenVINO IR; CPU)."""

    @classmethod
    def can_load(cls, path: Path) -> bool:
        return is_onnx_export(path)

    @classmethod
    def load(cls, path: Path, *, name: str, device: str | None) -> OnnxEncoder:
        """The int8 graph of an export folder when it has one, or the .onnx file named (CPU: `device` unused)."""
        return load_onnx(path, name=name)

    def __init__(self, folder: str | Path, graph: str | None = None, name: str | None = None,
                 runtime: str = "onnxruntime") -> None:
        from transformers import AutoTokenizer

        folder = Path(folder)
        config_path = folder / CONFIG_FILE
        try:
            self.settings = OnnxSettings(**json.loads(config_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as err:
            raise PolyembedError(f"{config_path}: not a polyembed ONNX export ({err})") from None
        graph = present_graph(folder, graph or (INT8_FILE if self.settings.quantized else FP32_FILE))
        graph_path = folder / graph
        if not graph_path.is_file():
            raise PolyembedError(f"{graph_path}: missing (export again with `polyembed export`)")
        if graph_path.suffix == ".xml":
            runtime = "openvino"  # IR: only OpenVINO reads it
        verify_export(folder, graph)
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.dense = [_read_dense(folder, path) for path in self.settings.dense]
        """Each Dense module's (weight, bias, activation), applied after pooling as the source model does."""
        self.runtime = runtime
        """onnxruntime, or openvino (Intel's runtime, which reads the same graph, or its IR)."""
        if runtime == "openvino":
            require(("openvino",), "the openvino backend", extra="export")
            import openvino

            # f32 as the graph says: on CPUs with bf16 units OpenVINO would otherwise compute in bf16
            compiled = openvino.Core().compile_model(str(graph_path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
            output = compiled.output(0)
            self._run = lambda inputs: compiled(inputs)[output]
            self.session = None
        elif runtime == "onnxruntime":
            require(("onnxruntime",), "running an ONNX export", extra="export")
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = cpu_threads()
            session = ort.InferenceSession(str(graph_path), options, providers=["CPUExecutionProvider"])
            self.session = session
            self._run = lambda inputs: session.run(None, inputs)[0]
        else:
            raise PolyembedError(f"runtime '{runtime}': choose onnxruntime or openvino")
        self.name = name or str(graph_path)
        self.path = str(folder)
        self.device = CPU
        """Exports run on the CPU execution provider (onnxruntime) or CPU plugin (OpenVINO)."""
        self.graph_file = graph
        """The graph this encoder runs, relative to the folder (`onnx/model.onnx`, `onnx/model_qint8.onnx`, an
        OpenVINO `.xml`)."""

    @property
    def dimension(self) -> int:
        return self.settings.dimension

    @property
    def max_seq_length(self) -> int | None:
        return self.settings.max_seq_length

    def _encode_group(
        self, sentences: list[str], language: str | None, batch_size: int, show_progress_bar: bool
    ) -> np.ndarray:
        """Rows as the source model gives them (prompt, pooling, normalisation), batched by length."""
        from tqdm import tqdm

        texts = [self.settings.prompt + sentence for sentence in sentences]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = np.argsort([-len(text) for text in texts], kind="stable")  # similar lengths share a batch
        starts = range(0, len(texts), batch_size)
        for start in tqdm(starts, desc="Batches", disable=hide_progress(show_progress_bar)):
            rows = order[start : start + batch_size]
            batch = self.tokenizer(
                [texts[i] for i in rows], padding=True, truncation=True, max_length=self.settings.max_seq_length,
                return_tensors="np",
            )
            mask = batch["attention_mask"].astype(np.int64)
            hidden = self._run({"input_ids": batch["input_ids"].astype(np.int64), "attention_mask": mask})
            pooled = _pool(hidden, mask, self.settings.pooling)
            for weight, bias, activation in self.dense:
                pooled = pooled @ weight.T + (bias if bias is not None else 0.0)
                pooled = np.tanh(pooled) if activation == "tanh" else pooled
            out[rows] = pooled
        return normalize_rows(out) if self.settings.normalize else out


def cpu_threads() -> int:
    """Threads for onnxruntime: OMP_NUM_THREADS where set (as torch reads it), else the CPUs this process may run
    on (taskset, a container's cpuset). Left to itself onnxruntime starts one thread per physical core of the
    machine and pins each to its core, outside the process's CPU set: a server given one core of two also ran
    on the other."""
    value = os.environ.get("OMP_NUM_THREADS", "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    if mode == "cls":
        return hidden[:, 0]
    weights = mask[..., None].astype(hidden.dtype)
    if mode == "max":
        return np.where(weights > 0, hidden, -1e9).max(axis=1)
    return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


def is_onnx_export(path: str | Path) -> bool:
    """A folder written by `export_onnx`, or a graph file inside one."""
    return (export_folder(path) / CONFIG_FILE).is_file()


def load_onnx(path: str | Path, name: str | None = None, runtime: str = "onnxruntime") -> OnnxEncoder:
    """An OnnxEncoder for an export folder (int8 when it has one) or one of its graph files, on `runtime`
    (onnxruntime or openvino; an OpenVINO `.xml` always runs on openvino)."""
    path = Path(path)
    folder = export_folder(path)
    graph = None if folder == path else path.relative_to(folder).as_posix()
    return OnnxEncoder(folder, graph, name, runtime)
