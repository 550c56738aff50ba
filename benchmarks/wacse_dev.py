"""WACSE's open choices (issue 35), each trained for a short budget and scored on dev splits only:
results -> results/bench/wacse/dev.json, docs/benchmarks.md (section wacse-dev).

  python benchmarks/wacse.py dev --seeds 0 1 --steps 100 --choices defaults cls-pooling   # train and score
  python benchmarks/wacse.py render                                                      # both WACSE sections

Each run is keyed to a fingerprint of the options it trains with (the choice's over today's defaults), so a
default that changes retires the rows trained before it, and a choice that resolves to a run already scored
reuses it.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from docs_sections import missing_tables, replace_section
from result_files import write_json

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "results" / "bench" / "wacse"
DOCS = REPO / "docs" / "benchmarks.md"
DEV_CHOICES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "tr-only": {"objectives": ["tr"]},
    "head-warmup-50": {"awp_head_warmup_steps": 50},
    "frozen-embeddings": {"freeze_embeddings": True},
    "cls-pooling": {"pooling": "cls"},
    "itermax-links": {"aligner": "itermax"},
    "eflomal-all-links": {"alignment_threshold": 0.5},
    "wtr-scale-20": {"wtr_scale": 20.0},
    "awp-one-link": {"awp_links": "one"},
    "awp-links-together": {"awp_links": "together"},
    "learning-rate-2e-5": {"learning_rate": 2e-5},
}
"""Issue 35's open choices, each against the defaults (all three objectives): TR alone (what the word objectives
add or cost on dev), the AWP head's warm-up or frozen embeddings, CLS against mean pooling, the aligner and its
threshold, WTR's scale, AWP's links, and a lower learning rate than the paper's (the paper starts from a model
without sentence-level training, polyembed from one with it). Scored on dev splits only: the run's own held-out
translation retrieval and Kardes STS dev (en-X for the four trained Turkic languages it has, monolingual and
English)."""
DEV_STS_LANGUAGES = ["kk", "uz", "az", "ug"]


def run_fingerprint(options: dict[str, Any] | None = None, config_file: Path | None = None) -> str:
    """A short hash of every option a WACSE run trains with (the choice's options over today's defaults, or a run
    folder's config.yaml), housekeeping and the output folder aside: rows trained before a default changed stop
    counting for that choice, and two choices that resolve to the same run share it."""
    import dataclasses
    import hashlib

    from polyembed.config import build_config
    from polyembed.methods.base.run import HOUSEKEEPING_OPTIONS
    from polyembed.methods.wacse.config import WacseConfig

    config, _ = build_config(WacseConfig, config_file, options or {})
    resolved = {key: value for key, value in dataclasses.asdict(config).items()
                if key not in HOUSEKEEPING_OPTIONS and key != "output_dir"}
    return hashlib.sha256(json.dumps(resolved, sort_keys=True).encode("utf-8")).hexdigest()[:12]


def set_aside(folder: Path, fingerprint: str) -> None:
    """Rename a run folder trained with other options than `fingerprint`'s (e.g. before a default changed) to
    '<name>-<its fingerprint>', so the new run starts afresh and nothing is mixed in or lost."""
    config_file = folder / "config.yaml"
    if config_file.is_file() and (before := run_fingerprint(config_file=config_file)) != fingerprint:
        folder.rename(folder.with_name(f"{folder.name}-{before}"))


def _choice_options(name: str, steps: int, batch_size: int, seed: int) -> dict[str, Any]:
    return {**DEV_CHOICES[name], "max_steps": steps, "batch_size": batch_size, "seed": seed}


def _dev_fingerprints(saved: dict[str, Any]) -> dict[str, str]:
    """The fingerprint each saved run key ('choice/seed-S') would have today at the saved steps and batch size."""
    out = {}
    for key in saved["runs"]:
        name, _, seed = key.partition("/seed-")
        if name in DEV_CHOICES and seed.isdigit():
            out[key] = run_fingerprint(_choice_options(name, saved["steps"], saved["batch_size"], int(seed)))
    return out


def _load_dev() -> dict[str, Any] | None:
    """dev.json, if stored; a run saved before fingerprints gets its folder's (config.yaml says what it trained)."""
    path = OUT / "dev.json"
    if not path.is_file():
        return None
    saved = json.loads(path.read_text(encoding="utf-8"))
    for key, run in saved["runs"].items():
        name, _, seed = key.partition("/seed-")
        config_file = OUT / "dev" / f"seed-{seed}" / name / "config.yaml"
        if "fingerprint" not in run and seed and config_file.is_file():
            run["fingerprint"] = run_fingerprint(config_file=config_file)
    return saved


def dev(seeds: list[int], steps: int, batch_size: int, choices: list[str]) -> None:
    """Train each choice per seed and score it on dev splits (dev.json); prints the table. A choice whose options
    resolve to a run already scored for that seed (e.g. after a default changed) reuses that run's scores."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task
    from polyembed.methods.modular.pipeline import run_stage
    from polyembed.models.loading import load_model

    path = OUT / "dev.json"
    saved = _load_dev() or {"runs": {}}
    saved |= {"steps": steps, "batch_size": batch_size, "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    task = get_task("kardes-sts", languages=["en", *DEV_STS_LANGUAGES], split="dev")

    def sts(model_path: str) -> dict[str, float]:
        result = evaluate(load_model(model_path), [task], show_progress=False)
        return {s.subset: round(float(s.value), 2) for s in result.scores if s.main}

    if "me5-small" not in saved["runs"]:
        saved["runs"]["me5-small"] = {"sts": sts("me5-small")}
    write_json(path, saved)
    for seed in seeds:
        for name in choices:
            key, options = f"{name}/seed-{seed}", _choice_options(name, steps, seed=seed, batch_size=batch_size)
            fingerprint = run_fingerprint(options)
            if saved["runs"].get(key, {}).get("fingerprint") == fingerprint:
                continue  # a run at other options, steps or batch size is trained again, never mixed in
            same = [other for other, run in saved["runs"].items() if other.endswith(f"/seed-{seed}")
                    and run.get("fingerprint") == fingerprint and "sts" in run]
            if same:
                saved["runs"][key] = {**saved["runs"][same[0]], "options": DEV_CHOICES[name], "same_run_as": same[0]}
                write_json(path, saved)
                continue
            folder = OUT / "dev" / f"seed-{seed}" / name
            set_aside(folder, fingerprint)
            trained = run_stage("wacse", folder, True, **options, keep_checkpoints=False)
            saved["runs"][key] = {"options": DEV_CHOICES[name], "steps": steps, "batch_size": batch_size,
                                  "fingerprint": fingerprint, "best": trained.get("best"),
                                  "wall_seconds": trained.get("wall_seconds"), "sts": sts(trained["model_dir"])}
            write_json(path, saved)
    render()


DEV_START, DEV_END = "<!-- wacse-dev:start -->", "<!-- wacse-dev:end -->"


def render() -> None:
    """The dev-choice table's docs section, from dev.json (left alone where no dev.json is stored)."""
    saved = _load_dev()
    if saved is None:
        if missing_tables(DOCS, DEV_START, DEV_END, {"dev": "python benchmarks/wacse.py dev"}, set()):
            print("no saved dev choices here: the docs section is left alone")
        return
    lines = [DEV_START, "### WACSE dev choices (issue 35)", "", *dev_table(saved, _dev_fingerprints(saved)),
             "", DEV_END]
    replace_section(DOCS, DEV_START, DEV_END, "\n".join(lines))
    print("\n".join(lines))


def dev_table(saved: dict[str, Any], fingerprints: dict[str, str]) -> list[str]:
    """One row per choice: dev retrieval (mean of both directions, the kept checkpoint's) and Kardes STS dev,
    each the mean over seeds; the change against the defaults in brackets. Only runs whose fingerprint is the
    choice's today (`fingerprints`, by run key) count: the saved budget and today's defaults."""
    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    rows: dict[str, dict[str, float | None]] = {}
    cross = [f"en-{code}" for code in DEV_STS_LANGUAGES]
    for name in DEV_CHOICES:
        runs = [run for key, run in saved["runs"].items() if key.split("/")[0] == name
                and run.get("fingerprint") is not None and run.get("fingerprint") == fingerprints.get(key)]
        if not runs:
            continue
        rows[name] = {
            "retrieval": mean([100 * run["best"]["eval_dev_mean_accuracy"] for run in runs
                               if run.get("best") and "eval_dev_mean_accuracy" in run["best"]]),
            "cross": mean([mean([run["sts"][c] for c in cross if c in run["sts"]]) for run in runs]),
            "mono": mean([mean([run["sts"][c] for c in DEV_STS_LANGUAGES if c in run["sts"]]) for run in runs]),
            "english": mean([run["sts"]["en"] for run in runs if "en" in run["sts"]]),
            "seeds": len(runs),
        }
    base = saved["runs"].get("me5-small", {}).get("sts", {})
    lines = [f"WACSE dev choices (`python benchmarks/wacse.py dev`, {saved.get('steps')} steps of "
             f"{saved.get('batch_size')} pairs; {saved.get('machine')}): dev retrieval of the kept checkpoint, "
             f"Kardes STS dev en-X and monolingual ({', '.join(DEV_STS_LANGUAGES)}), and English (what training "
             "on translations costs the pivot), mean over seeds.", "",
             "| choice | options | seeds | dev retrieval | Kardes STS dev en-X | Kardes STS dev monolingual | "
             "Kardes STS dev English |", "|---|---|---|---|---|---|---|",
             f"| me5-small (untrained) | - | - | - | {mean([base[c] for c in cross if c in base]) or 0:.2f} | "
             f"{mean([base[c] for c in DEV_STS_LANGUAGES if c in base]) or 0:.2f} | {base.get('en', 0):.2f} |"]
    reference = rows.get("defaults", {})
    for name, row in rows.items():
        cells = []
        for column in ("retrieval", "cross", "mono", "english"):
            value, against = row[column], reference.get(column)
            cells.append("-" if value is None else f"{value:.2f}" + (
                f" ({value - against:+.2f})" if against is not None and name != "defaults" else ""))
        options = ", ".join(f"{k}={v}" for k, v in DEV_CHOICES[name].items()) or "the defaults"
        lines.append(f"| {name} | {options} | {row['seeds']} | " + " | ".join(cells) + " |")
    return lines
