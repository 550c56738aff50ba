"""What the new-language head-to-head's runner and renderer share: where its results go, the section's markers
and the base model every method starts from (its own row in every table)."""

from __future__ import annotations

from benchmarks.common.results import RESULTS as RESULTS_ROOT

OUT = RESULTS_ROOT / "new_language"
RESULTS = OUT / "results.json"
START, END = "<!-- new-language:start -->", "<!-- new-language:end -->"
BASE = "me5-small"

METHOD_NOTES = {
    "distill": "the demo's distillation recipe (MSE towards blended teacher targets)",
    "distill+tr": "the same with a translation-ranking term (weight 0.1) added to the MSE: the new-language recipe",
    "tr": "WACSE's translation ranking alone",
    "tr+wtr": "WACSE's translation ranking and word translation ranking",
    "emmax-phase-1": "EMMA-X's phase 1 (contrastive warm-up with the rank classifier), sentences cut at 64 tokens "
                     "as in the EMMA-X benchmark",
    "modular": "the modular recipe: per language a pruned-vocabulary encoder through LA and SE, then CLA to the "
               "English pivot (which gets SE), routed by language in one bundle; languages outside the bundle are "
               "encoded by the pivot. Its stages also read what they need besides the bitext (paraphrase pairs of "
               "Tatoeba-Challenge, stsb-multi-mt and Kardes XNLI for SE and CLA, Kardes XNLI bitext for CLA), each "
               "kind capped at the same pairs per language, and its steps count per stage",
}
"""What each method row is, for the renderer's list under each family's first paragraph."""
