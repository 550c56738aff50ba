"""Word alignment as an evaluation: how well a model's token embeddings align words with their translations
(SimAlign-style, no training), scored by the alignment error rate on gold standards. WACSE trains for exactly
this (under-aligned words of low-resource languages); AER shows whether a model's words meet their translations.
"""

from __future__ import annotations

import time
from typing import cast

from polyembed.alignment import EmbeddingAligner, SentencePair, alignment_error_rate
from polyembed.alignment.pharaoh import GoldAlignment
from polyembed.alignment.similarity import METHODS, Method
from polyembed.data.readers.alignment import read_alignment_gold
from polyembed.errors import PolyembedError
from polyembed.eval.base import EmbeddingProvider, Score, Task, TaskMetadata, register_task

ALIGNMENT_SUBSETS = ("en-fr", "ro-en", "ja-en", "zh-en", "de-en")


@register_task
class WordAlignmentTask(Task):
    """AER (lower is better), precision and recall of SimAlign-style links from the model's token embeddings
    at `layer`, picked by `method` (argmax, itermax, match), on each gold set (subset = source-target). The
    published gold is scored as published: links past a sentence end (ja-en, de-en) stay in S and P.
    A language-routed model aligns each side with that language's encoder."""

    metadata = TaskMetadata(
        name="word-alignment",
        type="word-alignment",
        description="Word alignment from token embeddings (SimAlign argmax/itermax/match), AER against gold "
        "sure/possible links (lower is better); awesome-align's en-fr, ro-en, ja-en, zh-en and Europarl de-en",
        datasets=("word-alignment-gold",),
        languages=ALIGNMENT_SUBSETS,
        splits=("test",),
        main_score="aer",
        reference="Jalili Sabet et al. 2020 (SimAlign); Och & Ney 2003 (AER); Miao et al. 2024 (WACSE)",
    )

    def __init__(self, languages: list[str] | str | None = None, split: str | None = None, *,
                 method: str = "itermax", layer: int = 8, max_pairs: int | None = None) -> None:
        super().__init__(languages, split)
        if method not in METHODS:
            raise PolyembedError(f"task word-alignment: method '{method}' (choose from {', '.join(METHODS)})")
        if max_pairs is not None and max_pairs < 1:
            raise PolyembedError(f"task word-alignment: max_pairs {max_pairs} must be at least 1")
        self.method, self.layer, self.max_pairs = cast(Method, method), layer, max_pairs  # checked above

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        folder = self.folder(context)
        scores = []
        for subset in self.languages:
            examples = read_alignment_gold(folder, subset)[: self.max_pairs]
            source_language, target_language = subset.split("-")
            aligner = EmbeddingAligner(context.token_model(source_language), layer=self.layer, method=self.method,
                                       target_model=context.token_model(target_language))
            pairs = [SentencePair(list(e.source_tokens), list(e.target_tokens)) for e in examples]
            started = time.perf_counter()
            predicted = [a.links() for a in aligner.align(pairs)]
            seconds = time.perf_counter() - started
            result = alignment_error_rate(predicted, [GoldAlignment(set(e.sure), set(e.possible)) for e in examples])
            details = {"method": self.method, "layer": self.layer,
                       "seconds_per_1000_pairs": round(1000 * seconds / len(pairs), 1)}
            scores.append(self.score(subset, "aer", 100 * result.aer, n=len(pairs), **details))
            scores.append(self.score(subset, "precision", 100 * result.precision, n=len(pairs)))
            scores.append(self.score(subset, "recall", 100 * result.recall, n=len(pairs)))
        if len(self.languages) > 1:
            mean = sum(s.value for s in scores if s.metric == "aer") / len(self.languages)
            scores.append(self.score("avg", "aer", mean))
        return scores
