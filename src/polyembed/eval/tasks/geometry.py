"""Geometry of a multilingual embedding space on multi-way parallel text (EMMA-X, Guo et al. 2023, App. B.2).

Three numbers, computed on the L2-normalised sentence embeddings of L languages x N translation ids:

- Invariance (lower = languages distributed more alike): fit a Gaussian N(mu_l, Sigma_l) to each language's
  embeddings and average the symmetric KL divergence (KL(P||Q) + KL(Q||P)) / 2 over all language pairs
  (paper eq. 16; averaging over ordered pairs equals averaging over unordered ones).
- Canonical form (higher = translations cluster together): the Calinski-Harabasz index of the clustering
  whose clusters are the translation ids (each cluster holds the L translations of one sentence), from
  `sklearn.metrics.calinski_harabasz_score`, i.e. [B / (K - 1)] / [W / (n - K)]. The paper's eq. 17 drops the
  degrees-of-freedom factors and is B / W; it is reported as `between_within_ratio` alongside.
- Isotropy (closer to 1 = more isotropic): Mu & Viswanath's principal ratio (paper eq. 18)
  min_c Z(c) / max_c Z(c) with Z(c) = sum_e exp(c^T e) and c over the eigenvectors of E^T E
  (E = uncentred embedding matrix). An eigenvector is defined only up to sign, so both c and -c are used;
  this makes the number independent of the sign the eigen-solver happens to return.

Numerical choices, documented because 384-d Gaussians from ~1,000 sentences are ill-conditioned (small models
even have dead dimensions, making the sample covariance exactly singular):
- covariance = maximum-likelihood sample covariance (the paper's eq. writes an un-normalised sum, which would
  shrink the mean term of the KL by 1/N; we use the standard estimate), shrunk towards a scaled identity,
  Sigma' = (1 - a) Sigma + a (tr Sigma / d) I with a = `shrinkage` (0.1, sklearn's ShrunkCovariance default);
- KL in float64 through a Cholesky factorisation and `slogdet`, never an explicit inverse or determinant.
The KL of two Gaussians estimated from finite samples is biased upwards (roughly with d^2 / N), so the tasks
also report `kl_divergence_split_half`: the same symmetric KL between two random halves of *one* language,
averaged over languages. It is a noise reference (at N/2 samples, so somewhat above the noise at N), not a
score.

The main score is the Calinski-Harabasz index: it measures the cross-lingual alignment of translations
directly and, unlike the KL, is higher-is-better and not dominated by estimation noise.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import logsumexp

from polyembed.data.readers.kardes import KARDES_FOLDERS
from polyembed.data.readers.sts import read_kardes_multiway
from polyembed.data.types import MultiwayText
from polyembed.errors import PolyembedError
from polyembed.eval.base import EmbeddingProvider, Score, Task, TaskMetadata, register_task

EMMAX_PAPER = "Guo et al. 2023, EMMA-X (NeurIPS), Appendix B.2 geometric analysis"
DEFAULT_SHRINKAGE = 0.1


def fit_gaussian(x: np.ndarray, shrinkage: float = DEFAULT_SHRINKAGE) -> tuple[np.ndarray, np.ndarray]:
    """Mean and shrunk ML covariance of the rows of `x`: (1 - a) S + a (tr S / d) I.

    Shrinkage keeps the covariance positive definite when N <= d or dimensions are constant.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"need a 2-D array with at least 2 rows, got shape {x.shape}")
    if not 0.0 <= shrinkage <= 1.0:
        raise ValueError(f"shrinkage must be in [0, 1], got {shrinkage}")
    mean = x.mean(axis=0)
    centred = x - mean
    cov = centred.T @ centred / x.shape[0]
    scale = max(float(np.trace(cov)) / x.shape[1], 1e-12)
    cov = (1.0 - shrinkage) * cov
    cov[np.diag_indices_from(cov)] += shrinkage * scale
    return mean, cov


def gaussian_kl(mean_p: np.ndarray, cov_p: np.ndarray, mean_q: np.ndarray, cov_q: np.ndarray) -> float:
    """KL(N_p || N_q) = 1/2 [tr(Sq^-1 Sp) + (mq - mp)^T Sq^-1 (mq - mp) - d + ln|Sq| - ln|Sp|]."""
    d = mean_p.shape[0]
    try:
        factor = cho_factor(cov_q, lower=True)
    except np.linalg.LinAlgError as err:
        raise ValueError("covariance of Q is not positive definite; increase shrinkage") from err
    sign_p, logdet_p = np.linalg.slogdet(cov_p)
    sign_q, logdet_q = np.linalg.slogdet(cov_q)
    if sign_p <= 0 or sign_q <= 0:
        raise ValueError("covariance is not positive definite; increase shrinkage")
    diff = mean_q - mean_p
    trace = float(np.trace(cho_solve(factor, cov_p)))
    mahalanobis = float(diff @ cho_solve(factor, diff))
    return 0.5 * (trace + mahalanobis - d + logdet_q - logdet_p)


def symmetric_kl(p: tuple[np.ndarray, np.ndarray], q: tuple[np.ndarray, np.ndarray]) -> float:
    """(KL(P||Q) + KL(Q||P)) / 2 for two (mean, covariance) Gaussians."""
    return 0.5 * (gaussian_kl(*p, *q) + gaussian_kl(*q, *p))


def invariance_kl(
    embeddings: Mapping[str, np.ndarray], shrinkage: float = DEFAULT_SHRINKAGE
) -> tuple[float, dict[tuple[str, str], float]]:
    """Mean symmetric KL over language pairs (EMMA-X eq. 16) and the value of every pair."""
    if len(embeddings) < 2:
        raise ValueError("invariance needs at least two languages")
    gaussians = {lang: fit_gaussian(x, shrinkage) for lang, x in embeddings.items()}
    pairs = {(a, b): symmetric_kl(gaussians[a], gaussians[b]) for a, b in combinations(gaussians, 2)}
    return float(np.mean(list(pairs.values()))), pairs


def split_half_kl(embeddings: Mapping[str, np.ndarray], shrinkage: float = DEFAULT_SHRINKAGE, seed: int = 0) -> float:
    """Noise reference for `invariance_kl`: symmetric KL between two random halves of each language (mean)."""
    rng = np.random.default_rng(seed)
    values = []
    for x in embeddings.values():
        order = rng.permutation(len(x))
        half = len(x) // 2
        values.append(symmetric_kl(fit_gaussian(x[order[:half]], shrinkage), fit_gaussian(x[order[half:]], shrinkage)))
    return float(np.mean(values))


def translation_clusters(embeddings: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Stack L aligned (N, d) matrices into (L*N, d) points labelled by translation id 0..N-1."""
    matrices = list(embeddings.values())
    n = matrices[0].shape[0]
    if any(m.shape[0] != n for m in matrices):
        raise ValueError("all languages need the same number of (aligned) rows")
    return np.vstack(matrices), np.tile(np.arange(n), len(matrices))


def calinski_harabasz(embeddings: Mapping[str, np.ndarray]) -> tuple[float, float]:
    """(sklearn Calinski-Harabasz index, EMMA-X eq. 17 between/within ratio) of the translation clusters."""
    from sklearn.metrics import calinski_harabasz_score

    points, labels = translation_clusters(embeddings)
    n, k = len(points), int(labels.max()) + 1
    if k < 2 or n <= k:
        raise ValueError("need at least 2 translation ids and 2 languages")
    index = float(calinski_harabasz_score(points, labels))
    return index, index * (k - 1) / (n - k)


def principal_ratio(embeddings: np.ndarray) -> float:
    """Isotropy min_c Z(c) / max_c Z(c), Z(c) = sum_e exp(c^T e), c = +-eigenvectors of E^T E (eq. 18)."""
    e = np.asarray(embeddings, dtype=np.float64)
    if e.ndim != 2 or len(e) == 0:
        raise ValueError(f"need a non-empty 2-D array, got shape {e.shape}")
    _, vectors = np.linalg.eigh(e.T @ e)
    projections = e @ vectors  # (n, d): c^T e for every eigenvector c
    log_z = np.concatenate([logsumexp(projections, axis=0), logsumexp(-projections, axis=0)])
    return float(np.exp(log_z.min() - log_z.max()))


def deduplicate(text: MultiwayText) -> tuple[MultiwayText, int]:
    """Drop translation ids whose text in any language already occurred in that language (keep the first).

    This keeps every text in exactly one cluster; returns the cleaned text and the number of ids removed.
    """
    seen: dict[str, set[str]] = {lang: set() for lang in text.languages}
    keep: list[int] = []
    for index in range(len(text)):
        row = {lang: text.texts[lang][index] for lang in text.languages}
        if all(row[lang] not in seen[lang] for lang in text.languages):
            keep.append(index)
        for lang, sentence in row.items():
            seen[lang].add(sentence)
    cleaned = MultiwayText({lang: [lines[i] for i in keep] for lang, lines in text.texts.items()})
    return cleaned, len(text) - len(keep)


def projection_figure(
    embeddings: Mapping[str, np.ndarray], title: str, *, max_ids: int = 200, tsne: bool = True, seed: int = 0
) -> Any:
    """A matplotlib Figure: 2-D PCA (and t-SNE) of up to `max_ids` translation ids, coloured by language.

    Built on `matplotlib.figure.Figure` (Agg canvas), so it never touches pyplot's global state. t-SNE runs
    500 iterations: enough for a picture, and it keeps the task quick.
    """
    from matplotlib.figure import Figure
    from sklearn.decomposition import PCA

    languages = list(embeddings)
    n = len(next(iter(embeddings.values())))
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(n, size=min(max_ids, n), replace=False))
    points = np.vstack([embeddings[lang][ids] for lang in languages])
    colours = np.repeat(np.arange(len(languages)), len(ids))
    views = [("PCA", PCA(n_components=2, random_state=seed).fit_transform(points))]
    if tsne and len(points) > 10:
        from sklearn.manifold import TSNE

        perplexity = min(30.0, (len(points) - 1) / 3)
        tsne_model = TSNE(n_components=2, init="pca", perplexity=perplexity, max_iter=500, random_state=seed)
        views.append(("t-SNE", tsne_model.fit_transform(points)))
    figure = Figure(figsize=(5.5 * len(views), 5))
    palette = [f"C{i % 10}" for i in range(len(languages))]
    for position, (name, xy) in enumerate(views, start=1):
        axes = figure.add_subplot(1, len(views), position)
        for index, lang in enumerate(languages):
            mask = colours == index
            axes.scatter(xy[mask, 0], xy[mask, 1], s=8, alpha=0.7, color=palette[index], label=lang)
        axes.set_title(f"{title} - {name} ({len(ids)} ids x {len(languages)} languages)", fontsize=9)
        axes.set_xticks([])
        axes.set_yticks([])
    figure.axes[0].legend(markerscale=2, fontsize=8)
    return figure


class _GeometryTask(Task):
    """Shared evaluation of the geometry tasks; subclasses only say how to read their multi-way text."""

    def __init__(
        self,
        languages: Sequence[str] | None = None,
        split: str | None = None,
        *,
        shrinkage: float = DEFAULT_SHRINKAGE,
        plot_ids: int = 200,
        tsne: bool = True,
        seed: int = 0,
    ) -> None:
        super().__init__(languages, split)
        if len(self.languages) < 2:
            raise PolyembedError(f"task {self.name} needs at least two languages, got {list(self.languages)}")
        if not 0.0 < shrinkage <= 1.0:
            raise PolyembedError(f"shrinkage must be in (0, 1], got {shrinkage}")
        self.shrinkage = shrinkage
        self.plot_ids = plot_ids
        self.tsne = tsne
        self.seed = seed

    @abstractmethod
    def multiway(self, context: EmbeddingProvider) -> MultiwayText:
        """The multi-way parallel sentences of the selected languages (before deduplication)."""

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """KL invariance (mean, per pair, split-half reference), CH index, principal ratio; saves a figure."""
        text, removed = deduplicate(self.multiway(context))
        if len(text) < 3:
            raise PolyembedError(f"task {self.name}: only {len(text)} distinct translation ids")
        embeddings = {lang: context.embed(text.texts[lang], language=lang) for lang in self.languages}
        n = len(text)
        common = {"languages": list(self.languages), "duplicates_removed": removed}
        mean_kl, pair_kl = invariance_kl(embeddings, self.shrinkage)
        index, ratio = calinski_harabasz(embeddings)
        pooled = np.vstack(list(embeddings.values()))
        figure_path = None
        if context.figure_dir is not None:
            figure = projection_figure(embeddings, self.name, max_ids=self.plot_ids, tsne=self.tsne, seed=self.seed)
            figure_path = context.save_figure(figure, f"{self.name}-{self.split}")
        scores = [
            self.score(
                "all",
                "calinski_harabasz",
                index,
                n=n,
                between_within_ratio=ratio,
                **({"figure": str(figure_path)} if figure_path else {}),
                **common,
            ),
            self.score("all", "kl_divergence", mean_kl, n=n, shrinkage=self.shrinkage, **common),
            self.score(
                "all",
                "kl_divergence_split_half",
                split_half_kl(embeddings, self.shrinkage, self.seed),
                n=n // 2,
                shrinkage=self.shrinkage,
                **common,
            ),
            self.score("all", "principal_ratio", principal_ratio(pooled), n=len(pooled), **common),
        ]
        scores += [self.score(f"{a}-{b}", "kl_divergence", value, n=n) for (a, b), value in pair_kl.items()]
        scores += [self.score(lang, "principal_ratio", principal_ratio(x), n=n) for lang, x in embeddings.items()]
        return scores


@register_task
class GeometryKardesTask(_GeometryTask):
    """Geometry of Kardes STS sentences: English sentence1 and its 5 Turkic translations (6-way parallel).

    Rows are aligned across the files by their index column and gold score (`read_kardes_multiway`);
    English text is taken from the first Turkic file. Uyghur stays Cyrillic.
    """

    metadata = TaskMetadata(
        name="geometry-kardes",
        type="geometry",
        description="Invariance (KL), canonical form (Calinski-Harabasz), isotropy (principal ratio): Kardes",
        datasets=("kardes-nlu",),
        languages=("en", *KARDES_FOLDERS),
        splits=("dev", "test"),
        main_score="calinski_harabasz",
        reference=EMMAX_PAPER,
    )

    def multiway(self, context: EmbeddingProvider) -> MultiwayText:
        """sentence1 of every row in each language, aligned by the index column (see read_kardes_multiway)."""
        return read_kardes_multiway(self.folder(context), self.languages, self.split)


@register_task
class GeometryMulti30kTask(_GeometryTask):
    """Geometry of Multi30k captions (4-way parallel en de fr cs; test_2016_flickr by default)."""

    metadata = TaskMetadata(
        name="geometry-multi30k",
        type="geometry",
        description="Invariance (KL), canonical form (Calinski-Harabasz), isotropy (principal ratio): M30k",
        datasets=("multi30k",),
        languages=("en", "de", "fr", "cs"),
        splits=("val", "test_2018_flickr", "test_2016_flickr"),
        main_score="calinski_harabasz",
        reference=EMMAX_PAPER,
    )

    def multiway(self, context: EmbeddingProvider) -> MultiwayText:
        """The split's captions in the selected languages."""
        return self.read(context, self.split, list(self.languages))
