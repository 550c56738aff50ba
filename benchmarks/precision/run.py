"""Inference precision: what bf16 autocast costs in scores and saves in time, on the demo's own evaluations.

  python -m benchmarks.precision.run run [--models me5-small results/demo/run/model]   # fp32 and bf16
  python -m benchmarks.precision.run render           # the table, from saved JSON

For each model, the demo's tasks (`polyembed.eval.headline.demo_tasks`, the ten demo languages) and the demo's
forgetting task (Tatoeba, all 112 languages, 50 rows each) run once in float32 and once under bf16 autocast, in
one process, nothing cached. Reported: the wall time of each, every headline number of both and their
difference, and the largest difference over every main score (task x subset) and over the 112 per-language
forgetting scores. `polyembed demo` evaluates in bf16 where the CPU computes it natively (`--precision auto`);
this is the measurement behind that choice. Results -> results/bench/precision/precision.json, rendered into
docs/benchmarks.md (section `precision`).
"""

from __future__ import annotations

import math
import os
import platform
import time
from typing import Any

from benchmarks.common.results import write_json
from benchmarks.common.script_cli import script_parser
from benchmarks.precision.render import render
from benchmarks.precision.spec import OUT

os.environ.setdefault("HF_HUB_OFFLINE", "1")
LANGUAGES = ["de", "fr", "es", "ru", "zh", "ar", "tr", "kk", "sw", "ha"]


def _main_scores(result: Any) -> dict[str, float]:
    return {f"{s.task}/{s.subset}/{s.metric}": s.value for s in result.scores if s.main and not math.isnan(s.value)}


def _one(model: Any, precision: str) -> dict[str, Any]:
    from polyembed.demo import FORGETTING_ROWS
    from polyembed.eval.api import evaluate
    from polyembed.eval.forgetting import forgetting_task_options
    from polyembed.eval.headline import evaluate_on_demo_tasks, headline_metrics
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
