"""What the new-language head-to-head's runner and renderer share: where its results go, the section's markers
and the base model every method starts from (its own row in every table)."""

from __future__ import annotations

from benchmarks.common.results import RESULTS as RESULTS_ROOT

OUT = RESULTS_ROOT / "new_language"
RESULTS = OUT / "results.json"
START, END = "<!-- new-language:start -->", "<!-- new-language:end -->"
BASE = "me5-small"
