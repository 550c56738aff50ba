"""Comparable-corpus mining, a BUCC-style task built from public parallel data (BUCC itself is not available).

BUCC (Zweigenbaum et al. 2017/2018) hides a few true translations in large monolingual corpora and asks a
system to find them. We rebuild that protocol from a parallel test set:

1. Rows with a repeated sentence on either side are dropped (first occurrence kept), so every sentence
   has exactly one translation in the data.
2. The remaining rows are shuffled with `seed` and cut into disjoint blocks. For each of train and test:
   `n_gold` rows give the hidden pairs; `n_distractors` *other* rows give extra X sentences, and
   `n_distractors` yet other rows give extra English sentences. Source pool = gold X + distractor X,
   target pool = gold English + distractor English, each shuffled. A distractor therefore has no
   translation in the opposite pool (paraphrases may still exist, as in BUCC).
   When the data has fewer rows than 2 * (n_gold + 2 * n_distractors), all three counts are scaled down
   by the same factor; the sizes used are reported in each score's `extra`.
3. Candidates are mined with the margin criterion (`polyembed.mining.margin.mine`; default ratio, k = 4,
   mode "max" as LASER's BUCC setup). On train, the score threshold maximising F1 is fitted (LASER's
   `BuccOptimize`, `fit_threshold`); on test, pairs scoring >= that threshold are extracted.

Reported per subset (percent): `f1` (main), `precision`, `recall` on test, `train_f1`, and the raw
`threshold`. Subsets are `<dataset>:<language>` for TICO-19 (`tico19:fr`) and Tatoeba-Challenge
(`tatoeba-challenge:deu`); mining goes from X to English, as BUCC mines xx -> en.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from polyembed.data.readers.parallel import read_tatoeba_challenge, read_tico19
from polyembed.data.types import ParallelText
from polyembed.errors import PolyembedError
from polyembed.eval.base import EmbeddingProvider, Score, Task, TaskMetadata, register_task
from polyembed.eval.tasks.retrieval import TATOEBA_CHALLENGE_LANGUAGES, TICO19_LANGUAGES, drop_duplicate_rows
from polyembed.mining.margin import MARGINS, MODES, fit_threshold, mine, prf

MINING_SUBSETS = tuple(f"tico19:{lang}" for lang in TICO19_LANGUAGES) + tuple(
    f"tatoeba-challenge:{lang}" for lang in TATOEBA_CHALLENGE_LANGUAGES
)
DEFAULT_MINING_SUBSETS = ("tico19:fr", "tatoeba-challenge:deu")
PIVOTS = {"tico19": "en", "tatoeba-challenge": "eng"}


@dataclass
class ComparableCorpus:
    """Two sentence pools with hidden translation pairs: gold holds (source row, target row)."""

    source: list[str]
    target: list[str]
    gold: set[tuple[int, int]]
    source_language: str
    target_language: str
    info: dict[str, int] = field(default_factory=dict)


def comparable_splits(
    pair: ParallelText, n_gold: int, n_distractors: int, seed: int = 0
) -> tuple[ComparableCorpus, ComparableCorpus]:
    """Build the (train, test) comparable corpora from a parallel text as described in the module docstring."""
    if n_gold < 1 or n_distractors < 0:
        raise ValueError(f"need n_gold >= 1 and n_distractors >= 0, got {n_gold}, {n_distractors}")
    unique = drop_duplicate_rows(pair)
    needed = 2 * (n_gold + 2 * n_distractors)
    if len(unique) < needed:
        factor = len(unique) / needed
        n_gold, n_distractors = int(n_gold * factor), int(n_distractors * factor)
        if n_gold < 1:
            raise PolyembedError(
                f"{pair.source_language}-{pair.target_language}: only {len(unique)} distinct rows, too few for "
                "a train and a test corpus"
            )
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(unique))
    block = n_gold + 2 * n_distractors
    corpora: list[ComparableCorpus] = []
    for split_index in range(2):
        rows = order[split_index * block : (split_index + 1) * block]
        gold_rows = rows[:n_gold]
        source_rows = np.concatenate([gold_rows, rows[n_gold : n_gold + n_distractors]])
        target_rows = np.concatenate([gold_rows, rows[n_gold + n_distractors :]])
        source_rows = source_rows[rng.permutation(len(source_rows))]
        target_rows = target_rows[rng.permutation(len(target_rows))]
        source_position = {int(row): i for i, row in enumerate(source_rows)}
        target_position = {int(row): i for i, row in enumerate(target_rows)}
        corpora.append(
            ComparableCorpus(
                source=[unique.source[int(r)] for r in source_rows],
                target=[unique.target[int(r)] for r in target_rows],
                gold={(source_position[int(r)], target_position[int(r)]) for r in gold_rows},
                source_language=pair.source_language,
                target_language=pair.target_language,
                info={
                    "gold": int(n_gold),
                    "source_pool": len(source_rows),
                    "target_pool": len(target_rows),
                    "distinct_rows": len(unique),
                },
            )
        )
    return corpora[0], corpora[1]


def n_gold_share(corpus: ComparableCorpus) -> float:
    """The larger of the two pools' shares of gold sentences (BUCC: a few percent)."""
    return len(corpus.gold) / min(len(corpus.source), len(corpus.target))


@register_task
class ComparableMining(Task):
    """BUCC-style parallel sentence mining from comparable pools, built from TICO-19 and Tatoeba-Challenge.

    Constructor: `languages` (subsets such as "tico19:fr", "tatoeba-challenge:deu"; default
    DEFAULT_MINING_SUBSETS), `n_gold` (hidden pairs per split, default 100), `n_distractors` (extra
    sentences per side per split, default 200), `k`, `margin`, `mode` (see polyembed.mining.margin),
    `seed`, `index_factory` (faiss factory string for large pools). The defaults encode 2 x 1,200
    sentences (pools of 300 per side and split): BUCC-like sizes (gold ~2-3 % of 150k+ sentences) are
    possible by raising `n_distractors`, limited by the rows a dataset has.
    """

    metadata = TaskMetadata(
        name="comparable-mining",
        type="bitext-mining",
        description="BUCC-style mining of hidden translation pairs in comparable pools (F1 with a train-fitted "
        "margin threshold), built from TICO-19 and Tatoeba-Challenge",
        datasets=("tico19", "tatoeba-challenge"),
        languages=MINING_SUBSETS,
        splits=("test",),
        main_score="f1",
        reference="Zweigenbaum et al. 2017 (BUCC); Artetxe & Schwenk 2019 (margin mining); Reimers & Gurevych 2020",
    )

    def __init__(
        self,
        languages: Sequence[str] | None = None,
        split: str | None = None,
        *,
        n_gold: int = 100,
        n_distractors: int = 200,
        k: int = 4,
        margin: str = "ratio",
        mode: str = "max",
        seed: int = 0,
        index_factory: str | None = None,
    ) -> None:
        super().__init__(languages=DEFAULT_MINING_SUBSETS if languages is None else languages, split=split)
        if margin not in MARGINS:
            raise PolyembedError(f"unknown margin '{margin}' (choose from {', '.join(MARGINS)})")
        if mode not in MODES:
            raise PolyembedError(f"unknown mode '{mode}' (choose from {', '.join(MODES)})")
        if n_gold < 1 or n_distractors < 0 or k < 1:
            raise PolyembedError("comparable-mining needs n_gold >= 1, n_distractors >= 0 and k >= 1")
        self.n_gold = n_gold
        self.n_distractors = n_distractors
        self.k = k
        self.margin = margin
        self.mode = mode
        self.seed = seed
        self.index_factory = index_factory

    def load_pair(self, context: EmbeddingProvider, subset: str) -> ParallelText:
        """The parallel text behind a subset, X -> English."""
        dataset, language = subset.split(":", 1)
        folder = self.folder(context, dataset)
        if dataset == "tico19":
            return read_tico19(folder, language)
        return read_tatoeba_challenge(folder, language)

    def _mine(self, corpus: ComparableCorpus, source: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pairs = mine(source, target, k=self.k, margin=self.margin, mode=self.mode, index_factory=self.index_factory)
        scores = np.array([p.score for p in pairs], dtype=np.float64)
        correct = np.array([(p.source, p.target) in corpus.gold for p in pairs], dtype=bool)
        return scores, correct

    def required_datasets(self) -> tuple[str, ...]:
        """Only the datasets of the chosen subsets ('tico19:fr' needs tico19 only)."""
        return tuple(dict.fromkeys(subset.split(":")[0] for subset in self.languages))

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """Fit the threshold on train, report F1/precision/recall on test per subset, then averages."""
        scores: list[Score] = []
        summary: dict[str, list[float]] = {}
        for subset in self.languages:
            pair = self.load_pair(context, subset)
            train, test = comparable_splits(pair, self.n_gold, self.n_distractors, self.seed)
            source_vectors = context.embed(train.source + test.source, language=pair.source_language)
            target_vectors = context.embed(train.target + test.target, language=pair.target_language)
            n_train_source, n_train_target = len(train.source), len(train.target)
            train_scores, train_correct = self._mine(
                train, source_vectors[:n_train_source], target_vectors[:n_train_target]
            )
            fit = fit_threshold(train_scores, train_correct, len(train.gold))
            test_scores, test_correct = self._mine(
                test, source_vectors[n_train_source:], target_vectors[n_train_target:]
            )
            extracted = test_scores >= fit.threshold
            precision, recall, f1 = prf(int(test_correct[extracted].sum()), int(extracted.sum()), len(test.gold))
            extra = {
                "k": self.k,
                "margin": self.margin,
                "mode": self.mode,
                "seed": self.seed,
                "source_pool": test.info["source_pool"],
                "target_pool": test.info["target_pool"],
                "gold_share": round(n_gold_share(test), 4),
                "extracted": int(extracted.sum()),
            }
            n = len(test.gold)
            rows = {"f1": f1 * 100, "precision": precision * 100, "recall": recall * 100, "train_f1": fit.f1 * 100}
            for metric, value in rows.items():
                scores.append(self.score(subset, metric, value, n=n, **extra))
                summary.setdefault(metric, []).append(value)
            scores.append(self.score(subset, "threshold", fit.threshold, n=len(train.gold), **extra))
        for metric, values in summary.items():
            scores.append(self.score("avg", metric, float(np.mean(values)), n=len(values)))
        return scores


BUCC_LIKE_SUBSETS = ("tatoeba-challenge:ita", "tatoeba-challenge:nld", "tatoeba-challenge:jpn")
"""Languages outside the demo's training languages: the distilled student never saw these rows."""


@register_task
class BuccLikeMining(ComparableMining):
    """`comparable-mining` at BUCC's proportions: 150 gold pairs among 3,000 sentences per pool and split (5 %),
    the threshold fitted on the train split. Its F1 is comparable in kind with BUCC's (a few percent gold);
    `comparable-mining`'s one-third gold is an easier task. Defaults to three Tatoeba-Challenge languages that
    the demo does not train (each encodes 12,000 sentences)."""

    metadata = replace(
        ComparableMining.metadata,
        name="bucc-like-mining",
        description="BUCC-proportioned mining (5 % gold per pool, threshold fitted on train) from Tatoeba-Challenge "
        "and TICO-19",
    )

    def __init__(
        self,
        languages: Sequence[str] | None = None,
        split: str | None = None,
        *,
        n_gold: int = 150,
        n_distractors: int = 2850,
        **options: Any,
    ) -> None:
        super().__init__(
            BUCC_LIKE_SUBSETS if languages is None else languages, split, n_gold=n_gold,
            n_distractors=n_distractors, **options,
        )
        if n_gold > 0.05 * (n_gold + n_distractors):
            raise PolyembedError(
                f"bucc-like-mining: {n_gold} gold among {n_gold + n_distractors} sentences per pool is over 5 %; "
                "raise n_distractors (or use comparable-mining)"
            )
