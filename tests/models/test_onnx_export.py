"""ONNX export: the fp32 graph embeds as the source model, int8 stays close, load_model runs both (and their
OpenVINO IR), sentence-transformers' layout, exports of the old layout, errors."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import polyembed
from polyembed.errors import PolyembedError
from polyembed.models.onnx_export import (
    CONFIG_FILE,
    FP32_FILE,
    INT8_FILE,
    OPENVINO_FP32_FILE,
    OPENVINO_INT8_FILE,
    OnnxEncoder,
    cpu_threads,
    export_onnx,
    float32_projections,
    wide_layers,
)
from tests.helpers import TRAINING_TEXTS, tiny_sentence_transformer


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx")
    source = tiny_sentence_transformer(root / "tiny", seed=0)
    return source, export_onnx(str(source), root / "export")


def test_the_export_embeds_as_the_source_model(exported) -> None:
    source, folder = exported
    reference = polyembed.encode(str(source), TRAINING_TEXTS)
    fp32 = polyembed.load_model(str(folder / FP32_FILE))
    assert isinstance(fp32, OnnxEncoder)
    assert np.allclose(polyembed.encode(fp32, TRAINING_TEXTS), reference, atol=1e-5)
    int8 = polyembed.load_model(str(folder))  # the folder gives the int8 graph
    assert int8.name == str(folder) and int8.session is not None
    cosines = (polyembed.encode(int8, TRAINING_TEXTS) * reference).sum(axis=1)
    assert cosines.min() > 0.95  # quantised weights move each embedding only a little


def test_the_export_has_sentence_transformers_layout_without_torch_weights(exported) -> None:
    """What sentence-transformers' onnx backend reads (modules, configs, tokenizer, onnx/model*.onnx); the graphs
    stand in for the weights, which stay with the source model."""
    import json

    _, folder = exported
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert {FP32_FILE, INT8_FILE, CONFIG_FILE, "modules.json", "config.json", "tokenizer_config.json",
            "config_sentence_transformers.json"} <= files
    assert not {"model.safetensors", "pytorch_model.bin"} & files and not any(f.startswith("openvino/") for f in files)
    modules = json.loads((folder / "modules.json").read_text())
    assert [module["path"] for module in modules][:2] == ["", "1_Pooling"]


@pytest.fixture(scope="module")
def with_ir(exported, tmp_path_factory):
    source, _ = exported
    return export_onnx(str(source), tmp_path_factory.mktemp("ir") / "export", openvino=True)  # of the fused graph


def test_openvino_ir_embeds_as_the_onnx_graphs(exported, with_ir) -> None:
    """`openvino=True`: IR of both graphs under openvino/; load_model of an .xml runs it on OpenVINO, the fp32 IR
    as the source model, the int8 IR as the int8 ONNX graph does on onnxruntime."""
    (source, folder), out = exported, with_ir
    assert (out / OPENVINO_FP32_FILE).is_file() and (out / OPENVINO_FP32_FILE).with_suffix(".bin").is_file()
    reference = polyembed.encode(str(source), TRAINING_TEXTS)
    fp32 = polyembed.load_model(str(out / OPENVINO_FP32_FILE))
    assert isinstance(fp32, OnnxEncoder) and fp32.runtime == "openvino" and fp32.graph_file == OPENVINO_FP32_FILE
    assert np.allclose(polyembed.encode(fp32, TRAINING_TEXTS), reference, atol=1e-5)
    int8 = polyembed.load_model(str(out / OPENVINO_INT8_FILE))
    int8_ort = polyembed.encode(polyembed.load_model(str(out)), TRAINING_TEXTS)
    assert (polyembed.encode(int8, TRAINING_TEXTS) * int8_ort).sum(axis=1).min() > 0.999
    from polyembed.models.backends import load_with_backend

    assert load_with_backend(str(out), "openvino-int8").graph_file == OPENVINO_INT8_FILE  # the IR, not the ONNX
    assert load_with_backend(str(folder), "openvino").graph_file == FP32_FILE  # no IR: OpenVINO reads the ONNX
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f"| `{OPENVINO_INT8_FILE}` |" in card and 'backend="openvino"' in card


ST_BACKENDS_PYTHON = os.environ.get("POLYEMBED_ST_BACKENDS_PYTHON")
"""A Python with sentence-transformers and optimum-intel but no polyembed: optimum-intel needs transformers < 5.6,
polyembed's lock has a newer one, so that environment is separate (docs/benchmarks.md, "Scale")."""
ST_SCRIPT = """
import sys
import numpy as np
from sentence_transformers import SentenceTransformer
folder, out, texts = sys.argv[1], sys.argv[2], sys.argv[3:]
for file_name in ("openvino_model.xml", "openvino_model_qint8.xml"):
    model = SentenceTransformer(folder, backend="openvino", model_kwargs={
        "file_name": file_name, "ov_config": {"INFERENCE_PRECISION_HINT": "f32"}})  # else bf16 where the CPU has it
    np.save(f"{out}/{file_name}.npy", model.encode(texts))
assert "polyembed" not in sys.modules
"""


@pytest.mark.skipif(not ST_BACKENDS_PYTHON, reason="`make test-st-backends` runs it (a venv with "
                    "sentence-transformers and optimum-intel, which needs transformers < 5.6)")
def test_plain_sentence_transformers_runs_the_openvino_export(with_ir, tmp_path) -> None:
    """sentence-transformers' own openvino backend, in a process without polyembed, embeds as load_model does:
    the fp32 IR and the int8 one, each against its own polyembed loading (max abs difference <= 1e-5)."""
    import subprocess

    subprocess.run([ST_BACKENDS_PYTHON, "-c", ST_SCRIPT, str(with_ir), str(tmp_path), *TRAINING_TEXTS], check=True,
                   env={**os.environ, "HF_HUB_OFFLINE": "1"})
    for graph in (OPENVINO_FP32_FILE, OPENVINO_INT8_FILE):
        ours = polyembed.load_model(str(with_ir / graph)).encode(TRAINING_TEXTS)  # as the model gives them
        theirs = np.load(tmp_path / f"{Path(graph).name}.npy")
        assert np.abs(theirs - ours).max() <= 1e-5, graph


def test_an_export_of_the_old_layout_still_loads(exported, tmp_path) -> None:
    """Exports before 2026-11-26 kept model.onnx and model.int8.onnx at the top of the folder."""
    import shutil

    from polyembed.models.backends import load_with_backend

    _, folder = exported
    old = tmp_path / "old"
    shutil.copytree(folder, old)
    (old / FP32_FILE).rename(old / "model.onnx")
    (old / INT8_FILE).rename(old / "model.int8.onnx")
    new_fp32 = polyembed.encode(polyembed.load_model(str(folder / FP32_FILE)), TRAINING_TEXTS)
    new_int8 = polyembed.encode(polyembed.load_model(str(folder)), TRAINING_TEXTS)
    int8 = polyembed.load_model(str(old))
    assert int8.graph_file == "model.int8.onnx"
    assert np.allclose(polyembed.encode(int8, TRAINING_TEXTS), new_int8, atol=1e-6)
    assert np.allclose(polyembed.encode(polyembed.load_model(str(old / "model.onnx")), TRAINING_TEXTS), new_fp32,
                       atol=1e-6)
    assert load_with_backend(str(old), "onnx").graph_file == "model.onnx"


def test_e5_prompt_and_pooling_settings_are_carried(exported) -> None:
    _, folder = exported
    encoder = OnnxEncoder(folder)
    assert encoder.settings.pooling == "mean" and encoder.settings.prompt == "" and encoder.dimension == 32


def test_onnxruntime_threads_follow_the_process_cpu_set_or_omp_num_threads(exported, monkeypatch) -> None:
    """onnxruntime's own default is a thread per physical core, each pinned to its core even outside the
    process's CPU set (a server given one core also ran on the other); polyembed asks for what the process has."""
    _, folder = exported
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert OnnxEncoder(folder).session.get_session_options().intra_op_num_threads == 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    expected = len(os.sched_getaffinity(0))
    assert cpu_threads() == expected
    assert OnnxEncoder(folder).session.get_session_options().intra_op_num_threads == expected
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")  # as torch does, an unusable value is ignored
    assert cpu_threads() == expected


def test_the_layers_kept_float32_are_those_with_wide_inputs() -> None:
    assert wide_layers([33.5, 14.0, 12.1, 6.9, 61.0, 31.8, 1.0]) == [0, 4, 5]  # half the widest or more
    assert wide_layers([2.0, 2.0, 2.0]) == [0, 1, 2]  # no outlier layer: every one stays float32, as before
    assert wide_layers([0.0, 5.0]) == [1] and wide_layers([]) == []


def test_the_int8_graph_keeps_float32_only_the_wide_feed_forward_outputs(tmp_path) -> None:
    """A layer whose feed-forward activations are ten times wider keeps its output projection float32; the
    other layer's becomes an integer product, and the card names the layer kept."""
    import onnx
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    source = tiny_sentence_transformer(tmp_path / "tiny", seed=0)
    model = SentenceTransformer(str(source), device="cpu")
    with torch.no_grad():
        dense = model[0].auto_model.encoder.layer[1].intermediate.dense
        dense.weight.mul_(10.0)
        dense.bias.mul_(10.0)
    model.save(str(source))
    folder = export_onnx(str(source), tmp_path / "export", optimize=False)
    kept = float32_projections(folder / FP32_FILE, AutoTokenizer.from_pretrained(str(folder)))
    assert [name.split("/layer.")[-1].split("/")[0] for name in kept] == ["1"]
    int8 = onnx.load(str(folder / INT8_FILE)).graph.node
    projections = [n for n in int8 if "/output/dense/" in n.name and "/attention/" not in n.name
                   and n.op_type in ("MatMul", "MatMulInteger")]
    assert {n.name for n in projections if n.op_type == "MatMul"} == set(kept)
    assert any(n.op_type == "MatMulInteger" and "layer.0/" in n.name for n in projections)
    assert "input is widest (layers 1)" in (folder / "README.md").read_text(encoding="utf-8")
    reference = polyembed.encode(str(source), TRAINING_TEXTS)
    assert (polyembed.encode(polyembed.load_model(str(folder)), TRAINING_TEXTS) * reference).sum(axis=1).min() > 0.95
    every = export_onnx(str(source), tmp_path / "every", optimize=False, float32_share=0.0)  # as before 2026-11-28
    assert "input is widest (layers 0, 1)" in (every / "README.md").read_text(encoding="utf-8")
    assert not any(n.op_type == "MatMulInteger" and "/output/dense/" in n.name and "/attention/" not in n.name
                   for n in onnx.load(str(every / INT8_FILE)).graph.node)


def test_the_export_has_a_card_with_its_files_and_what_the_graph_leaves_out(exported) -> None:
    source, folder = exported
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nlibrary_name: onnx") and f"ONNX export of {source}" in card
    assert f"| `{FP32_FILE}` |" in card and f"| `{INT8_FILE}` |" in card
    assert 'SentenceTransformer(' in card and 'backend="onnx"' in card
    assert "mean pooling" in card and "32 dimensions" in card and f'polyembed.load_model("{folder}")' in card


def test_an_export_never_replaces_other_files(exported, tmp_path) -> None:
    source, folder = exported
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(PolyembedError, match="a folder of other files"):
        export_onnx(str(source), tmp_path / "mine")
    with pytest.raises(PolyembedError, match=r"^out_dir .*: an earlier export is there \(add overwrite to replace"):
        export_onnx(str(source), folder)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"


def test_a_broken_export_is_a_clear_error(exported, tmp_path) -> None:
    _, folder = exported
    (tmp_path / CONFIG_FILE).write_text("{not json")
    with pytest.raises(PolyembedError, match="not a polyembed ONNX export"):
        OnnxEncoder(tmp_path)
    with pytest.raises(PolyembedError, match="missing"):
        OnnxEncoder(folder, "model.fp16.onnx")


# ---- integrity (issue 32): only the export's own files, no leftovers, checked on load


def test_overwrite_replaces_only_the_exports_own_files(exported, tmp_path) -> None:
    """Row 8: `export --overwrite` into an export with the user's notes: the notes stay, the export is new,
    and a killed export's staging folder (row 14) is removed."""
    import json
    import subprocess
    import sys

    from typer.testing import CliRunner

    from polyembed.cli import app
    from polyembed.outputs import MANIFEST_FILE, STAGING_PREFIX

    source, _ = exported
    out = tmp_path / "export"
    first = CliRunner().invoke(app, ["export", "-m", str(source), "-o", str(out), "--no-optimize"])
    assert first.exit_code == 0, first.output
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["produced_by"] == {"model": str(source), "quantize": True, "optimize": False, "openvino": False}
    assert {FP32_FILE, INT8_FILE, CONFIG_FILE} <= set(manifest["checksums"]) == set(manifest["files"])
    (out / "mynotes.txt").write_text("keep me")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = out / f"{STAGING_PREFIX}{dead.pid}-k1ll3d"  # what `kill -9` during an export leaves
    (stale / FP32_FILE).parent.mkdir(parents=True)
    (stale / FP32_FILE).write_bytes(b"\0" * 1_000_000)
    again = CliRunner().invoke(app, ["export", "-m", str(source), "-o", str(out), "--no-quantize", "--overwrite"])
    assert again.exit_code == 0, again.output
    assert (out / "mynotes.txt").read_text() == "keep me"
    assert not stale.exists() and not list(out.glob(f"{STAGING_PREFIX}*"))
    assert not (out / INT8_FILE).exists()  # the earlier export's file this one does not write
    assert np.allclose(polyembed.encode(polyembed.load_model(str(out)), TRAINING_TEXTS),
                       polyembed.encode(str(source), TRAINING_TEXTS), atol=1e-5)


def test_a_killed_first_export_does_not_block_the_next(exported, tmp_path) -> None:
    """Row 14: only a dead run's staging folder in --output: it is removed, not taken for a user's file."""
    import subprocess
    import sys

    from polyembed.outputs import STAGING_PREFIX

    source, _ = exported
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / "export" / f"{STAGING_PREFIX}{dead.pid}-abc"
    stale.mkdir(parents=True)
    (stale / "tokenizer.json").write_text("{}")
    export_onnx(str(source), tmp_path / "export", quantize=False, optimize=False)
    assert not stale.exists() and (tmp_path / "export" / FP32_FILE).is_file()


def test_an_export_of_an_export_is_refused(exported) -> None:
    """Row 13: a clear error, not an AttributeError from deep inside the exporter."""
    _, folder = exported
    with pytest.raises(PolyembedError, match="already an ONNX export"):
        export_onnx(str(folder), folder.parent / "again")
    with pytest.raises(PolyembedError, match="already an ONNX export"):
        export_onnx(OnnxEncoder(folder), folder.parent / "again")
    assert not (folder.parent / "again").exists()


def test_a_changed_export_file_is_refused_on_load(exported, tmp_path) -> None:
    import shutil

    _, folder = exported
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    OnnxEncoder(copy)  # intact: loads
    graph = bytearray((copy / INT8_FILE).read_bytes())
    graph[-1] ^= 0xFF
    (copy / INT8_FILE).write_bytes(bytes(graph))
    with pytest.raises(PolyembedError, match=rf"{INT8_FILE}: checksum mismatch"):
        OnnxEncoder(copy)
    OnnxEncoder(copy, FP32_FILE)  # the other graph is untouched
    (copy / "tokenizer_config.json").write_text("{}")
    with pytest.raises(PolyembedError, match="tokenizer_config.json: checksum mismatch"):
        OnnxEncoder(copy, FP32_FILE)


# ---- a missing or incomplete checksum record is an error, not a skipped check


def _visible_copy(folder: Path, copy: Path) -> Path:
    """What `cp -r folder/* copy/` makes: every file but the hidden ones (the manifest among them)."""
    import shutil

    shutil.copytree(folder, copy, ignore=lambda _, names: [n for n in names if n.startswith(".")])
    return copy


def test_an_export_copied_without_its_hidden_record_is_refused(exported, tmp_path) -> None:
    """The probe: `cp -r exp/* exp2/` and a zeroed stretch of the graph loaded with exit 0 and wrong vectors,
    because no manifest meant no check. Now no manifest is an error naming the folder and the fix."""
    from polyembed.models.backends import load_with_backend
    from polyembed.models.onnx_export import ExportIntegrityError
    from polyembed.outputs import MANIFEST_FILE

    _, folder = exported
    copy = _visible_copy(folder, tmp_path / "copy")
    assert not (copy / MANIFEST_FILE).exists()
    graph = bytearray((copy / INT8_FILE).read_bytes())
    graph[len(graph) // 2 : len(graph) // 2 + 4096] = bytes(4096)
    (copy / INT8_FILE).write_bytes(bytes(graph))
    message = rf"^{copy}: no checksum record \({MANIFEST_FILE}, a hidden file\).*cp -r {copy} NEW.*export it again"
    with pytest.raises(ExportIntegrityError, match=message):
        polyembed.load_model(str(copy))
    with pytest.raises(ExportIntegrityError, match=message):
        load_with_backend(str(copy), "onnx")  # the fp32 graph is intact, and still no record: refused
    (copy / MANIFEST_FILE).write_text('{"files": ["onnx/model.onnx"]}')  # a manifest of a report: no checksums
    with pytest.raises(ExportIntegrityError, match="no checksum record"):
        OnnxEncoder(copy, FP32_FILE)


def test_a_graph_or_tokenizer_file_the_record_does_not_list_is_refused(exported, tmp_path) -> None:
    """A file the loader would read that the record does not list: a graph planted under the old layout's name
    (checked against the bytes recorded for the new one) or a tokenizer file placed beside the export's own."""
    import shutil

    from polyembed.models.onnx_export import ExportIntegrityError

    _, folder = exported
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / INT8_FILE).rename(copy / "model.int8.onnx")  # the old layout's name: the same bytes load
    assert OnnxEncoder(copy).graph_file == "model.int8.onnx"
    (copy / "model.int8.onnx").write_bytes(b"\0" * 1024)
    with pytest.raises(ExportIntegrityError, match=r"model.int8.onnx: checksum mismatch.*export .* again"):
        OnnxEncoder(copy)
    (copy / "added_tokens.json").write_text('{"hello": 5}')
    with pytest.raises(ExportIntegrityError, match=r"added_tokens.json: not listed in the export's checksum record"):
        OnnxEncoder(copy, FP32_FILE)
    (copy / "added_tokens.json").unlink()
    (copy / "notes.txt").write_text("a user's own notes")  # not read by the loader: allowed
    OnnxEncoder(copy, FP32_FILE)


def _with_dense(source: Path, folder: Path, activation) -> Path:
    """The tiny model with a Dense projection (16 dimensions) and Normalize after its pooling, as a distilled
    student's map into its teacher's space."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Dense
    from sentence_transformers.sentence_transformer.modules import Normalize

    model = SentenceTransformer(str(source), device="cpu")
    model.append(Dense(32, 16, activation_function=activation))
    model.append(Normalize())
    model.save(str(folder))
    return folder


@pytest.mark.parametrize("activation", ["identity", "tanh"])
def test_a_model_ending_in_a_dense_projection_exports_and_embeds_as_the_source(exported, tmp_path,
                                                                               activation) -> None:
    import torch

    source = _with_dense(exported[0], tmp_path / "dense", torch.nn.Tanh() if activation == "tanh" else None)
    folder = export_onnx(str(source), tmp_path / "export", quantize=False)
    encoder = polyembed.load_model(str(folder))
    assert isinstance(encoder, OnnxEncoder) and encoder.dimension == 16
    reference = polyembed.encode(str(source), TRAINING_TEXTS)
    assert reference.shape[1] == 16
    assert np.allclose(polyembed.encode(encoder, TRAINING_TEXTS), reference, atol=1e-5)


def test_a_dense_activation_the_encoder_cannot_apply_is_refused(exported, tmp_path) -> None:
    import torch

    source = _with_dense(exported[0], tmp_path / "dense", torch.nn.ReLU())
    with pytest.raises(PolyembedError, match=r"Dense module with activation torch\.nn\.modules\.activation\.ReLU"):
        export_onnx(str(source), tmp_path / "export", quantize=False)
    assert not (tmp_path / "export").exists() or not any((tmp_path / "export").iterdir())
