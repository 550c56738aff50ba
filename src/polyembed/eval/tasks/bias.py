"""Language bias (Reimers & Gurevych 2020, section 7): does a multilingual pool hurt STS ranking?

All STS2017 pairs of several language combinations are pooled into one joined set. A model without
language bias ranks the joined set about as well as it ranks each track alone, so the Spearman of the
joined set ("joined") is close to the mean of the per-track Spearman values ("expected"). A model that
puts same-language pairs closer just because they share a language ranks whole tracks above others, and
"difference" = joined - expected turns negative (LaBSE -1.29, LASER -0.92 in the paper's Table 8).
The paper pools 10 language combinations; our STS2017 copy has 6 usable tracks (track 4b, WMT news with
gold bunched at 5, is excluded). A stratified bootstrap over pairs gives a 95% interval for the difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from polyembed.data.readers.sts import STS2017_TRACKS
from polyembed.errors import PolyembedError
from polyembed.eval.base import EmbeddingProvider, Score, Task, TaskMetadata, register_task
from polyembed.eval.tasks.sts import STS17_CROSS, STS17_MONO, spearman, sts17_results

BIAS_TRACKS = tuple(track for track in STS2017_TRACKS if track in STS17_MONO + STS17_CROSS)
"""ar-ar, ar-en, es-es, es-en (4a), en-en, tr-en: the STS2017 tracks without 4b."""


@dataclass
class BiasResult:
    """Joined-pool Spearman, per-track mean ("expected") and their difference, all x100."""

    joined: float
    expected: float
    difference: float
    per_track: list[float]


def language_bias(similarities: Sequence[np.ndarray], gold: Sequence[Sequence[float]]) -> BiasResult:
    """Spearman of all tracks pooled vs the mean of the per-track Spearman values (x100)."""
    if len(similarities) != len(gold) or len(similarities) < 2:
        raise ValueError("need the similarities and gold scores of at least two tracks")
    per_track = [spearman(sims, scores) for sims, scores in zip(similarities, gold, strict=True)]
    joined = spearman(
        np.concatenate([np.asarray(s, dtype=np.float64) for s in similarities]),
        np.concatenate([np.asarray(g, dtype=np.float64) for g in gold]),
    )
    expected = float(np.mean(per_track))
    return BiasResult(joined, expected, joined - expected, per_track)


def _row_spearman(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Spearman x100 of each row pair of two (B, n) matrices (average ranks for ties)."""
    a = rankdata(predicted, axis=1)
    b = rankdata(gold, axis=1)
    a -= a.mean(axis=1, keepdims=True)
    b -= b.mean(axis=1, keepdims=True)
    return 100.0 * (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))


def bootstrap_difference(
    similarities: Sequence[np.ndarray], gold: Sequence[Sequence[float]], *, samples: int = 1000, seed: int = 0
) -> np.ndarray:
    """Differences (joined - expected) on `samples` resamples drawn with replacement within each track."""
    rng = np.random.default_rng(seed)
    sims_all, gold_all, per_track = [], [], []
    for track_sims, track_gold in zip(similarities, gold, strict=True):
        sims, scores = np.asarray(track_sims, dtype=np.float64), np.asarray(track_gold, dtype=np.float64)
        picks = rng.integers(0, len(scores), size=(samples, len(scores)))
        sims_all.append(sims[picks])
        gold_all.append(scores[picks])
        per_track.append(_row_spearman(sims[picks], scores[picks]))
    joined = _row_spearman(np.concatenate(sims_all, axis=1), np.concatenate(gold_all, axis=1))
    return joined - np.mean(per_track, axis=0)


@register_task
class LanguageBias(Task):
    """Joined-pool vs per-track STS2017 Spearman: the language-bias test of Reimers & Gurevych (2020).

    Args beyond `languages` (the STS2017 tracks to pool, at least two; default all six usable ones):
    `bootstrap` resamples for the 95% interval of the difference (0 turns it off), `seed` for them.
    """

    metadata = TaskMetadata(
        name="language-bias",
        type="LanguageBias",
        description=(
            "STS2017 tracks ar-ar, ar-en, es-es, es-en (4a), en-en, tr-en pooled into one set: "
            "joined = Spearman x100 of the pool, expected = mean per-track Spearman, "
            "difference = joined - expected (negative: the model ranks some language pairs above others)."
        ),
        datasets=("sts2017",),
        languages=BIAS_TRACKS,
        splits=("test",),
        main_score="difference",
        reference="Reimers & Gurevych 2020, section 7 and Table 8",
    )

    def __init__(
        self,
        languages: Sequence[str] | None = None,
        split: str | None = None,
        *,
        bootstrap: int = 1000,
        seed: int = 0,
    ) -> None:
        super().__init__(languages, split)
        if len(self.languages) < 2:
            raise PolyembedError("language-bias needs at least two STS2017 tracks to pool")
        if bootstrap < 0:
            raise PolyembedError("bootstrap must be >= 0")
        self.bootstrap = bootstrap
        self.seed = seed

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """Per-track Spearman rows, then joined / expected / difference (and its bootstrap interval)."""
        scored = sts17_results(self, context)
        similarities = [sims for sims, _ in scored.values()]
        gold = [pairs.scores for _, pairs in scored.values()]
        result = language_bias(similarities, gold)
        total = sum(len(g) for g in gold)
        rows = [
            self.score(subset, "spearman", value, n=len(pairs))
            for (subset, (_, pairs)), value in zip(scored.items(), result.per_track, strict=True)
        ]
        tracks = list(scored)
        rows += [
            self.score("all", "joined", result.joined, n=total, tracks=tracks),
            self.score("all", "expected", result.expected, n=total, tracks=tracks),
        ]
        if self.bootstrap:
            low, high = np.percentile(
                bootstrap_difference(similarities, gold, samples=self.bootstrap, seed=self.seed), [2.5, 97.5]
            )
            rows.append(
                self.score(
                    "all",
                    "difference",
                    result.difference,
                    n=total,
                    tracks=tracks,
                    ci95=[float(low), float(high)],
                    bootstrap=self.bootstrap,
                    seed=self.seed,
                )
            )
            rows += [
                self.score("all", "difference-ci-low", low, n=total),
                self.score("all", "difference-ci-high", high, n=total),
            ]
        else:
            rows.append(self.score("all", "difference", result.difference, n=total, tracks=tracks))
        return rows
