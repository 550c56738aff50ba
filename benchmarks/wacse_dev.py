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
from collections.abc import Callable
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
    "head-warmup-50-added": {"awp_head_warmup_steps": 50},
    "frozen-embeddings": {"freeze_embeddings": True},
    "cls-pooling": {"pooling": "cls"},
    "itermax-links": {"aligner": "itermax"},
    "eflomal-all-links": {"alignment_threshold": 0.5},
    "wtr-scale-20": {"wtr_scale": 20.0},
    "awp-one-link": {"awp_links": "one"},
    "awp-links-all": {"awp_links": "all"},
    "learning-rate-2e-5": {"learning_rate": 2e-5},
    "dap-schedule": {"warmup_ratio": 0.0, "weight_decay": 0.0},
}
"""Issue 35's open choices, each against the defaults (all three objectives): TR alone (what the word objectives
add or cost on dev), the AWP head's warm-up or frozen embeddings, CLS against mean pooling, the aligner and its
threshold, WTR's scale, AWP's links, a lower learning rate than the paper's (the paper starts from a model
without sentence-level training, polyembed from one with it), and DAP's schedule (no warm-up, no weight decay:
the paper states neither and adopts DAP's hyper-parameters) against the shared trainer's. Scored on dev splits
only: the run's own held-out translation retrieval and Kardes STS dev (en-X for the four trained Turkic languages
it has, monolingual and English)."""
ADDED_STEPS = {"head-warmup-50-added": 50}
"""Choices trained for more steps than the budget: a head warm-up added on top, so the encoder trains as many
steps as the defaults' (the warm-up's steps count in `max_steps`)."""
DEV_STS_LANGUAGES = ["kk", "uz", "az", "ug"]


OBJECTIVE_OPTIONS = {"awp": {"awp_weight", "awp_links", "awp_head_warmup_steps"}, "wtr": {"wtr_weight", "wtr_scale"}}
"""Options read only when their objective trains (`methods/wacse/train.py`: no AWP head, no warm-up without AWP)."""
LINK_OPTIONS = {"aligner", "aligner_model", "aligner_layer", "aligner_datasets", "alignment_threshold", "max_links"}
"""Options of the word links, which neither TR nor language embeddings read."""


def run_fingerprint(options: dict[str, Any] | None = None, config_file: Path | None = None) -> str:
    """A short hash of every option a WACSE run trains with (the choice's options over today's defaults, or a run
    folder's config.yaml), housekeeping and the output folder aside: rows trained before a default changed stop
    counting for that choice, and two choices that resolve to the same run share it. Options of an objective the
    run does not train are left out too (`OBJECTIVE_OPTIONS`: TR alone trains the same whatever AWP's masking)."""
    import dataclasses
    import hashlib

    from polyembed.config import build_config
    from polyembed.methods.base.run import HOUSEKEEPING_OPTIONS
    from polyembed.methods.wacse.config import WacseConfig

    config, _ = build_config(WacseConfig, config_file, options or {})
    unused = {key for objective, keys in OBJECTIVE_OPTIONS.items() if objective not in config.objectives
              for key in keys}
    if not {"awp", "wtr"} & set(config.objectives):
        unused |= LINK_OPTIONS
    resolved = {key: value for key, value in dataclasses.asdict(config).items()
                if key not in HOUSEKEEPING_OPTIONS | unused and key != "output_dir"}
    return hashlib.sha256(json.dumps(resolved, sort_keys=True).encode("utf-8")).hexdigest()[:12]


def set_aside(folder: Path, fingerprint: str) -> Path | None:
    """Rename a run folder trained with other options than `fingerprint`'s (e.g. before a default changed) to
    '<name>-<its fingerprint>', so the new run starts afresh and nothing is mixed in or lost; the new path, or
    None when nothing moved."""
    config_file = folder / "config.yaml"
    if config_file.is_file() and (before := run_fingerprint(config_file=config_file)) != fingerprint:
        return folder.rename(folder.with_name(f"{folder.name}-{before}"))
    return None


def _choice_options(name: str, steps: int, batch_size: int, seed: int) -> dict[str, Any]:
    return {**DEV_CHOICES[name], "max_steps": steps + ADDED_STEPS.get(name, 0), "batch_size": batch_size,
            "seed": seed}


def _load_dev() -> dict[str, Any] | None:
    """dev.json, if stored. Trained runs are kept by seed and fingerprint ('seed-S/<fingerprint>'), each
    fingerprint taken afresh from the config.yaml of the folder the run trained in: the folder says what was
    trained, whatever the fingerprint's rules were when the row was saved. Rows of the older layout (by choice
    name, 'runs') are read into it."""
    path = OUT / "dev.json"
    if not path.is_file():
        return None
    saved = json.loads(path.read_text(encoding="utf-8"))
    trained = saved.pop("trained", {})
    for key, run in saved.pop("runs", {}).items():  # the older layout
        if key == "me5-small":
            saved.setdefault("me5-small", run)
        elif "same_run_as" not in run:
            name, _, seed = key.partition("/seed-")
            trained[f"seed-{seed}/{run.get('fingerprint', key)}"] = {**run, "folder": f"dev/seed-{seed}/{name}"}
    saved["trained"] = {}
    for key, run in trained.items():
        config_file = OUT / run.get("folder", "-") / "config.yaml"
        if config_file.is_file():
            key = f"{key.partition('/')[0]}/{run_fingerprint(config_file=config_file)}"
        if "sts" in run and "sts" not in saved["trained"].get(key, {}):
            saved["trained"][key] = run
    return saved


def kardes_dev_sts(encoder: Any) -> dict[str, float]:
    """Kardes STS dev of an encoder: English, the trained Turkic languages it has, and their pairs (Spearman)."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task

    task = get_task("kardes-sts", languages=["en", *DEV_STS_LANGUAGES], split="dev")
    result = evaluate(encoder, [task], show_progress=False)
    return {s.subset: round(float(s.value), 2) for s in result.scores if s.main}


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


def dev(seeds: list[int], steps: int, batch_size: int, choices: list[str]) -> None:
    """Train each choice per seed and score it on dev splits (dev.json); prints the table. A choice whose options
    resolve to a run already scored for that seed (e.g. the old default after a default changed) is not trained
    again."""
    from polyembed.methods.modular.pipeline import run_stage
    from polyembed.models.loading import load_model

    path = OUT / "dev.json"
    saved = _load_dev() or {"trained": {}}
    saved |= {"steps": steps, "batch_size": batch_size, "machine": f"{platform.machine()}, {os.cpu_count()} cores"}

    def sts(model_path: str) -> dict[str, float]:
        return kardes_dev_sts(load_model(model_path))

    if "me5-small" not in saved:
        saved["me5-small"] = {"sts": sts("me5-small")}
    write_json(path, saved)
    for seed in seeds:
        for name in choices:
            options = _choice_options(name, steps, seed=seed, batch_size=batch_size)
            key = f"seed-{seed}/{run_fingerprint(options)}"
            if key in saved["trained"]:
                continue
            folder = OUT / "dev" / f"seed-{seed}" / name
            moved = set_aside(folder, key.partition("/")[2])
            for run in saved["trained"].values():  # a scored run keeps pointing at its folder
                if moved is not None and run.get("folder") == str(folder.relative_to(OUT)):
                    run["folder"] = str(moved.relative_to(OUT))
            trained = run_stage("wacse", folder, True, **options, keep_checkpoints=False)
            saved["trained"][key] = {"choice": name, "options": DEV_CHOICES[name], "steps": steps,
                                     "batch_size": batch_size, "folder": str(folder.relative_to(OUT)),
                                     "best": trained.get("best"), "wall_seconds": trained.get("wall_seconds"),
                                     "sts": sts(trained["model_dir"])}
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
    def today(name: str, seed: int) -> str:
        return run_fingerprint(_choice_options(name, saved["steps"], saved["batch_size"], seed))

    lines = [DEV_START, "### WACSE dev choices (issue 35)", "", *dev_table(saved, today), "", DEV_END]
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
    lines = [f"WACSE dev choices (`python benchmarks/wacse.py dev`, {saved.get('steps')} steps of "
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
