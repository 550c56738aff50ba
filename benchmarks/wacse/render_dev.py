"""The WACSE dev choices' docs section, from the stored dev.json of `benchmarks.wacse.run dev` only; its dev
measures are the ablation table's dev columns too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.common.docs_sections import missing_tables, replace_section
from benchmarks.common.results import DOCS
from benchmarks.wacse.spec import (
    ADDED_STEPS,
    COMMAND,
    DEV_CHOICES,
    DEV_END,
    DEV_START,
    DEV_STS_LANGUAGES,
    OUT,
    choice_options,
    load_dev,
    run_fingerprint,
)


def dev_measures(best: dict[str, Any] | None, sts: dict[str, float]) -> dict[str, float | None]:
    """The dev columns of a run: retrieval of the kept checkpoint (x100), Kardes STS dev en-X, monolingual and
    English (None where missing)."""
    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    best = best or {}
    return {"retrieval": 100 * best["eval_dev_mean_accuracy"] if "eval_dev_mean_accuracy" in best else None,
            "cross": mean([sts[f"en-{code}"] for code in DEV_STS_LANGUAGES if f"en-{code}" in sts]),
            "mono": mean([sts[code] for code in DEV_STS_LANGUAGES if code in sts]),
            "english": sts.get("en")}


def render() -> None:
    """The dev-choice table's docs section, from dev.json (left alone where no dev.json is stored)."""
    saved = load_dev(OUT)
    if saved is None:
        if missing_tables(DOCS, DEV_START, DEV_END, {"dev": f"{COMMAND} dev"}, set()):
            print("no saved dev choices here: the docs section is left alone")
        return
    def today(name: str, seed: int) -> str:
        return run_fingerprint(choice_options(name, saved["steps"], saved["batch_size"], seed))

    lines = [DEV_START, "#### WACSE dev choices", "", *dev_table(saved, today), "", DEV_END]
    replace_section(DOCS, DEV_START, DEV_END, "\n".join(lines))
    print("\n".join(lines))


def dev_table(saved: dict[str, Any], fingerprint: Callable[[str, int], str]) -> list[str]:
    """One row per choice: dev retrieval (mean of both directions, the kept checkpoint's) and Kardes STS dev,
    each the mean over seeds; in brackets the change against the defaults, seed by seed over the seeds both have
    (seeds differ by more than most choices do). A choice's run for a seed is the one stored under the
    fingerprint the choice has today (`fingerprint(choice, seed)`: today's defaults and the saved budget)."""
    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    cross = [f"en-{code}" for code in DEV_STS_LANGUAGES]

    def measures(run: dict[str, Any]) -> dict[str, float | None]:
        return dev_measures(run.get("best"), run["sts"])

    seeds = sorted({int(key.partition("/")[0].removeprefix("seed-")) for key in saved.get("trained", {})})
    found: dict[str, dict[int, dict[str, float | None]]] = {}
    for name in DEV_CHOICES:
        runs = {seed: measures(saved["trained"][key]) for seed in seeds
                if (key := f"seed-{seed}/{fingerprint(name, seed)}") in saved["trained"]}
        if runs:
            found[name] = runs
    base = saved.get("me5-small", {}).get("sts", {})
    lines = [f"WACSE dev choices (`{COMMAND} dev`, {saved.get('steps')} steps of "
             f"{saved.get('batch_size')} pairs; {saved.get('machine')}): dev retrieval of the kept checkpoint, "
             f"Kardes STS dev en-X and monolingual ({', '.join(DEV_STS_LANGUAGES)}), and English (what training "
             "on translations costs the pivot), mean over seeds; in brackets the change against the defaults "
             "on the same seeds.", "",
             "| choice | options | seeds | dev retrieval | Kardes STS dev en-X | Kardes STS dev monolingual | "
             "Kardes STS dev English |", "|---|---|---|---|---|---|---|",
             f"| me5-small (untrained) | - | - | - | {mean([base[c] for c in cross if c in base]) or 0:.2f} | "
             f"{mean([base[c] for c in DEV_STS_LANGUAGES if c in base]) or 0:.2f} | {base.get('en', 0):.2f} |"]
    reference = found.get("defaults", {})
    for name, runs in found.items():
        cells = []
        for column in ("retrieval", "cross", "mono", "english"):
            value = mean([v for run in runs.values() if (v := run[column]) is not None])
            changes = [run[column] - reference[seed][column] for seed, run in runs.items()
                       if seed in reference and None not in (run[column], reference[seed][column])]
            cells.append("-" if value is None else f"{value:.2f}" + (
                f" ({mean(changes):+.2f})" if changes and name != "defaults" else ""))
        added = [f"{ADDED_STEPS[name]} steps added"] if name in ADDED_STEPS else []
        options = ", ".join([f"{k}={v}" for k, v in DEV_CHOICES[name].items()] + added) or "the defaults"
        lines.append(f"| {name} | {options} | {len(runs)} | " + " | ".join(cells) + " |")
    return lines
