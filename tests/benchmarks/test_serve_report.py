"""The serving renderer on stored results (tests/benchmarks/fixtures/serve: the run of 2026-11-26 trimmed to
me5-small's torch and int8 rows and Infinity's torch row): sustainable rates, overload statuses, the open-loop
table per offered rate, the servers that did not start, byte-stable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import stored_report


def test_the_tables_render_from_stored_results_and_again_byte_for_byte(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report("serve", "serve", "# Benchmarks\n\n<!-- serve-load:start -->\n"
                                    "<!-- serve-load:end -->\n\n## After\n", tmp_path / "benchmarks.md", tmp_path,
                                    monkeypatch)
    module.render()
    first = docs.read_text(encoding="utf-8")
    assert first.startswith("# Benchmarks\n\n<!-- serve-load:start -->\n## Serving under load")
    assert first.endswith("<!-- serve-load:end -->\n\n## After\n")  # what follows the section stays
    assert "| polyembed | me5-small | torch | 1 | 50.0 | 50.0 | 72.9 | 200: 2000 | 67.3 |" in first
    assert "| infinity | me5-small | torch | 1 | 100.0 | 100.0 | - | 200: 4000 |" in first  # no raw ceiling
    assert "| polyembed | me5-small | onnx-int8 | 16 | 12.5 | 200.0 | 224.0 | 200: 479, 429: 21 |" in first
    assert "| 50/s | 100/s | 200/s | 400/s | 800/s |" in first
    assert "Not measured: infinity me5-small optimum, which did not start" in first
    assert "`polyembed_queue_wait_seconds`" in first  # the metric names scraped during the load
    module.render()
    assert docs.read_text(encoding="utf-8") == first


def test_without_stored_results_the_docs_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "# Benchmarks\n\n<!-- serve-load:start -->\nkept\n<!-- serve-load:end -->\n"
    module, docs, results = stored_report("serve", "serve", text, tmp_path / "benchmarks.md", tmp_path, monkeypatch)
    (results / "serve.json").unlink()
    module.render()
    assert docs.read_text(encoding="utf-8") == text
