"""The `polyembed` command line: thin typer wrappers over the Python API (no logic of its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

# `polyembed.cli:app` is the entry point; these names stay importable from here
from polyembed.cli_app import (  # noqa: F401
    BUILTIN_DEFAULT_MODEL,
    DataRootOption,
    DeviceOption,
    ModelOption,
    PromptNameOption,
    _split,
    app,
    clean_errors,
    data_app,
    models_app,
    note_default_model,
    train_app,
    warn_about_renamed_flags,
)
from polyembed.cli_train import add_train_commands, config_flags  # noqa: F401
from polyembed.errors import PolyembedError
from polyembed.messages import show_messages


def _print_version(value: bool) -> None:
    if value:
        from polyembed.environment import polyembed_version

        typer.echo(f"polyembed {polyembed_version()}")
        raise typer.Exit(0)


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", help="Print polyembed's version and exit.", is_eager=True,
                           callback=_print_version)
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also show debug messages.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Show warnings and errors only: no progress notes "
                                                              "or progress bars.")] = False,
) -> None:
    """polyembed: build multilingual sentence encoders and prove they work."""
    import logging
    import os

    if verbose and quiet:
        raise typer.BadParameter("give --verbose or --quiet, not both", param_hint="-v / -q")
    if quiet:
        os.environ["TQDM_DISABLE"] = "1"  # tqdm's own switch: our progress bars and most libraries'
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # transformers' and the Hub's (read when they load)
    show_messages(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    warn_about_renamed_flags()


@app.command("eval")
@clean_errors
def eval_command(
    context: typer.Context,
    model: ModelOption = BUILTIN_DEFAULT_MODEL,
    suite: Annotated[str, typer.Option(help="Suite: default or full (ignored when --tasks is given).")] = "default",
    tasks: Annotated[list[str] | None, typer.Option(
        help="Task names (see `polyembed tasks`): commas or a repeated flag.")] = None,
    out: Annotated[Path, typer.Option("--output", "-o", help="Report folder.")] = Path("results/eval"),
    data_root: DataRootOption = None,
    batch_size: Annotated[int, typer.Option(help="Encoding batch size.", min=1)] = 64,
    plots: Annotated[bool, typer.Option(help="Write plots.")] = True,
    languages: Annotated[
        list[str] | None, typer.Option(help="Languages/subsets for the tasks named in --tasks: commas or a repeated "
                                            "flag.")
    ] = None,
    task_arg: Annotated[
        list[str] | None,
        typer.Option(
            help="KEY=VALUE passed to the tasks named in --tasks (repeatable), "
            "e.g. --tasks parallel-retrieval --task-arg directory=my/corpus --task-arg pivot=en."
        ),
    ] = None,
    cache: Annotated[
        bool, typer.Option(help="Keep embeddings in the persistent store: a second run encodes only new text.")
    ] = False,
    precision: Annotated[
        Literal["fp32", "bf16", "fp16", "auto"], typer.Option(
            help="Encoding precision: fp32; bf16 or fp16 (autocast, scores move slightly); auto (the half "
                 "precision the device computes natively: bf16 where it has it, else fp16 on a GPU, fp32 on a "
                 "CPU). fp32 unless asked, unlike demo and training: the "
                 "report's scores then do not depend on the machine (docs/benchmarks.md, 'Inference precision').")
    ] = "fp32",
    device: DeviceOption = None,
    prompt_name: PromptNameOption = None,
    baseline: Annotated[str | None, typer.Option(
        help="A second model (built-in name, folder or Hugging Face id), e.g. the one training started from: "
             "scored on the same tasks first, then report.md, results.json and a polyembed model folder's card "
             "compare both, every subset with a 95 % interval and the forgetting per language.")] = None,
    trained_languages: Annotated[list[str] | None, typer.Option(
        help="Languages the model trained on, marked in the comparison's forgetting rows: commas or a repeated "
             "flag (default: the languages of a polyembed model folder's card).")] = None,
) -> None:
    """Evaluate a model and write results.json, report.md and plots to --output.

    Only the report's own files in --output are replaced (and those an earlier report wrote there); anything
    else in the folder is left alone.

    Examples:
    polyembed eval -m runs/sw/model --suite default -o results/sw
    polyembed eval -m me5-small --tasks sts17 --languages en-en,es-en -o results/base
    polyembed eval -m runs/sw/model --tasks parallel-retrieval --task-arg directory=held-out/
    polyembed eval -m runs/yo/model --baseline me5-small --tasks tatoeba -o results/yo"""
    note_default_model(context)
    from polyembed.device import choose_device

    choose_device(device)
    from polyembed.config import parse_key_values
    from polyembed.eval.api import evaluate
    from polyembed.eval.report import task_summary

    task_kwargs = parse_key_values(task_arg or [], "--task-arg")
    if languages:
        task_kwargs["languages"] = _split(languages)
    result = evaluate(
        model,
        _split(tasks),
        suite=suite,
        out_dir=out,
        data_root=data_root,
        batch_size=batch_size,
        plots=plots,
        task_kwargs=task_kwargs,
        cache=cache,
        precision=precision,
        prompt_name=prompt_name,
        baseline=baseline,
        trained_languages=_split(trained_languages) if trained_languages else None,
    )
    before = {run.task.name: run for run in result.baseline.runs} if result.baseline is not None else {}
    for run in result.runs:
        was = f"{task_summary(before[run.task.name].scores):7.2f} -> " if run.task.name in before else ""
        typer.echo(
            f"{run.task.name:32s} {run.task.metadata.main_score:>12s} {was}{task_summary(run.scores):7.2f}  "
            f"({run.seconds:.1f} s)"
        )
    typer.echo(f"wrote {out}/results.json and {out}/report.md ({result.seconds:.1f} s)")
    card = _add_to_model_card(model, result, out)
    if card is not None:
        typer.echo(f"added the scores to the model card {card}")


def _add_to_model_card(model: str, result: Any, out: Path) -> Path | None:
    """A polyembed model folder's card gets each task's main score (folders without a card stay as they are)."""
    import datetime

    from polyembed.eval.report import task_summary
    from polyembed.methods.base.model_card import append_comparison, append_evaluation

    if not Path(model).is_dir():
        return None
    source = f"polyembed eval, {datetime.date.today().isoformat()} ({out})"
    rows = []
    for run in result.runs:
        subsets = sorted({score.subset for score in run.scores if score.main})
        rows.append({"task": run.task.name, "metric": run.task.metadata.main_score,
                     "languages": ", ".join(subsets) if len(subsets) <= 6 else f"{len(subsets)} subsets",
                     "value": round(float(task_summary(run.scores)), 2)})
    try:
        card = append_evaluation(model, rows, source)
        if card is not None and result.comparison is not None:
            append_comparison(model, result.comparison, source)
        return card
    except (OSError, ValueError) as err:  # the report is written; a read-only or hand-edited card stays as it is
        typer.echo(f"warning: the model card in {model} was left as it is ({err})", err=True)
        return None


@app.command("push")
@clean_errors
def push_command(
    folder: Annotated[Path, typer.Argument(help="The model folder (a training run's model/, an export, ...).")],
    repo_id: Annotated[str, typer.Argument(help="Hugging Face repository: OWNER/NAME.")],
    private: Annotated[bool, typer.Option("--private/--public", help="Repository visibility when created.")] = True,
    revision: Annotated[
        str | None, typer.Option("--revision", "--branch", help="Branch to push to (created when missing).")
    ] = None,
    commit_message: Annotated[str | None, typer.Option(help="Commit message.")] = None,
    dry_run: Annotated[
        bool, typer.Option(help="List the files and the card's front matter; no network call, nothing written.")
    ] = False,
    token: Annotated[str | None, typer.Option(help="Hub token (default: HF_TOKEN or the stored login).")] = None,
) -> None:
    """Upload a model folder to the Hugging Face Hub, with its card written again for the repository (the
    evaluation rows as `model-index`).

    Examples:
    polyembed push runs/sw/model OWNER/NAME --dry-run     # the files and the card; no network call
    polyembed push runs/sw/model OWNER/NAME               # a private repository unless --public
    polyembed push runs/sw/model OWNER/NAME --branch v2 --commit-message 'Second run'"""
    from polyembed.models.hub import push_to_hub

    result = push_to_hub(folder, repo_id, private=private, revision=revision, commit_message=commit_message,
                         token=token, dry_run=dry_run)
    visibility = "private" if result.private else "public"
    where = f"{result.repo_id} ({visibility}{f', branch {result.revision}' if result.revision else ''})"
    if not result.dry_run:
        typer.echo(f"pushed {len(result.files)} files ({result.total_bytes:,} bytes) to {where}: {result.url}")
        return
    typer.echo(f"dry run: would push {len(result.files)} files ({result.total_bytes:,} bytes) to {where}")
    for name, size in result.files:
        typer.echo(f"  {size:>14,}  {name}")
    if result.left_out:
        typer.echo(f"left out (polyembed's records of this machine): {', '.join(result.left_out)}")
    if result.card is None:
        typer.echo("no README.md: the repository would get no model card")
    else:
        typer.echo(f"README.md front matter:\n{result.front_matter_text.rstrip()}")


@app.command("doctor")
@clean_errors
def doctor_command() -> None:
    """Print the versions, data root, cache folder and built-in models in use (paste it into bug reports);
    exit 1 when an installed package is missing, outside polyembed's range or refused by another one.

    Examples:
    polyembed doctor
    polyembed -v doctor"""
    from polyembed.doctor import doctor_report

    report = doctor_report()
    typer.echo(report.text())
    if report.problems:
        raise typer.Exit(1)


@app.command("tasks")
@clean_errors
def tasks_command() -> None:
    """List the registered evaluation tasks: the names `polyembed eval --tasks` takes.

    Examples:
    polyembed tasks"""
    from polyembed.eval.registry import list_tasks

    for meta in list_tasks():
        typer.echo(
            f"{meta.name:30s} {meta.type:18s} {meta.main_score:12s} {len(meta.languages):4d} subsets  "
            f"{meta.description}"
        )


@app.command("encode")
@clean_errors
def encode_command(
    input: Annotated[Path, typer.Argument(help="Text file, one sentence per line (UTF-8); '-' reads stdin "
                                               "(with --shard-size).")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The .npy matrix, or with --shard-size the shard folder.")
    ],
    context: typer.Context,
    model: ModelOption = BUILTIN_DEFAULT_MODEL,
    language: Annotated[str | None, typer.Option(help="Language of all lines (default: detect per line).")] = None,
    batch_size: Annotated[int, typer.Option(help="Sentences encoded together.", min=1)] = 64,
    normalize: Annotated[bool, typer.Option(help="L2-normalise rows.")] = True,
    shard_size: Annotated[
        int | None,
        typer.Option(help="Stream: read and write this many lines per .npy shard (memory stays flat; a rerun "
                          "skips finished shards).", min=1),
    ] = None,
    dtype: Annotated[Literal["float16", "float32"], typer.Option(help="Shard rows' number type.")] = "float16",
    language_column: Annotated[
        int | None, typer.Option(help="Shards from a TSV: the column (from 1) holding each line's language.", min=1)
    ] = None,
    text_column: Annotated[
        int | None, typer.Option(help="Shards from a TSV: the column (from 1) holding the text.", min=1)
    ] = None,
    workers: Annotated[int, typer.Option(help="Shards: encoding processes (each with its share of cores).",
                                         min=1)] = 1,
    backend: Annotated[Literal["processes", "ray"], typer.Option(
        help="Shards with --workers: local processes, or ray tasks.")] = "processes",
    ray_address: Annotated[
        str | None, typer.Option(help="--backend ray: a running cluster ('auto', ray://host:10001); default local.")
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing .npy that polyembed wrote (never another "
                                                 "file).")] = False,
    device: DeviceOption = None,
    prompt_name: PromptNameOption = None,
) -> None:
    """Encode a text file into a .npy matrix (one row per line), or stream it into shards (--shard-size).

    Examples:
    polyembed encode sentences.txt -o vectors.npy -m me5-small --language sw
    polyembed encode corpus.tsv -o shards/ --shard-size 100000 --language-column 1 --text-column 2
    polyembed encode - -o shards/ --shard-size 100000      # lines from stdin, into shards"""
    note_default_model(context)
    from polyembed.device import choose_device

    choose_device(device)
    import numpy as np

    from polyembed.data.io import read_lines
    from polyembed.languages import require_known_language
    from polyembed.models.encoding import encode_lines
    from polyembed.outputs import check_output_file, write_output_file

    if shard_size is not None:
        from polyembed.config import build_config
        from polyembed.streaming import StreamOptions, encode_to_shards

        options, _ = build_config(StreamOptions, None, {
            "shard_size": shard_size, "dtype": dtype, "language": language, "language_column": language_column,
            "text_column": text_column, "batch_size": batch_size, "normalize": normalize, "workers": workers,
            "backend": backend, "ray_address": ray_address})
        if prompt_name is not None:  # the prompt travels with a loaded encoder (its name records it)
            from polyembed.models.encoder import with_prompt
            from polyembed.models.loading import load_model
            from polyembed.outputs import check_output_dir

            output = check_output_dir(output, "--output")  # before the model loads
            if workers > 1:
                raise PolyembedError("--prompt-name with --workers: each worker loads the model by name, with its "
                                     "default prompt; use one worker")
            model = with_prompt(load_model(model), prompt_name)  # type: ignore[assignment]
        result = encode_to_shards(model, str(input), output, options)
        typer.echo(f"{result.lines} lines in {len(result.shards)} shards ({result.encoded_shards} encoded, "
                   f"{result.skipped_shards} already there) -> {result.output_dir}")
        return
    for flag, value in (("--language-column", language_column), ("--text-column", text_column)):
        if value is not None:
            raise PolyembedError(f"{flag} reads a TSV into shards: give --shard-size too")
    output = check_output_file(output, "--output", inputs=[input], overwrite=overwrite)
    if language is not None:
        language = require_known_language(language, "--language")
    sentences = read_lines(input)
    if not sentences:
        raise PolyembedError(f"{input}: no lines to encode (the file is empty)")
    vectors, languages = encode_lines(model, sentences, language, batch_size=batch_size, normalize=normalize,
                                      prompt_name=prompt_name)
    with write_output_file(output, "wb") as handle:
        np.save(handle, vectors)
    summary = ", ".join(f"{lang}:{count}" for lang, count in sorted(languages.items()))
    typer.echo(f"encoded {len(sentences)} sentences ({summary}) -> {output} {vectors.shape}")


@app.command("demo")
@clean_errors
def demo_command(
    out: Annotated[Path, typer.Option("--output", "-o", help="Report folder (the training run goes to OUTPUT/run).")
                   ] = Path("results/demo"),
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Distillation YAML (default: the packaged demo preset).")
    ] = None,
    data_root: DataRootOption = None,
    precision: Annotated[
        Literal["auto", "fp32", "bf16", "fp16"], typer.Option(
            help="Evaluation precision: auto (the half precision the device computes natively: bf16 where it has "
                 "it, else fp16 on a GPU, fp32 on a CPU), fp32, bf16 or fp16. "
                 "Training has its own option (precision in the config).")
    ] = "auto",
    device: DeviceOption = None,
) -> None:
    """The main job: distil minilm-en into a multilingual me5-small student for 10 languages, evaluate
    teacher, untrained and distilled student, and write a comparison report (its wall time on 2 cores is in
    docs/benchmarks.md, "A fresh machine").

    Examples:
    polyembed demo
    polyembed demo -o results/demo-2 --precision fp32
    polyembed demo -c my-distill.yaml --data-root /data/polyembed -o results/my-demo"""
    from polyembed.device import choose_device

    choose_device(device)
    from polyembed.demo import HEADLINE_LABELS, format_headline, run_demo

    summary = run_demo(out, config=config, data_root=data_root, precision=precision)
    names = list(summary["headline"])
    typer.echo(f"{'':52s}" + "".join(f" {name:>25s}" for name in names))
    for key, label in HEADLINE_LABELS.items():
        typer.echo(f"{label:52s}" + "".join(f" {format_headline(key, summary['headline'][n]):>25s}" for n in names))
    typer.echo(f"wrote {out}/report.md, {out}/results.json and {out}/plots ({summary['seconds']:.0f} s)")


from polyembed import cli_models, cli_tools  # noqa: E402,F401 - register models/data, export, mine and serve
