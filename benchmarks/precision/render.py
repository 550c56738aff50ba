"""The inference-precision section of docs/benchmarks.md, from the stored precision.json only."""

from __future__ import annotations

import math

from benchmarks.common.docs_sections import missing_tables, replace_section
from benchmarks.common.results import DOCS, load_json
from benchmarks.precision.spec import COMMAND, END, OUT, START


def _largest(a: dict[str, float], b: dict[str, float]) -> tuple[float, str]:
    gaps = {key: abs(b[key] - value) for key, value in a.items() if key in b}
    key = max(gaps, key=gaps.__getitem__)
    return gaps[key], key


def render() -> None:
    """The docs section from precision.json; left alone (with a note) where the docs show a table measured
    elsewhere and no JSON is stored here."""
    payload = load_json(OUT / "precision.json")
    if payload is None:
        if missing_tables(DOCS, START, END, {"precision": COMMAND}, set()):
            print(f"docs/benchmarks.md left as it is: no precision.json in {OUT}")
        return
    lines = [START, f"`{COMMAND} --models {' '.join(payload['models'])}`: the demo's "
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
