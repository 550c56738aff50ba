"""Inference precision: bf16 / fp16 autocast as an encoder wrapper, its choice ('auto'), and that stored float32
and half-precision vectors never mix; the one per-language routing loop (`encode_by_language`); the encoder base
class."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from polyembed.errors import PolyembedError
from polyembed.eval.api import evaluate
from polyembed.models import encoder as encoder_module
from polyembed.models import precision as precision_module
from polyembed.models.embedding_cache import EmbeddingStore, encoder_fingerprint
from polyembed.models.encoder import Bf16Encoder, Fp16Encoder, encode_by_language, resolve_precision, with_precision

SENTENCES = ["A man is playing a guitar.", "Ein Mann spielt Gitarre.", "The cat sleeps on the sofa all day long."]


def test_bf16_encodes_close_to_but_not_exactly_float32(minilm) -> None:
    exact = minilm.encode(SENTENCES)
    fast = Bf16Encoder(minilm)
    approximate = fast.encode(SENTENCES)
    assert approximate.dtype == np.float32 and approximate.shape == exact.shape
    cosines = (exact * approximate).sum(1) / np.linalg.norm(exact, axis=1) / np.linalg.norm(approximate, axis=1)
    assert cosines.min() > 0.99
    assert not np.array_equal(exact, approximate)  # autocast really ran the products in bf16
    assert np.array_equal(minilm.encode(SENTENCES), exact)  # and left the model itself in float32
    assert fast.name == f"{minilm.name} (bf16)" and fast.dimension == minilm.dimension
    assert fast.routes_by_language is minilm.routes_by_language


def test_auto_is_the_half_precision_the_device_computes_natively(monkeypatch) -> None:
    """bf16 where native; else fp16 on a GPU (CUDA, MPS), fp32 on a CPU (tests/test_device.py fakes CUDA)."""
    monkeypatch.setattr(precision_module, "bf16_available", lambda device=None: True)
    assert resolve_precision("auto", device="cpu") == "bf16"
    monkeypatch.setattr(precision_module, "bf16_available", lambda device=None: False)
    assert resolve_precision("auto", device="cpu") == "fp32"
    assert resolve_precision("auto", device="mps") == "fp16"
    assert [resolve_precision(p, device="cpu") for p in ("bf16", "fp16", "fp32")] == ["bf16", "fp16", "fp32"]
    with pytest.raises(PolyembedError, match="^precision half: choose one of fp32, bf16, fp16, auto"):
        resolve_precision("half")


def test_fp16_encodes_close_to_float32_under_a_name_of_its_own(minilm) -> None:
    exact = minilm.encode(SENTENCES)
    half = with_precision(minilm, "fp16")
    approximate = half.encode(SENTENCES)
    assert isinstance(half, Fp16Encoder) and half.name == f"{minilm.name} (fp16)"
    cosines = (exact * approximate).sum(1) / np.linalg.norm(exact, axis=1) / np.linalg.norm(approximate, axis=1)
    assert cosines.min() > 0.99 and not np.array_equal(exact, approximate)
    assert encoder_fingerprint(half) not in (encoder_fingerprint(minilm), encoder_fingerprint(Bf16Encoder(minilm)))


def test_only_torch_encoders_take_bf16(hashing_encoder, minilm) -> None:
    with pytest.raises(PolyembedError, match="bf16 needs a torch model"):
        with_precision(hashing_encoder, "bf16")
    assert with_precision(hashing_encoder, "fp32") is hashing_encoder
    assert with_precision(hashing_encoder, "auto") is hashing_encoder  # it has a precision of its own
    assert isinstance(with_precision(minilm, "bf16"), Bf16Encoder)


def test_stored_vectors_of_the_two_precisions_never_mix(minilm, tmp_path: Path) -> None:
    fast = Bf16Encoder(minilm)
    assert encoder_fingerprint(fast) != encoder_fingerprint(minilm)
    store = EmbeddingStore(fast, tmp_path / "store")
    assert np.allclose(store.encode(SENTENCES), fast.encode(SENTENCES))
    store.close()


def test_evaluate_with_bf16_scores_close_to_float32(minilm, shared_data: Path) -> None:
    tasks = ["sts17"]
    options = {"languages": ["en-en"]}
    exact = evaluate(minilm, tasks, task_kwargs=options, show_progress=False)
    fast = evaluate(minilm, tasks, task_kwargs=options, show_progress=False, precision="bf16")
    [a] = [s.value for s in exact.scores if s.main and s.subset == "en-en"]
    [b] = [s.value for s in fast.scores if s.main and s.subset == "en-en"]
    assert a == pytest.approx(87.59, abs=0.01)  # the reference measured with plain sentence-transformers
    assert abs(a - b) < 0.5


# Each test sentence's "embedding": distinct rows, one of them zero (its norm must not turn into NaN).
ROUTED_VECTORS = {
    "eins": [3.0, 4.0],
    "one": [0.0, 2.0],
    "zwei": [6.0, 8.0],
    "?": [0.0, 0.0],
    "two": [5.0, 0.0],
}


class RecordingGroups:
    """An encode_group callback that records every call and returns float64 rows (callers' encoders may)."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str | None]] = []

    def __call__(self, group: list[str], language: str | None) -> np.ndarray:
        self.calls.append((list(group), language))
        return np.array([ROUTED_VECTORS[sentence] for sentence in group], dtype=np.float64)


def test_encode_by_language_encodes_each_language_once_and_keeps_input_order() -> None:
    encode_group = RecordingGroups()
    sentences = ["eins", "one", "zwei", "?", "two"]
    languages = ["de", "en", "de", None, "en"]
    vectors = encode_by_language(encode_group, sentences, languages)
    assert encode_group.calls == [(["eins", "zwei"], "de"), (["one", "two"], "en"), (["?"], None)]
    assert vectors.dtype == np.float32 and vectors.shape == (5, 2)
    expected = np.array([[3, 4], [0, 2], [6, 8], [0, 0], [5, 0]], dtype=np.float32)
    assert np.array_equal(vectors, expected)  # not normalised unless asked


def test_encode_by_language_normalises_rows_when_asked_and_zero_rows_stay_zero() -> None:
    vectors = encode_by_language(RecordingGroups(), ["eins", "one", "zwei", "?", "two"], ["de", "en", "de", "xx", "en"],
                                 normalize=True)
    expected = np.array([[0.6, 0.8], [0, 1], [0.6, 0.8], [0, 0], [1, 0]], dtype=np.float32)
    assert vectors.dtype == np.float32
    assert np.allclose(vectors, expected, atol=1e-7)
    assert not np.isnan(vectors).any()


def test_encode_by_language_stores_the_asked_dtype() -> None:
    vectors = encode_by_language(RecordingGroups(), ["two", "eins"], [None, None], dtype=np.float16)
    assert vectors.dtype == np.float16
    assert np.array_equal(vectors, np.array([[5, 0], [3, 4]], dtype=np.float16))


def test_encode_by_language_empty_input_calls_nothing() -> None:
    encode_group = RecordingGroups()
    vectors = encode_by_language(encode_group, [], [], normalize=True)
    assert vectors.shape == (0, 0) and vectors.dtype == np.float32
    assert encode_group.calls == []


def test_encode_by_language_needs_one_language_per_sentence() -> None:
    with pytest.raises(ValueError, match="2 sentences but 1 languages"):
        encode_by_language(RecordingGroups(), ["eins", "one"], ["de"])


class TableEncoder(encoder_module.SentenceEncoder):
    """A new encoder kind in a few lines: `dimension` and `_encode_group`; the base class routes and checks."""

    def __init__(self, languages: list[str] | None) -> None:
        self.name = "table"
        self._languages = languages
        self.groups = RecordingGroups()

    @property
    def dimension(self) -> int:
        return 2

    @property
    def languages(self) -> list[str] | None:
        return self._languages

    def _encode_group(self, sentences, language, batch_size, show_progress_bar) -> np.ndarray:
        return self.groups(sentences, language)


def test_the_base_class_routes_rows_by_language_once_per_language() -> None:
    routed = TableEncoder(["de", "en"])
    vectors = routed.encode(["eins", "one", "zwei"], ["deu", "en", "de"], normalize=True)
    assert routed.groups.calls == [(["eins", "zwei"], "de"), (["one"], "en")]  # codes normalised, one call each
    assert np.allclose(vectors, [[0.6, 0.8], [0, 1], [0.6, 0.8]], atol=1e-7) and vectors.dtype == np.float32
    assert routed.encode(["one", "two"], "en").tolist() == [[0, 2], [5, 0]]  # one code for all rows
    assert routed.encode("one", "en").tolist() == [0, 2]  # a single string gives one vector
    assert routed.encode([], "en").shape == (0, 2)


def test_a_model_that_does_not_route_gets_one_call_and_no_language() -> None:
    single = TableEncoder(None)
    assert not single.routes_by_language
    single.encode(["eins", "one"], ["de", "en"])
    assert single.groups.calls == [(["eins", "one"], None)]


def test_rows_without_a_language_are_identified_among_the_models_own(monkeypatch) -> None:
    from polyembed.models import langid

    seen: list[list[str]] = []
    monkeypatch.setattr(langid, "identify_among", lambda texts, languages, name: seen.append(list(languages))
                        or ["de"] * len(texts))
    routed = TableEncoder(["de", "en"])
    routed.encode(["eins", "one"], [None, "en"])
    assert seen == [["de", "en"]] and routed.groups.calls == [(["eins"], "de"), (["one"], "en")]


def test_the_base_class_refuses_bad_arguments_before_encoding() -> None:
    from polyembed.errors import UnknownLanguageError

    routed = TableEncoder(["de", "en"])
    with pytest.raises(UnknownLanguageError, match="unknown language code 'xx'"):
        routed.encode(["eins"], "xx")
    with pytest.raises(PolyembedError, match="2 sentences but 1 languages"):
        routed.encode(["eins", "one"], ["de"])
    with pytest.raises(PolyembedError, match="batch size 0"):
        routed.encode(["eins"], "de", batch_size=0)
    assert routed.groups.calls == []
