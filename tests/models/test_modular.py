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


PLAIN_LOAD = """
import json, sys
import numpy as np
from sentence_transformers import SentenceTransformer

folder, out = sys.argv[1], sys.argv[2]
model = SentenceTransformer(folder, trust_remote_code=True, device="cpu")
vectors = {"de": model.encode(GERMAN, task="de").tolist(), "en": model.encode(ENGLISH, task="en").tolist()}
try:
    model.encode(GERMAN)
    vectors["no_task"] = "encoded"
except ValueError as err:
    vectors["no_task"] = str(err)
vectors["imported"] = sorted(name for name in sys.modules if name.startswith("polyembed"))
json.dump(vectors, open(out, "w"))
"""


def test_plain_sentence_transformers_loads_the_bundle_as_a_router(bundle, tmp_path) -> None:
    """The acceptance of issue 38 for bundles: a process that never imports polyembed gets the same cross-mode
    embeddings through `Router` (language = task), and an error, not a silent route, without a language."""
    import subprocess
    import sys

    folder, root = bundle
    script = tmp_path / "plain.py"
    script.write_text(f"GERMAN = {GERMAN!r}\nENGLISH = {ENGLISH!r}\n" + PLAIN_LOAD)
    out = tmp_path / "vectors.json"
    subprocess.run([sys.executable, str(script), str(folder), str(out)], check=True, cwd=tmp_path,
                   env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"}, capture_output=True)
    plain = json.loads(out.read_text())
    model = polyembed.load_model(str(folder))
    assert plain["imported"] == []
    assert np.abs(np.array(plain["de"]) - model.encode(GERMAN, "de")).max() <= 1e-5  # cross mode, adapter on
    assert np.abs(np.array(plain["en"]) - model.encode(ENGLISH, "en")).max() <= 1e-5
    assert not np.allclose(np.array(plain["de"]), model.encode(GERMAN, "de", mode="mono"), atol=1e-3)
    assert "Could not determine route" in plain["no_task"] and "task='de'" in plain["no_task"]
    router = json.loads((folder / "router_config.json").read_text())
    assert router["structure"]["de"][0] == "de" and (folder / "polyembed_parallel_adapter.py").is_file()


def test_a_bundle_in_mono_mode_routes_to_the_encoders_without_adapters(bundle, tmp_path) -> None:
    from polyembed.models.modular import ADAPTER_MODULE_TYPE, BundleConfig, write_router

    folder, _ = bundle
    mono = tmp_path / "mono"
    shutil.copytree(folder, mono)
    assert write_router(mono, BundleConfig("en", ["de", "en"], default_mode="mono", unknown_language="pivot"))
    router = json.loads((mono / "router_config.json").read_text())
    assert ADAPTER_MODULE_TYPE not in router["types"].values() and router["parameters"]["default_route"] == "en"


def test_languages_with_different_prompts_get_no_router(bundle, tmp_path, caplog) -> None:
    from polyembed.models.modular import BundleConfig, write_router

    folder, _ = bundle
    odd = tmp_path / "odd"
    shutil.copytree(folder, odd)
    settings = json.loads((odd / "de" / "config_sentence_transformers.json").read_text())
    (odd / "de" / "config_sentence_transformers.json").write_text(json.dumps({**settings, "prompts": {"q": "q: "}}))
    with caplog.at_level("WARNING"):
        assert not write_router(odd, BundleConfig("en", ["de", "en"]))
    assert "differ in prompts" in caplog.text


def test_the_router_encoder_saves_as_the_plain_encoder_and_its_adapter(bundle, tmp_path) -> None:
    """Re-saving through sentence-transformers keeps the layout polyembed reads: plain weights + adapter files."""
    import torch
    from safetensors.torch import load_file

    from polyembed.models.polyembed_parallel_adapter import ParallelAdapterTransformer

    folder, _ = bundle
    module = ParallelAdapterTransformer.load(str(folder / "de"))
    module.save(str(tmp_path / "again"))
    assert not any(".parallel_adapter." in key or ".base." in key
                   for key in load_file(str(tmp_path / "again" / "model.safetensors")))
    again = ParallelAdapterTransformer.load(str(tmp_path / "again"))
    features = module.preprocess(GERMAN)
    with torch.no_grad():
        first = module(dict(features))["token_embeddings"]
        second = again(dict(features))["token_embeddings"]
    assert torch.equal(first, second)


def test_the_bundle_has_a_card_naming_its_languages_adapters_and_both_ways_to_load_it(bundle) -> None:
    folder, _ = bundle
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nlibrary_name: sentence-transformers") and "- polyembed-modular" in card
    assert "| de | `de/` | yes |" in card and "| en (pivot) | `en/` | no |" in card
    assert f'polyembed.load_model("{folder}")' in card and 'trust_remote_code=True' in card and 'task="de"' in card
