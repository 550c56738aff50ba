"""WACSE's open choices (issue 35), each trained for a short budget and scored on dev splits only:
results -> results/bench/wacse/dev.json, docs/benchmarks.md (section wacse-dev).

  python -m benchmarks.wacse.run dev --seeds 0 1 --steps 100 --choices defaults cls-pooling   # train, score
  python -m benchmarks.wacse.run render                                                      # both sections

Each run is keyed to a fingerprint of the options it trains with (the choice's over today's defaults), so a
default that changes retires the rows trained before it, and a choice that resolves to a run already scored
reuses it.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from benchmarks.common.results import write_json
from benchmarks.wacse.render_dev import render
from benchmarks.wacse.spec import DEV_CHOICES, DEV_STS_LANGUAGES, OUT, choice_options, load_dev, run_fingerprint


def set_aside(folder: Path, fingerprint: str) -> Path | None:
    """Rename a run folder trained with other options than `fingerprint`'s (e.g. before a default changed) to
    '<name>-<its fingerprint>', so the new run starts afresh and nothing is mixed in or lost; the new path, or
    None when nothing moved."""
    config_file = folder / "config.yaml"
    if config_file.is_file() and (before := run_fingerprint(config_file=config_file)) != fingerprint:
        return folder.rename(folder.with_name(f"{folder.name}-{before}"))
    return None


def kardes_dev_sts(encoder: Any) -> dict[str, float]:
    """Kardes STS dev of an encoder: English, the trained Turkic languages it has, and their pairs (Spearman)."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task

    task = get_task("kardes-sts", languages=["en", *DEV_STS_LANGUAGES], split="dev")
    result = evaluate(encoder, [task], show_progress=False)
    return {s.subset: round(float(s.value), 2) for s in result.scores if s.main}


def dev(seeds: list[int], steps: int, batch_size: int, choices: list[str]) -> None:
    """Train each choice per seed and score it on dev splits (dev.json); prints the table. A choice whose options
    resolve to a run already scored for that seed (e.g. the old default after a default changed) is not trained
    again."""
    from polyembed.methods.modular.pipeline import run_stage
    from polyembed.models.loading import load_model

    path = OUT / "dev.json"
    saved = load_dev(OUT) or {"trained": {}}
    saved |= {"steps": steps, "batch_size": batch_size, "machine": f"{platform.machine()}, {os.cpu_count()} cores"}

    def sts(model_path: str) -> dict[str, float]:
        return kardes_dev_sts(load_model(model_path))

    if "me5-small" not in saved:
        saved["me5-small"] = {"sts": sts("me5-small")}
    write_json(path, saved)
    for seed in seeds:
        for name in choices:
            options = choice_options(name, steps, seed=seed, batch_size=batch_size)
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
