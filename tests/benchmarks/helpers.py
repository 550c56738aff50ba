"""Shared setup of the renderer tests: a benchmark module imported by its dotted name (`benchmarks.alignment.render`),
its results folder a copy of stored fixtures and its docs file a stub with empty sections, both in tmp_path."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path
from types import ModuleType

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def stored_results(module_name: str, fixture: str, tmp_path: Path,
                   monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, Path]:
    """(the module with OUT pointed at a copy of the stored fixtures in tmp_path, that folder): a runner's view."""
    module = importlib.import_module(module_name)
    results = tmp_path / "results"
    shutil.copytree(FIXTURES / fixture, results)
    monkeypatch.setattr(module, "OUT", results)
    return module, results


def stored_report(module_name: str, fixture: str, sections: str, docs: Path, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, Path, Path]:
    """(the module with OUT and DOCS pointed into tmp_path, the docs file, the results folder): a renderer's
    view."""
    module, results = stored_results(module_name, fixture, tmp_path, monkeypatch)
    docs.parent.mkdir(parents=True, exist_ok=True)
    docs.write_text(sections, encoding="utf-8")
    monkeypatch.setattr(module, "DOCS", docs)
    return module, docs, results


def docs_kept_without(module_name: str, fixture: str, text: str, removed: str, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch, *also: str) -> None:
    """Render with the stored result `removed` gone and check the docs are left as `text` (a table shown there
    was measured elsewhere: results/ is not in git). `also`: dotted names of modules whose OUT the renderer reads."""
    module, docs, results = stored_report(module_name, fixture, text, tmp_path / "benchmarks.md", tmp_path,
                                          monkeypatch)
    for name in also:
        monkeypatch.setattr(f"{name}.OUT", module.OUT)
    (results / removed).unlink()
    module.render()
    assert docs.read_text(encoding="utf-8") == text


def rendered_twice(module: ModuleType, docs: Path) -> str:
    """The docs after `module.render()`, checked to come out byte for byte the same from a second render."""
    module.render()
    first = docs.read_text(encoding="utf-8")
    module.render()
    assert docs.read_text(encoding="utf-8") == first
    return first
