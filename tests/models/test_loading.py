"""`load_model` (built-ins, folders, hub ids offline) and language identification."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from polyembed.errors import PolyembedError
from polyembed.models import (
    BUILTIN_MODELS,
    ENCODER_KINDS,
    ModelNotAvailableError,
    SentenceTransformerEncoder,
    as_encoder,
    identify_language,
    identify_languages,
    load_model,
)
from polyembed.models.encoder import ForeignEncoder
from tests.helpers import make_tiny_hf_encoder


def test_builtin_registry_describes_every_model() -> None:
    assert set(BUILTIN_MODELS) >= {"minilm-en", "me5-small", "mpnet-en"}
    for model in BUILTIN_MODELS.values():
        assert model.licence and model.source.startswith("https://") and model.description


def test_minilm_loads_offline(minilm: SentenceTransformerEncoder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert isinstance(minilm, SentenceTransformerEncoder)
    assert minilm.name == "minilm-en" and minilm.dimension == 384 and minilm.prompt == ""
    assert minilm.path is not None and Path(minilm.path, "modules.json").is_file()
    vectors = minilm.encode(
        ["A man is playing a guitar.", "Someone plays an instrument.", "The stock market fell."]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert unit[0] @ unit[1] > unit[0] @ unit[2] + 0.2  # related sentences are clearly closer
    assert minilm.encode([]).shape == (0, 384)


def test_unknown_hub_id_fails_fast_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(ModelNotAvailableError, match="HF_HUB_OFFLINE") as info:
        load_model("polyembed-test/definitely-not-a-real-model-3141")
    assert time.perf_counter() - start < 20
    assert "me5-small" in str(info.value)  # the message points at what does work offline


def test_missing_local_paths_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        load_model(str(tmp_path / "no-such-model"))
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        load_model("./no/such/model/folder")
    a_file = tmp_path / "weights.bin"
    a_file.write_bytes(b"\0" * 16)
    with pytest.raises(ModelNotAvailableError, match="is a file"):
        load_model(str(a_file))
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    with pytest.raises(ModelNotAvailableError, match="could not load"):
        load_model(str(empty))


def test_plain_hf_folder_gets_mean_pooling(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = make_tiny_hf_encoder(tmp_path / "plain-bert")
    assert not (folder / "modules.json").exists()
    encoder = load_model(str(folder))
    assert encoder.path == str(folder.resolve()) and encoder.dimension == 32 and encoder.prompt == ""
    texts = ["The weather today is sunny.", "Wir fahren morgen nach Berlin mit dem Zug und lesen ein Buch."]
    ours = encoder.encode(texts)

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).eval()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    expected = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
    np.testing.assert_allclose(ours, expected, atol=1e-5)
    cls_only = hidden[:, 0].numpy()
    assert not np.allclose(ours, cls_only, atol=1e-3)  # it is the mean, not the first token


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("The committee will publish its final report next week.", "en"),
        ("Der Zug nach München hat heute leider zwanzig Minuten Verspätung.", "de"),
        ("Je voudrais réserver une table pour deux personnes ce soir.", "fr"),
        ("Вчера вечером мы долго гуляли по набережной.", "ru"),
        ("¿Dónde está la estación de tren más cercana?", "es"),
        ("今天天气很好，我们去公园散步吧。", "zh"),
        ("Bugün hava çok güzel, parka gidelim mi?", "tr"),
    ],
)
def test_identify_language_on_real_sentences(text: str, code: str) -> None:
    predicted, probability = identify_language(text)
    assert predicted == code
    assert 0.5 < probability <= 1.0


def test_identify_language_with_candidates() -> None:
    # Restricting the candidates changes the answer space, and the restriction is not sticky.
    text = "Det här är en mening på svenska om vädret i Stockholm."
    assert identify_language(text)[0] == "sv"
    assert identify_language(text, candidates=["de", "en"])[0] in {"de", "en"}
    assert identify_language(text)[0] == "sv"
    assert identify_languages(
        ["Good morning, how are you today?", "Guten Morgen, wie geht es dir heute?"]
    ) == [
        "en",
        "de",
    ]


SENTENCES = ["A man is playing a guitar.", "Ein Mann spielt Gitarre.", "The cat sleeps on the sofa all day long."]


def test_as_encoder_takes_a_users_own_object_and_refuses_one_without_encode(hashing_encoder) -> None:
    wrapped = as_encoder(hashing_encoder)
    assert isinstance(wrapped, ForeignEncoder) and as_encoder(wrapped) is wrapped
    assert wrapped.name == hashing_encoder.name and wrapped.dimension == hashing_encoder.dimension
    assert wrapped.languages is None and wrapped.tokenizer is None
    assert np.allclose(np.linalg.norm(wrapped.encode(SENTENCES, normalize=True), axis=1), 1.0, atol=1e-6)
    with pytest.raises(PolyembedError, match="int: not an encoder"):
        as_encoder(3)


def test_as_encoder_wraps_a_sentence_transformer_model(minilm) -> None:
    wrapped = as_encoder(minilm.model)
    assert isinstance(wrapped, SentenceTransformerEncoder)
    assert wrapped.dimension == minilm.dimension and wrapped.max_seq_length == minilm.max_seq_length
    assert np.array_equal(wrapped.encode(SENTENCES), minilm.encode(SENTENCES))


def test_a_new_encoder_kind_is_one_class_and_one_registration(tmp_path: Path) -> None:
    """tests/models/toy_kind.py (docs/contributing/encoder-kind.md) loads through `load_model` and routes,
    normalises and embeds through the base class, with no edit anywhere else."""
    from polyembed.models.embedding_cache import EmbeddingStore
    from tests.models.toy_kind import LetterCounts

    assert LetterCounts in ENCODER_KINDS
    (tmp_path / LetterCounts.MARKER).write_text("aeiou\n", encoding="utf-8")
    encoder = load_model(str(tmp_path))
    assert isinstance(encoder, LetterCounts) and encoder.name == str(tmp_path) and encoder.dimension == 5
    assert encoder.encode(["banana", "kiwi"], ["en", "de"]).tolist() == [[3, 0, 0, 0, 0], [0, 0, 2, 0, 0]]
    assert encoder.encode("banana", normalize=True).tolist() == [1, 0, 0, 0, 0]
    store = EmbeddingStore(encoder, tmp_path / "store")
    assert store.encode(["kiwi"]).tolist() == [[0, 0, 2, 0, 0]] and store.encoded == 1
