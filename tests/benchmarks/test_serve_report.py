"""The serving renderer on stored results (tests/benchmarks/fixtures/serve: the run of 2026-11-26 trimmed to
minilm-en int8, me5-small torch and Infinity's me5-small torch, and two rows of `serve.py calls`): sustainable
rates, overload statuses, the open-loop table over every server's own rates ('-' where a rate was not offered),
the batch-cutting table, byte-stable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import docs_kept_without, rendered_twice, stored_report


def test_the_tables_render_from_stored_results_and_again_byte_for_byte(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report("serve", "serve", "# Benchmarks\n\n<!-- serve-load:start -->\n"
                                    "<!-- serve-load:end -->\n\n## After\n", tmp_path / "benchmarks.md", tmp_path,
                                    monkeypatch)
    first = rendered_twice(module, docs)
    assert first.startswith("# Benchmarks\n\n<!-- serve-load:start -->\n## Serving under load")
    assert first.endswith("<!-- serve-load:end -->\n\n## After\n")  # what follows the section stays
    assert "| polyembed | me5-small | torch | 1 | 35.0 | 35.0 | 74.1 | 200: 1329, 429: 71 | 89.7 |" in first
    assert "| infinity | me5-small | torch | 1 | 35.0 | 35.0 | - | 200: 1400 | 89.0 |" in first  # no raw ceiling
    assert "| polyembed | minilm-en | onnx-int8 | 16 | 25.0 | 400.0 | 501.2 | 200: 759, 429: 241 | 635.5 |" in first
    assert "gets the model's default prompt in the text" in first  # every entry stored the prompt it sent
    assert "| 25/s | 35/s | 50/s | 70/s | 100/s | 140/s | 200/s | 280/s | 400/s |" in first
    assert "| polyembed | minilm-en | onnx-int8 | 1 | - | - | 50.0/s, p50 " in first  # minilm-en ran from 50/s
    assert "'-': not offered to that server" in first
    assert "`polyembed_queue_wait_seconds`" in first  # the metric names scraped during the load
    # batches cut by length at each --call-overhead-tokens, calls per batch in brackets; the last never cuts
    assert "| model | backend | sentences / batch | 0 | 8 | 16 | 32 | 64 | 128 | 256 | never cut |" in first
    assert "| me5-small | torch | 64 | 35.8 (64.0) | 70.5 (8.0) |" in first and "| 53.8 (1.0) |" in first


def test_without_stored_results_the_docs_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "# Benchmarks\n\n<!-- serve-load:start -->\nkept\n<!-- serve-load:end -->\n"
    docs_kept_without("serve", "serve", text, "serve.json", tmp_path, monkeypatch)
