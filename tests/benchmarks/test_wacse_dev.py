"""The WACSE dev-choice table: means over seeds and the change against the defaults."""

from __future__ import annotations

import importlib

import pytest

from tests.benchmarks.helpers import BENCHMARKS


def test_each_choice_is_compared_with_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    wacse = importlib.import_module("wacse")
    sts = {f"en-{c}": 60.0 for c in wacse.DEV_STS_LANGUAGES} | {c: 70.0 for c in wacse.DEV_STS_LANGUAGES}
    better = {key: value + 2 for key, value in sts.items()}
    saved = {"steps": 300, "batch_size": 32, "machine": "x86_64, 2 cores", "runs": {
        "me5-small": {"sts": sts},
        "defaults/seed-0": {"best": {"eval_dev_mean_accuracy": 0.80}, "sts": sts},
        "defaults/seed-1": {"best": {"eval_dev_mean_accuracy": 0.82}, "sts": sts},
        "cls-pooling/seed-0": {"best": {"eval_dev_mean_accuracy": 0.78}, "sts": better},
        "cls-pooling/seed-1": {"steps": 100, "best": {"eval_dev_mean_accuracy": 0.5}, "sts": sts},  # other budget
    }}
    table = "\n".join(wacse.dev_table(saved))
    assert "| me5-small (untrained) | - | - | - | 60.00 | 70.00 |" in table
    assert "| defaults | the defaults | 2 | 81.00 | 60.00 | 70.00 |" in table
    assert "| cls-pooling | pooling=cls | 1 | 78.00 (-3.00) | 62.00 (+2.00) | 72.00 (+2.00) |" in table
    assert "wtr-scale-20" not in table  # not run: no row


def test_the_dev_table_renders_into_its_docs_section(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    wacse = importlib.import_module("wacse")
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n<!-- wacse-dev:start -->\n<!-- wacse-dev:end -->\n\nNotes\n", encoding="utf-8")
    monkeypatch.setattr(wacse, "OUT", tmp_path)
    monkeypatch.setattr(wacse, "DOCS", docs)
    sts = {f"en-{c}": 60.0 for c in wacse.DEV_STS_LANGUAGES} | {c: 70.0 for c in wacse.DEV_STS_LANGUAGES}
    (tmp_path / "dev.json").write_text(json.dumps({"steps": 100, "batch_size": 32, "machine": "x86_64, 2 cores",
                                                   "runs": {"me5-small": {"sts": sts}, "defaults/seed-0": {
                                                       "best": {"eval_dev_mean_accuracy": 0.8}, "sts": sts}}}),
                                       encoding="utf-8")
    wacse.render_dev()
    first = docs.read_text(encoding="utf-8")
    assert "### WACSE dev choices (issue 35)" in first and "| defaults | the defaults | 1 | 80.00 |" in first
    assert first.endswith("<!-- wacse-dev:end -->\n\nNotes\n")
    wacse.render_dev()
    assert docs.read_text(encoding="utf-8") == first
