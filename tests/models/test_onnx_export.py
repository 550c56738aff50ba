"""ONNX export: the fp32 graph embeds as the source model, int8 stays close, load_model runs both, errors."""

from __future__ import annotations

import numpy as np
import pytest

import polyembed
from polyembed.errors import PolyembedError
from polyembed.models.onnx_export import CONFIG_FILE, FP32_FILE, INT8_FILE, OnnxEncoder, export_onnx
from tests.helpers import TRAINING_TEXTS, tiny_sentence_transformer


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx")
    source = tiny_sentence_transformer(root / "tiny", seed=0)
    return source, export_onnx(str(source), root / "export")


def test_the_export_embeds_as_the_source_model(exported) -> None:
    source, folder = exported
    assert {p.name for p in folder.iterdir()} >= {FP32_FILE, INT8_FILE, CONFIG_FILE}
    reference = polyembed.encode(str(source), TRAINING_TEXTS)
    fp32 = polyembed.load_model(str(folder / FP32_FILE))
    assert isinstance(fp32, OnnxEncoder)
    assert np.allclose(polyembed.encode(fp32, TRAINING_TEXTS), reference, atol=1e-5)
    int8 = polyembed.load_model(str(folder))  # the folder gives the int8 graph
    assert int8.name == str(folder) and int8.session is not None
    cosines = (polyembed.encode(int8, TRAINING_TEXTS) * reference).sum(axis=1)
    assert cosines.min() > 0.95  # quantised weights move each embedding only a little


def test_e5_prompt_and_pooling_settings_are_carried(exported) -> None:
    _, folder = exported
    encoder = OnnxEncoder(folder)
    assert encoder.settings.pooling == "mean" and encoder.settings.prompt == "" and encoder.dimension == 32


def test_an_export_never_replaces_other_files(exported, tmp_path) -> None:
    source, folder = exported
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(PolyembedError, match="a folder of other files"):
        export_onnx(str(source), tmp_path / "mine")
    with pytest.raises(PolyembedError, match="add --overwrite"):
        export_onnx(str(source), folder)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"


def test_a_broken_export_is_a_clear_error(exported, tmp_path) -> None:
    _, folder = exported
    (tmp_path / CONFIG_FILE).write_text("{not json")
    with pytest.raises(PolyembedError, match="not a polyembed ONNX export"):
        OnnxEncoder(tmp_path)
    with pytest.raises(PolyembedError, match="missing"):
        OnnxEncoder(folder, "model.fp16.onnx")
