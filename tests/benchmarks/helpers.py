"""Shared setup of the renderer tests: a benchmark script imported by name, its results folder a copy of stored
fixtures and its docs file a stub with empty sections, both in tmp_path."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path
from types import ModuleType

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def stored_report(module_name: str, fixture: str, sections: str, docs: Path, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, Path, Path]:
    """(the script's module with OUT and DOCS pointed into tmp_path, the docs file, the results folder)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the scripts import their siblings by name
    module = importlib.import_module(module_name)
    results = tmp_path / "results"
    shutil.copytree(FIXTURES / fixture, results)
    docs.parent.mkdir(parents=True, exist_ok=True)
    docs.write_text(sections, encoding="utf-8")
    monkeypatch.setattr(module, "OUT", results)
    monkeypatch.setattr(module, "DOCS", docs)
    return module, docs, results
