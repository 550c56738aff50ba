"""Bitext retrieval: find each sentence's translation among all translations (Tatoeba-style).

For every language X paired with a pivot language (English), the rows of both sides are embedded and each
query retrieves its nearest neighbour by cosine among *all* rows of the other side. A hit requires the
retrieved row to be the gold row (LASER's index convention: a duplicate sentence at another row counts as a
miss). Ties in cosine (within 1e-6) go to the lowest row index, so results are deterministic.

Metrics per language (percent): `accuracy_x2pivot` (X queries, pivot candidates), `accuracy_pivot2x`, and
their mean `accuracy` (the main score, the number the sentence-transformers papers report for Tatoeba).
The `tatoeba` task adds LASER's xSIM error rate. A final subset "avg" averages every metric over languages.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from polyembed.data.readers.multiway import line_aligned_files, read_line_aligned_directory
from polyembed.data.registry import DATASETS, TATOEBA_LANGUAGES, get_dataset
from polyembed.data.types import MultiwayText, ParallelText
from polyembed.errors import PolyembedError, UnknownLanguageError
from polyembed.eval.base import EmbeddingProvider, Score, Task, TaskMetadata, register_task
from polyembed.mining.margin import margin_retrieve

TICO19_LANGUAGES = ("am", "ar", "es_LA", "fr", "ha", "hi", "ru", "rw", "sw", "zh")
TATOEBA_CHALLENGE_LANGUAGES = DATASETS["tatoeba-challenge"].languages
MAFAND_LANGUAGES = DATASETS["mafand-mt"].languages


TIE_TOLERANCE = 1e-6


def retrieval_hits(
    queries: np.ndarray, candidates: np.ndarray, *, chunk: int = 2048, tie_tolerance: float = TIE_TOLERANCE
) -> np.ndarray:
    """Boolean per query: is its nearest candidate (max inner product) the candidate in the same row?

    Rows must be L2-normalised (then inner product is cosine). Candidates whose cosine is within
    `tie_tolerance` of the best count as tied and the lowest row index wins, so exact ties (identical
    sentences, or equal bag-of-n-gram vectors) resolve the same way whatever the float rounding.
    """
    if len(queries) != len(candidates):
        raise ValueError(f"need aligned rows: {len(queries)} queries vs {len(candidates)} candidates")
    q = np.asarray(queries, dtype=np.float64)
    c = np.asarray(candidates, dtype=np.float64)
    hits = np.zeros(len(q), dtype=bool)
    for start in range(0, len(q), chunk):
        sims = q[start : start + chunk] @ c.T
        best = (sims >= sims.max(axis=1, keepdims=True) - tie_tolerance).argmax(axis=1)
        hits[start : start + chunk] = best == np.arange(start, start + len(best))
    return hits


def retrieval_accuracy(queries: np.ndarray, candidates: np.ndarray) -> float:
    """Percentage of queries whose nearest candidate is their own row (see `retrieval_hits`)."""
    return float(retrieval_hits(queries, candidates).mean() * 100) if len(queries) else 0.0


def xsim_error(source: np.ndarray, target: np.ndarray, k: int = 4, margin: str = "ratio") -> float:
    """LASER's xSIM error rate (%) for source -> target retrieval.

    As in LASER `source/xsim.py`: the k nearest targets of each source by cosine are re-scored with the
    margin criterion (ratio by default, k = 4; neighbourhood averages taken in both directions), the best
    one is retrieved, and an error is counted when its index differs from the gold index.
    """
    if len(source) != len(target):
        raise ValueError(f"need aligned rows: {len(source)} vs {len(target)}")
    retrieved = margin_retrieve(source, target, k=k, margin=margin)
    return float((retrieved != np.arange(len(source))).mean() * 100)


def drop_duplicate_rows(pair: ParallelText) -> ParallelText:
    """Keep the first occurrence only: a row is dropped when its source or its target text appeared before.

    Index-based retrieval cannot tell two identical sentences apart, so duplicates would count as misses.
    """
    seen_source: set[str] = set()
    seen_target: set[str] = set()
    keep: list[int] = []
    for row, (s, t) in enumerate(zip(pair.source, pair.target, strict=True)):
        if s in seen_source or t in seen_target:
            continue
        seen_source.add(s)
        seen_target.add(t)
        keep.append(row)
    return _subset(pair, keep)


def evenly_spaced_rows(pair: ParallelText, max_rows: int) -> ParallelText:
    """At most `max_rows` rows at indices floor(i * n / max_rows): deterministic and spread over the file.

    Files such as Tatoeba-Challenge are sorted alphabetically, so taking the first rows would bias the sample.
    """
    n = len(pair)
    if max_rows < 1:
        raise ValueError(f"max_rows must be >= 1, got {max_rows}")
    if n <= max_rows:
        return pair
    return _subset(pair, [i * n // max_rows for i in range(max_rows)])


def _subset(pair: ParallelText, rows: Sequence[int]) -> ParallelText:
    return ParallelText(
        [pair.source[i] for i in rows], [pair.target[i] for i in rows], pair.source_language, pair.target_language
    )


class PivotRetrievalTask(Task):
    """Shared logic of the bitext-retrieval tasks: subclasses say how to read the (X -> pivot) pairs.

    `drop_duplicates` removes rows with a repeated sentence on either side (see `drop_duplicate_rows`);
    `max_rows` then keeps at most that many rows per language by `evenly_spaced_rows`.
    """

    pivot: str = "eng"

    def __init__(
        self,
        languages: Sequence[str] | None = None,
        split: str | None = None,
        *,
        drop_duplicates: bool = False,
        max_rows: int | None = None,
    ) -> None:
        super().__init__(languages=languages, split=split)
        self.drop_duplicates = drop_duplicates
        self.max_rows = max_rows

    def load_pair(self, context: EmbeddingProvider, language: str) -> ParallelText:
        """The aligned (X, pivot) rows of one language; source = X, target = pivot: by default the declared
        dataset's reader for (language, split); a task whose files are laid out otherwise overrides this."""
        return self.read(context, language, self.split)

    def prepare(self, pair: ParallelText) -> ParallelText:
        """Apply the duplicate filter and the row cap."""
        if self.drop_duplicates:
            pair = drop_duplicate_rows(pair)
        if self.max_rows is not None:
            pair = evenly_spaced_rows(pair, self.max_rows)
        return pair

    def extra_scores(self, language: str, source: np.ndarray, target: np.ndarray, n: int) -> list[Score]:
        """Hook for additional per-language metrics (xSIM in `tatoeba`)."""
        return []

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """Accuracy in both directions per language, then an "avg" row per metric."""
        pairs = {lang: self.prepare(self.load_pair(context, lang)) for lang in self.languages}
        all_pivot = [sentence for pair in pairs.values() for sentence in pair.target]
        pivot_vectors = context.embed(all_pivot, language=self.pivot)
        scores: list[Score] = []
        offset = 0
        for lang, pair in pairs.items():
            n = len(pair)
            target = pivot_vectors[offset : offset + n]
            offset += n
            if n == 0:
                raise PolyembedError(f"{self.name}: no rows left for '{lang}'")
            source = context.embed(pair.source, language=lang)
            x2p = retrieval_accuracy(source, target)
            p2x = retrieval_accuracy(target, source)
            info: dict[str, Any] = {"pivot": self.pivot}
            scores.append(self.score(lang, "accuracy_x2pivot", x2p, n=n, **info))
            scores.append(self.score(lang, "accuracy_pivot2x", p2x, n=n, **info))
            scores.append(self.score(lang, "accuracy", (x2p + p2x) / 2, n=n, **info))
            scores.extend(self.extra_scores(lang, source, target, n))
        scores.extend(self._averages(scores))
        return scores

    def _averages(self, scores: list[Score]) -> list[Score]:
        metrics: dict[str, list[float]] = {}
        for row in scores:
            metrics.setdefault(row.metric, []).append(row.value)
        return [self.score("avg", metric, float(np.mean(values)), n=len(values)) for metric, values in metrics.items()]


@register_task
class TatoebaRetrieval(PivotRetrievalTask):
    """LASER Tatoeba (112 languages): nearest-neighbour accuracy both ways plus LASER's xSIM error rate.

    `xsim_error` is LASER's definition (source/xsim.py): X -> eng, ratio margin over the k = 4 nearest
    English sentences, error when the retrieved index differs from the gold index. LASER Tatoeba v1 has
    no exact duplicate sentences within a language file (checked), so the index convention is exact here.
    """

    metadata = TaskMetadata(
        name="tatoeba",
        type="bitext-retrieval",
        description="LASER Tatoeba similarity search: X<->eng nearest-neighbour accuracy and xSIM error rate",
        datasets=("tatoeba",),
        languages=TATOEBA_LANGUAGES,
        splits=("test",),
        main_score="accuracy",
        reference="Artetxe & Schwenk 2019 (TACL); Reimers & Gurevych 2020 report the mean of both directions",
    )
    pivot = "eng"

    def __init__(
        self,
        languages: Sequence[str] | None = None,
        split: str | None = None,
        *,
        xsim_k: int = 4,
        xsim_margin: str = "ratio",
        max_rows: int | None = None,
    ) -> None:
        super().__init__(languages=languages, split=split, max_rows=max_rows)
        self.xsim_k = xsim_k
        self.xsim_margin = xsim_margin

    def load_pair(self, context: EmbeddingProvider, language: str) -> ParallelText:
        """LASER Tatoeba `tatoeba.XXX-eng.*`."""
        return self.read(context, language)

    def extra_scores(self, language: str, source: np.ndarray, target: np.ndarray, n: int) -> list[Score]:
        """xSIM error rate (%), X -> eng."""
        error = xsim_error(source, target, k=self.xsim_k, margin=self.xsim_margin)
        return [self.score(language, "xsim_error", error, n=n, k=self.xsim_k, margin=self.xsim_margin)]


@register_task
class ParallelRetrieval(PivotRetrievalTask):
    """Bitext retrieval over any multi-way parallel source, against a pivot language.

    Give either `directory` (a folder of line-aligned `<prefix>.<lang>[.gz]` files, `prefix` optional) or
    `dataset`, the name of a registered dataset whose reader returns a MultiwayText (`reader_kwargs` are
    passed to it, e.g. ``{"split": "test_2016_flickr"}`` for multi30k). A string `directory` that is not an
    existing folder but a registered dataset name is taken as `dataset`. `pivot` defaults to "en" or "eng",
    whichever the data has; every other language is a subset. Duplicate rows are dropped per pair.
    """

    metadata = TaskMetadata(
        name="parallel-retrieval",
        type="bitext-retrieval",
        description="Generic pivot<->X nearest-neighbour retrieval over a multi-way parallel directory or dataset",
        datasets=(),
        languages=(),
        splits=("test",),
        main_score="accuracy",
    )

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        dataset: str | None = None,
        prefix: str | None = None,
        pivot: str | None = None,
        languages: Sequence[str] | None = None,
        split: str | None = None,
        drop_duplicates: bool = True,
        max_rows: int | None = None,
        reader_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if (
            isinstance(directory, str)
            and dataset is None
            and directory in DATASETS
            and not Path(directory).expanduser().exists()
        ):
            directory, dataset = None, directory
        if (directory is None) == (dataset is None):
            raise PolyembedError("parallel-retrieval needs exactly one of `directory` or `dataset`")
        self.directory = Path(directory).expanduser() if directory is not None else None
        self.dataset_name = dataset  # not `dataset`: that is Task.dataset(), a method
        self.prefix = prefix
        self.reader_kwargs = dict(reader_kwargs or {})
        if self.directory is not None:
            available = list(line_aligned_files(self.directory, prefix))
        else:
            info = get_dataset(str(dataset))
            if "languages" not in inspect.signature(info.reader_function()).parameters:
                raise PolyembedError(
                    f"dataset '{dataset}' is not read as one multi-way parallel text (e.g. multi30k); "
                    "pass directory=... for line-aligned files, or use its own retrieval task"
                )
            available = list(info.languages)
        self.available = tuple(available)
        if pivot is None:
            candidates = [code for code in ("en", "eng") if code in available]
            if len(candidates) != 1:
                raise PolyembedError(
                    f"cannot pick a pivot language among {', '.join(available) or 'none'}: pass pivot=..."
                )
            pivot = candidates[0]
        if pivot not in available:
            raise UnknownLanguageError(f"pivot '{pivot}' not available (have: {', '.join(available)})")
        self.pivot = pivot
        self._multiway: MultiwayText | None = None
        super().__init__(languages=languages, split=split, drop_duplicates=drop_duplicates, max_rows=max_rows)

    def _check_languages(self, languages: Sequence[str] | None) -> tuple[str, ...]:
        others = tuple(code for code in self.available if code != self.pivot)
        if languages is None:
            return others
        unknown = [code for code in languages if code not in others and code != self.pivot]
        if unknown:
            raise UnknownLanguageError(
                f"parallel-retrieval: no language {', '.join(unknown)}; available besides the pivot "
                f"'{self.pivot}': {', '.join(others)}"
            )
        return tuple(code for code in languages if code != self.pivot)

    def required_datasets(self) -> tuple[str, ...]:
        """The named dataset, if any (checked before encoding); a `directory` needs no data root."""
        return (str(self.dataset_name),) if self.dataset_name is not None else ()

    def _load_multiway(self, context: EmbeddingProvider) -> MultiwayText:
        if self._multiway is None:
            wanted = [self.pivot, *self.languages]
            if self.directory is not None:
                text = read_line_aligned_directory(self.directory, self.prefix, wanted)
            else:
                text = get_dataset(str(self.dataset_name)).load(
                    root=context.data_root, languages=wanted, **self.reader_kwargs
                )
                if not isinstance(text, MultiwayText):
                    raise PolyembedError(
                        f"dataset '{self.dataset_name}' does not read as multi-way parallel text "
                        f"(its reader returned {type(text).__name__})"
                    )
            self._multiway = text
        return self._multiway

    def load_pair(self, context: EmbeddingProvider, language: str) -> ParallelText:
        """The (language, pivot) view of the multi-way text."""
        return self._load_multiway(context).pair(language, self.pivot)

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """As the base class; the multi-way text is read once per evaluation."""
        self._multiway = None
        try:
            return super().evaluate(context)
        finally:
            self._multiway = None


class DedupedPivotRetrieval(PivotRetrievalTask):
    """A pivot retrieval task over files that repeat some sentences: rows with a repeated sentence are dropped
    (first occurrence kept) unless `drop_duplicates=False`, since a repeat makes its own row unretrievable."""

    def __init__(
        self,
        languages: Sequence[str] | None = None,
        split: str | None = None,
        *,
        drop_duplicates: bool = True,
        max_rows: int | None = None,
    ) -> None:
        super().__init__(languages=languages, split=split, drop_duplicates=drop_duplicates, max_rows=max_rows)


@register_task
class Tico19Retrieval(DedupedPivotRetrieval):
    """TICO-19 (COVID domain, 2,100 rows per en-X folder): en<->X retrieval.

    A few target-side sentences repeat (fr: 152 rows), so rows with a repeated sentence are dropped
    (first occurrence kept) unless `drop_duplicates=False`.
    """

    metadata = TaskMetadata(
        name="tico19-retrieval",
        type="bitext-retrieval",
        description="TICO-19 test set: en<->X nearest-neighbour retrieval accuracy for 10 languages",
        datasets=("tico19",),
        languages=TICO19_LANGUAGES,
        splits=("test",),
        main_score="accuracy",
        reference="Anastasopoulos et al. 2020, TICO-19",
    )
    pivot = "en"

    def load_pair(self, context: EmbeddingProvider, language: str) -> ParallelText:
        """`en-X/tico19-test.{X,en}`."""
        return self.read(context, language)


@register_task
class MafandRetrieval(DedupedPivotRetrieval):
    """MAFAND-MT (African news, 8 languages): en<->X retrieval of long sentences, on the dev or test split.

    Why: Tatoeba's sentences are short, and a student can keep them while losing news-length sentences; the
    dev split (460-1,791 rows per language) is where a recipe against that loss is chosen, so that TICO-19
    stays a test set. The train split is training data (`mafand-mt` in `datasets`) and no split here.
    """

    metadata = TaskMetadata(
        name="mafand-retrieval",
        type="bitext-retrieval",
        description="MAFAND-MT news: en<->X nearest-neighbour retrieval accuracy for 8 African languages",
        datasets=("mafand-mt",),
        languages=MAFAND_LANGUAGES,
        splits=("dev", "test"),
        main_score="accuracy",
        reference="Adelani et al. 2022 (NAACL), MAFAND-MT",
    )
    pivot = "en"


@register_task
class TatoebaChallengeRetrieval(PivotRetrievalTask):
    """Tatoeba-Challenge v2021-08-07 test sets (19 X-eng pairs, up to 19k rows): X<->eng retrieval.

    To stay fast and comparable across languages, rows with a repeated X or English sentence are dropped
    first (the files hold many alternative translations of one sentence), then at most `max_rows` (default
    2000) rows are kept at evenly spaced positions (`evenly_spaced_rows`; the files are sorted alphabetically).
    """

    metadata = TaskMetadata(
        name="tatoeba-challenge-retrieval",
        type="bitext-retrieval",
        description="Tatoeba-Challenge test sets: X<->eng retrieval accuracy, deduplicated, <= 2000 rows each",
        datasets=("tatoeba-challenge",),
        languages=TATOEBA_CHALLENGE_LANGUAGES,
        splits=("test",),
        main_score="accuracy",
        reference="Tiedemann 2020, The Tatoeba Translation Challenge",
    )
    pivot = "eng"

    def __init__(
        self,
        languages: Sequence[str] | None = None,
        split: str | None = None,
        *,
        max_rows: int | None = 2000,
        drop_duplicates: bool = True,
    ) -> None:
        super().__init__(languages=languages, split=split, drop_duplicates=drop_duplicates, max_rows=max_rows)

    def load_pair(self, context: EmbeddingProvider, language: str) -> ParallelText:
        """`X-eng/` or `eng-X/` test files, always X -> eng."""
        return self.read(context, language)
