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


def test_the_export_has_a_card_with_its_files_and_what_the_graph_leaves_out(exported) -> None:
    source, folder = exported
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nlibrary_name: onnx") and f"ONNX export of {source}" in card
    assert f"| `{FP32_FILE}` |" in card and f"| `{INT8_FILE}` |" in card
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
    assert manifest["produced_by"] == {"model": str(source), "quantize": True, "optimize": False}
    assert {FP32_FILE, INT8_FILE, CONFIG_FILE} <= set(manifest["checksums"]) == set(manifest["files"])
    (out / "mynotes.txt").write_text("keep me")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = out / f"{STAGING_PREFIX}{dead.pid}-k1ll3d"  # what `kill -9` during an export leaves
    stale.mkdir()
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
