"""The language-ID renderer on stored results (tests/benchmarks/fixtures/langid: the run of 2026-11-26 trimmed to
five languages): '-' where an identifier lacks a language, routing rows per language set, byte-stable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import rendered_twice, stored_report


def test_the_tables_render_from_stored_results_and_again_byte_for_byte(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report("benchmarks.language_id.render", "langid", "# Benchmarks\n\n<!-- langid:start -->\n"
                                    "<!-- langid:end -->\n", tmp_path / "benchmarks.md", tmp_path, monkeypatch)
    first = rendered_twice(module, docs)
    assert "| ha | mafand-mt | - | 99.5 |" in first  # langid.py does not know Hausa
    assert "| sr | tatoeba | 22.8 | 6.8 | 70.4 | 29.6 |" in first  # a language where the n-gram one is worst
    assert "| African (en ha ig yo sw zu xh rw am) | ha | mafand-mt | 0.0 |" in first  # routing: unknown counts 0
    assert first.index("\n#### Short sentences") < first.index("\n#### Long sentences") < first.index("\n#### Routing")
