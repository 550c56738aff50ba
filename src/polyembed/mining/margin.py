"""Margin-based bitext mining (Artetxe & Schwenk 2019, "Margin-based Parallel Corpus Mining").

Plain cosine is not comparable across sentences: some sentences ("hubs") are close to everything. The
margin score normalises a pair's cosine by how close each side is to its own neighbourhood:

    score(x, y) = margin(cos(x, y), sum_{z in NN_k(x)} cos(x, z) / 2k + sum_{z in NN_k(y)} cos(y, z) / 2k)

where NN_k(x) are the k nearest neighbours of x *in the other language* and margin is one of
ratio (a / b, the default used by LASER and the distillation paper), distance (a - b) or absolute (a).

Candidate generation follows LASER's `mine_bitexts.py`: for every source sentence the k nearest targets by
cosine are scored and the best one is kept (forward); the same from the target side (backward).

* ``forward``   - one pair per source sentence (its best-scoring target).
* ``backward``  - one pair per target sentence (its best-scoring source).
* ``intersect`` - pairs that are the best in both directions (mutual best).
* ``max``       - the union of forward and backward candidates, taken greedily by decreasing score while
  neither side has been used yet (LASER's "max" retrieval): a 1-1 matching, each source and each target
  at most once, every sentence keeping its best remaining score.

Neighbours come from faiss: an exact `IndexFlatIP` on L2-normalised vectors by default, or any index
built from a faiss factory string (e.g. ``"IVF1024,Flat"``) for large pools. The number of neighbours is
capped at the pool size, as LASER does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from polyembed.models.encoder import normalize_rows

Margin = Literal["ratio", "distance", "absolute"]
Mode = Literal["forward", "backward", "intersect", "max"]
MARGINS: tuple[str, ...] = ("ratio", "distance", "absolute")
MODES: tuple[str, ...] = ("forward", "backward", "intersect", "max")


class MinedPair(NamedTuple):
    """One mined candidate: row of the source pool, row of the target pool, margin score."""

    source: int
    target: int
    score: float


@dataclass
class MarginCandidates:
    """k-NN candidates in both directions with their margin scores (the inputs of every mining mode).

    `forward_ids[i]` are the k nearest targets of source i (by cosine) and `forward_scores[i]` their margin
    scores; `backward_*` is the same from the target side. `forward_mean[i]` / `backward_mean[j]` are the
    mean cosines of each sentence to its k neighbours (the neighbourhood terms of the score).
    """

    forward_ids: np.ndarray
    forward_scores: np.ndarray
    backward_ids: np.ndarray
    backward_scores: np.ndarray
    forward_mean: np.ndarray
    backward_mean: np.ndarray

    def best_forward(self) -> tuple[np.ndarray, np.ndarray]:
        """Per source: (best target index, its score)."""
        column = self.forward_scores.argmax(axis=1)
        rows = np.arange(len(column))
        return self.forward_ids[rows, column], self.forward_scores[rows, column]

    def best_backward(self) -> tuple[np.ndarray, np.ndarray]:
        """Per target: (best source index, its score)."""
        column = self.backward_scores.argmax(axis=1)
        rows = np.arange(len(column))
        return self.backward_ids[rows, column], self.backward_scores[rows, column]


def margin_function(name: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The margin combining a pair's cosine `a` with its neighbourhood average `b`."""
    if name == "ratio":
        return lambda a, b: a / b
    if name == "distance":
        return lambda a, b: a - b
    if name == "absolute":
        return lambda a, b: a
    raise ValueError(f"unknown margin {name!r} (choose from {', '.join(MARGINS)})")


def _as_matrix(vectors: np.ndarray, what: str) -> np.ndarray:
    matrix = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        raise ValueError(f"{what} must be a non-empty 2-D array, got shape {matrix.shape}")
    return matrix


def knn(
    x: np.ndarray,
    y: np.ndarray,
    k: int,
    *,
    index_factory: str | None = None,
    search_parameters: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """k nearest rows of `y` for every row of `x` by inner product: (similarities, ids), best first.

    Pass L2-normalised rows to get cosines. `k` is capped at len(y). The default is faiss's exact
    IndexFlatIP; `index_factory` (e.g. "IVF256,Flat", "HNSW32") builds an approximate index, trained on
    `y` when it needs training, and `search_parameters` (e.g. "nprobe=16") tunes it.
    """
    import faiss

    x = _as_matrix(x, "x")
    y = _as_matrix(y, "y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"dimension mismatch: x has {x.shape[1]}, y has {y.shape[1]}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    k = min(k, y.shape[0])
    if search_parameters and index_factory is None:
        raise ValueError("search_parameters need an index_factory (the exact flat index has none)")
    index: faiss.Index
    if index_factory is None:
        index = faiss.IndexFlatIP(y.shape[1])
    else:
        index = faiss.index_factory(y.shape[1], index_factory, faiss.METRIC_INNER_PRODUCT)
        if not index.is_trained:
            index.train(y)
        if search_parameters:
            # faiss's stubs declare this string form without @overload: mypy sees only the int (cno) one
            faiss.ParameterSpace().set_index_parameters(index, search_parameters)  # type: ignore[arg-type]
    index.add(y)
    sims, ids = index.search(x, k)
    if (ids < 0).any():
        raise ValueError(
            f"the faiss index '{index_factory}' found fewer than {k} neighbours for some rows; "
            "search more cells (e.g. search_parameters='nprobe=32') or use the exact default index"
        )
    return sims, ids.astype(np.int64)


def _pair_cosines(x: np.ndarray, y: np.ndarray, ids: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """cos(x[i], y[ids[i, c]]) for every candidate, in chunks so memory stays at chunk * k * dim."""
    out = np.empty(ids.shape, dtype=np.float64)
    for start in range(0, len(ids), chunk):
        rows = slice(start, start + chunk)
        out[rows] = np.einsum("id,ikd->ik", x[rows], y[ids[rows]])
    return out


def margin_candidates(
    source: np.ndarray,
    target: np.ndarray,
    k: int = 4,
    margin: str = "ratio",
    *,
    normalize: bool = True,
    index_factory: str | None = None,
    search_parameters: str | None = None,
) -> MarginCandidates:
    """Score the k-NN candidates of both directions with the margin criterion (see module docstring)."""
    margin_function(margin)  # an unknown margin is refused before the search
    if normalize:
        source, target = normalize_rows(source), normalize_rows(target)
    source, target = _as_matrix(source, "source"), _as_matrix(target, "target")
    options = {"index_factory": index_factory, "search_parameters": search_parameters}
    fwd_sims, fwd_ids = knn(source, target, k, **options)
    bwd_sims, bwd_ids = knn(target, source, k, **options)
    if index_factory is None:  # exact index: its similarities are the cosines
        return score_neighbours(fwd_sims, fwd_ids, bwd_sims, bwd_ids, margin)
    # compressed indexes (PQ, SQ) return approximate similarities: score with exact cosines
    return score_neighbours(fwd_sims, fwd_ids, bwd_sims, bwd_ids, margin,
                            cosines=(_pair_cosines(source, target, fwd_ids), _pair_cosines(target, source, bwd_ids)))


def score_neighbours(
    fwd_sims: np.ndarray,
    fwd_ids: np.ndarray,
    bwd_sims: np.ndarray,
    bwd_ids: np.ndarray,
    margin: str = "ratio",
    *,
    cosines: tuple[np.ndarray, np.ndarray] | None = None,
) -> MarginCandidates:
    """Margin scores of k-NN results found elsewhere (`margin_candidates`' own search, or the sharded search of
    `polyembed.mining.search`): one scoring for both, so a sharded exact search scores exactly as one search.

    `fwd_*[i]`: the neighbours of source i among the targets (similarities, ids), `bwd_*` the other way; the
    neighbourhood terms are the mean of each row's similarities. `cosines`: the pairs' cosines when the
    similarities are not (a compressed index's); by default the similarities are the cosines."""
    combine = margin_function(margin)
    fwd_mean = fwd_sims.mean(axis=1, dtype=np.float64)
    bwd_mean = bwd_sims.mean(axis=1, dtype=np.float64)
    if cosines is None:
        fwd_cos, bwd_cos = fwd_sims.astype(np.float64), bwd_sims.astype(np.float64)
    else:
        fwd_cos, bwd_cos = cosines
    fwd_scores = combine(fwd_cos, (fwd_mean[:, None] + bwd_mean[fwd_ids]) / 2)
    bwd_scores = combine(bwd_cos, (bwd_mean[:, None] + fwd_mean[bwd_ids]) / 2)
    return MarginCandidates(
        forward_ids=fwd_ids,
        forward_scores=np.asarray(fwd_scores, dtype=np.float64),
        backward_ids=bwd_ids,
        backward_scores=np.asarray(bwd_scores, dtype=np.float64),
        forward_mean=fwd_mean,
        backward_mean=bwd_mean,
    )


def select_pairs(candidates: MarginCandidates, mode: str = "max") -> list[MinedPair]:
    """Turn scored candidates into pairs according to `mode`, sorted by decreasing score.

    Ties in score keep a deterministic order: forward candidates before backward, then by index.
    """
    src, tgt, score = selected_arrays(candidates, mode)
    return [MinedPair(int(s), int(t), float(v)) for s, t, v in zip(src, tgt, score, strict=True)]


def selected_arrays(candidates: MarginCandidates, mode: str = "max") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`select_pairs` as three arrays (source rows, target rows, scores; best first): a million pairs as arrays
    take a tenth of the memory of a million `MinedPair` tuples."""
    fwd_best, fwd_score = candidates.best_forward()
    bwd_best, bwd_score = candidates.best_backward()
    n_source, n_target = len(fwd_best), len(bwd_best)
    if mode == "forward":
        src, tgt, score = np.arange(n_source), fwd_best, fwd_score
    elif mode == "backward":
        src, tgt, score = bwd_best, np.arange(n_target), bwd_score
    elif mode == "intersect":
        keep = bwd_best[fwd_best] == np.arange(n_source)
        src, tgt, score = np.arange(n_source)[keep], fwd_best[keep], fwd_score[keep]
    elif mode == "max":
        all_src = np.concatenate([np.arange(n_source), bwd_best])
        all_tgt = np.concatenate([fwd_best, np.arange(n_target)])
        all_score = np.concatenate([fwd_score, bwd_score])
        used_src: set[int] = set()
        used_tgt: set[int] = set()
        chosen: list[int] = []
        for position in np.argsort(-all_score, kind="stable"):
            s, t = int(all_src[position]), int(all_tgt[position])
            if s not in used_src and t not in used_tgt:
                used_src.add(s)
                used_tgt.add(t)
                chosen.append(int(position))
        picked = np.asarray(chosen, dtype=np.int64)
        src, tgt, score = all_src[picked], all_tgt[picked], all_score[picked]
    else:
        raise ValueError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    order = np.argsort(-np.asarray(score), kind="stable")
    return (np.asarray(src, dtype=np.int64)[order], np.asarray(tgt, dtype=np.int64)[order],
            np.asarray(score, dtype=np.float64)[order])


def mine(
    source: np.ndarray,
    target: np.ndarray,
    k: int = 4,
    margin: str = "ratio",
    mode: str = "max",
    *,
    threshold: float | None = None,
    normalize: bool = True,
    index_factory: str | None = None,
    search_parameters: str | None = None,
) -> list[MinedPair]:
    """Mine translation pairs between two embedding pools; returns (src_idx, tgt_idx, score) best first.

    `threshold` keeps only pairs with score >= threshold (None keeps all candidates of the mode).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    candidates = margin_candidates(
        source,
        target,
        k,
        margin,
        normalize=normalize,
        index_factory=index_factory,
        search_parameters=search_parameters,
    )
    pairs = select_pairs(candidates, mode)
    if threshold is not None:
        pairs = [pair for pair in pairs if pair.score >= threshold]
    return pairs


def margin_retrieve(
    queries: np.ndarray,
    documents: np.ndarray,
    k: int = 4,
    margin: str = "ratio",
    *,
    normalize: bool = True,
) -> np.ndarray:
    """Best document per query under the margin score (LASER's xSIM retrieval); returns indices.

    Only the k nearest documents by cosine are candidates; `absolute` reduces to nearest neighbour.
    """
    candidates = margin_candidates(queries, documents, k, margin, normalize=normalize)
    return candidates.best_forward()[0]


@dataclass(frozen=True)
class ThresholdFit:
    """The score threshold that maximises F1 on held-out gold pairs, with the scores it reached."""

    threshold: float
    f1: float
    precision: float
    recall: float
    extracted: int


def prf(correct: int, extracted: int, n_gold: int) -> tuple[float, float, float]:
    """(precision, recall, F1) from counts; 0 where undefined."""
    precision = correct / extracted if extracted else 0.0
    recall = correct / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def fit_threshold(scores: np.ndarray | list[float], correct: np.ndarray | list[bool], n_gold: int) -> ThresholdFit:
    """BUCC-style threshold optimisation (LASER's `BuccOptimize`): the cut maximising F1.

    Candidates are sorted by decreasing score and every cut between two *distinct* scores is tried (equal
    scores are always kept or dropped together); pairs with score >= threshold count as extracted. The
    threshold is the midpoint between the last kept and the first dropped score (the last kept score when
    nothing is dropped). The highest-scoring cut wins ties in F1. With no correct candidate the threshold
    is just above the best score (nothing extracted) and F1 is 0.
    """
    values = np.asarray(scores, dtype=np.float64)
    hits = np.asarray(correct, dtype=bool)
    if values.shape != hits.shape or values.ndim != 1:
        raise ValueError("scores and correct must be 1-D and of the same length")
    if n_gold < 1:
        raise ValueError("n_gold must be >= 1")
    if len(values) == 0 or not hits.any():
        top = float(values.max()) if len(values) else 0.0
        return ThresholdFit(float(np.nextafter(top, np.inf)), 0.0, 0.0, 0.0, 0)
    order = np.argsort(-values, kind="stable")
    values, hits = values[order], hits[order]
    cumulative_hits = np.cumsum(hits)
    # a cut is allowed after position i only when the next score is strictly smaller
    ends = np.flatnonzero(np.append(values[1:] < values[:-1], True))
    best: ThresholdFit | None = None
    for end in ends:
        precision, recall, f1 = prf(int(cumulative_hits[end]), int(end) + 1, n_gold)
        if best is None or f1 > best.f1:
            if end + 1 < len(values):
                threshold = (values[end] + values[end + 1]) / 2
                if not values[end + 1] < threshold <= values[end]:  # adjacent floats
                    threshold = values[end]
            else:
                threshold = values[end]
            best = ThresholdFit(float(threshold), f1, precision, recall, int(end) + 1)
    assert best is not None
    return best
