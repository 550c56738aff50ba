"""What the FOCUS auxiliary-space benchmark's runner and renderer share: where its JSON goes, the section's
markers, the command and the spaces compared."""

from __future__ import annotations

from benchmarks.common.results import RESULTS

OUT = RESULTS / "vocabulary"
START, END = "<!-- vocabulary-auxiliary:start -->", "<!-- vocabulary-auxiliary:end -->"
COMMAND = "python -m benchmarks.vocabulary_transfer.run auxiliary"
SPACES = ("ppmi-svd", "fasttext")
