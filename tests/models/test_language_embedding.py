"""Language embeddings as token-type rows: untouched input stays exact, each language changes the encoding,
the ids survive save and load, and `load_model` routes by language."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from polyembed.errors import PolyembedError
from polyembed.models.language_embedding import (
    LanguageEmbeddingEncoder,
    add_language_embeddings,
    encode_by_token_type,
    language_embedding_ids,
    language_id,
)
from tests.helpers import tiny_sentence_transformer

SENTENCES = ["the cat sees the sea", "a dog runs home", "birds sing"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_sentence_transformer(tmp_path_factory.mktemp("language-embedding") / "base", seed=0)


def _model(folder: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu")


def test_new_rows_start_at_type_zero_plus_noise_and_leave_plain_input_exact(folder: Path) -> None:
    model = _model(folder)
    before = model.encode(SENTENCES)
    old = model[0].auto_model.embeddings.token_type_embeddings.weight.detach().clone()
    ids = add_language_embeddings(model, ["en", "deu", "de"], seed=3)  # 'deu' and 'de' are one language
    assert ids == {"en": 2, "de": 3} and language_embedding_ids(model) == ids
    table = model[0].auto_model.embeddings.token_type_embeddings.weight.detach()
    assert table.shape == (4, old.shape[1]) and model[0].auto_model.config.type_vocab_size == 4
    np.testing.assert_array_equal(table[:2].numpy(), old.numpy())
    noise = (table[2:] - old[0]).numpy()
    assert 0.005 < noise.std() < 0.05 and not np.allclose(noise[0], noise[1])
    np.testing.assert_allclose(model.encode(SENTENCES), before, atol=1e-6)  # no hook: token type 0
    with language_id(model, ids["de"]):
        german = model.encode(SENTENCES)
    assert not np.allclose(german, before, atol=1e-4)
    np.testing.assert_allclose(model.encode(SENTENCES), before, atol=1e-6)  # the hook is gone after the block
    mixed = encode_by_token_type(model, SENTENCES, [ids["de"], 0, ids["de"]])
    np.testing.assert_allclose(mixed[[0, 2]], german[[0, 2]], atol=1e-5)
    np.testing.assert_allclose(mixed[1], before[1], atol=1e-5)
    with pytest.raises(PolyembedError, match="already has language embeddings"):
        add_language_embeddings(model, ["fr"])


def test_saved_ids_make_load_model_route_by_language(folder: Path, tmp_path: Path, caplog) -> None:
    from polyembed.models.loading import load_model

    model = _model(folder)
    ids = add_language_embeddings(model, ["en", "de"])
    with language_id(model, ids["de"]):
        german = model.encode(SENTENCES)
    model.save(str(tmp_path / "saved"))
    encoder = load_model(str(tmp_path / "saved"))
    assert isinstance(encoder, LanguageEmbeddingEncoder) and encoder.routes_by_language
    assert encoder.languages == ["en", "de"]
    np.testing.assert_allclose(encoder.encode(SENTENCES, "deu"), german, atol=1e-5)
    plain = _model(folder).encode(SENTENCES)
    with caplog.at_level(logging.WARNING):
        np.testing.assert_allclose(encoder.encode(SENTENCES, "fr"), plain, atol=1e-5)
    assert "no language embedding for 'fr'" in caplog.text
    assert encoder.encode([], "de").shape == (0, 32)
    assert not isinstance(load_model(str(folder)), LanguageEmbeddingEncoder)


def test_onnx_export_refuses_a_model_with_language_embeddings(folder: Path, tmp_path: Path) -> None:
    from polyembed.models.onnx_export import export_onnx

    model = _model(folder)
    add_language_embeddings(model, ["en", "de"])
    with pytest.raises(PolyembedError, match="needs each sentence's language"):
        export_onnx(model, tmp_path / "export")
    assert not (tmp_path / "export").exists()
