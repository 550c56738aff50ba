"""Reports of an evaluation run: results.json (MTEB-like rows), report.md (a table per task), bar charts."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from polyembed.eval.base import Score
from polyembed.eval.runner import EvaluationResult
from polyembed.outputs import atomic_write


def is_average(subset: str) -> bool:
    """Rows a task adds as averages ('avg', 'cross-avg', ...) rather than measured subsets."""
    return subset == "avg" or subset.endswith("-avg")


def results_to_dict(result: EvaluationResult) -> dict[str, Any]:
    """JSON-ready results: one entry per task with its metadata, timing and score rows; with a baseline, its
    results and the comparison too."""
    payload = _results_dict(result)
    if result.baseline is not None:
        payload["baseline"] = _results_dict(result.baseline)
    if result.comparison is not None:
        payload["comparison"] = result.comparison.to_dict()
    return payload


def _results_dict(result: EvaluationResult) -> dict[str, Any]:
    return {
        "model": result.model,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(result.seconds, 2),
        "environment": result.environment,
        "tasks": [
            {
                "task": run.task.name,
                "metadata": run.task.metadata.to_dict(),
                "split": run.task.split,
                "languages": list(run.task.languages),
                "seconds": round(run.seconds, 2),
                "sentences_encoded": run.sentences_encoded,
                "scores": [dict(score.to_dict(), model=result.model) for score in run.scores],
            }
            for run in result.runs
        ],
    }


def write_results_json(result: EvaluationResult, path: Path) -> Path:
    """Write results.json atomically."""
    with atomic_write(path) as handle:
        json.dump(results_to_dict(result), handle, indent=2, ensure_ascii=False)
        handle.write("\n")
    return path


def _fmt(value: float) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}"


def score_table(scores: list[Score]) -> str:
    """Markdown table: one row per subset, one column per metric (main metric first)."""
    if not scores:
        return "_no scores_\n"
    main_metric = next((s.metric for s in scores if s.main), scores[0].metric)
    metrics = [main_metric] + sorted({s.metric for s in scores} - {main_metric})
    values: dict[str, dict[str, float]] = defaultdict(dict)
    sizes: dict[str, int | None] = {}
    for score in scores:
        values[score.subset][score.metric] = score.value
        sizes.setdefault(score.subset, score.n)
    subsets = [s for s in values if not is_average(s)] + [s for s in values if is_average(s)]
    lines = ["| subset | " + " | ".join(metrics) + " | n |", "|---" * (len(metrics) + 2) + "|"]
    for subset in subsets:
        cells = [_fmt(values[subset].get(metric, float("nan"))) for metric in metrics]
        label = f"**{subset}**" if is_average(subset) else subset
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {sizes.get(subset) or ''} |")
    return "\n".join(lines) + "\n"


def task_summary(scores: list[Score]) -> float:
    """One number per task: its 'avg' row if it has one, else the mean of its measured main scores."""
    main = [s for s in scores if s.main]
    for score in main:
        if score.subset == "avg":
            return score.value
    measured = [s.value for s in main if not is_average(s.subset)]
    return sum(measured) / len(measured) if measured else float("nan")


def write_report_md(result: EvaluationResult, path: Path, figures: dict[str, list[str]] | None = None) -> Path:
    """Write report.md: summary table (task, metric, value, time), then one table per task."""
    figures = figures or {}
    lines = [f"# polyembed evaluation: `{result.model}`", ""]
    env = result.environment
    lines.append(
        f"{len(result.runs)} tasks in {result.seconds:.1f} s · torch {env.get('torch')} · "
        f"sentence-transformers {env.get('sentence_transformers')} · {env.get('machine')} · "
        f"{env.get('cpu_threads')} threads"
    )
    lines += [
        "",
        "## Summary",
        "",
        "| task | type | main metric | score | seconds | sentences encoded |",
        "|---|---|---|---|---|---|",
    ]
    for run in result.runs:
        meta = run.task.metadata
        lines.append(
            f"| {meta.name} | {meta.type} | {meta.main_score} | {_fmt(task_summary(run.scores))} | "
            f"{run.seconds:.1f} | {run.sentences_encoded} |"
        )
    if result.comparison is not None:
        lines += ["", f"## Compared with `{result.comparison.baseline}`", "",
                  "Main scores of both models on the same rows; a change in bold lies outside its 95 % interval.",
                  "", result.comparison.markdown().rstrip("\n")]
    for run in result.runs:
        meta = run.task.metadata
        lines += [
            "",
            f"## {meta.name}",
            "",
            f"{meta.description.rstrip('.')}. Split: `{run.task.split}`. "
            f"Datasets: {', '.join(meta.datasets)}." + (f" Reference: {meta.reference}." if meta.reference else ""),
            "",
            score_table(run.scores),
        ]
        for figure in figures.get(meta.name, []):
            lines.append(f"![{meta.name}]({figure})\n")
    with atomic_write(path) as handle:
        handle.write("\n".join(lines).rstrip() + "\n")
    return path


def plot_task_bars(result: EvaluationResult, plot_dir: Path) -> dict[str, list[str]]:
    """A bar chart of the main score per subset for each task; returns task -> figure file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: dict[str, list[str]] = {}
    for run in result.runs:
        main = [s for s in run.scores if s.main and not math.isnan(s.value)]
        if not main:
            continue
        figure, axis = plt.subplots(figsize=(max(4.0, 0.35 * len(main) + 2), 3.2))
        colours = ["#c44e52" if is_average(s.subset) else "#4c72b0" for s in main]
        axis.bar([s.subset for s in main], [s.value for s in main], color=colours)
        axis.set_title(f"{run.task.name} — {result.model}")
        axis.set_ylabel(run.task.metadata.main_score)
        axis.tick_params(axis="x", rotation=90 if len(main) > 8 else 0, labelsize=7)
        figure.tight_layout()
        name = f"{run.task.name}.png"
        with atomic_write(plot_dir / name, "wb") as handle:
            figure.savefig(handle, format="png", dpi=100)
        plt.close(figure)
        written.setdefault(run.task.name, []).append(f"plots/{name}")
    return written
