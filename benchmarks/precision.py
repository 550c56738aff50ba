"""Inference precision: what bf16 autocast costs in scores and saves in time, on the demo's own evaluations.

  python benchmarks/precision.py run [--models me5-small results/demo/run/model]   # fp32 and bf16, each model
  python benchmarks/precision.py render                                             # the table, from saved JSON

For each model, the demo's tasks (`polyembed.demo.demo_tasks`, the ten demo languages) and the demo's forgetting
task (Tatoeba, all 112 languages, 50 rows each) run once in float32 and once under bf16 autocast, in one process,
nothing cached. Reported: the wall time of each, every headline number of both and their difference, and the
largest difference over every main score (task x subset) and over the 112 per-language forgetting scores.
`polyembed demo` evaluates in bf16 where the CPU computes it natively (`--precision auto`); this is the
measurement behind that choice. Results -> results/bench/precision/precision.json, rendered into
docs/benchmarks.md (section `precision`).
"""

from __future__ import annotations

import math
import os
import platform
import time
from pathlib import Path
from typing import Any

from docs_sections import missing_tables, replace_section
from result_files import load_json, write_json
from script_cli import script_parser

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "results" / "bench" / "precision"
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- precision:start -->", "<!-- precision:end -->"
LANGUAGES = ["de", "fr", "es", "ru", "zh", "ar", "tr", "kk", "sw", "ha"]


def _main_scores(result: Any) -> dict[str, float]:
    return {f"{s.task}/{s.subset}/{s.metric}": s.value for s in result.scores if s.main and not math.isnan(s.value)}


def _one(model: Any, precision: str) -> dict[str, Any]:
    from polyembed.demo import FORGETTING_ROWS, evaluate_on_demo_tasks, headline_metrics
    from polyembed.eval.api import evaluate
    from polyembed.eval.forgetting import forgetting_task_options
    from polyembed.eval.registry import get_task

    started = time.perf_counter()
    result = evaluate_on_demo_tasks(model, precision, LANGUAGES, show_progress=False, precision=precision)
    demo_seconds = time.perf_counter() - started
    started = time.perf_counter()
    task = get_task("tatoeba", **forgetting_task_options(FORGETTING_ROWS))
    forgetting = evaluate(model, [task], show_progress=False, precision=precision)
    forgetting_seconds = time.perf_counter() - started
    return {"demo_tasks_seconds": round(demo_seconds, 1), "forgetting_seconds": round(forgetting_seconds, 1),
            "headline": headline_metrics(result), "main_scores": _main_scores(result),
            "forgetting_scores": {s.subset: s.value for s in forgetting.scores
                                  if s.metric == "accuracy" and "avg" not in s.subset}}


def run(models: list[str]) -> None:
    from polyembed.models.encoder import bf16_available
    from polyembed.models.loading import load_model

    if not bf16_available():
        raise SystemExit("this CPU has no native bf16 (avx512_bf16 / amx_bf16): bf16 would be emulated")
    payload: dict[str, Any] = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                           "platform": platform.platform()}, "models": {}}
    for name in models:
        model = load_model(name)
        print(f"{name}: float32", flush=True)
        fp32 = _one(model, "fp32")
        print(f"{name}: bf16", flush=True)
        bf16 = _one(model, "bf16")
        payload["models"][name] = {"fp32": fp32, "bf16": bf16}
        write_json(OUT / "precision.json", payload)
    render()


def _largest(a: dict[str, float], b: dict[str, float]) -> tuple[float, str]:
    gaps = {key: abs(b[key] - value) for key, value in a.items() if key in b}
    key = max(gaps, key=gaps.__getitem__)
    return gaps[key], key


def render() -> None:
    """The docs section from precision.json; left alone (with a note) where the docs show a table measured
    elsewhere and no JSON is stored here."""
    payload = load_json(OUT / "precision.json")
    if payload is None:
        if missing_tables(DOCS, START, END, {"precision": "python benchmarks/precision.py run"}, set()):
            print(f"docs/benchmarks.md left as it is: no precision.json in {OUT}")
        return
    lines = [START, f"`python benchmarks/precision.py run --models {' '.join(payload['models'])}`: the demo's "
             "evaluation tasks (the ten demo languages) and its forgetting task (Tatoeba, 112 languages, 50 rows "
             "each) once in float32 and once under bf16 autocast, in one process, nothing cached "
             f"({payload['machine']['cpus']} CPUs, Python {payload['machine']['python']}). Headline numbers are "
             "the demo report's.", ""]
    for name, runs in payload["models"].items():
        fp32, bf16 = runs["fp32"], runs["bf16"]
        lines += [f"**{name}** (demo tasks {fp32['demo_tasks_seconds']:.0f} s in float32, "
                  f"{bf16['demo_tasks_seconds']:.0f} s in bf16; forgetting task {fp32['forgetting_seconds']:.0f} s / "
                  f"{bf16['forgetting_seconds']:.0f} s)", "",
                  "| headline | float32 | bf16 | difference |", "|---|---|---|---|"]
        for key, value in fp32["headline"].items():
            other = bf16["headline"][key]
            if math.isnan(value) or math.isnan(other):
                continue
            lines.append(f"| {key} | {value:.2f} | {other:.2f} | {other - value:+.2f} |")
        gap, where = _largest(fp32["main_scores"], bf16["main_scores"])
        forgetting_gap, language = _largest(fp32["forgetting_scores"], bf16["forgetting_scores"])
        changed = sum(1 for key, value in fp32["forgetting_scores"].items()
                      if abs(bf16["forgetting_scores"].get(key, value) - value) > 1e-9)
        lines += ["", f"Largest difference over the {len(fp32['main_scores'])} main scores: {gap:.2f} ({where}); "
                  f"over the {len(fp32['forgetting_scores'])} forgetting languages: {forgetting_gap:.2f} ({language}),"
                  f" {changed} of them changed at all.", ""]
    replace_section(DOCS, START, END, "\n".join([*lines, END]))
    print("\n".join(lines))


def main() -> None:
    parser, sub = script_parser(__doc__)
    p = sub.add_parser("run")
    p.add_argument("--models", nargs="+", default=["me5-small"])
    sub.add_parser("render")
    args = parser.parse_args()
    if args.command == "run":
        run(args.models)
    else:
        render()


if __name__ == "__main__":
    main()
