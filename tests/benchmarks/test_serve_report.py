"""The serving renderer on stored results (tests/benchmarks/fixtures/serve: the run of 2026-11-26 trimmed to
minilm-en int8, me5-small torch and Infinity's me5-small torch, and two rows of `serve.py calls`): sustainable
rates, overload statuses, the open-loop table over every server's own rates ('-' where a rate was not offered),
the batch-cutting table, byte-stable."""

from __future__ import annotations

import json
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


def test_a_run_without_call_costs_keeps_the_batch_table_the_docs_show(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """results/ is not in git: a fresh `serve.py run` holds no `calls` results, and the docs keep that table."""
    module, docs, results = stored_report("serve", "serve", "# Benchmarks\n\n<!-- serve-load:start -->\n"
                                          "<!-- serve-load:end -->\n", tmp_path / "benchmarks.md", tmp_path,
                                          monkeypatch)
    module.render()
    table = [line for line in docs.read_text(encoding="utf-8").splitlines()
             if line.startswith(module.CALLS_OPENING) or line.startswith("| me5-small | torch | 64 |")]
    assert len(table) == 2
    stored = json.loads((results / "serve.json").read_text(encoding="utf-8"))
    del stored["call_costs"]
    (results / "serve.json").write_text(json.dumps(stored), encoding="utf-8")
    module.render()
    after = docs.read_text(encoding="utf-8")
    assert all(line in after.splitlines() for line in table)
    assert after.index(module.CALLS_OPENING) < after.index("Metrics scraped")  # in its place


def test_the_queue_limit_runs_render_one_row_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, results = stored_report("serve", "serve", "# Benchmarks\n\n<!-- serve-load:start -->\n"
                                          "<!-- serve-load:end -->\n", tmp_path / "benchmarks.md", tmp_path,
                                          monkeypatch)
    stored = json.loads((results / "serve.json").read_text(encoding="utf-8"))

    def result(sustainable: float | None, recovery: float, control: float | None = None) -> dict:
        overload = None if sustainable is None else [
            {"offered_per_s": 2 * sustainable, "statuses": {"200": 90, "429": 10}, "p99_ms": 900.0 + recovery},
            {"offered_per_s": sustainable, "statuses": {"200": 300}, "p99_ms": 200.0, "p99_last_half_ms": recovery}]
        again = None if control is None else [{"offered_per_s": sustainable, "statuses": {"200": 390, "429": 10},
                                               "p99_ms": 180.0, "p99_last_half_ms": control}]
        return {"open_loop": [], "sustainable_per_s": sustainable, "overload": overload, "control": again,
                "closed_loop": None}

    stored["queue_limits"] = {"org/model/onnx-int8": {"0.5": [result(140.0, 300.0), result(None, 0.0)],
                                                      "1 / 0.25": [result(200.0, 450.0, 410.0)]}}
    (results / "serve.json").write_text(json.dumps(stored), encoding="utf-8")
    text = rendered_twice(module, docs)
    queue = text[text.index(module.QUEUE_OPENING):]
    assert [line for line in queue.splitlines() if line.startswith("| org/model |")] == [
        "| org/model | onnx-int8 | 0.5 / 0 | 140.0 | 200: 390, 429: 10 | 1200.0 | 300.0 | - |",  # before targets
        "| org/model | onnx-int8 | 0.5 / 0 | - | - | - | - | - |",  # never sustainable: no overload phase
        "| org/model | onnx-int8 | 1 / 0.25 | 200.0 | 200: 390, 429: 10 | 1350.0 | 450.0 | 410.0 (429: 10) |"]
    del stored["queue_limits"]  # a later `run` on a checkout without them keeps the table the docs show
    (results / "serve.json").write_text(json.dumps(stored), encoding="utf-8")
    module.render()
    assert queue.split("\n\n", 2)[:2] == docs.read_text(encoding="utf-8")[text.index(module.QUEUE_OPENING):].split(
        "\n\n", 2)[:2]
