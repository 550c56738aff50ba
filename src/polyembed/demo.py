"""The main job: distil the offline English teacher into a multilingual student and show that it worked.

`run_demo` trains with the packaged `presets/distill-demo.yaml` (10 languages, a short run on 2 CPU
cores), then evaluates the teacher, the untrained student and the distilled student on the same tasks
(STS2017 mono + cross, stsb-multi-mt en-X, Kardes STS, Tatoeba for the trained languages, language bias),
plus forgetting reports (Tatoeba in all 112 languages and TICO-19's long sentences in its 10, untrained against
distilled student, see `polyembed.eval.forgetting`), and writes one comparison report: results.json, report.md
with tables, and plots (its prose: `polyembed.demo_report`).
Its tasks and headline numbers (`polyembed.eval.headline`) are the distillation benchmark's too (benchmarks/distill/).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from polyembed.config import build_config
from polyembed.demo_report import length_line, per_language_dev_table, precision_line, recipe_lines
from polyembed.errors import argument
from polyembed.eval.forgetting import LONG_SENTENCE_TASK, ForgettingReport, forgetting_report, forgetting_task_options
from polyembed.eval.forgetting import TASK as FORGETTING_TASK
from polyembed.eval.headline import (
    HEADLINE_LABELS,
    STS17_ENGLISH,
    demo_config_path,
    demo_tasks,
    evaluate_on_demo_tasks,
    format_headline,
    headline_metrics,
    with_teacher_ratio,
)
from polyembed.eval.headline import tatoeba_interval as tatoeba_interval  # kept under polyembed.demo too
from polyembed.eval.report import results_to_dict, write_report_md
from polyembed.eval.runner import EvaluationResult
from polyembed.outputs import atomic_write, check_output_dir, publishing

logger = logging.getLogger(__name__)

TATOEBA_ROWS = 250
"""Tatoeba rows per trained language in the demo's tables (benchmarks/distill/ scores 500). The headline mean
carries a 95% interval (`tatoeba_interval`). Each row's translation is retrieved among the language's rows, so
fewer rows make the task easier: the mean is comparable only with Tatoeba at the same row count."""
FORGETTING_ROWS = 50
"""Tatoeba rows per language in the demo's forgetting report, all 112 languages. At 100 rows the two models'
forgetting rows took about half of `make demo` on a fresh clone (docs/benchmarks.md, "A fresh machine"); 50 rows
halve that. One sentence is then a point of the two-direction mean, so single languages are noisy:
`python -m benchmarks.distill.run forgetting` scores every row."""
LONG_SENTENCE_ROWS = 100
"""TICO-19 rows per language in the demo's long-sentence forgetting report, all 10 languages: a long sentence
costs more to encode than a Tatoeba one, and the demo has a time budget (docs/benchmarks.md, "A fresh machine").
Fewer rows make retrieval easier, so compare these numbers only at the same row count; the distillation
benchmark (benchmarks/distill/) scores every row."""


def teacher_tasks() -> list[tuple[str, dict]]:
    """The English STS of the demo tables, all an English teacher is scored on in the demo: the cross / teacher
    English ratio needs nothing else, and its cross-lingual scores only say it is English-only
    (docs/benchmarks.md has them)."""
    return [("sts17", {"languages": [STS17_ENGLISH]}), ("stsb-multi-mt", {"languages": ["en"], "max_pairs": 500})]


def evaluate_forgetting(
    untrained: Any,
    distilled: Any,
    languages: list[str],
    data_root: str | Path | None = None,
    max_rows: int | None = FORGETTING_ROWS,
    show_progress: bool = True,
    anchored_languages: list[str] | None = None,
    precision: str = "fp32",
    long_rows: int | None = LONG_SENTENCE_ROWS,
) -> dict[str, ForgettingReport]:
    """Tatoeba (short sentences, `max_rows` per language) and TICO-19 (long sentences, `long_rows`) in every
    language for the untrained and the distilled student, compared language by language: one report per task,
    keyed by task name (`anchored_languages`: the run's anchor languages, reported as a group of their own).
    The untrained student's embeddings come from the persistent store after the first run."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task

    rows = {FORGETTING_TASK: max_rows, LONG_SENTENCE_TASK: long_rows}
    scores = []
    for model, cache in ((untrained, True), (distilled, False)):
        tasks = [get_task(task, **forgetting_task_options(cap, task)) for task, cap in rows.items()]
        scores.append(evaluate(model, tasks, data_root=data_root, show_progress=show_progress, cache=cache,
                               precision=precision).scores)
    return {task: forgetting_report(scores[0], scores[1], languages, anchored_languages or [], task=task)
            for task in rows}


def comparison_markdown(results: dict[str, EvaluationResult], teacher_key: str = "teacher") -> str:
    """A headline table (models as columns) followed by every task's main scores side by side."""
    names = list(results)
    heads = with_teacher_ratio({name: headline_metrics(result) for name, result in results.items()}, teacher_key)
    lines = ["| measure | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for key, label in HEADLINE_LABELS.items():
        lines.append(f"| {label} | " + " | ".join(format_headline(key, heads[name]) for name in names) + " |")
    lines.append("")
    for task in dict.fromkeys(s.task for r in results.values() for s in r.scores):
        table: dict[str, dict[str, float]] = {}
        for name, result in results.items():
            for score in result.scores:
                if score.task == task and score.main:
                    table.setdefault(score.subset, {})[name] = score.value
        lines += [f"### {task}", "", "| subset | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for subset, row in table.items():
            lines.append(f"| {subset} | " + " | ".join(f"{row.get(n, float('nan')):.2f}" for n in names) + " |")
        lines.append("")
    return "\n".join(lines)


def plot_comparison(results: dict[str, EvaluationResult], path: Path) -> None:
    """Grouped bars of the main headline numbers per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    keys = ["english_sts", "cross_sts", "tatoeba_accuracy", "kardes_cross_sts"]
    heads = {name: headline_metrics(result) for name, result in results.items()}
    figure, axis = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / len(results)
    for index, name in enumerate(results):
        axis.bar(np.arange(len(keys)) + index * width, [heads[name][k] for k in keys], width, label=name)
    axis.set_xticks(np.arange(len(keys)) + width * (len(results) - 1) / 2)
    axis.set_xticklabels([HEADLINE_LABELS[k].split(" (")[0] for k in keys], fontsize=8)
    axis.set_ylabel("score x100")
    axis.legend(fontsize=8)
    figure.tight_layout()
    with atomic_write(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=100)
    plt.close(figure)


def run_demo(
    out_dir: str | Path = "results/demo",
    *,
    config: str | Path | None = None,
    data_root: str | Path | None = None,
    show_progress: bool = True,
    precision: str = "auto",
    **overrides: Any,
) -> dict[str, Any]:
    """Distil, evaluate teacher / untrained student / distilled student, write the comparison report.

    `precision` is the evaluations' (every model and the forgetting report alike): 'auto' encodes under bf16
    autocast where the CPU has native bf16, which is what keeps the demo within its time on 2 cores; the
    headline numbers then differ slightly from float32's (docs/benchmarks.md, "Inference precision");
    'fp32' for exact float32."""
    from polyembed.eval.registry import get_task
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.methods.distill.train import prepare_data, train_distill
    from polyembed.models.encoder import resolve_precision
    from polyembed.models.loading import load_model

    started = time.perf_counter()
    precision = resolve_precision(precision)
    out = check_output_dir(out_dir, argument("--output", "out_dir")).resolve()
    options = {"output_dir": str(out / "run"), **overrides}
    if data_root is not None:
        options["data_root"] = str(data_root)
    settings, origin = build_config(DistillConfig, config or demo_config_path(), options)
    prepare_data(settings, origin)  # bad input stops here, before any model is loaded
    tasks = demo_tasks(settings.languages, max_rows=TATOEBA_ROWS)
    names = [name for name, _ in tasks]
    for name, kwargs in tasks:  # a bad task option fails now, not after training
        get_task(name, **kwargs)

    def evaluation(
        model: Any, label: str, cache: bool, chosen: list[tuple[str, dict]] | None = None
    ) -> EvaluationResult:
        if show_progress:
            logger.info(f"== evaluating {label}")
        return evaluate_on_demo_tasks(
            model, label, settings.languages, settings.data_root, show_progress, cache=cache, tasks=chosen,
            precision=precision,
        )

    # the teacher and the untrained student are the same models every run: their embeddings are kept
    results: dict[str, EvaluationResult] = {
        "teacher": evaluation(load_model(settings.teacher), f"{settings.teacher} (English STS)", True, teacher_tasks())
    }
    student_name = settings.teacher if settings.student == "teacher" else settings.student
    untrained = load_model(student_name)
    results["untrained student"] = evaluation(untrained, f"{student_name} (untrained)", True, tasks)
    if show_progress:
        logger.info(f"== distilling {settings.teacher} into {student_name}")
    training = train_distill(settings, origin=origin, resume=False, overwrite=True, show_progress=show_progress)
    distilled = load_model(training.model_dir)
    results["distilled student"] = evaluation(distilled, "distilled student", False, tasks)
    if show_progress:
        logger.info(f"== forgetting: Tatoeba in all languages ({FORGETTING_ROWS} rows each) and TICO-19 "
                    f"({LONG_SENTENCE_ROWS} rows each), untrained vs distilled")
    forgetting = evaluate_forgetting(
        untrained,
        distilled,
        settings.languages,
        settings.data_root,
        show_progress=show_progress,
        anchored_languages=settings.anchor_codes(),
        precision=precision,
    )

    summary = {
        "seconds": round(time.perf_counter() - started, 1),
        "evaluation_precision": precision,
        "config": json.loads(json.dumps(settings.__dict__)),
        "tasks": names,
        "headline": with_teacher_ratio({name: headline_metrics(result) for name, result in results.items()}),
        "training": training.to_dict(),
        "results": {name: results_to_dict(result) for name, result in results.items()},
        "forgetting": forgetting[FORGETTING_TASK].to_dict(),
        "long_sentence_forgetting": forgetting[LONG_SENTENCE_TASK].to_dict(),
    }
    _write_report(out, results, summary, forgetting)
    return summary


def _write_report(
    out: Path, results: dict[str, EvaluationResult], summary: dict[str, Any], forgetting: dict[str, ForgettingReport]
) -> None:
    """Stage the report, then publish its files into `out` (the run folder and other files stay)."""
    with publishing(out) as staging:
        (staging / "plots").mkdir()
        plot_comparison(results, staging / "plots" / "headline.png")
        training = summary["training"]
        text = [
            "# polyembed demo: multilingual knowledge distillation",
            "",
            f"Teacher `{summary['config']['teacher']}` distilled into `{summary['config']['student']}` for "
            f"{', '.join(summary['config']['languages'])} in {training['steps']} steps "
            f"({training['train_pairs_seen']:,} pairs, {training['pairs_per_second']:.1f} pairs/s, "
            f"peak memory {training['peak_memory_mb']:.0f} MB). Whole demo: {summary['seconds']:.0f} s.",
            "",
            precision_line(summary.get("evaluation_precision", "fp32")),
            "",
            f"Subsets: stsb-multi-mt and Kardes STS at most 500 pairs per language, STS2017 whole, Tatoeba "
            f"{TATOEBA_ROWS} evenly spaced rows per trained language (its mean with a 95% interval; fewer "
            "candidates make retrieval easier, so compare it only with Tatoeba at the same row count).",
            "",
            *recipe_lines(summary["config"]),
            "![headline](plots/headline.png)",
            "",
            comparison_markdown(results),
            "## Forgetting: Tatoeba in every language, untrained -> distilled student",
            "",
            f"LASER Tatoeba retrieval (mean of both directions), {FORGETTING_ROWS} evenly spaced rows per language; "
            "'in the training data' means the language is one of the run's languages.",
            "",
            forgetting[FORGETTING_TASK].markdown(),
            "## Forgetting on long sentences: TICO-19, untrained -> distilled student",
            "",
            f"TICO-19 retrieval (long COVID-domain sentences, mean of both directions), "
            f"{LONG_SENTENCE_ROWS} evenly spaced rows per language, every language it has.",
            "",
            forgetting[LONG_SENTENCE_TASK].markdown(),
            length_line(training.get("max_seq_length") or {}),
            "",
            "## Training sources",
            "",
            "| source | language | train pairs | dev pairs |",
            "|---|---|---|---|",
            *[
                f"| {s['source']} | {s['language']} | {s['train_pairs']} | {s['dev_pairs']} |"
                for s in training["details"]["sources"]
            ],
            "",
            "## Dev evaluation during training",
            "",
            "| step | dev MSE x100 (both terms) | translation accuracy (mean of languages) | dev STS |",
            "|---|---|---|---|",
            *[
                f"| {h.get('step')} | {-h.get('eval_dev_negative_mse', float('nan')):.4f} | "
                f"{h.get('eval_dev_mean_accuracy', float('nan')):.3f} | "
                f"{h.get('eval_dev-sts_spearman_cosine', float('nan')):.3f} |"
                for h in training["history"]
            ],
            "",
            *per_language_dev_table(training["best"]),
        ]
        (staging / "report.md").write_text("\n".join(text), encoding="utf-8")
        (staging / "results.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
        for name, result in results.items():
            write_report_md(result, staging / f"report-{name.replace(' ', '-')}.md")
