"""The eval-suites section of docs/benchmarks.md, from the stored suite results, throughput rows and machine only
(`python -m benchmarks.eval_suites.run --render-only`, or `make render`)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from benchmarks.common.docs_sections import replace_section, shown_section
from benchmarks.common.results import DOCS, RESULTS, load_json
from benchmarks.eval_suites.spec import END, NOTES, START

READER_NOTES = (
    "Wall times vary by about 20% between runs of the same suite on these 2 cores (minilm-en's sts17 alone took "
    "12.4-15.9 s).",
    "The me5-small default run and both full-suite runs shared the cores with other work, so their wall times are "
    "upper bounds.",
    "geometry-kardes in the full suite pairs Kardes's rows by position rather than by its index column (a few cells "
    "untrimmed); a re-run will move it slightly.",
    "Belebele: the default suite scores the first 300 of 900 questions; the full suite all 900.",
)
"""What a reader needs to know about the stored runs' conditions, shown under the machine line (edit these when
the suites are re-run)."""

# The same tasks scored with plain sentence-transformers on the same models; our eval must agree.
REFERENCES = [
    ("sts17", "en-en", {"minilm-en": 87.6, "me5-small": 86.6}),
    ("stsb-multi-mt", "en-de", {"minilm-en": 28.5, "me5-small": 67.2}),
    ("tatoeba", "deu", {"minilm-en": 12.7, "me5-small": 97.1}),
    ("tatoeba", "amh", {"minilm-en": 1.5, "me5-small": 81.0}),
]


def load_throughput() -> list[dict]:
    """Saved throughput measurements."""
    path = RESULTS / "throughput.json"
    return json.loads(path.read_text()) if path.is_file() else []


def load_results() -> dict[str, dict[str, dict]]:
    """suite -> model -> results.json content."""
    found: dict[str, dict[str, dict]] = defaultdict(dict)
    for path in sorted(RESULTS.glob("*/*/results.json")):
        found[path.parent.parent.name][path.parent.name] = json.loads(path.read_text())
    return found


def _main_rows(task: dict) -> dict[str, float]:
    return {row["subset"]: row["value"] for row in task["scores"] if row["main"]}


def _summary(task: dict) -> float:
    rows = _main_rows(task)
    if "avg" in rows:
        return rows["avg"]
    measured = [v for k, v in rows.items() if not k.endswith("avg")]
    return sum(measured) / len(measured) if measured else float("nan")


def render_section(results: dict[str, dict[str, dict]], notes: tuple[str, ...] | list[str] | None = None,
                   machine: str | None = None) -> str:
    """The section (markers included): reference checks, then per suite a summary, timings and per-task tables.
    Only stored facts go in (no rendering command, no live machine), so rendering twice gives the same bytes."""
    lines = [
        START,
        "Produced by `python -m benchmarks.eval_suites.run --suites default --throughput` and "
        "`python -m benchmarks.eval_suites.run --suites full` (`make benchmarks` runs both); "
        "`python -m benchmarks.eval_suites.run --render-only` rewrites this section. Raw results: "
        "`results/bench/<suite>/<model>/`.",
        "",
        f"Machine: {machine or 'not recorded'}. Wall times are per task inside one process (model loading "
        "excluded); the embedding cache means a task that reuses sentences of an earlier task (language-bias after "
        "sts17) costs almost nothing.",
        "",
    ]
    lines += [f"- {note}" for note in notes or []] + ([""] if notes else [])
    lines += [
        "### Reference checks (the same tasks scored with plain sentence-transformers)",
        "",
        "| task | subset | model | polyembed | reference | diff |",
        "|---|---|---|---|---|---|",
    ]
    for task_name, subset, refs in REFERENCES:
        for model, ref in refs.items():
            for suite in ("default", "full"):
                data = results.get(suite, {}).get(model)
                task = next((t for t in (data or {}).get("tasks", []) if t["task"] == task_name), None)
                if task and subset in _main_rows(task):
                    value = _main_rows(task)[subset]
                    lines.append(f"| {task_name} | {subset} | {model} | {value:.2f} | {ref:.1f} | {value - ref:+.2f} |")
                    break
    throughput = load_throughput()
    if throughput:
        reference = {"minilm-en": 387, "me5-small": 142}
        lines += [
            "",
            "### Encoding throughput (STS-B test sentences, batch 64, 2 threads)",
            "",
            "| model | sentences | seconds | polyembed sentences/s | plain sentence-transformers, same run | "
            "reference (plain sentence-transformers, separate run) |",
            "|---|---|---|---|---|---|",
        ]
        for row in throughput:
            lines.append(
                f"| {row['model']} | {row['sentences']} | {row['seconds']} | {row['sentences_per_second']} "
                f"| {row.get('plain_sentence_transformers_per_second', '—')} "
                f"| {reference.get(row['model'], '—')} |"
            )
    for suite, by_model in sorted(results.items()):
        models = sorted(by_model)
        lines += ["", f"### Suite `{suite}`", ""]
        lines.append("| model | total wall time (s) | torch | threads |")
        lines.append("|---|---|---|---|")
        for model in models:
            env = by_model[model]["environment"]
            lines.append(f"| {model} | {by_model[model]['seconds']:.1f} | {env['torch']} | {env['cpu_threads']} |")
        lines += [
            "",
            "| task | main metric | " + " | ".join(models) + " | " + " | ".join(f"{m} s" for m in models) + " |",
            "|---" * (2 + 2 * len(models)) + "|",
        ]
        task_names = [t["task"] for t in by_model[models[0]]["tasks"]]
        for name in task_names:
            tasks = {m: next(t for t in by_model[m]["tasks"] if t["task"] == name) for m in models}
            metric = tasks[models[0]]["metadata"]["main_score"]
            values = " | ".join(f"{_summary(tasks[m]):.2f}" for m in models)
            times = " | ".join(f"{tasks[m]['seconds']:.1f}" for m in models)
            lines.append(f"| {name} | {metric} | {values} | {times} |")
        for name in task_names:
            tasks = {m: next(t for t in by_model[m]["tasks"] if t["task"] == name) for m in models}
            rows = {m: _main_rows(tasks[m]) for m in models}
            subsets = list(rows[models[0]])
            metric = tasks[models[0]]["metadata"]["main_score"]
            lines += [
                "",
                f"#### {suite} · {name} ({metric})",
                "",
                "| subset | " + " | ".join(models) + " |",
                "|---" * (1 + len(models)) + "|",
            ]
            for subset in subsets:
                lines.append(
                    f"| {subset} | "
                    + " | ".join(f"{rows[m][subset]:.2f}" if subset in rows[m] else "—" for m in models)
                    + " |"
                )
    return "\n".join([*lines, "", END])


def render() -> str:
    """Rewrite the section from the stored results and machine (`make render` calls this too); when the docs show
    results that are not here, print the section and leave the docs alone."""
    stored = load_json(NOTES) or {}
    results = load_results()
    section = render_section(results, READER_NOTES, stored.get("machine"))
    missing = missing_results(DOCS, results, bool(load_throughput()))
    if missing:
        print(section)
        print(f"docs/benchmarks.md left as it is: the docs show {', '.join(missing)}, whose results are not in "
              f"{RESULTS}; copy what you re-measured from the section above by hand")
        return section
    replace_section(DOCS, START, END, section)
    print(f"wrote the eval-suites section of {DOCS}")
    return section


def missing_results(docs: Path, results: dict[str, dict[str, dict]], throughput: bool) -> list[str]:
    """What the docs' section shows (suites, their models, the throughput table) that has no results here."""
    shown = shown_section(docs, START, END)
    missing = [] if throughput or "### Encoding throughput" not in shown else ["the throughput table"]
    for block in shown.split("\n### Suite `")[1:]:
        suite = block.split("`", 1)[0]
        table = block.split("| model | total wall time (s) |", 1)[-1].split("\n\n", 1)[0]
        models = [line.split("|")[1].strip() for line in table.splitlines()[2:] if line.startswith("|")]
        missing += [f"{suite}/{model}" for model in models if model not in results.get(suite, {})]
    return missing
