"""The bf16-against-float32 renderer on small stored results (tests/benchmarks/fixtures/precision: one tiny
model, made up for the test, in the layout `benchmarks/precision.py run` saves): headline differences, NaN
headlines left out, the largest gaps named, byte-stable; without stored results the docs stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import docs_kept_without, rendered_twice, stored_report

SECTIONS = "# Benchmarks\n\n<!-- precision:start -->\n<!-- precision:end -->\n\nWhat this shows\n"


def test_the_section_renders_from_stored_results_and_again_byte_for_byte(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report("benchmarks.precision.render", "precision", SECTIONS, tmp_path / "benchmarks.md",
                                    tmp_path, monkeypatch)
    first = rendered_twice(module, docs)
    assert "`python -m benchmarks.precision.run run --models tiny`" in first and "(2 CPUs, Python 3.11.7)" in first
    assert "**tiny** (demo tasks 158 s in float32, 87 s in bf16; forgetting task 111 s / 75 s)" in first
    assert "| cross_sts | 63.20 | 63.24 | +0.04 |" in first and "| english_sts | 86.57 | 86.56 | -0.00 |" in first
    assert "language_bias_gap" not in first  # NaN in both: no row
    assert ("Largest difference over the 2 main scores: 0.20 (tatoeba/kaz/accuracy); over the 3 forgetting "
            "languages: 1.00 (afr), 1 of them changed at all.") in first
    assert first.endswith("changed at all.\n\n<!-- precision:end -->\n\nWhat this shows\n")


def test_without_stored_results_the_docs_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = SECTIONS.replace("<!-- precision:end -->", "`python benchmarks/precision.py run --models m`: measured "
                            "elsewhere\n<!-- precision:end -->")
    docs_kept_without("benchmarks.precision.render", "precision", text, "precision.json", tmp_path, monkeypatch)
