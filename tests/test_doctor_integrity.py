"""`polyembed doctor` and the other commands when the cache is unusable: the report still comes, with the cache
flagged as a problem; every other command stops with one line naming POLYEMBED_CACHE."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyembed.cli import app

runner = CliRunner()


@pytest.fixture
def cache_is_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache-file"
    path.write_text("not a folder")
    monkeypatch.setenv("POLYEMBED_CACHE", str(path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return path


def test_doctor_reports_a_cache_that_is_a_file_as_a_problem(cache_is_a_file: Path) -> None:
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("polyembed ")  # the whole report, not only an error
    assert f"cache                  {cache_is_a_file} (not usable: see the problem below)" in lines
    assert "model minilm-en        prepared" in lines
    assert f"problem: cache folder {cache_is_a_file} (POLYEMBED_CACHE={cache_is_a_file}): cannot use it (it is a " \
           "file, not a folder); point POLYEMBED_CACHE at a folder" in result.output


def test_doctor_reports_a_cache_below_a_file(cache_is_a_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYEMBED_CACHE", str(cache_is_a_file / "below"))
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1 and f"({cache_is_a_file} is a file)" in result.output


@pytest.mark.parametrize("command", [["models", "prepare", "me5-small"], ["encode", "{tmp}/in.txt", "-o",
                                                                          "{tmp}/out.npy", "-m", "me5-small"]])
def test_other_commands_give_one_error_line_naming_polyembed_cache(cache_is_a_file: Path, tmp_path: Path,
                                                                   command: list[str]) -> None:
    (tmp_path / "in.txt").write_text("hello\n")
    result = runner.invoke(app, [part.format(tmp=tmp_path) for part in command])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(f"error: cache folder {cache_is_a_file} (POLYEMBED_CACHE=")
    assert not (tmp_path / "out.npy").exists()
