"""The export benchmark's variants and tasks (`benchmarks.scale.run export`): which graphs of one export are
measured, on which tasks, and how each score is keyed in the stored JSON.

Why its own module: the export table grew the static int8 graphs (`export --static-int8`) and the dev splits the
int8 recipes are chosen on, and the runner stays a list of studies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.scale.spec import STATIC_VARIANTS, STSB_LANGUAGES, TATOEBA_LANGUAGES
from polyembed.models.export_files import OPENVINO_STATIC_INT8_FILE, STATIC_INT8_FILE

STATIC_LABELS = dict(zip(STATIC_VARIANTS, (STATIC_INT8_FILE, OPENVINO_STATIC_INT8_FILE), strict=True))
"""The static int8 variants (calibrated activation ranges) beside the dynamic ones, by the graph they load."""


def score_key(score: Any) -> str:
    """'task/subset' for a test-split score (the keys the export table has always had), 'dev/task/subset' for a
    dev-split one."""
    key = f"{score.task}/{score.subset}"
    return key if score.split == "test" else f"{score.split}/{key}"


def export_tasks(limit: int | None = None) -> list[Any]:
    """Fresh task objects: STS-B, STS17 en-en, stsb-multi-mt (STSB_LANGUAGES, mono and en-X) and Tatoeba on their
    test splits, and STS-B and stsb-multi-mt on their dev splits (the splits the int8 recipes were chosen on, so a
    recipe tuned to dev shows whether it holds on test). `limit`: at most that many pairs or rows per subset of
    the long tasks, for a quick check of the code path."""
    from polyembed.eval.registry import get_task

    pairs = {} if limit is None else {"max_pairs": limit}
    return [get_task("stsb"), get_task("sts17", languages=["en-en"]),
            get_task("stsb-multi-mt", languages=STSB_LANGUAGES, **pairs),
            get_task("tatoeba", languages=TATOEBA_LANGUAGES, **({} if limit is None else {"max_rows": limit})),
            get_task("stsb", split="dev"), get_task("stsb-multi-mt", languages=STSB_LANGUAGES, split="dev", **pairs)]


def static_variants(folder: Path) -> dict[str, Any]:
    """The static int8 graphs of an export made with `static_int8=True, openvino=True`, loaded."""
    from polyembed import load_model

    return {label: load_model(str(folder / graph)) for label, graph in STATIC_LABELS.items()}
