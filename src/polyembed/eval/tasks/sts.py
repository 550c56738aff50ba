"""STS / STR tasks: Spearman (x100) between the cosine similarity of sentence embeddings and the gold scores.

Tasks: `sts17` (SemEval-2017, 7 tracks), `stsb` (English STS-B), `stsb-multi-mt` (STS-B in 11 languages,
mono and en-X cross-lingual), `kardes-sts` (English + 5 Turkic languages, mono and every cross pair) and
`semrel` (SemRel 2024 track A relatedness). Cross-lingual pairs built from row-aligned translations are
scored in both directions (s1 in A with s2 in B, and s1 in B with s2 in A) and the two values averaged.
Pearson (x100) is reported as a secondary metric. The scoring helpers here are shared with `bias.py`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import pearsonr, spearmanr

from polyembed.data.readers.kardes import KARDES_FOLDERS
from polyembed.data.readers.sts import (
    STS2017_TRACKS,
    STSB_MULTI_MT_LANGUAGES,
    read_kardes_sts,
    read_semrel,
    read_stsb_multi_mt,
)
from polyembed.data.types import ScoredPairs
from polyembed.errors import PolyembedError
from polyembed.eval.base import EmbeddingProvider, Score, Task, TaskMetadata, register_task

STS17_MONO = ("ar-ar", "es-es", "en-en")
STS17_CROSS = ("ar-en", "es-en", "tr-en")
"""Members of the STS2017 averages. Track 4b (es-en-wmt) is in neither: its gold bunches at 5."""


# ----------------------------------------------------------------------------------- shared scoring code


def pair_similarities(context: EmbeddingProvider, pair_sets: Sequence[ScoredPairs]) -> list[np.ndarray]:
    """Cosine similarity of every pair in each set; each language's sentences are embedded in one call.

    Sentences are grouped by the language of their column (language1 for sentences1, language2 for
    sentences2), de-duplicated, embedded once per language, and the rows looked up per pair.
    """
    index: dict[str, dict[str, int]] = {}
    for pairs in pair_sets:
        for language, sentences in ((pairs.language1, pairs.sentences1), (pairs.language2, pairs.sentences2)):
            rows = index.setdefault(language, {})
            for sentence in sentences:
                rows.setdefault(sentence, len(rows))
    matrices = {language: context.embed(list(rows), language=language) for language, rows in index.items()}
    out: list[np.ndarray] = []
    for pairs in pair_sets:
        first = matrices[pairs.language1][[index[pairs.language1][s] for s in pairs.sentences1]]
        second = matrices[pairs.language2][[index[pairs.language2][s] for s in pairs.sentences2]]
        out.append(np.einsum("ij,ij->i", first.astype(np.float64), second.astype(np.float64)))
    return out


def spearman(predicted: Sequence[float] | np.ndarray, gold: Sequence[float] | np.ndarray) -> float:
    """Spearman rank correlation x100 (ties get average ranks); NaN when either side is constant."""
    predicted, gold = np.asarray(predicted, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if len(gold) < 2 or np.ptp(predicted) == 0 or np.ptp(gold) == 0:
        return float("nan")
    return 100.0 * float(spearmanr(predicted, gold).statistic)


def pearson(predicted: Sequence[float] | np.ndarray, gold: Sequence[float] | np.ndarray) -> float:
    """Pearson correlation x100; NaN when either side is constant."""
    predicted, gold = np.asarray(predicted, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if len(gold) < 2 or np.ptp(predicted) == 0 or np.ptp(gold) == 0:
        return float("nan")
    return 100.0 * float(pearsonr(predicted, gold).statistic)


@dataclass
class PairResult:
    """Correlations of one subset (for cross pairs: the mean of both directions, each kept)."""

    subset: str
    spearman: float
    pearson: float
    n: int
    directions: dict[str, float]


def score_pairs(subset: str, similarities: np.ndarray, pairs: ScoredPairs) -> PairResult:
    """Correlations of one scored-pair set."""
    return PairResult(subset, spearman(similarities, pairs.scores), pearson(similarities, pairs.scores), len(pairs), {})


def score_both_directions(
    subset: str, forward: tuple[np.ndarray, ScoredPairs], backward: tuple[np.ndarray, ScoredPairs]
) -> PairResult:
    """Average of the two directions of a cross-lingual subset (A s1 + B s2, and B s1 + A s2)."""
    results = [score_pairs(subset, similarities, pairs) for similarities, pairs in (forward, backward)]
    directions = {
        f"spearman-{pairs.language1}-{pairs.language2}": result.spearman
        for result, (_, pairs) in zip(results, (forward, backward), strict=True)
    }
    return PairResult(
        subset,
        float(np.mean([r.spearman for r in results])),
        float(np.mean([r.pearson for r in results])),
        results[0].n,
        directions,
    )


class StsTask(Task):
    """Shared row building for the STS tasks: main Spearman, Pearson, direction details and averages."""

    def result_rows(self, result: PairResult, **extra: object) -> list[Score]:
        """Rows of one subset: spearman (main), pearson, and per-direction Spearman for cross pairs."""
        rows = [
            self.score(result.subset, "spearman", result.spearman, n=result.n, **extra),
            self.score(result.subset, "pearson", result.pearson, n=result.n, **extra),
        ]
        rows += [self.score(result.subset, metric, value, n=result.n) for metric, value in result.directions.items()]
        return rows

    def mono_and_cross_rows(
        self,
        context: EmbeddingProvider,
        mono_pairs: Sequence[ScoredPairs],
        cross_pairs: Sequence[tuple[str, ScoredPairs, ScoredPairs]],
    ) -> list[Score]:
        """Rows for mono subsets and cross subsets (name, A->B pairs, B->A pairs), then both averages."""
        directions = [pairs for _, forward, backward in cross_pairs for pairs in (forward, backward)]
        similarities = pair_similarities(context, [*mono_pairs, *directions])
        mono = [
            score_pairs(pairs.language1, sims, pairs)
            for sims, pairs in zip(similarities[: len(mono_pairs)], mono_pairs, strict=True)
        ]
        rest = similarities[len(mono_pairs) :]
        cross = [
            score_both_directions(name, (rest[2 * i], forward), (rest[2 * i + 1], backward))
            for i, (name, forward, backward) in enumerate(cross_pairs)
        ]
        rows = [row for result in mono + cross for row in self.result_rows(result)]
        return rows + self.average_rows("mono-avg", mono) + self.average_rows("cross-avg", cross)

    def average_rows(self, subset: str, results: Sequence[PairResult]) -> list[Score]:
        """Mean Spearman and Pearson over the given subsets (nothing when none were evaluated)."""
        if not results:
            return []
        members = [r.subset for r in results]
        return [
            self.score(subset, "spearman", float(np.mean([r.spearman for r in results])), subsets=members),
            self.score(subset, "pearson", float(np.mean([r.pearson for r in results])), subsets=members),
        ]


# ----------------------------------------------------------------------------------- sts17


def sts17_results(task: Task, context: EmbeddingProvider) -> dict[str, tuple[np.ndarray, ScoredPairs]]:
    """Cosine similarities and pairs of the task's STS2017 tracks (a task that declares sts2017: this one and the
    language-bias task)."""
    subsets = task.languages
    pair_sets = [task.read(context, subset) for subset in subsets]
    similarities = pair_similarities(context, pair_sets)
    return dict(zip(subsets, zip(similarities, pair_sets, strict=True), strict=True))


@register_task
class Sts17(StsTask):
    """SemEval-2017 STS: 3 monolingual and 4 cross-lingual tracks, as in Reimers & Gurevych (2020) Tables 1-2."""

    metadata = TaskMetadata(
        name="sts17",
        type="STS",
        description=(
            "SemEval-2017 Task 1 STS (250 pairs per track). Spearman x100 of cosine vs gold. "
            "mono-avg = ar-ar, es-es, en-en; cross-avg = ar-en, es-en (4a), tr-en; avg = both; "
            "es-en-wmt (track 4b, gold bunched at 5) is reported but not averaged."
        ),
        datasets=("sts2017",),
        languages=tuple(STS2017_TRACKS),
        splits=("test",),
        main_score="spearman",
        reference="Cer et al. 2017; Reimers & Gurevych 2020 (Tables 1-2)",
    )

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """Score every selected track, then the mono/cross averages."""
        results: dict[str, PairResult] = {}
        rows: list[Score] = []
        for subset, (similarities, pairs) in sts17_results(self, context).items():
            results[subset] = score_pairs(subset, similarities, pairs)
            rows += self.result_rows(results[subset], track=STS2017_TRACKS[subset].track)
        mono = [results[s] for s in STS17_MONO if s in results]
        cross = [results[s] for s in STS17_CROSS if s in results]
        return (
            rows
            + self.average_rows("mono-avg", mono)
            + self.average_rows("cross-avg", cross)
            + (self.average_rows("avg", mono + cross) if mono and cross else [])
        )


# ----------------------------------------------------------------------------------- stsb


@register_task
class Stsb(StsTask):
    """English STS Benchmark: the standard English STS check (default split: test)."""

    metadata = TaskMetadata(
        name="stsb",
        type="STS",
        description="STS Benchmark (English). Spearman x100 of cosine vs gold.",
        datasets=("stsbenchmark",),
        languages=("en",),
        splits=("train", "dev", "test"),
        main_score="spearman",
        reference="Cer et al. 2017",
    )

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """Score the chosen split."""
        pairs = self.read(context, self.split)
        (similarities,) = pair_similarities(context, [pairs])
        return self.result_rows(score_pairs("en", similarities, pairs))


# ----------------------------------------------------------------------------------- stsb-multi-mt


class LimitedStsTask(StsTask):
    """An STS task over long translated test sets that can score `max_pairs` evenly spaced rows per subset
    (row i * n // max_pairs), for quick runs such as the demo; the same rows in every language."""

    def __init__(
        self, languages: Sequence[str] | str | None = None, split: str | None = None, max_pairs: int | None = None
    ) -> None:
        super().__init__(languages, split)
        if max_pairs is not None and max_pairs < 1:
            raise PolyembedError(f"max_pairs must be >= 1, got {max_pairs}")
        self.max_pairs = max_pairs

    def limited(self, pairs: ScoredPairs) -> ScoredPairs:
        """`pairs` itself, or its evenly spaced `max_pairs` rows."""
        n = len(pairs)
        if self.max_pairs is None or n <= self.max_pairs:
            return pairs
        rows = [i * n // self.max_pairs for i in range(self.max_pairs)]
        return ScoredPairs(
            [pairs.sentences1[i] for i in rows],
            [pairs.sentences2[i] for i in rows],
            [pairs.scores[i] for i in rows],
            pairs.language1,
            pairs.language2,
        )


@register_task
class StsbMultiMt(LimitedStsTask):
    """STS-B machine-translated into 10 languages: mono per language and en-X cross pairs, row by row.

    `languages` picks the languages: each chosen one gets a mono subset, and each chosen X != en a
    cross subset 'en-X' (English is always used for the cross pairs, chosen or not).
    """

    metadata = TaskMetadata(
        name="stsb-multi-mt",
        type="STS",
        description=(
            "STS-B translated with DeepL (stsb-multi-mt). Mono per language; 'en-X' cross pairs are built "
            "row by row in both directions (en s1 + X s2, X s1 + en s2) and their Spearman values averaged. "
            "Spearman x100 of cosine vs gold."
        ),
        datasets=("stsb-multi-mt",),
        languages=STSB_MULTI_MT_LANGUAGES,
        splits=("train", "dev", "test"),
        main_score="spearman",
        reference="Reimers & Gurevych 2020; github.com/PhilipMay/stsb-multi-mt",
    )

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """Mono subsets, then en-X cross subsets, then the averages."""
        folder = self.folder(context)
        mono_pairs = [self.limited(read_stsb_multi_mt(folder, language, self.split)) for language in self.languages]
        cross_pairs = [
            (
                f"en-{language}",
                self.limited(read_stsb_multi_mt(folder, "en", self.split, language)),
                self.limited(read_stsb_multi_mt(folder, language, self.split, "en")),
            )
            for language in self.languages
            if language != "en"
        ]
        return self.mono_and_cross_rows(context, mono_pairs, cross_pairs)


# ----------------------------------------------------------------------------------- kardes-sts


@register_task
class KardesSts(LimitedStsTask):
    """Kardes-NLU STS: English and 5 Turkic languages, mono and every cross pair (both directions averaged)."""

    metadata = TaskMetadata(
        name="kardes-sts",
        type="STS",
        description=(
            "Kardes-NLU STS (STS-B pairs translated into az, kk, ky, ug (Cyrillic), uz). Mono per language; "
            "every pair of chosen languages as a cross subset, built row by row in both directions and "
            "averaged. English mono text is taken from the az file. Spearman x100 of cosine vs gold."
        ),
        datasets=("kardes-nlu",),
        languages=("en", *KARDES_FOLDERS),
        splits=("dev", "test"),
        main_score="spearman",
        reference="Senel et al. 2024, Kardes-NLU",
    )

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """Mono subsets, then every cross pair of the chosen languages, then the averages."""
        folder = self.folder(context)
        order = [code for code in self.metadata.languages if code in self.languages]
        mono_pairs = [self.limited(read_kardes_sts(folder, language, split=self.split)) for language in order]
        cross_pairs = [
            (
                f"{a}-{b}",
                self.limited(read_kardes_sts(folder, a, b, split=self.split)),
                self.limited(read_kardes_sts(folder, b, a, split=self.split)),
            )
            for a, b in itertools.combinations(order, 2)
        ]
        return self.mono_and_cross_rows(context, mono_pairs, cross_pairs)


# ----------------------------------------------------------------------------------- semrel


@register_task
class SemRel(StsTask):
    """SemRel 2024 track A: semantic relatedness (not similarity) in 8 languages, 5 of them African."""

    metadata = TaskMetadata(
        name="semrel",
        type="STR",
        description="SemRel 2024 track A relatedness (gold 0-1). Spearman x100 of cosine vs gold; avg = mean.",
        datasets=("semrel2024",),
        languages=("eng", "amh", "hau", "kin", "mar", "tel", "arq", "ary"),
        splits=("train", "dev", "test"),
        main_score="spearman",
        reference="Ousidhoum et al. 2024, SemRel2024",
    )

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """Score each chosen language, then the average."""
        folder = self.folder(context)
        pair_sets = [read_semrel(folder, language, self.split) for language in self.languages]
        similarities = pair_similarities(context, pair_sets)
        results = [
            score_pairs(language, sims, pairs)
            for language, sims, pairs in zip(self.languages, similarities, pair_sets, strict=True)
        ]
        rows = [row for result in results for row in self.result_rows(result)]
        return rows + (self.average_rows("avg", results) if len(results) > 1 else [])
