"""What the eval-suites benchmark's runner and renderer share: the docs section's markers and where the machine
of the measuring runs is kept."""

from __future__ import annotations

from benchmarks.common.results import RESULTS

START, END = "<!-- eval-suites:start -->", "<!-- eval-suites:end -->"
NOTES = RESULTS / "suites-notes.json"
"""{"machine": ...}: written by a measuring run (notes stored by earlier runs are not read: the renderer's
READER_NOTES say what a reader needs to know about the runs)."""
