"""The aligner renderer on stored results (tests/benchmarks/fixtures/alignment: the run of 2026-11-26): one row per
gold set, '-' where an aligner did not run on a set, seconds only for aligners that ran here, byte-stable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import docs_kept_without, rendered_twice, stored_report

SECTION = "# Benchmarks\n\n<!-- alignment:start -->\n<!-- alignment:end -->\n"


def test_the_table_renders_from_stored_results_and_again_byte_for_byte(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report("benchmarks.alignment.render", "alignment", SECTION, tmp_path / "benchmarks.md",
                                    tmp_path, monkeypatch)
    first = rendered_twice(module, docs)
    assert "(en-fr 12,681, de-en 17,565 pairs;" in first  # the extra bitext each set's eflomal learned from
    assert "| en-fr | 447 | 10.2 / 86.8 / 94.7 (47.7 s) | 9.6 / 89.1 / 92.2 |" in first
    assert "| ro-en | 248 |" in first and "| - | - | 20.7 / 88.6 / 71.7 |" in first  # no extra bitext for ro-en
    assert first.rstrip().endswith("| 24.4 / 86.1 / 67.4 | - |\n\n<!-- alignment:end -->")  # awesome-align: no de-en


def test_without_stored_results_the_docs_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs_kept_without("benchmarks.alignment.render", "alignment", SECTION, "aligners.json", tmp_path, monkeypatch)
