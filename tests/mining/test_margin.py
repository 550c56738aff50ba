"""Margin mining against a brute-force numpy reference, and BUCC threshold fitting on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from polyembed.mining import MARGINS, MODES, fit_threshold, knn, margin_candidates, mine, prf


def brute_force_mine(x: np.ndarray, y: np.ndarray, k: int, margin: str, mode: str) -> list[tuple[int, int, float]]:
    """Straight from the definitions (Artetxe & Schwenk 2019; LASER mine_bitexts.py), with loops."""
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    y = y / np.linalg.norm(y, axis=1, keepdims=True)
    cos = x.astype(np.float64) @ y.astype(np.float64).T
    kx, ky = min(k, len(y)), min(k, len(x))
    nn_x = [list(np.argsort(-cos[i])[:kx]) for i in range(len(x))]
    nn_y = [list(np.argsort(-cos[:, j])[:ky]) for j in range(len(y))]
    avg_x = [sum(cos[i, j] for j in nn_x[i]) / kx for i in range(len(x))]
    avg_y = [sum(cos[i, j] for i in nn_y[j]) / ky for j in range(len(y))]

    def score(i: int, j: int) -> float:
        a, b = cos[i, j], avg_x[i] / 2 + avg_y[j] / 2
        return {"ratio": a / b, "distance": a - b, "absolute": a}[margin]

    fwd = []
    for i in range(len(x)):
        j = max(nn_x[i], key=lambda j, i=i: score(i, j))
        fwd.append((i, j, score(i, j)))
    bwd = []
    for j in range(len(y)):
        i = max(nn_y[j], key=lambda i, j=j: score(i, j))
        bwd.append((i, j, score(i, j)))
    if mode == "forward":
        pairs = fwd
    elif mode == "backward":
        pairs = bwd
    elif mode == "intersect":
        best_source = {j: i for i, j, _ in bwd}
        pairs = [(i, j, s) for i, j, s in fwd if best_source[j] == i]
    else:  # max: union, greedy 1-1 by decreasing score
        pairs, used_x, used_y = [], set(), set()
        for i, j, s in sorted(fwd + bwd, key=lambda p: -p[2]):
            if i not in used_x and j not in used_y:
                used_x.add(i)
                used_y.add(j)
                pairs.append((i, j, s))
    return sorted(pairs, key=lambda p: -p[2])


@pytest.fixture(scope="module")
def pools() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    shared = rng.normal(size=(40, 24))
    x = np.vstack([shared + 0.6 * rng.normal(size=shared.shape), rng.normal(size=(20, 24))])
    y = np.vstack([shared[rng.permutation(40)] + 0.6 * rng.normal(size=shared.shape), rng.normal(size=(35, 24))])
    return x.astype(np.float32), y.astype(np.float32)


@pytest.mark.parametrize("margin", MARGINS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [1, 4])
def test_mine_matches_brute_force(pools: tuple[np.ndarray, np.ndarray], margin: str, mode: str, k: int) -> None:
    x, y = pools
    got = mine(x, y, k=k, margin=margin, mode=mode)
    want = brute_force_mine(x, y, k, margin, mode)
    assert [(p.source, p.target) for p in got] == [(i, j) for i, j, _ in want]
    np.testing.assert_allclose([p.score for p in got], [s for _, _, s in want], atol=1e-5, rtol=0)


def test_k_larger_than_pool_is_capped() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(6, 8)).astype(np.float32), rng.normal(size=(3, 8)).astype(np.float32)
    got = mine(x, y, k=10, mode="forward")
    want = brute_force_mine(x, y, 10, "ratio", "forward")
    assert [(p.source, p.target) for p in got] == [(i, j) for i, j, _ in want]
    np.testing.assert_allclose([p.score for p in got], [s for _, _, s in want], atol=1e-5)


def test_knn_matches_argsort(pools: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = pools
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    y = y / np.linalg.norm(y, axis=1, keepdims=True)
    sims, ids = knn(x, y, 5)
    cos = x @ y.T
    np.testing.assert_array_equal(ids, np.argsort(-cos, axis=1)[:, :5])
    np.testing.assert_allclose(sims, np.take_along_axis(cos, ids, axis=1), atol=1e-5)


def test_exhaustive_ivf_index_equals_flat(pools: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = pools
    flat = mine(x, y)
    ivf = mine(x, y, index_factory="IVF2,Flat", search_parameters="nprobe=2")  # all cells probed: exact
    assert [(p.source, p.target) for p in ivf] == [(p.source, p.target) for p in flat]
    np.testing.assert_allclose([p.score for p in ivf], [p.score for p in flat], atol=1e-5)


def test_translations_are_recovered_and_threshold_filters() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 32)).astype(np.float32)
    permutation = rng.permutation(50)
    y = x[permutation] + 0.05 * rng.normal(size=x.shape).astype(np.float32)
    gold = {(int(permutation[j]), j) for j in range(50)}
    for mode in MODES:
        assert {(p.source, p.target) for p in mine(x, y, mode=mode)} == gold
    pairs = mine(x, y)
    cut = pairs[10].score
    assert [p for p in mine(x, y, threshold=cut)] == [p for p in pairs if p.score >= cut]
    assert all(a.score >= b.score for a, b in zip(pairs, pairs[1:], strict=False))


def test_candidates_expose_the_neighbourhood_means(pools: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = pools
    candidates = margin_candidates(x, y, k=3)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    yn = y / np.linalg.norm(y, axis=1, keepdims=True)
    cos = xn @ yn.T
    np.testing.assert_allclose(candidates.forward_mean, np.sort(cos, axis=1)[:, -3:].mean(axis=1), atol=1e-5)
    np.testing.assert_allclose(candidates.backward_mean, np.sort(cos, axis=0)[-3:].mean(axis=0), atol=1e-5)


def test_bad_arguments() -> None:
    x = np.ones((3, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="margin"):
        mine(x, x, margin="cosine")
    with pytest.raises(ValueError, match="mode"):
        mine(x, x, mode="union")
    with pytest.raises(ValueError, match="dimension"):
        knn(x, np.ones((3, 5), dtype=np.float32), 2)
    with pytest.raises(ValueError, match="k must be"):
        knn(x, x, 0)


def test_fit_threshold_hand_computed() -> None:
    # cuts after 1..4 candidates: F1 = 0.5, 0.4, 0.667, 0.571 -> keep 3, threshold between 0.7 and 0.6
    fit = fit_threshold([0.9, 0.8, 0.7, 0.6], [True, False, True, False], n_gold=3)
    assert fit.threshold == pytest.approx(0.65)
    assert fit.f1 == pytest.approx(2 / 3)
    assert (fit.precision, fit.recall, fit.extracted) == (pytest.approx(2 / 3), pytest.approx(2 / 3), 3)


def test_fit_threshold_keeps_ties_together_and_accepts_any_order() -> None:
    # Cutting inside the tie at 0.8 would give F1 = 1, but equal scores cannot be separated by a threshold:
    # the allowed cuts give 0.667 (keep 1), 0.8 (keep 3), 0.667 (keep 4).
    fit = fit_threshold([0.5, 0.8, 0.9, 0.8], [False, False, True, True], n_gold=2)
    assert fit.f1 == pytest.approx(0.8) and fit.threshold == pytest.approx(0.65) and fit.extracted == 3


def test_fit_threshold_without_hits_extracts_nothing() -> None:
    fit = fit_threshold([0.3, 0.2], [False, False], n_gold=5)
    assert fit.f1 == 0 and fit.threshold > 0.3 and fit.extracted == 0
    last = fit_threshold([0.3, 0.2], [False, True], n_gold=1)
    assert last.threshold == pytest.approx(0.2) and last.f1 == pytest.approx(2 * 0.5 / 1.5)


def test_prf() -> None:
    assert prf(3, 4, 6) == (0.75, 0.5, pytest.approx(0.6))
    assert prf(0, 0, 6) == (0.0, 0.0, 0.0)
