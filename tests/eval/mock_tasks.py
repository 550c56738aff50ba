"""Tiny mock tasks for testing the runner, the report and the CLI without real data."""

from __future__ import annotations

import numpy as np

from polyembed.eval.base import EmbeddingProvider, Score, Task, TaskMetadata


class PairSimilarityMock(Task):
    """Mean cosine of fixed sentence pairs; asks for the same sentences twice to exercise the cache."""

    metadata = TaskMetadata(
        name="mock-pairs",
        type="STS",
        description="Mock pairs.",
        datasets=(),
        languages=("en", "de"),
        splits=("test",),
        main_score="cosine",
    )
    pairs = {"en": [("a cat sat", "a cat sat down"), ("rain today", "sunny today")],
             "de": [("die Katze", "die Katze sitzt"), ("Regen", "Sonne")]}

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        scores = []
        for lang in self.languages:
            left = context.embed([a for a, _ in self.pairs[lang]], lang)
            right = context.embed([b for _, b in self.pairs[lang]], lang)
            again = context.embed([a for a, _ in self.pairs[lang]], lang)
            assert np.allclose(left, again)
            scores.append(self.score(lang, "cosine", float((left * right).sum(1).mean() * 100), n=len(left)))
        scores.append(self.score("avg", "cosine", float(np.mean([s.value for s in scores]))))
        return scores


class FailingMock(Task):
    """Raises a DataError midway, like a corrupted file found during a run."""

    metadata = TaskMetadata(
        name="mock-failing", type="STS", description="Fails.", datasets=(), languages=("en",),
        splits=("test",), main_score="cosine",
    )

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        from polyembed.errors import DataError

        context.embed(["something"])
        raise DataError("corrupt.txt", 3, "cannot parse score 'x'")
