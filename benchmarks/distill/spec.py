"""What the distillation benchmark's runners and renderers share: where its JSON goes, the sections' markers, which
JSON file each table is rendered from, and the names the tables are built on (forgetting groups, vocabulary
modes, the ablations' base options, the dev subsets' size)."""

from __future__ import annotations

from benchmarks.common.results import RESULTS

OUT = RESULTS / "distill"
COMMAND = "python -m benchmarks.distill.run"
START, END = "<!-- distill:start -->", "<!-- distill:end -->"
LONG_START, LONG_END = "<!-- distill-long-sentences:start -->", "<!-- distill-long-sentences:end -->"
SECTION_SOURCES = {name: name for name in ("acceptance", "forgetting", "throughput", "data-size", "vocabulary",
                                            "ablation")} | {"recipes": "recipe"}
"""JSON file -> the subcommand that writes it: the docs section is rendered from these files, and a table the
docs show is never dropped because its JSON is missing here."""
DEV_STS_PAIRS = 500
"""Evenly spaced pairs per dev subset (stsb-multi-mt dev has 1,500, Kardes dev ~1,500 per language)."""
FORGETTING_GROUPS = ("trained", "anchored", "not_trained")
VOCABULARY_MODES = {
    "keep-untrained": "kept, untrained",
    "keep": "kept",
    "transfer-untrained": "FOCUS, untrained",
    "transfer": "FOCUS",
}
"""Rows of one vocabulary comparison: each student before training (its own space, no projection) and after."""
ABLATION_BASE = {"max_pairs_per_source": 1000, "seed": 0}
"""What every ablation row changes in the demo config; the table lists only options that differ from it."""
