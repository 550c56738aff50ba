"""Model folders: saved all-or-nothing, and replaced only when they hold a model and overwrite was asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.errors import PolyembedError
from polyembed.models.saving import check_model_output_dir, is_model_dir, save_model_atomically


class _Saves:
    """A model whose save writes a modules.json, or fails halfway."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def save(self, folder: str, create_model_card: bool = False) -> None:
        (Path(folder) / "modules.json").write_text("[]")
        if self.fail:
            raise OSError("disk full")


def test_save_is_all_or_nothing_and_keeps_extra_files(tmp_path: Path) -> None:
    target = tmp_path / "model"
    save_model_atomically(_Saves(), target, {"report.json": "{}"})
    assert is_model_dir(target) and (target / "report.json").read_text() == "{}"
    with pytest.raises(OSError, match="disk full"):
        save_model_atomically(_Saves(fail=True), target, {"report.json": "new"})
    assert (target / "report.json").read_text() == "{}"  # the earlier model is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_output_folder_rules(tmp_path: Path) -> None:
    assert check_model_output_dir(tmp_path / "new", overwrite=False) == tmp_path / "new"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "n.txt").write_text("mine")
    with pytest.raises(PolyembedError, match="not empty"):
        check_model_output_dir(notes, overwrite=False)
    with pytest.raises(PolyembedError, match="holds files but no model"):
        check_model_output_dir(notes, overwrite=True)
    model = tmp_path / "model"
    save_model_atomically(_Saves(), model)
    assert check_model_output_dir(model, overwrite=True) == model
