"""WACSE's ablation section of docs/benchmarks.md (the test columns, the dev columns, the word figures and the
budget curve), from the stored ablation.json and figures only; `render` also renders the dev choices' section."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.common.docs_sections import missing_tables, publish, shown_rows, shown_table
from benchmarks.common.results import DOCS, FIGURES
from benchmarks.wacse.render_dev import dev_measures
from benchmarks.wacse.render_dev import render as render_dev
from benchmarks.wacse.spec import (
    BUDGET_OPENING,
    COMMAND,
    DEV_HEADER,
    DEV_STS_LANGUAGES,
    END,
    HIGH,
    LOW,
    OUT,
    START,
    VARIANTS,
    run_fingerprint,
    trained_fingerprint,
    variant_options,
)


def _load() -> dict[str, Any] | None:
    path = OUT / "ablation.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def render() -> None:
    """The dev choices' section, then the ablation's from ablation.json; rows and the budget curve the docs
    show for runs not stored here keep their text."""
    render_dev()
    payload = _load()
    command = f"{COMMAND} run"
    if payload is None:
        if missing_tables(DOCS, START, END, {"ablation": command}, set()):
            print("no saved results here: the docs section is left alone")
        return
    runs = payload["runs"]
    held_out = "; ".join(f"seed {seed}: {words['dev_pairs']} pairs, {words['dev_links']} links"
                         for seed, words in sorted(runs.get("me5-small", {}).get("words", {}).items()))
    names = ["me5-small", *VARIANTS]
    columns = [f"tatoeba/{code}" for code in LOW.values()]
    header = ["model", *[c.split("/")[1] for c in columns], "low mean", "high mean", "STS17 cross",
              "aligned-word cos", "word retrieval", "train wall s", "peak GB"]
    lines = [START, "### WACSE ablation (miniature)", "",
             f"`{command} --steps {payload.get('steps')}` ({payload.get('machine')}); cells: mean over seeds "
             "(each seed). Tatoeba: accuracy, mean of both directions; low: "
             f"{', '.join(LOW.values())}; high: {', '.join(HIGH)}. STS17 cross: tracks ar-en, es-en (4a), tr-en. "
             "Aligned-word cos: mean cosine (x100, last layer) of the word pairs that me5-small's itermax aligner "
             f"links (score >= 0.8) in each seed's held-out pairs ({held_out}), which that seed's models never "
             "trained on; me5-small is scored on every seed's pairs. The links are chosen by me5-small itself, so "
             "the score favours it, but the models of a seed are measured on the same pairs. Word retrieval: each "
             "linked word against every linked word of the other language in those pairs, a hit when the nearest "
             "is its translation's word (mean of both directions); unlike the cosine it does not move when a whole "
             "space gets more or less anisotropic. Training wall time and peak "
             "memory (resident set) per run, alone on the machine; a run resumed from a checkpoint "
             "leaves the time column (its clock counts only the steps after resuming).", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    shown, kept_rows = shown_rows(DOCS, START, END, lines[-2]), []
    for name in names:
        keys = ["me5-small"] if name == "me5-small" else _todays_keys(payload, name)  # today's options only
        rows = [runs[k] for k in keys if "scores" in runs.get(k, {})]
        if not rows:
            if name in shown and not _ran_here(payload, name):
                print(f"{name}: no run of it in {OUT}; its row keeps the text the docs show")
                lines.append(shown[name])
                kept_rows.append(name)
            continue
        cell = _cell
        cells = [cell([r["scores"].get(c, float("nan")) for r in rows]) for c in columns]
        low = [sum(r["scores"].get(c, 0.0) for c in columns) / len(columns) for r in rows]
        high = [sum(r["scores"].get(f"tatoeba/{c}", 0.0) for c in HIGH) / len(HIGH) for r in rows]
        sts = [r["scores"].get("sts17/cross-avg", float("nan")) for r in rows]
        if name == "me5-small":
            words = list(rows[0].get("words", {}).values())
        else:
            words = [runs[k].get("words", {}).get(k.split("/seed-")[1]) for k in keys if "scores" in runs[k]]
        scored = words and all(words)
        cosine = cell([w["aligned_word_cosine"] for w in words]) if scored else "-"
        word_retrieval = cell([w["word_retrieval"] for w in words]) if scored else "-"
        timed = [r["wall_seconds"] for r in rows if "wall_seconds" in r and not r.get("resumed")]
        walls = cell(timed) if timed else "-"
        memory = cell([r["peak_memory_mb"] / 1024 for r in rows]) if all("peak_memory_mb" in r for r in rows) else "-"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {cell(low)} | {cell(high)} | {cell(sts)} | "
                     f"{cosine} | {word_retrieval} | {walls} | {memory} |")
    if kept_rows:  # their steps, machine and options are those of the run that made them
        lines += ["", "Rows kept from an earlier rendering (their runs are not in this checkout's results, so their "
                  "settings and machine may differ from the line above): " + ", ".join(kept_rows) + "."]
    drawn = [name for name in names if (FIGURES / f"wacse-words-{name}.png").is_file()]
    if drawn:
        lines += ["", "Word pairs the aligner links in held-out pairs (English and its low-resource translation), "
                  f"as in the paper's Figure 1 (`{COMMAND} figure`):", ""]
        lines += [f"![{name}](figures/wacse-words-{name}.png)" for name in drawn]
        other = [name for name in drawn if not _figure_is_todays(payload, name)]
        if other:
            lines += ["", "Drawn from runs other than this table's (options not recorded in the image, or trained "
                      "with other options than today's): " + ", ".join(other) + "."]
    lines += dev_columns(payload, names)
    lines += budget_table(payload, shown_table(DOCS, START, END, BUDGET_OPENING))
    lines += ["", END]
    publish(DOCS, START, END, lines)


def _figure_is_todays(payload: dict[str, Any], name: str) -> bool:
    """Whether the figure of `name` shows a run trained with today's options, as the image's own record of its run
    says (me5-small is not trained: any record will do; an image without one does not count)."""
    from PIL import Image

    with Image.open(FIGURES / f"wacse-words-{name}.png") as image:
        described = image.info.get("Description")
    if not described:
        return False
    drawn_from = json.loads(described)
    return name == "me5-small" or drawn_from.get("fingerprint") == run_fingerprint(variant_options(
        name, payload.get("steps", 300), payload.get("batch_size", 32), int(drawn_from["seed"])))


def _ran_here(payload: dict[str, Any], name: str) -> bool:
    """Whether the saved results hold any run of the variant (with today's options or not)."""
    return name == "me5-small" and "me5-small" in payload["runs"] or any(
        key.startswith(f"{name}/seed-") for key in payload["runs"])


def _todays_keys(payload: dict[str, Any], name: str) -> list[str]:
    """The variant's runs trained with today's options, by seed."""
    runs = payload["runs"]
    return sorted(k for k in runs if k.startswith(f"{name}/seed-") and trained_fingerprint(
        runs[k], OUT / f"seed-{k.split('/seed-')[1]}" / name) == run_fingerprint(
            variant_options(name, payload["steps"], payload["batch_size"], int(k.split("/seed-")[1]))))


def dev_columns(payload: dict[str, Any], names: list[str]) -> list[str]:
    """The same runs on dev splits (empty until some run has them): dev retrieval of the kept checkpoint and
    Kardes STS dev, mean over seeds (each seed); a choice between variants rests on these, not on the test
    columns above."""
    runs = payload["runs"]
    rows = []
    shown = shown_rows(DOCS, START, END, DEV_HEADER)
    for name in names:
        keys = ["me5-small"] if name == "me5-small" else _todays_keys(payload, name)
        found = [dev_measures(runs[k].get("best"), runs[k]["dev_sts"]) for k in keys
                 if "dev_sts" in runs.get(k, {})]
        if not found or len(found) < len(keys):
            if name in shown and not _ran_here(payload, name):
                rows.append(shown[name])
            continue
        cells = [_cell(values) if (values := [m[c] for m in found if m[c] is not None]) else "-"
                 for c in ("retrieval", "cross", "mono", "english")]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return ["", "The same runs on dev splits (what a choice between the variants rests on; the test columns above "
            "are not chosen on): translation retrieval of the kept checkpoint on the run's held-out pairs, and "
            f"Kardes STS dev en-X, monolingual ({', '.join(DEV_STS_LANGUAGES)}) and English.", "",
            DEV_HEADER, "|---|---|---|---|---|", *rows]


def _cell(values: list[float]) -> str:
    mean = sum(values) / len(values)
    return f"{mean:.1f}" if len(values) == 1 else f"{mean:.1f} ({' / '.join(f'{v:.1f}' for v in values)})"


def budget_table(payload: dict[str, Any], shown: list[str] | None = None) -> list[str]:
    """The budget curve's table (empty without one): one row per number of steps and seed (the low-resource
    Tatoeba mean and STS17 cross of each variant, and each word-objective variant minus TR alone), then a mean row
    per number of steps over its seeds. Only runs trained with today's options count. `shown` is the table the
    docs show: its rows for a steps and seed not run here stay (results/ is not in git, and a curve grows a seed
    or a budget at a time), and the means use their one-decimal values."""
    curve = payload.get("budget", {})
    found: dict[tuple[int, str], dict[int, dict[str, Any]]] = {}
    for key, entry in curve.get("runs", {}).items():
        name, _, rest = key.partition("@")
        steps, seed = (int(part) for part in rest.split("/seed-"))
        options = variant_options(name, steps, curve["batch_size"], seed)
        folder = (OUT / f"seed-{seed}" / name if "same_run_as" in entry
                  else OUT / "budget" / f"seed-{seed}" / f"{name}-{steps}")
        if "scores" in entry and trained_fingerprint(entry, folder) == run_fingerprint(options):
            found.setdefault((steps, name), {})[seed] = entry["scores"]
    kept = _shown_budget(shown or [])
    names = [name for name in VARIANTS if any(n == name for _, n in found)
             or any(column.startswith(f"{name}: ") for row in kept.values() for column in row)]
    if not names:
        return []
    words = [name for name in names if name != "tr"]
    columns = [f"{n}: {score}" for n in names for score in ("low mean", "STS17 cross")]
    columns += [f"{n} change: {score}" for n in words for score in ("low mean", "STS17 cross")]

    def low(scores: dict[str, float]) -> float:
        return sum(scores.get(f"tatoeba/{c}", 0.0) for c in LOW.values()) / len(LOW)

    def sts(scores: dict[str, float]) -> float:
        return scores.get("sts17/cross-avg", float("nan"))

    rows: dict[tuple[int, int], dict[str, float]] = {}
    for (steps, name), seeds in found.items():
        for seed, scores in seeds.items():
            rows.setdefault((steps, seed), {}).update({f"{name}: low mean": low(scores),
                                                       f"{name}: STS17 cross": sts(scores)})
    for (steps, seed), row in rows.items():
        base = found.get((steps, "tr"), {}).get(seed)
        for name in words:
            other = found.get((steps, name), {}).get(seed)
            if base is not None and other is not None:
                row.update({f"{name} change: low mean": low(other) - low(base),
                            f"{name} change: STS17 cross": sts(other) - sts(base)})
    kept_keys = sorted(set(kept) - set(rows))
    rows.update({key: kept[key] for key in kept_keys})

    def cells(row: dict[str, float]) -> str:
        return " | ".join(f"{row[c]:.1f}" if c in row else "-" for c in columns)

    lines = ["", "#### Budget curve", "", f"`{COMMAND} budget` (batch {curve.get('batch_size', 32)}):"
             " each variant trained for each number of steps (the learning-rate schedule scaled to it); per seed, "
             "the low-resource Tatoeba mean and STS17 cross, and 'change': each word-objective variant minus TR "
             "alone; then their mean over the seeds of that number of steps. A number of steps equal to the "
             "ablation's reuses its run of the same options and seed.", "",
             "| steps | seed | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for steps in sorted({s for s, _ in rows}):
        seeds = sorted(seed for s, seed in rows if s == steps)
        lines += [f"| {steps} | {seed} | {cells(rows[steps, seed])} |" for seed in seeds]
        if len(seeds) > 1:
            mean = {c: sum(v) / len(v) for c in columns
                    if (v := [rows[steps, seed][c] for seed in seeds if c in rows[steps, seed]])}
            lines.append(f"| {steps} | mean | {cells(mean)} |")
    if kept_keys:
        lines += ["", "Rows kept from an earlier rendering (their runs are not in this checkout's results): "
                  + ", ".join(f"{steps} steps seed {seed}" for steps, seed in kept_keys) + "."]
    return lines


def _shown_budget(shown: list[str]) -> dict[tuple[int, int], dict[str, float]]:
    """The per-seed rows of the budget table the docs show, by (steps, seed): their columns' values."""
    header = next((line for line in shown if line.startswith("| steps | seed |")), None)
    if header is None:
        return {}
    names = [cell.strip() for cell in header.strip("|").split("|")]
    rows: dict[tuple[int, int], dict[str, float]] = {}
    for line in shown[shown.index(header) + 2:]:
        values = [cell.strip() for cell in line.strip("|").split("|")]
        if len(values) != len(names) or not values[1].isdigit():
            continue  # a mean row: computed again
        rows[int(values[0]), int(values[1])] = {n: float(v) for n, v in zip(names[2:], values[2:], strict=True)
                                                 if v != "-"}
    return rows
