"""How the modular studies (CLA, LA) score a two-language bundle on STS: the language's monolingual and en-X
STS on a split, shared so that both studies' rows compare."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.modular.spec import KARDES


def sts_scores(bundle: Any, language: str, max_pairs: int, split: str = "dev") -> dict[str, float]:
    """The language's monolingual and en-X STS on the dev split (Spearman x100); `split="test"` scores the test
    split instead, keyed 'test_mono' / 'test_cross' (shown beside the dev columns, never chosen on)."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task

    task = "kardes-sts" if language in KARDES else "stsb-multi-mt"
    result = evaluate(bundle, [get_task(task, languages=["en", language], split=split, max_pairs=max_pairs)],
                      show_progress=False)
    scores = {s.subset: float(s.value) for s in result.scores if s.metric == "spearman"}
    prefix = "" if split == "dev" else f"{split}_"
    return {f"{prefix}mono": round(scores.get(language, math.nan), 2),
            f"{prefix}cross": round(scores.get(f"en-{language}", math.nan), 2)}
