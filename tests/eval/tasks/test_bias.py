"""Language-bias task: the joined-vs-expected arithmetic by hand, the bootstrap, and the task on fake and real data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from polyembed.errors import PolyembedError, UnknownLanguageError
from polyembed.eval.registry import get_task
from polyembed.eval.runner import run_tasks
from polyembed.eval.tasks.bias import BIAS_TRACKS, _row_spearman, bootstrap_difference, language_bias
from polyembed.models.encoder import SentenceEncoder
from tests.eval.tasks.test_sts import make_sts2017, value


def test_bias_arithmetic_by_hand() -> None:
    # Track A ranks perfectly (rho = 1) but sits high; track B ranks perfectly but sits low.
    # Pooled: similarities [.8 .9 .1 .2] -> ranks [3 4 1 2]; gold [0 1 4 5] -> ranks [1 2 3 4];
    # d = [2 2 -2 -2], sum d^2 = 16, rho = 1 - 6*16 / (4*15) = -0.6.
    result = language_bias([np.array([0.8, 0.9]), np.array([0.1, 0.2])], [[0.0, 1.0], [4.0, 5.0]])
    assert result.per_track == pytest.approx([100.0, 100.0])
    assert result.expected == pytest.approx(100.0)
    assert result.joined == pytest.approx(-60.0)
    assert result.difference == pytest.approx(-160.0)


def test_no_bias_when_tracks_interleave() -> None:
    # Both tracks use the same similarity scale for the same gold: pooling loses nothing.
    result = language_bias([np.array([0.1, 0.5, 0.9]), np.array([0.2, 0.6, 0.8])], [[1, 3, 5], [1.5, 3.5, 4.5]])
    assert result.joined == pytest.approx(100.0)
    assert result.difference == pytest.approx(0.0)
    with pytest.raises(ValueError, match="at least two tracks"):
        language_bias([np.array([0.1, 0.2])], [[1, 2]])


def test_row_spearman_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    predicted = rng.normal(size=(5, 40))
    gold = np.round(rng.uniform(0, 5, size=(5, 40)), 1)  # with ties
    expected = [100 * spearmanr(p, g).statistic for p, g in zip(predicted, gold, strict=True)]
    assert _row_spearman(predicted, gold) == pytest.approx(expected)


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(0)
    gold = [rng.uniform(0, 5, 200), rng.uniform(0, 5, 200)]
    sims = [gold[0] / 5 + rng.normal(0, 0.3, 200) + 1.0, gold[1] / 5 + rng.normal(0, 0.3, 200)]  # track 1 shifted
    point = language_bias(sims, gold).difference
    first = bootstrap_difference(sims, gold, samples=300, seed=1)
    assert first.shape == (300,)
    assert np.array_equal(first, bootstrap_difference(sims, gold, samples=300, seed=1))
    low, high = np.percentile(first, [2.5, 97.5])
    assert low < point < high < 0


def test_task_on_fake_sts2017(tmp_path: Path, hashing_encoder: SentenceEncoder) -> None:
    root = make_sts2017(tmp_path)
    bias = get_task("language-bias", bootstrap=200)
    sts = get_task("sts17")
    result = run_tasks(hashing_encoder, [sts, bias], data_root=root, show_progress=False)
    bias_scores = result.runs[1].scores
    per_track = [value(bias_scores, track) for track in BIAS_TRACKS]
    assert per_track == pytest.approx([value(result.runs[0].scores, track) for track in BIAS_TRACKS])
    assert "es-en-wmt" not in {s.subset for s in bias_scores}
    assert value(bias_scores, "all", "expected") == pytest.approx(np.mean(per_track))
    joined, expected = value(bias_scores, "all", "joined"), value(bias_scores, "all", "expected")
    assert value(bias_scores, "all", "difference") == pytest.approx(joined - expected)
    assert [s.metric for s in bias_scores if s.main] == ["difference"]
    assert next(s for s in bias_scores if s.metric == "joined").n == 6 * 24
    low, high = value(bias_scores, "all", "difference-ci-low"), value(bias_scores, "all", "difference-ci-high")
    assert low <= value(bias_scores, "all", "difference") <= high
    assert result.runs[1].sentences_encoded == 0  # sts17 already embedded every sentence in this run


def test_task_arguments(tmp_path: Path, hashing_encoder: SentenceEncoder) -> None:
    root = make_sts2017(tmp_path)
    task = get_task("language-bias", languages=["en-en", "ar-en"], bootstrap=0)
    scores = run_tasks(hashing_encoder, [task], data_root=root, show_progress=False).scores
    assert {s.metric for s in scores} == {"spearman", "joined", "expected", "difference"}
    assert value(scores, "all", "expected") == pytest.approx((value(scores, "en-en") + value(scores, "ar-en")) / 2)
    with pytest.raises(PolyembedError, match="at least two"):
        get_task("language-bias", languages=["en-en"])
    with pytest.raises(UnknownLanguageError, match="es-en-wmt"):
        get_task("language-bias", languages=["en-en", "es-en-wmt"])


def test_real_hashing_encoder_shows_language_bias(shared_data: Path, hashing_encoder: SentenceEncoder) -> None:
    """Character trigrams barely match across languages, so cross-lingual pairs rank low as a block."""
    scores = run_tasks(hashing_encoder, [get_task("language-bias")], data_root=shared_data, show_progress=False).scores
    assert value(scores, "all", "joined") == pytest.approx(
        value(scores, "all", "expected") + value(scores, "all", "difference")
    )
    assert value(scores, "all", "difference-ci-high") < 0
