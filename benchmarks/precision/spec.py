"""What the precision benchmark's runner and renderer share: where precision.json goes and the section's markers."""

from __future__ import annotations

from benchmarks.common.results import RESULTS

OUT = RESULTS / "precision"
START, END = "<!-- precision:start -->", "<!-- precision:end -->"
COMMAND = "python -m benchmarks.precision.run run"
