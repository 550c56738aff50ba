"""What the language-identification benchmark's runner and renderer share: where langid.json goes, the section's
markers and the command that makes it."""

from __future__ import annotations

from benchmarks.common.results import RESULTS

OUT = RESULTS / "langid"
START, END = "<!-- langid:start -->", "<!-- langid:end -->"
COMMAND = "python -m benchmarks.language_id.run run"
