"""What the aligner benchmark's runner and renderer share: where results go, the docs section's markers, the
gold sets in table order and the names of the rows that are not plain aligner runs."""

from __future__ import annotations

from benchmarks.common.results import RESULTS

OUT = RESULTS / "alignment"
START, END = "<!-- alignment:start -->", "<!-- alignment:end -->"
COMMAND = "python -m benchmarks.alignment.run run"
SETS = ("en-fr", "ro-en", "ja-en", "zh-en", "de-en")
TRAINING_THRESHOLD = 0.8
"""WACSE's `alignment_threshold` default: the links its training keeps."""
PUBLISHED = "awesome-align (its published output)"
EXTRA_LABEL = "eflomal + Tatoeba-Challenge (grow-diag-final-and)"
TRAINING_FILTER = f"links WACSE trains on (score >= {TRAINING_THRESHOLD})"
