"""The modular miniature's docs sections (the seeds' tables and the vocabulary comparison), rendered from the
saved JSON of `benchmarks.modular.run` only."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from benchmarks.common.docs_sections import missing_tables, publish, replace_section
from benchmarks.common.results import DOCS
from benchmarks.common.tables import cell, mean
from benchmarks.modular.spec import (
    BASE,
    COMMAND,
    END,
    LASER,
    OUT,
    PIVOT,
    ROWS,
    START,
    VOCABULARY_END,
    VOCABULARY_START,
    recorded_before,
)


def _routing_how(seed: dict[str, Any]) -> tuple[str, str]:
    """(identifier, rows) of a seed's routing measure; runs before 2026-11-26 stored langid.py's on the first
    Tatoeba rows."""
    routing = seed["routing_accuracy"]
    if "identifier" in routing:
        return routing["identifier"], routing["rows"]
    return "langid.py", "the first Tatoeba rows"


def _routing(seed: dict[str, Any]) -> dict[str, float]:
    routing = seed["routing_accuracy"]
    return routing["accuracy"] if "identifier" in routing else routing


def _score_table(seeds: list[dict[str, Any]]) -> list[str]:
    languages = seeds[0]["languages"]
    columns = [(PIVOT, "mono")] + [(code, "mono") for code in languages] + [(code, "cross") for code in languages]
    columns += [(code, "tatoeba") for code in languages if LASER.get(code)]
    labels = {"mono": "mono {}", "cross": "en-{} STS", "tatoeba": "Tatoeba {}"}
    header = ["model", *[labels[kind].format(code) for code, kind in columns], "mono mean", "cross mean"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, label in ROWS.items():
        if not all(name in seed["per_language"] for seed in seeds):
            continue
        cells = [label]
        for code, kind in columns:
            cells.append(cell([seed["per_language"][name][code].get(kind, math.nan) for seed in seeds]))
        for kind in ("mono", "cross"):
            cells.append(cell([mean([seed["per_language"][name][code].get(kind, math.nan)
                                      for code in [PIVOT, *languages] if kind in seed["per_language"][name][code]])
                               for seed in seeds]))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# Each stage's own dev measure, as its training.json records it: (key, factor to the shown unit, format).
STAGE_MEASURES = {"la": ("heldout_mlm_loss", 1.0, "{:.2f}"), "se": ("dev_mean_accuracy", 100.0, "{:.1f}"),
                  "cla": ("dev_mean_accuracy", 1.0, "{:.1f}")}


def _stage_change(stage: str, runs: list[dict[str, Any]]) -> str:
    """'before -> after' of the stage's dev measure (mean over seeds), read from each run's training.json."""
    key, factor, form = STAGE_MEASURES[stage]
    pairs = []
    for run_ in runs:
        before = (run_.get("before") or recorded_before(run_)).get(key)
        after = (run_.get("best") or {}).get(f"eval_{key}")
        if before is not None and after is not None:
            pairs.append((factor * before, factor * after))
    if len(pairs) != len(runs):
        return "-"
    return f"{form.format(mean([b for b, _ in pairs]))} -> {form.format(mean([a for _, a in pairs]))}"


def _cost_table(seeds: list[dict[str, Any]]) -> list[str]:
    lines = ["| encoder | parameters (base: {:,}) | stage | steps | dev measure before -> after | wall time (s) | "
             "peak memory (MB) |".format(seeds[0]["base_parameters"]), "|---|---|---|---|---|---|---|"]
    for code, encoder in seeds[0]["encoders"].items():
        share = encoder["parameters"] / seeds[0]["base_parameters"]
        for stage in encoder["stages"]:
            runs = [seed["encoders"][code]["stages"][stage] for seed in seeds]
            resumed = "*" if any(r.get("resumed") for r in runs) else ""
            lines.append(f"| {code} | {encoder['parameters']:,} ({share:.0%}) | {stage} | {runs[0]['steps']} | "
                         f"{_stage_change(stage, runs)} | {cell([r['wall_seconds'] for r in runs])}{resumed} | "
                         f"{cell([r['peak_memory_mb'] for r in runs])} |")
    for name in ("single-m", "single-c", "single-mc"):
        if not all(name in seed["singles"] for seed in seeds):
            continue
        runs = [seed["singles"][name] for seed in seeds]
        resumed = "*" if any(r.get("resumed") for r in runs) else ""
        lines.append(f"| {ROWS[name]} | {seeds[0]['base_parameters']:,} (100%) | full tuning | {runs[0]['steps']} "
                     f"| - | {cell([r['wall_seconds'] for r in runs])}{resumed} | "
                     f"{cell([r['peak_memory_mb'] for r in runs])} |")
    return lines


def render_vocabulary() -> None:
    """The vocabulary study's own section: its runs are separate from the seeds', so a seed rendered on a machine
    without them leaves this section as it was."""
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("vocabulary-*-seed-*.json"))]
    if not runs:
        if missing_tables(DOCS, VOCABULARY_START, VOCABULARY_END, {"runs": "benchmarks.modular.run vocabulary"}, set()):
            print("no saved vocabulary runs here: the vocabulary section is left alone")
        return
    lines = [VOCABULARY_START,
             "Vocabulary: a new tokenizer with FOCUS-initialised embeddings against the pruned base vocabulary, "
             f"through the same stages (Multi_m mono, Multi_mc cross; `{COMMAND} vocabulary --seed S --language L`):",
             "", "| language | seed | vocabulary | parameters | mono STS | en-X STS | Tatoeba |",
             "|---|---|---|---|---|---|---|"]
    for run_ in runs:
        for kind in ("prune", "new"):
            row = run_[kind]
            lines.append(f"| {run_['language']} | {run_['seed']} | {kind} | {row['parameters']:,} | "
                         f"{row['mono']:.1f} | {row['cross']:.1f} | {row['tatoeba']:.1f} |")
    lines.append(VOCABULARY_END)
    replace_section(DOCS, VOCABULARY_START, VOCABULARY_END, "\n".join(lines))
    print("\n".join(lines))


def _cpu(machine: str) -> str:
    """'a 2-core CPU' from a seed's machine ('x86_64, 2 cores, torch threads 2'), for the heading."""
    cores = re.search(r"(\d+) cores", machine)
    return f"a {cores.group(1)}-core CPU" if cores else "CPU"


def render() -> None:
    """The vocabulary section, then the seeds' section, each from its own JSON; a section whose JSON is not
    here and that the docs show is left alone."""
    render_vocabulary()
    seeds = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(OUT.glob("seed-*.json"))]
    command = f"{COMMAND} run"
    if not seeds:
        if missing_tables(DOCS, START, END, {"seeds": command}, set()):
            print("no saved seeds here: the docs section is left alone")
        return
    first = seeds[0]
    languages = first["languages"]
    if all("single-m" in s["per_language"] for s in seeds):
        multi_m, single_m = ({code: mean([s["per_language"][name][code]["mono"] for s in seeds])
                              for code in [PIVOT, *languages]} for name in ("multi-m", "single-m"))
        winners = ", ".join(f"{code} {'Multi_m' if multi_m[code] > single_m[code] else 'Single_m'} "
                            f"({multi_m[code] - single_m[code]:+.1f})" for code in [PIVOT, *languages])
    else:
        winners = "not measured yet (the Single baselines have not run for every seed)"
    routing_lines = []
    for how in dict.fromkeys(_routing_how(s) for s in seeds):  # seeds measured alike share a line
        alike = [s for s in seeds if _routing_how(s) == how]
        values = {code: cell([_routing(s).get(code, math.nan) for s in alike]) for code in [PIVOT, *languages]}
        routing_lines.append(f"Language routing (`encode` without a language: {how[0]} restricted to the "
                             f"bundle's languages) on {how[1]}, seed {', '.join(str(s['seed']) for s in alike)}: "
                             + ", ".join(f"{code} {value} %" for code, value in values.items()) + ".")
    section = [
        START,
        f"### Modular sentence encoders (Huang et al. 2024): a miniature on {_cpu(first['machine'])}",
        "",
        f"Seeds {', '.join(str(s['seed']) for s in seeds)} (cells: mean, then each seed); {first['machine']}. "
        f"Commands: `{command} --seed S --steps {first['steps']} --languages {' '.join(languages)}`, one per seed.",
        f"Base {BASE}; English pivot plus {', '.join(languages)}; every stage {first['steps']} optimizer steps of "
        f"{first['batch_size']} (max {first['max_seq_length']} tokens). Single_m trains as many steps as all SE "
        "stages together, Single_c and Single_mc's second part as many as all CLA stages, on the same pairs.",
        "Tasks (trimmed as in the demo): stsb-multi-mt and Kardes STS test (500 pairs; mono, and en-X built row by "
        "row), STS2017 en-en, LASER Tatoeba (500 rows, mean of both directions). English mono is the mean of "
        "STS-B (stsb-multi-mt en) and STS2017 en-en.",
        "",
        *_score_table(seeds),
        "",
        "Multi_mc's monolingual scores in mode mono are Multi_m's, bit for bit (the adapters are off; "
        "tests/methods/modular/test_smoke_preset.py checks it on me5-small); the Multi_mc row shows what mode cross "
        "does to them.",
        f"Multi_m against Single_m, monolingual STS per language (positive: Multi_m better): {winners}.",
        "",
        *routing_lines,
        "",
        "Cost of each stage (each run one process on the machine above; peak memory is each run's own resident "
        "high-water mark; `*`: a stage resumed after an interruption, whose time covers the resumed part only; dev "
        "measure, mean of the seeds: LA held-out MLM loss (the head is new, tied to the input embeddings, so "
        "'before' is an untrained head), SE paraphrase retrieval accuracy, CLA retrieval against the pivot, each at "
        "the kept checkpoint):",
        "",
        *_cost_table(seeds),
        "",
        END,
    ]
    publish(DOCS, START, END, section)
