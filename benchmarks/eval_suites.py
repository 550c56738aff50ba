"""Benchmark: evaluate the offline models on the `default` and `full` suites; their section of docs/benchmarks.md.

    python benchmarks/eval_suites.py                       # both suites, both models (full takes long)
    python benchmarks/eval_suites.py --suites default      # only the default suite
    python benchmarks/eval_suites.py --render-only         # rewrite the section from saved results

Raw results go to results/bench/<suite>/<model>/ (results.json, report.md, plots); the section between the
eval-suites markers is rendered from every results.json found there, so suites can be run separately. The
machine and the `--note`s are kept in results/bench/suites-notes.json, so a re-render writes the same bytes.
A suite, model or throughput table the docs show whose results are not here leaves the docs alone (results/ is
not in git).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path

from docs_sections import replace_section, shown_section
from result_files import cpu_description, load_json, write_json

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results" / "bench"
DOC = REPO / "docs" / "benchmarks.md"
START, END = "<!-- eval-suites:start -->", "<!-- eval-suites:end -->"
NOTES = RESULTS / "suites-notes.json"
"""{"machine": ..., "notes": [...]}: written by a measuring run (machine) or by --note (notes)."""

# Measured here with plain sentence-transformers (the brief); our eval must agree.
REFERENCES = [
    ("sts17", "en-en", {"minilm-en": 87.6, "me5-small": 86.6}),
    ("stsb-multi-mt", "en-de", {"minilm-en": 28.5, "me5-small": 67.2}),
    ("tatoeba", "deu", {"minilm-en": 12.7, "me5-small": 97.1}),
    ("tatoeba", "amh", {"minilm-en": 1.5, "me5-small": 81.0}),
]


def run_suite(model: str, suite: str) -> None:
    """Evaluate one model on one suite through the public API (writes results/bench/<suite>/<model>)."""
    from polyembed import evaluate

    start = time.perf_counter()
    evaluate(model, suite=suite, out_dir=RESULTS / suite / model)
    print(f"[{suite}] {model}: {time.perf_counter() - start:.1f} s", flush=True)


def measure_throughput(model_name: str, n: int = 1024, batch_size: int = 64, repeats: int = 3) -> dict:
    """Sentences per second (batch 64, 2 torch threads) on STS-B test English sentences: polyembed's
    `encode` and plain sentence-transformers on the same model folder and sentences (best of `repeats`)."""
    import torch
    from sentence_transformers import SentenceTransformer

    from polyembed import encode, load_model
    from polyembed.data.registry import get_dataset

    torch.set_num_threads(2)
    pairs = get_dataset("stsbenchmark").load("test")
    sentences = list(dict.fromkeys(pairs.sentences1 + pairs.sentences2))[:n]
    model = load_model(model_name)
    plain = SentenceTransformer(model.path, device="cpu")

    def best_seconds(run: object) -> float:
        run(sentences[:batch_size])  # warm-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run(sentences)
            times.append(time.perf_counter() - start)
        return min(times)

    ours = best_seconds(lambda texts: encode(model, texts, batch_size=batch_size))
    theirs = best_seconds(lambda texts: plain.encode(texts, batch_size=batch_size))
    return {
        "model": model_name,
        "sentences": len(sentences),
        "batch_size": batch_size,
        "threads": 2,
        "seconds": round(ours, 2),
        "sentences_per_second": round(len(sentences) / ours, 1),
        "plain_sentence_transformers_per_second": round(len(sentences) / theirs, 1),
    }


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


def render_section(results: dict[str, dict[str, dict]], notes: list[str] | None = None,
                   machine: str | None = None) -> str:
    """The section (markers included): reference checks, then per suite a summary, timings and per-task tables.
    Only stored facts go in (no rendering command, no live machine), so rendering twice gives the same bytes."""
    lines = [
        START,
        "Produced by `python benchmarks/eval_suites.py --suites default --throughput` and "
        "`python benchmarks/eval_suites.py --suites full` (`make benchmarks` runs both); "
        "`python benchmarks/eval_suites.py --render-only` rewrites this section. Raw results: "
        "`results/bench/<suite>/<model>/`.",
        "",
        f"Machine: {machine or 'not recorded'}. Wall times are per task inside one process (model loading "
        "excluded); the embedding cache means a task that reuses sentences of an earlier task (language-bias after "
        "sts17) costs almost nothing.",
        "",
    ]
    lines += [f"- {note}" for note in notes or []] + ([""] if notes else [])
    lines += [
        "## Reference checks (plain sentence-transformers numbers from the brief)",
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
            "## Encoding throughput (STS-B test sentences, batch 64, 2 threads)",
            "",
            "| model | sentences | seconds | polyembed sentences/s | plain sentence-transformers, same run | "
            "brief's reference |",
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
        lines += ["", f"## Suite `{suite}`", ""]
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
                f"### {suite} · {name} ({metric})",
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


def main() -> None:
    from polyembed.messages import show_messages

    show_messages()  # the library's progress notes in the benchmark's log
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", default="default,full")
    parser.add_argument("--models", default="minilm-en,me5-small")
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--throughput", action="store_true", help="also measure encoding throughput")
    parser.add_argument("--note", action="append", default=[], help="a measurement note for the document")
    args = parser.parse_args()
    if args.throughput and not args.render_only:
        rows = [measure_throughput(model) for model in args.models.split(",")]
        write_json(RESULTS / "throughput.json", rows)
    if not args.render_only and args.suites:
        for suite in args.suites.split(","):
            for model in args.models.split(","):
                run_suite(model, suite)
    stored = load_json(NOTES) or {}
    if not args.render_only or args.note:
        stored = {"machine": stored.get("machine") if args.render_only else cpu_description(),
                  "notes": args.note or stored.get("notes", [])}
        write_json(NOTES, stored)
    render()


def render() -> str:
    """Rewrite the section from the stored results and notes (`make render` calls this too); when the docs show
    results that are not here, print the section and leave the docs alone."""
    stored = load_json(NOTES) or {}
    results = load_results()
    section = render_section(results, stored.get("notes"), stored.get("machine"))
    missing = missing_results(DOC, results, bool(load_throughput()))
    if missing:
        print(section)
        print(f"docs/benchmarks.md left as it is: the docs show {', '.join(missing)}, whose results are not in "
              f"{RESULTS}; copy what you re-measured from the section above by hand")
        return section
    replace_section(DOC, START, END, section)
    print(f"wrote the eval-suites section of {DOC}")
    return section


def missing_results(docs: Path, results: dict[str, dict[str, dict]], throughput: bool) -> list[str]:
    """What the docs' section shows (suites, their models, the throughput table) that has no results here."""
    shown = shown_section(docs, START, END)
    missing = [] if throughput or "## Encoding throughput" not in shown else ["the throughput table"]
    for block in shown.split("\n## Suite `")[1:]:
        suite = block.split("`", 1)[0]
        table = block.split("| model | total wall time (s) |", 1)[-1].split("\n\n", 1)[0]
        models = [line.split("|")[1].strip() for line in table.splitlines()[2:] if line.startswith("|")]
        missing += [f"{suite}/{model}" for model in models if model not in results.get(suite, {})]
    return missing


if __name__ == "__main__":
    main()
