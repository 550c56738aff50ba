"""`evaluate`: run a suite or task list on a model and (optionally) write the report, all-or-nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from polyembed.data.registry import get_dataset
from polyembed.errors import PolyembedError, argument
from polyembed.eval.base import Task
from polyembed.eval.registry import get_task
from polyembed.eval.report import plot_task_bars, write_report_md, write_results_json
from polyembed.eval.runner import EvaluationResult, data_root_for, run_tasks
from polyembed.eval.suites import suite_tasks
from polyembed.models.encoder import SentenceEncoder, resolve_precision, with_precision, with_prompt
from polyembed.models.loading import as_encoder, check_model_reference
from polyembed.outputs import check_output_dir, publishing


def resolve_tasks(
    tasks: Sequence[str | Task] | None = None, suite: str | None = None, **task_kwargs: Any
) -> list[Task]:
    """Task objects from names/instances (names built with `task_kwargs`, e.g. languages=[...]),
    or from a named suite (default: the 'default' suite)."""
    if tasks:
        return [get_task(task, **task_kwargs) if isinstance(task, str) else task for task in tasks]
    if task_kwargs:
        raise PolyembedError("task options (languages, ...) need explicit task names, not a suite")
    return suite_tasks(suite or "default")


def check_datasets(tasks: Sequence[Task], data_root: Path) -> None:
    """Fail before any encoding when a task's dataset is missing (the error names path and source)."""
    for task in tasks:
        for name in task.required_datasets():
            get_dataset(name).path(data_root)


def evaluate(
    model: str | SentenceEncoder,
    tasks: Sequence[str | Task] | None = None,
    *,
    suite: str | None = None,
    out_dir: str | Path | None = None,
    data_root: str | Path | None = None,
    batch_size: int = 64,
    show_progress: bool = True,
    plots: bool = True,
    task_kwargs: dict[str, Any] | None = None,
    cache: bool = False,
    precision: str = "fp32",
    prompt_name: str | None = None,
    baseline: str | SentenceEncoder | None = None,
    trained_languages: Sequence[str] | None = None,
) -> EvaluationResult:
    """Evaluate a model on tasks (or a suite); with `out_dir`, write results.json, report.md and plots.

    `cache`: keep every embedding in the persistent store (`polyembed.models.embedding_cache`), so evaluating
    the same model again encodes only sentences it has not seen. `precision`: 'fp32' (default), 'bf16' or
    'fp16' (autocast: faster where the device computes it natively, scores move slightly) or 'auto' (the half
    precision the device has natively, else fp32; `polyembed.models.precision`).
    `prompt_name`: one of the model's prompts for every sentence (e5's 'query' or 'passage'); None: its default.
    `baseline`: a second model (e.g. the one training started from) scored on the same tasks first; the result
    then carries both and their comparison (`eval/compare.py`: every subset with a 95 % interval, forgetting
    per language). `trained_languages` marks the languages the model trained on in that comparison (default:
    the `language` list of a polyembed model folder's card).

    Outputs are staged in a hidden folder and moved into `out_dir` only when every task succeeded, so a
    failed run leaves nothing behind; only the files this report writes (and those an earlier polyembed
    report wrote there) are replaced, other files in `out_dir` are left alone. `task_kwargs`
    (e.g. {"languages": ["deu"]}) are passed to every task named in `tasks`.
    """
    if batch_size < 1:
        raise PolyembedError(f"batch size {batch_size}: expected 1 or more")
    resolve_precision(precision)  # a bad value fails before anything loads
    task_list = resolve_tasks(tasks, suite, **(task_kwargs or {}))  # a mistyped task name is reported first
    # the inputs that need no data before the data root: a user without one hears first about what they typed
    if isinstance(model, str | Path):
        check_model_reference(str(model), argument("-m", "model"))
    if isinstance(baseline, str | Path):
        check_model_reference(str(baseline), argument("--baseline", "baseline"))
    if out_dir is not None:
        # before the model loads: an unwritable folder fails in a second
        check_output_dir(out_dir, argument("--output", "out_dir"))
    root = data_root_for(task_list, data_root)
    if root is not None:
        check_datasets(task_list, root)
    def prepared(which: str | SentenceEncoder) -> SentenceEncoder:
        encoder = with_precision(with_prompt(as_encoder(which), prompt_name), precision)
        if cache:
            from polyembed.models.embedding_cache import EmbeddingStore

            encoder = EmbeddingStore(encoder, batch_size=batch_size)
        return encoder

    before = None
    if baseline is not None:  # first: the baseline's scores decide nothing, but a failure there costs least
        before = run_tasks(prepared(baseline), task_list, data_root=root, batch_size=batch_size,
                           show_progress=show_progress)
    encoder = prepared(model)
    if out_dir is None:
        return _compared(run_tasks(encoder, task_list, data_root=root, batch_size=batch_size,
                                   show_progress=show_progress), before, model, trained_languages)
    with publishing(out_dir, argument("--output", "out_dir")) as staging:
        result = _compared(run_tasks(
            encoder,
            task_list,
            data_root=root,
            figure_dir=staging / "plots" if plots else None,
            batch_size=batch_size,
            show_progress=show_progress,
        ), before, model, trained_languages)
        figures: dict[str, list[str]] = {}
        for run in result.runs:
            figures[run.task.name] = [f"plots/{path.name}" for path in run.figures]
        if plots:
            for task_name, names in plot_task_bars(result, staging / "plots").items():
                figures.setdefault(task_name, []).extend(names)
        write_results_json(result, staging / "results.json")
        write_report_md(result, staging / "report.md", figures)
    return result


def model_languages(model: str | SentenceEncoder) -> list[str]:
    """The languages a polyembed model folder's card lists (its training languages); [] for anything else."""
    from polyembed.models.cards import read_front_matter

    if not isinstance(model, str | Path) or not Path(model).is_dir():
        return []
    languages = read_front_matter(model).get("language")
    return [str(code) for code in languages] if isinstance(languages, list) else []


def _compared(result: EvaluationResult, before: EvaluationResult | None, model: str | SentenceEncoder,
              trained_languages: Sequence[str] | None) -> EvaluationResult:
    """`result` with the baseline's run and the comparison attached (as it is without a baseline)."""
    if before is None:
        return result
    from polyembed.eval.compare import compare_scores

    trained = list(trained_languages) if trained_languages is not None else model_languages(model)
    result.baseline = before
    result.comparison = compare_scores(before.scores, result.scores, result.model, before.model, trained)
    return result
