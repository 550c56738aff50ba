"""What WACSE's runners (the ablation, the dev choices, the step profile) and renderers share: where results and
figures go, the sections' markers, the variants and dev choices and the options each trains with, and the
fingerprint that says whether a stored run trained with today's options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.common.results import RESULTS
from polyembed.eval.tasks.retrieval import TatoebaRetrieval

OUT = RESULTS / "wacse"
COMMAND = "python -m benchmarks.wacse.run"
PROFILE_COMMAND = "python -m benchmarks.wacse.run_profile run"
START, END = "<!-- wacse:start -->", "<!-- wacse:end -->"
DEV_START, DEV_END = "<!-- wacse-dev:start -->", "<!-- wacse-dev:end -->"
PROFILE_START, PROFILE_END = "<!-- wacse-profile:start -->", "<!-- wacse-profile:end -->"
VARIANTS: dict[str, dict[str, Any]] = {
    "tr": {"objectives": ["tr"]},
    "tr+awp": {"objectives": ["tr", "awp"]},
    "tr+wtr": {"objectives": ["tr", "wtr"]},
    "tr+wtr-scale-20": {"objectives": ["tr", "wtr"], "wtr_scale": 20.0},
    "tr+wtr-itermax": {"objectives": ["tr", "wtr"], "aligner": "itermax"},
    "tr+wtr-itermax-scale-20": {"objectives": ["tr", "wtr"], "aligner": "itermax", "wtr_scale": 20.0},
    "tr+wtr-eflomal-kardes-scale-20": {"objectives": ["tr", "wtr"], "aligner_datasets": ["kardes-xnli"],
                                       "wtr_scale": 20.0},
    "tr+awp+wtr": {"objectives": ["tr", "awp", "wtr"]},
    "tr-cls": {"objectives": ["tr"], "pooling": "cls"},
    "tr+wtr-cls": {"objectives": ["tr", "wtr"], "pooling": "cls"},
    "tr+awp+wtr+language-embeddings": {"objectives": ["tr", "awp", "wtr"], "language_embeddings": True},
}
DEV_HEADER = "| model | dev retrieval | Kardes STS dev en-X | Kardes STS dev monolingual | Kardes STS dev English |"
BUDGET_OPENING = f"`{COMMAND} budget`"
LOW = {code: TatoebaRetrieval.subset(code) for code in ("kk", "ug", "tt", "tk", "uz", "az", "sw")}
HIGH = ["deu", "fra", "rus", "cmn", "jpn", "tur"]
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


def variant_options(name: str, steps: int, batch_size: int, seed: int) -> dict[str, Any]:
    """What an ablation variant trains with at a budget: the runner trains it, the renderer counts a stored run
    only when its fingerprint is of these options."""
    return {**VARIANTS[name], "max_steps": steps, "batch_size": batch_size, "seed": seed}


def choice_options(name: str, steps: int, batch_size: int, seed: int) -> dict[str, Any]:
    """What a dev choice trains with at a budget (ADDED_STEPS on top where the choice adds them), for the runner
    and for the renderer's fingerprint of today's run."""
    return {**DEV_CHOICES[name], "max_steps": steps + ADDED_STEPS.get(name, 0), "batch_size": batch_size,
            "seed": seed}


def trained_fingerprint(entry: dict[str, Any], folder: Path) -> str | None:
    """The fingerprint of what a stored run trained with, taken afresh from its folder's config.yaml where it is
    here (an option added since, at the value that trains as before, then changes nothing), else as stored."""
    config_file = folder / "config.yaml"
    return run_fingerprint(config_file=config_file) if config_file.is_file() else entry.get("fingerprint")


def load_dev(out: Path) -> dict[str, Any] | None:
    """dev.json in `out`, if stored. Trained runs are kept by seed and fingerprint ('seed-S/<fingerprint>'), each
    fingerprint taken afresh from the config.yaml of the folder the run trained in: the folder says what was
    trained, whatever the fingerprint's rules were when the row was saved. Rows of the older layout (by choice
    name, 'runs') are read into it."""
    path = out / "dev.json"
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
        config_file = out / run.get("folder", "-") / "config.yaml"
        if config_file.is_file():
            key = f"{key.partition('/')[0]}/{run_fingerprint(config_file=config_file)}"
        if "sts" in run and "sts" not in saved["trained"].get(key, {}):
            saved["trained"][key] = run
    return saved
