"""The modular bundle: per-language routing, mono = the encoder before CLA (bit-identical), cross = with its
adapter, language identification, the pivot fallback, and clear errors for broken bundles."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

import polyembed
from polyembed.errors import PolyembedError
from polyembed.models.modular import BUNDLE_FILE, ModularEncoder, save_modular_bundle
from polyembed.models.parallel_adapter import add_parallel_adapters, parallel_adapter_blocks
from tests.helpers import tiny_sentence_transformer

GERMAN = ["Der Hund schläft im Garten.", "Wir fahren morgen nach Berlin."]
ENGLISH = ["The dog sleeps in the garden.", "We are driving to Berlin tomorrow."]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """An English pivot and a German encoder whose CLA adapter is not the identity; plus the plain encoders."""
    from sentence_transformers import SentenceTransformer

    root = tmp_path_factory.mktemp("modular")
    english = SentenceTransformer(str(tiny_sentence_transformer(root / "en", seed=0)), device="cpu")
    german = SentenceTransformer(str(tiny_sentence_transformer(root / "de", seed=1)), device="cpu")
    add_parallel_adapters(german)
    torch.manual_seed(0)
    for block in parallel_adapter_blocks(german):  # stands for a trained adapter: any non-zero up-projection
        torch.nn.init.normal_(block.parallel_adapter.up.weight, std=0.5)
    folder = save_modular_bundle(root / "bundle", {"en": english, "de": german}, pivot="en")
    return folder, root


def test_mono_is_the_encoder_before_alignment_and_cross_uses_the_adapter(bundle) -> None:
    folder, root = bundle
    model = polyembed.load_model(str(folder))
    assert isinstance(model, ModularEncoder) and model.languages == ["de", "en"] and model.routes_by_language
    plain_german = polyembed.load_model(str(root / "de"))  # the German encoder as it was before CLA
    mono = model.encode(GERMAN, "de", mode="mono")
    assert np.array_equal(mono, plain_german.encode(GERMAN))  # bit-identical
    cross = model.encode(GERMAN, "de")  # the bundle's default mode: cross
    assert not np.allclose(cross, mono, atol=1e-3)
    assert np.array_equal(model.encode(ENGLISH, "en", mode="mono"), model.encode(ENGLISH, "en", mode="cross"))
    assert np.array_equal(model.with_mode("mono").encode(GERMAN, "de"), mono)
    assert (folder / "de" / "parallel_adapter.json").is_file()
    assert not (folder / "en" / "parallel_adapter.json").exists()  # the pivot never gets an adapter


def test_without_a_language_each_sentence_is_routed_by_the_identifier(bundle) -> None:
    folder, _ = bundle
    model = polyembed.load_model(str(folder))
    mixed = [GERMAN[0], ENGLISH[0], GERMAN[1], ENGLISH[1]]
    routed = model.encode(mixed)
    assert np.allclose(routed[[0, 2]], model.encode(GERMAN, "de"), atol=1e-6)
    assert np.allclose(routed[[1, 3]], model.encode(ENGLISH, "en"), atol=1e-6)


def test_unknown_languages_are_an_error_or_go_to_the_pivot(bundle, tmp_path, caplog) -> None:
    folder, _ = bundle
    model = polyembed.load_model(str(folder))
    with pytest.raises(PolyembedError, match="no encoder for language 'sw' \\(it has de, en"):
        model.encode(["Habari ya asubuhi"], "sw")
    fallback = tmp_path / "fallback"
    shutil.copytree(folder, fallback)
    settings = json.loads((fallback / BUNDLE_FILE).read_text())
    (fallback / BUNDLE_FILE).write_text(json.dumps({**settings, "unknown_language": "pivot"}))
    lenient = polyembed.load_model(str(fallback))
    with caplog.at_level("WARNING"):
        vectors = lenient.encode(["Habari ya asubuhi"], "sw")
    assert np.array_equal(vectors, lenient.encode(["Habari ya asubuhi"], "en")) and "using the pivot" in caplog.text


def test_broken_bundles_name_the_missing_piece(bundle, tmp_path) -> None:
    folder, root = bundle
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    shutil.rmtree(broken / "de")
    with pytest.raises(PolyembedError, match="language 'de' is listed but its folder de/ is missing"):
        polyembed.load_model(str(broken))
    (broken / BUNDLE_FILE).write_text("{")
    with pytest.raises(PolyembedError, match="not a modular bundle file"):
        ModularEncoder(broken)
    from sentence_transformers import SentenceTransformer

    german = SentenceTransformer(str(root / "de"), device="cpu")
    with pytest.raises(PolyembedError, match="the pivot 'en' has no encoder"):
        save_modular_bundle(tmp_path / "no-pivot", {"de": german})


def test_evaluation_tasks_run_on_a_bundle_unchanged(bundle, tmp_path) -> None:
    from tests.eval.mock_tasks import PairSimilarityMock

    folder, _ = bundle
    result = polyembed.evaluate(str(folder), [PairSimilarityMock()], data_root=tmp_path, show_progress=False)
    assert {s.subset for s in result.scores} == {"en", "de", "avg"}
