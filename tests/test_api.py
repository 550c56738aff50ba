"""The public Python API refuses what the CLI refuses: an unknown language code, a batch size below 1."""

from __future__ import annotations

import numpy as np
import pytest

import polyembed
from polyembed.errors import PolyembedError, UnknownLanguageError


def test_encode_normalises_rows_and_accepts_known_codes(hashing_encoder) -> None:
    vectors = polyembed.encode(hashing_encoder, ["Guten Tag.", "Hallo Welt."], language="deu")
    assert vectors.shape == (2, hashing_encoder.dimension)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_encode_refuses_unknown_languages_and_bad_batch_sizes(hashing_encoder) -> None:
    with pytest.raises(UnknownLanguageError, match="unknown language code 'xx'"):
        polyembed.encode(hashing_encoder, ["x"], language="xx")
    with pytest.raises(PolyembedError, match="batch size 0"):
        polyembed.encode(hashing_encoder, ["x"], batch_size=0)
    assert hashing_encoder.calls == []  # refused before any encoding


def test_evaluate_refuses_a_bad_batch_size_before_loading_anything(tmp_path) -> None:
    with pytest.raises(PolyembedError, match="batch size -1"):
        polyembed.evaluate("no-such-model", ["sts17"], batch_size=-1, out_dir=tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_evaluate_with_cache_encodes_each_sentence_once_across_runs(tmp_path, monkeypatch, hashing_encoder) -> None:
    """The persistent store: a second evaluation of the same model encodes nothing and scores the same."""
    from polyembed.eval.api import evaluate
    from tests.eval.mock_tasks import PairSimilarityMock

    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache"))
    first = evaluate(hashing_encoder, [PairSimilarityMock()], data_root=tmp_path, show_progress=False, cache=True)
    calls = len(hashing_encoder.calls)
    assert calls > 0
    second = evaluate(hashing_encoder, [PairSimilarityMock()], data_root=tmp_path, show_progress=False, cache=True)
    assert len(hashing_encoder.calls) == calls  # every sentence came from the store
    assert [s.value for s in second.scores] == [s.value for s in first.scores]
    assert (tmp_path / "cache" / "embeddings").is_dir()
