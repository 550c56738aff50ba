"""Errors name an input as the caller wrote it: the flag on the command line, the argument in Python."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyembed.cli import app
from polyembed.errors import PolyembedError, argument, on_command_line
from polyembed.models.onnx_export import export_onnx


def test_argument_is_the_flag_on_the_command_line_and_the_python_name_otherwise() -> None:
    assert argument("--output", "out_dir") == "out_dir"
    assert argument("--output-dir") == "output_dir"
    with on_command_line():
        assert argument("--output", "out_dir") == "--output"
        assert argument("--output-dir") == "--output-dir"
    assert argument("--index") == "index"  # the context ends with the command


def test_the_same_refusal_names_the_flag_in_the_cli_and_the_argument_in_python(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep", encoding="utf-8")  # refused before any model loads
    with pytest.raises(PolyembedError, match=r"^out_dir .*mine: a folder of other files"):
        export_onnx("any-model", folder)
    result = CliRunner().invoke(app, ["export", "-m", "any-model", "--output", str(folder)])
    assert result.exit_code != 0
    assert "--output" in result.output and "a folder of other files" in result.output
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "keep"
