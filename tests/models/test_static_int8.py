"""Static int8 export (`export --static-int8`): the onnxruntime QDQ graph and the OpenVINO NNCF graph are int8
for real (quantised activations, int8 weights), embed close to the float32 graph, load through `load_model`, are
in the card and the checksum record; calibration sentences from a file or the data root; errors."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import polyembed
from polyembed.data.calibration import calibration_file_sentences, calibration_sentences, spread
from polyembed.errors import DataError, PolyembedError
from polyembed.models.export_files import (
    FP32_FILE,
    OPENVINO_FP32_FILE,
    OPENVINO_STATIC_INT8_FILE,
    STATIC_INT8_FILE,
    ExportIntegrityError,
)
from polyembed.models.onnx_export import OnnxEncoder, export_onnx
from polyembed.outputs import MANIFEST_FILE
from tests.helpers import TRAINING_TEXTS, tiny_sentence_transformer

CALIBRATION = TRAINING_TEXTS[:8]
"""Calibrated on these; the embeddings are compared on every training text (the rest were not seen)."""


@pytest.fixture(scope="module")
def static_export(tmp_path_factory):
    root = tmp_path_factory.mktemp("static")
    source = tiny_sentence_transformer(root / "tiny", seed=0)
    calibration = root / "calibration.txt"
    calibration.write_text("".join(f"{line}\n" for line in CALIBRATION), encoding="utf-8")
    folder = export_onnx(str(source), root / "export", openvino=True, static_int8=True, calibration_file=calibration)
    return source, folder


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


def test_both_static_graphs_load_and_embed_close_to_float32(static_export) -> None:
    """load_model runs the QDQ graph on onnxruntime and the NNCF IR on OpenVINO; each row stays close to the
    float32 graph's (the tiny random model's activations are narrow, so int8 costs it little), yet differs: the
    graph was quantised."""
    _, folder = static_export
    reference = polyembed.encode(polyembed.load_model(str(folder / FP32_FILE)), TRAINING_TEXTS)
    for graph, runtime in ((STATIC_INT8_FILE, "onnxruntime"), (OPENVINO_STATIC_INT8_FILE, "openvino")):
        encoder = polyembed.load_model(str(folder / graph))
        assert isinstance(encoder, OnnxEncoder) and encoder.runtime == runtime and encoder.graph_file == graph
        vectors = polyembed.encode(encoder, TRAINING_TEXTS)
        assert _cosines(vectors, reference).min() > 0.99, graph
        assert np.abs(vectors - reference).max() > 1e-6, f"{graph}: identical to float32, not quantised"
    from polyembed.models.backends import load_with_backend

    served = load_with_backend(str(folder / OPENVINO_STATIC_INT8_FILE))  # `serve -m FOLDER/openvino/...xml`
    assert served.graph_file == OPENVINO_STATIC_INT8_FILE and served.runtime == "openvino"


def test_a_static_graph_gives_a_sentence_the_same_vector_alone_and_in_a_batch(static_export) -> None:
    """Its activation ranges are constants, so a sentence's vector does not depend on what it is batched with
    (the dynamic graph's ranges are the batch's: its vectors move a little, docs/guide/export.md)."""
    _, folder = static_export
    texts = [*TRAINING_TEXTS, "a much longer sentence than the others, " * 6]
    for graph in (STATIC_INT8_FILE, OPENVINO_STATIC_INT8_FILE):
        encoder = polyembed.load_model(str(folder / graph))
        together = encoder.encode(texts, batch_size=64)
        alone = np.stack([encoder.encode([text])[0] for text in texts])
        assert np.abs(together - alone).max() <= 1e-6, graph


def test_the_onnx_static_graph_quantises_the_activations_of_its_matmuls(static_export) -> None:
    """Every MatMul but the float32 feed-forward output projections reads int8 activations (QuantizeLinear ->
    DequantizeLinear before it), not only int8 weights: what lets onnxruntime run int8 kernels. The fused
    operators' outputs (SkipLayerNormalization, BiasGelu) feed most of them; without their types declared the
    quantiser would skip those."""
    import onnx

    _, folder = static_export
    graph = onnx.load(str(folder / STATIC_INT8_FILE)).graph
    producer = {output: node for node in graph.node for output in node.output}
    matmuls = [node for node in graph.node if node.op_type == "MatMul"]
    float32 = [node.name for node in matmuls if node.input[0] not in producer
               or producer[node.input[0]].op_type != "DequantizeLinear"]
    assert float32 and all("/output/dense/" in name and "/attention/" not in name for name in float32), float32
    assert len(matmuls) - len(float32) >= 12  # q, k, v, attention output, intermediate, per layer, and the scores


def test_the_openvino_static_graph_has_int8_weights_and_quantised_activations(static_export) -> None:
    import openvino

    _, folder = static_export
    model = openvino.Core().read_model(str(folder / OPENVINO_STATIC_INT8_FILE))
    assert sum(op.get_type_name() == "FakeQuantize" for op in model.get_ops()) >= 8  # activations
    int8_bytes = (folder / OPENVINO_STATIC_INT8_FILE).with_suffix(".bin").stat().st_size
    assert int8_bytes < 0.5 * (folder / OPENVINO_FP32_FILE).with_suffix(".bin").stat().st_size  # weights int8


def test_the_card_and_the_record_list_the_static_graphs(static_export) -> None:
    _, folder = static_export
    card = (folder / "README.md").read_text(encoding="utf-8")
    for graph in (STATIC_INT8_FILE, OPENVINO_STATIC_INT8_FILE):
        assert f"| `{graph}` |" in card and f'load_model("{folder}/{graph}")' in card
    assert "calibrated on 8 sentences of `calibration.txt`" in card
    assert '"file_name": "openvino_model_qint8_quantized.xml"' in card
    manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert {STATIC_INT8_FILE, OPENVINO_STATIC_INT8_FILE, OPENVINO_STATIC_INT8_FILE[:-4] + ".bin"} <= set(
        manifest["checksums"])
    assert manifest["produced_by"]["static_int8"] is True
    assert manifest["produced_by"]["calibration"] == "8 sentences of `calibration.txt`"


def test_the_openvino_int8_backend_runs_the_static_graph_where_the_export_has_one(static_export) -> None:
    """OpenVINO runs the static IR on its int8 kernels and the dynamic one in float: `--backend openvino-int8`
    takes the static IR when the export has it; onnx-int8 keeps the dynamic graph, the faster one there."""
    from polyembed.models.backends import load_with_backend
    from polyembed.models.export_files import INT8_FILE

    _, folder = static_export
    assert load_with_backend(str(folder), "openvino-int8").graph_file == OPENVINO_STATIC_INT8_FILE
    assert load_with_backend(str(folder), "onnx-int8").graph_file == INT8_FILE


def test_a_changed_static_graph_is_refused_and_the_others_still_load(static_export, tmp_path) -> None:
    import shutil

    _, folder = static_export
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    weights = (copy / OPENVINO_STATIC_INT8_FILE).with_suffix(".bin")
    weights.write_bytes(weights.read_bytes()[:-1] + b"\0")
    with pytest.raises(ExportIntegrityError, match="checksum mismatch"):
        polyembed.load_model(str(copy / OPENVINO_STATIC_INT8_FILE))
    polyembed.load_model(str(copy / STATIC_INT8_FILE))  # another graph's file is not this one's business


def test_the_cli_writes_the_onnx_static_graph_without_openvino(static_export, tmp_path) -> None:
    """--static-int8 alone: onnxruntime's static graph, no OpenVINO files; --calibration-size takes that many
    sentences, spread over the file."""
    from typer.testing import CliRunner

    from polyembed.cli import app

    source, _ = static_export
    calibration = tmp_path / "sentences.txt"
    calibration.write_text("".join(f"{line}\n" for line in TRAINING_TEXTS), encoding="utf-8")
    out = tmp_path / "export"
    result = CliRunner().invoke(app, ["export", "-m", str(source), "-o", str(out), "--static-int8",
                                      "--calibration-file", str(calibration), "--calibration-size", "5"])
    assert result.exit_code == 0, result.output
    assert STATIC_INT8_FILE in result.stdout and not (out / "openvino").exists()
    assert "calibrated on 5 sentences of `sentences.txt`" in (out / "README.md").read_text(encoding="utf-8")


def test_calibration_sentences_from_a_file_are_spread_and_deduplicated(tmp_path) -> None:
    path = tmp_path / "s.txt"
    path.write_text("a\nb\na\nc\nd\n", encoding="utf-8")
    assert calibration_file_sentences(path, 10) == ["a", "b", "c", "d"]
    assert calibration_file_sentences(path, 2) == ["a", "c"]
    assert spread(list("abcdefgh"), 4) == ["a", "c", "e", "g"]
    path.write_text("one\n\nthree\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"s\.txt:2: empty line"):
        calibration_file_sentences(path)
    path.write_bytes(b"")
    with pytest.raises(DataError, match="no sentences to calibrate on"):
        calibration_file_sentences(path)


def test_the_default_calibration_sentences_come_from_every_stsb_multi_mt_language(shared_data) -> None:
    """Train split (no benchmark scores it), taken in turn from each language, the same every time."""
    sentences, where = calibration_sentences(None, 44)
    assert len(sentences) == len(set(sentences)) == 44 and where == "44 sentences of stsb-multi-mt train (11 languages)"
    assert sentences == calibration_sentences(None, 44)[0]
    assert any("\u4e00" <= char <= "\u9fff" for char in "".join(sentences))  # Chinese or Japanese
    assert any("\u0400" <= char <= "\u04ff" for char in "".join(sentences))  # Russian


def test_without_a_data_root_the_default_calibration_says_to_give_a_file(no_data_root) -> None:
    with pytest.raises(PolyembedError, match="give your own: calibration_file"):
        calibration_sentences(None, 10)


def test_calibration_options_without_static_int8_are_refused(static_export, tmp_path) -> None:
    source, _ = static_export
    with pytest.raises(PolyembedError, match="calibration_file .*add static_int8"):
        export_onnx(str(source), tmp_path / "x", calibration_file=tmp_path / "c.txt")
    with pytest.raises(PolyembedError, match="calibration_size 0: at least 1"):
        export_onnx(str(source), tmp_path / "x", static_int8=True, calibration_size=0)
    assert not (tmp_path / "x").exists()


ST_BACKENDS_PYTHON = os.environ.get("POLYEMBED_ST_BACKENDS_PYTHON")
"""As in test_onnx_export: a Python with sentence-transformers and optimum-intel but no polyembed."""
ST_SCRIPT = """
import sys
import numpy as np
from sentence_transformers import SentenceTransformer
folder, out, texts = sys.argv[1], sys.argv[2], sys.argv[3:]
model = SentenceTransformer(folder, backend="openvino", model_kwargs={
    "file_name": "openvino_model_qint8_quantized.xml", "ov_config": {"INFERENCE_PRECISION_HINT": "f32"}})
np.save(f"{out}/static.npy", model.encode(texts))
assert "polyembed" not in sys.modules
"""


@pytest.mark.skipif(not ST_BACKENDS_PYTHON, reason="`make test-st-backends` runs it (a venv with "
                    "sentence-transformers and optimum-intel, which needs transformers < 5.6)")
def test_plain_sentence_transformers_runs_the_static_openvino_graph(static_export, tmp_path) -> None:
    """sentence-transformers' openvino backend loads the static graph by its file name (its own name for a
    static int8 graph) and embeds as load_model does."""
    import subprocess

    _, folder = static_export
    subprocess.run([ST_BACKENDS_PYTHON, "-c", ST_SCRIPT, str(folder), str(tmp_path), *TRAINING_TEXTS], check=True,
                   env={**os.environ, "HF_HUB_OFFLINE": "1"})
    ours = polyembed.load_model(str(folder / OPENVINO_STATIC_INT8_FILE)).encode(TRAINING_TEXTS)
    assert np.abs(np.load(tmp_path / "static.npy") - ours).max() <= 1e-5
