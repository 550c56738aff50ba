"""What the modular benchmark's runners (the miniature, the CLA study, the LA study) and renderers share: where
results go, the sections' markers, the languages and rows every table is built on, the CLA study's defaults and
labels, and a stage's dev measures before training as its run folder records them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.common.results import RESULTS, load_json
from polyembed.eval.tasks.retrieval import TatoebaRetrieval
from polyembed.languages import subsets_named

OUT = RESULTS / "modular"
COMMAND = "python -m benchmarks.modular.run"
START, END = "<!-- modular:start -->", "<!-- modular:end -->"
VOCABULARY_START, VOCABULARY_END = "<!-- modular-vocabulary:start -->", "<!-- modular-vocabulary:end -->"
BASE = "me5-small"
PIVOT = "en"
LASER = {code: next(iter(subsets_named(code, TatoebaRetrieval.metadata.languages)), None)
         for code in ("de", "ru", "kk", "uz", "tr", "en")}
"""LASER Tatoeba's own code for each language ('de' -> 'deu'); None for English, the other side of every pair."""
STSB = ("de", "es", "fr", "it", "ja", "nl", "pl", "pt", "ru", "zh")
KARDES = ("az", "kk", "ky", "ug", "uz")
ROWS = {
    "base": "me5-small",
    "base-pruned": "me5-small, pruned vocabularies (no training)",
    "single-m": "Single_m",
    "single-c": "Single_c",
    "single-mc": "Single_mc",
    "multi-m": "Multi_m (bundle, mode mono)",
    "multi-mc": "Multi_mc (bundle, mode cross)",
    "demo-student": "demo student (distilled)",
}


def recorded_before(run_: dict[str, Any]) -> dict[str, Any]:
    """The stage's dev measures before training, from its training.json: the seed file stores them as `before`
    since 2026-11-25; older seed files only point at the run folder."""
    record = load_json(Path(run_["model_dir"]).parent / "training.json") or {}
    return record.get("details", {}).get("before", {})


CLA_START, CLA_END = "<!-- modular-cla:start -->", "<!-- modular-cla:end -->"
GENRES_START, GENRES_END = "<!-- modular-genres:start -->", "<!-- modular-genres:end -->"
CLA_COMMAND = "python -m benchmarks.modular.run_cla"
DEFAULT_MIXING = "round-robin"
DEFAULT_BATCHES = "1:1"
SCHEDULES = {"constant-final": {"lr_schedule": "constant", "warmup_ratio": 0.0, "checkpoint": "final"},
             "linear-best": {"lr_schedule": "linear", "warmup_ratio": 0.1, "checkpoint": "best"}}
DEFAULT_LOSS, DEFAULT_SCHEDULE = "cross-model", "constant-final"


def parse_batches(text: str) -> tuple[int, int]:
    """'P:Q' -> paraphrase and parallel batches per cycle."""
    try:
        paraphrase, parallel = (int(part) for part in text.split(":"))
    except ValueError:
        raise SystemExit(f"--batches: {text!r} is not paraphrase:parallel batches per cycle, e.g. 1:1 or 1:0") from None
    if min(paraphrase, parallel) < 0 or paraphrase + parallel == 0:
        raise SystemExit(f"--batches: {text!r}: counts are >= 0 and not both 0")
    return paraphrase, parallel


def batches_label(batches: str) -> str:
    """A CLA row's batch mix as the runner logs it and the table names it."""
    paraphrase, parallel = parse_batches(batches)
    if parallel == 0:
        return "paraphrase batches only"
    if paraphrase == 0:
        return "parallel batches only"
    return f"{paraphrase} paraphrase : {parallel} parallel batches"

LA_START, LA_END = "<!-- modular-la:start -->", "<!-- modular-la:end -->"
LA_COMMAND = "python -m benchmarks.modular.run_la"
LA_LABELS = {"pipeline": "LA as in the seed's pipeline (LoRA, trainable embeddings)",
          "frozen-embeddings": "LA at 2e-4 with the embedding matrix frozen", "low-lr": "LA at 5e-5", "skip": "no LA"}
