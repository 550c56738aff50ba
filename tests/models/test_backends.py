"""Choosing the runtime: a torch model served on onnxruntime is exported once into the cache and reused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import polyembed
from polyembed.errors import PolyembedError
from polyembed.models.backends import EXPORTS_FOLDER, load_with_backend
from polyembed.models.onnx_export import FP32_FILE, INT8_FILE, OnnxEncoder
from tests.helpers import TRAINING_TEXTS, tiny_sentence_transformer


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "cache"


def test_onnx_backends_export_once_and_embed_as_torch(tmp_path: Path) -> None:
    folder = str(tiny_sentence_transformer(tmp_path / "tiny", seed=0))
    torch_rows = polyembed.encode(load_with_backend(folder, "torch"), TRAINING_TEXTS[:8], normalize=True)
    fp32 = load_with_backend(folder, "onnx")
    exports = list((tmp_path / "cache" / EXPORTS_FOLDER).iterdir())
    assert isinstance(fp32, OnnxEncoder) and fp32.graph_file == FP32_FILE and len(exports) == 1
    assert fp32.name == folder  # served under the name the user gave
    assert np.abs(polyembed.encode(fp32, TRAINING_TEXTS[:8], normalize=True) - torch_rows).max() < 1e-4
    stamp = (exports[0] / FP32_FILE).stat().st_mtime_ns
    int8 = load_with_backend(folder, "onnx-int8")  # the same export, not a second one
    assert int8.graph_file == INT8_FILE and (exports[0] / FP32_FILE).stat().st_mtime_ns == stamp
    assert list((tmp_path / "cache" / EXPORTS_FOLDER).iterdir()) == exports
    cosines = (polyembed.encode(int8, TRAINING_TEXTS[:8], normalize=True) * torch_rows).sum(axis=1)
    assert cosines.min() > 0.95
    assert isinstance(load_with_backend(str(exports[0]), "auto"), OnnxEncoder)  # an export runs its own graph
    assert not isinstance(load_with_backend(folder, "auto"), OnnxEncoder)


def test_openvino_runs_the_same_export_graphs(tmp_path: Path) -> None:
    folder = str(tiny_sentence_transformer(tmp_path / "tiny", seed=0))
    torch_rows = polyembed.encode(load_with_backend(folder, "torch"), TRAINING_TEXTS[:8], normalize=True)
    fp32 = load_with_backend(folder, "openvino")
    assert isinstance(fp32, OnnxEncoder) and fp32.runtime == "openvino" and fp32.graph_file == FP32_FILE
    assert np.abs(polyembed.encode(fp32, TRAINING_TEXTS[:8], normalize=True) - torch_rows).max() < 1e-4
    int8 = load_with_backend(folder, "openvino-int8")
    assert int8.graph_file == INT8_FILE and len(list((tmp_path / "cache" / EXPORTS_FOLDER).iterdir())) == 1
    cosines = (polyembed.encode(int8, TRAINING_TEXTS[:8], normalize=True) * torch_rows).sum(axis=1)
    assert cosines.min() > 0.95


def test_a_backend_the_model_cannot_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolyembedError, match="backend 'tensorrt': expected one of auto, torch, onnx, onnx-int8"):
        load_with_backend("minilm-en", "tensorrt")


def test_a_config_change_makes_a_new_export(tmp_path: Path) -> None:
    """The cache key covers the model's config files, not only its weights: a changed maximum length must not
    be served from the old export."""
    import json

    folder = tiny_sentence_transformer(tmp_path / "tiny", seed=0)
    first = load_with_backend(str(folder), "onnx")
    config = folder / "sentence_bert_config.json"
    settings = json.loads(config.read_text())
    settings["max_seq_length"] = 16
    config.write_text(json.dumps(settings))
    second = load_with_backend(str(folder), "onnx")
    assert first.path != second.path and second.max_seq_length == 16
    assert len(list((tmp_path / "cache" / EXPORTS_FOLDER).iterdir())) == 2


def test_a_damaged_cached_export_is_made_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The cache's own export whose graph changed on disk (or whose record went missing) is exported again,
    not served and not left as an error the user cannot fix."""
    from polyembed.outputs import MANIFEST_FILE

    folder = str(tiny_sentence_transformer(tmp_path / "tiny", seed=0))
    reference = polyembed.encode(load_with_backend(folder, "onnx"), TRAINING_TEXTS[:8], normalize=True)
    (export,) = list((tmp_path / "cache" / EXPORTS_FOLDER).iterdir())
    graph = bytearray((export / FP32_FILE).read_bytes())
    graph[len(graph) // 2 : len(graph) // 2 + 4096] = bytes(4096)
    (export / FP32_FILE).write_bytes(bytes(graph))
    again = load_with_backend(folder, "onnx")
    assert "checksum mismatch" in caplog.text and "made again" in caplog.text
    np.testing.assert_allclose(polyembed.encode(again, TRAINING_TEXTS[:8], normalize=True), reference, atol=1e-5)
    (export / MANIFEST_FILE).write_text("{}")  # the record emptied: made again as well
    assert load_with_backend(folder, "onnx-int8").graph_file == INT8_FILE
    assert (export / MANIFEST_FILE).stat().st_size > 2
