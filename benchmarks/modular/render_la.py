"""The LA study's docs section, rendered from the saved JSON of `benchmarks.modular.run_la` only."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.common.docs_sections import missing_tables, publish
from benchmarks.common.results import DOCS, load_json
from benchmarks.modular.spec import LA_COMMAND, LA_END, LA_LABELS, LA_START, OUT


def _cell(row: dict[str, float] | None, key: str) -> str:
    value = (row or {}).get(key, math.nan)
    return "-" if value is None or math.isnan(value) else f"{value:.1f}"


def choose(rows: dict[str, Any]) -> str | None:
    """The variant with the best dev en-X STS after SE (ties: dev retrieval)."""
    measured = {name: row["after_se"] for name, row in rows.items() if name != "before"}
    if not measured:
        return None
    return max(measured, key=lambda name: (measured[name]["cross"], measured[name]["retrieval"]))


def _seed_lines(results: dict[str, Any]) -> list[str]:
    lines = [f"Seed {results['seed']}; LA {results['la_steps']} and SE {results['se_steps']} steps (the pipeline's). "
             "Dev: the language's STS and en-X STS against the pivot (Spearman x100), retrieval of the CLA stage's "
             "held-out pairs against the pivot (%); test (never chosen on): STS, en-X STS, LASER Tatoeba.", "",
             "| language | encoder | dev STS | dev en-X STS | dev retrieval | test STS | test en-X STS | test Tatoeba "
             "| chosen |", "|---|---|---|---|---|---|---|---|---|"]
    for code, rows in results["languages"].items():
        chosen = choose(rows)
        before = rows.get("before")
        lines.append(f"| {code} | before LA (pruned base) | {_cell(before, 'mono')} | {_cell(before, 'cross')} | "
                     f"{_cell(before, 'retrieval')} | {_cell(before, 'test_mono')} | {_cell(before, 'test_cross')} | "
                     f"{_cell(before, 'test_tatoeba')} | |")
        for name, row in rows.items():
            if name == "before":
                continue
            label = LA_LABELS[name] if "learning_rate" not in row else \
                f"{LA_LABELS[name].removesuffix(')')}, {row['learning_rate']:g})"
            if "after_la" in row:
                la = row["after_la"]
                lines.append(f"| {code} | {label}: after LA | {_cell(la, 'mono')} | {_cell(la, 'cross')} | "
                             f"{_cell(la, 'retrieval')} | | | | |")
            se = row["after_se"]
            lines.append(f"| {code} | {label}: after SE | {_cell(se, 'mono')} | {_cell(se, 'cross')} | "
                         f"{_cell(se, 'retrieval')} | {_cell(se, 'test_mono')} | {_cell(se, 'test_cross')} | "
                         f"{_cell(se, 'test_tatoeba')} | {'yes' if name == chosen else ''} |")
    return lines


def render() -> None:
    """The LA study's section from its seeds' results.json; left alone where the docs show it and none is
    here."""
    found = [load_json(path) for path in sorted((OUT / "la-study").glob("seed-*/results.json"))]
    found = [results for results in found if results and results["languages"]]
    if not found:
        if missing_tables(DOCS, LA_START, LA_END, {"seeds": f"{LA_COMMAND} run"}, set()):
            print("no saved results here: the docs section is left alone")
        return
    section = [LA_START, f"#### Language adaptation that keeps alignment (`{LA_COMMAND} run --seed S`)",
               ""]
    for results in found:
        section += [*_seed_lines(results), ""]
    section.append(LA_END)
    publish(DOCS, LA_START, LA_END, section)
