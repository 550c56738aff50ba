"""Geometry metrics on hand-computable cases, the geometry tasks on mock data, and a real-data smoke test."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import calinski_harabasz_score

from polyembed.data.types import MultiwayText
from polyembed.errors import PolyembedError
from polyembed.eval.registry import get_task
from polyembed.eval.runner import EmbeddingCache
from polyembed.eval.tasks.geometry import (
    GeometryKardesTask,
    GeometryMulti30kTask,
    calinski_harabasz,
    deduplicate,
    fit_gaussian,
    gaussian_kl,
    invariance_kl,
    principal_ratio,
    split_half_kl,
    symmetric_kl,
    translation_clusters,
)

# --- Gaussian KL ------------------------------------------------------------------------------------------


def test_kl_of_identical_gaussians_is_zero() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 20))  # N > d, but shrinkage is applied anyway
    mean, cov = fit_gaussian(x)
    assert gaussian_kl(mean, cov, mean, cov) == pytest.approx(0.0, abs=1e-9)
    value, pairs = invariance_kl({"a": x, "b": x.copy()})
    assert value == pytest.approx(0.0, abs=1e-9) and pairs == {("a", "b"): pytest.approx(0.0, abs=1e-9)}


def test_kl_matches_closed_forms() -> None:
    d = 3
    zero, one = np.zeros(d), np.ones(d)
    # equal covariances: KL = 1/2 |mu_q - mu_p|^2 / sigma^2
    assert gaussian_kl(zero, np.eye(d), one, np.eye(d)) == pytest.approx(0.5 * d)
    assert gaussian_kl(zero, 4 * np.eye(d), one, 4 * np.eye(d)) == pytest.approx(0.5 * d / 4)
    # same mean, Sigma_q = 2 Sigma_p: KL(p||q) = d/2 (1/2 - 1 + ln 2), KL(q||p) = d/2 (2 - 1 - ln 2)
    forward = 0.5 * d * (0.5 - 1 + math.log(2))
    backward = 0.5 * d * (2 - 1 - math.log(2))
    assert gaussian_kl(zero, np.eye(d), zero, 2 * np.eye(d)) == pytest.approx(forward)
    assert symmetric_kl((zero, np.eye(d)), (zero, 2 * np.eye(d))) == pytest.approx((forward + backward) / 2)


def test_fit_gaussian_shrinkage_formula_and_singular_data() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 5))
    mean, raw = fit_gaussian(x, shrinkage=0.0)
    assert np.allclose(mean, x.mean(0)) and np.allclose(raw, np.cov(x, rowvar=False, bias=True))
    _, shrunk = fit_gaussian(x, shrinkage=0.25)
    assert np.allclose(shrunk, 0.75 * raw + 0.25 * np.trace(raw) / 5 * np.eye(5))
    # a dead dimension and fewer rows than dimensions: the raw covariance is singular, the shrunk one is not
    dead = np.hstack([rng.normal(size=(4, 10)), np.zeros((4, 1))])
    m, c = fit_gaussian(dead)
    assert np.linalg.eigvalsh(c).min() > 0
    assert np.isfinite(gaussian_kl(m, c, *fit_gaussian(dead + 0.1)))
    with pytest.raises(ValueError):
        fit_gaussian(x[:1])


def test_invariance_separates_shifted_languages() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(400, 8)), rng.normal(size=(400, 8))
    same, _ = invariance_kl({"a": a, "b": b})
    shifted, pairs = invariance_kl({"a": a, "b": b, "c": b + 3.0})
    assert same < 0.2  # two samples of one distribution: only estimation noise
    assert pairs[("a", "c")] > 10 * same and pairs[("b", "c")] > 10 * same and shifted > 10 * same
    assert 0 < split_half_kl({"a": a, "b": b}) < 0.5


# --- Calinski-Harabasz ------------------------------------------------------------------------------------


def test_translation_clusters_layout() -> None:
    points, labels = translation_clusters({"x": np.zeros((3, 2)), "y": np.ones((3, 2))})
    assert points.shape == (6, 2) and labels.tolist() == [0, 1, 2, 0, 1, 2]


def test_calinski_harabasz_by_hand() -> None:
    # 2 ids x 2 languages on a line: cluster 0 = {0, 2}, cluster 1 = {10, 12}; centroids 1 and 11, grand 6
    # B = 2*(25 + 25) = 100, W = 4 * 1 = 4; sklearn CH = (B / (K-1)) / (W / (n-K)) = 100 / 2 = 50
    index, ratio = calinski_harabasz({"x": np.array([[0.0], [10.0]]), "y": np.array([[2.0], [12.0]])})
    assert index == pytest.approx(50.0) and ratio == pytest.approx(25.0)


def test_calinski_harabasz_high_for_aligned_low_for_random() -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(size=(100, 16))
    aligned = {lang: base + 0.05 * rng.normal(size=base.shape) for lang in "abc"}
    random = {lang: rng.normal(size=base.shape) for lang in "abc"}
    high, _ = calinski_harabasz(aligned)
    low, _ = calinski_harabasz(random)
    assert high > 100 and 0.5 < low < 2.0
    points, labels = translation_clusters(aligned)
    assert high == pytest.approx(calinski_harabasz_score(points, labels))


# --- principal ratio --------------------------------------------------------------------------------------


def test_principal_ratio_by_hand() -> None:
    # E^T E = diag(8, 2): eigenvectors e1, e2; Z(+-e1) = e^2 + e^-2 + 2, Z(+-e2) = 2 + e + e^-1
    e = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    expected = (2 + math.e + 1 / math.e) / (math.exp(2) + math.exp(-2) + 2)
    assert principal_ratio(e) == pytest.approx(expected)


def test_principal_ratio_isotropic_vs_collapsed() -> None:
    rng = np.random.default_rng(4)
    isotropic = rng.normal(scale=0.3, size=(20000, 8))
    assert principal_ratio(isotropic) > 0.95
    direction = np.zeros(8)
    direction[0] = 1.0
    collapsed = direction + 0.01 * rng.normal(size=(500, 8))  # everything points one way
    assert principal_ratio(collapsed) < 0.5
    # sign-invariant: flipping the whole space does not change it
    assert principal_ratio(-collapsed) == pytest.approx(principal_ratio(collapsed))


# --- tasks ------------------------------------------------------------------------------------------------


def test_deduplicate_keeps_first_occurrence() -> None:
    text = MultiwayText({"en": ["a", "b", "a", "c", "d"], "de": ["A", "B", "X", "B", "D"]})
    cleaned, removed = deduplicate(text)
    assert cleaned.texts == {"en": ["a", "b", "d"], "de": ["A", "B", "D"]} and removed == 2


ENGLISH = ["a dog runs on the grass", "two men play chess", "a child eats ice cream", "a red car in the rain",
           "people dance at a party", "a cat sleeps on a sofa"]  # fmt: skip
# "translations" nearly equal to the English; the 7th id repeats an English caption and is deduplicated
CAPTIONS = {"en": [*ENGLISH, ENGLISH[0]], "de": [*(s + "!" for s in ENGLISH), "ein hund"]}


def _mock_multi30k(root: Path) -> Path:
    raw = root / "multi30k-task1" / "raw"
    raw.mkdir(parents=True)
    for lang, lines in CAPTIONS.items():
        (raw / f"test_2016_flickr.{lang}.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return root


def test_geometry_multi30k_on_mock_data(tmp_path: Path, hashing_encoder: object) -> None:
    root = _mock_multi30k(tmp_path / "data")
    figures = tmp_path / "figures"
    context = EmbeddingCache(hashing_encoder, root, figures, show_progress=False)  # type: ignore[arg-type]
    task = GeometryMulti30kTask(languages=["en", "de"], plot_ids=4)
    scores = {(s.subset, s.metric): s for s in task.evaluate(context)}
    main = scores[("all", "calinski_harabasz")]
    assert main.main and main.n == 6 and main.extra["duplicates_removed"] == 1
    assert main.value > 5  # near-identical "translations" cluster tightly
    assert main.extra["between_within_ratio"] == pytest.approx(main.value * 5 / 6)
    assert Path(main.extra["figure"]).is_file() and Path(main.extra["figure"]).stat().st_size > 1000
    assert scores[("all", "kl_divergence")].value == pytest.approx(scores[("en-de", "kl_divergence")].value)
    assert scores[("all", "kl_divergence")].value > 0
    assert 0 < scores[("all", "principal_ratio")].value <= 1
    assert {key for key in scores} >= {("en", "principal_ratio"), ("de", "principal_ratio")}
    assert not any(s.main for key, s in scores.items() if key != ("all", "calinski_harabasz"))


def test_geometry_without_figure_dir_saves_nothing(tmp_path: Path, hashing_encoder: object) -> None:
    root = _mock_multi30k(tmp_path)
    context = EmbeddingCache(hashing_encoder, root, None, show_progress=False)  # type: ignore[arg-type]
    scores = GeometryMulti30kTask(languages=["en", "de"], tsne=False).evaluate(context)
    assert "figure" not in scores[0].extra


def test_geometry_kardes_on_mock_data(tmp_path: Path, hashing_encoder: object) -> None:
    header = ",sentence1,sentence2,score,s1_translation,s2_translation\n"
    english = [
        "the sun is hot",
        "a man rides a horse",
        "birds fly south",
        "the sun is hot",
        "she reads a book",
    ]
    for directory, code, suffix in (("azeri", "az", " az"), ("kazakh", "kk", " kk")):
        folder = tmp_path / "kardes-nlu" / directory
        folder.mkdir(parents=True)
        rows = "".join(f'{i},"{s}",other,1.0,{s}{suffix},other{suffix}\n' for i, s in enumerate(english))
        (folder / f"sts.test.{code}.csv").write_text("\ufeff" + header + rows, encoding="utf-8")
    context = EmbeddingCache(hashing_encoder, tmp_path, None, show_progress=False)  # type: ignore[arg-type]
    scores = GeometryKardesTask(languages=["en", "az", "kk"]).evaluate(context)
    assert (
        scores[0].metric == "calinski_harabasz"
        and scores[0].n == 4
        and scores[0].extra["duplicates_removed"] == 1
    )
    assert {s.subset for s in scores if s.metric == "kl_divergence"} == {"all", "en-az", "en-kk", "az-kk"}
    assert (None, "a man rides a horse kk") in context._vectors  # s1_translation of the kk file


def test_geometry_needs_two_languages() -> None:
    with pytest.raises(PolyembedError, match="at least two languages"):
        GeometryMulti30kTask(languages=["en"])
    assert get_task("geometry-multi30k").split == "test_2016_flickr"
    assert get_task("geometry-kardes").languages == ("en", "az", "kk", "ky", "ug", "uz")


def test_real_geometry_multi30k_smoke(shared_data: Path, hashing_encoder: object, tmp_path: Path) -> None:
    context = EmbeddingCache(hashing_encoder, shared_data, tmp_path, show_progress=False)  # type: ignore[arg-type]
    scores = GeometryMulti30kTask(languages=["en", "de"], tsne=False, plot_ids=50).evaluate(context)
    main = scores[0]
    assert main.metric == "calinski_harabasz" and main.n >= 990 and main.value > 0
    assert (tmp_path / "geometry-multi30k-test_2016_flickr.png").is_file()
