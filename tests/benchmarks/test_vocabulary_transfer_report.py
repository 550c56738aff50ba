"""The FOCUS auxiliary-space renderer on small stored results (tests/benchmarks/fixtures/vocabulary: one
language, two seeds, made up for the test in the layout `vocabulary_transfer.py auxiliary` saves): means over
seeds with their range, the token split, the timing line, byte-stable; without stored results the docs stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import docs_kept_without, rendered_twice, stored_report

SECTIONS = "# Benchmarks\n\n<!-- vocabulary-auxiliary:start -->\n<!-- vocabulary-auxiliary:end -->\n\nNotes\n"


def test_the_section_renders_from_stored_results_and_again_byte_for_byte(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report("benchmarks.vocabulary_transfer.render", "vocabulary", SECTIONS,
                                    tmp_path / "benchmarks.md", tmp_path, monkeypatch)
    first = rendered_twice(module, docs)
    assert ("| ug | 2,593 | 3,335 | 29% / 4% / 67% | 75.0 | 32.9 [32.4-33.4] | 33.8 [33.7-33.8] | 32.5 [32.5-32.6] "
            "| 0.891 [0.891-0.891] / 0.891 [0.891-0.891] / 0.889 [0.889-0.889] |") in first
    assert "| **mean** | | | | 75.0 | 32.9 | 33.8 | 32.5 | |" in first
    assert ("`python -m benchmarks.vocabulary_transfer.run auxiliary` with ug, seeds 0, 1: time for 1 language "
            "(tokenizers + FOCUS + save, mean over seeds): ppmi-svd 173 s, fasttext 192 s.") in first
    assert first.endswith("192 s.\n\n<!-- vocabulary-auxiliary:end -->\n\nNotes\n")


def test_without_stored_results_the_docs_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = SECTIONS.replace("<!-- vocabulary-auxiliary:end -->", "`python benchmarks/vocabulary_transfer.py "
                            "auxiliary` elsewhere\n<!-- vocabulary-auxiliary:end -->")
    docs_kept_without("benchmarks.vocabulary_transfer.render", "vocabulary", text, "auxiliary-random.json", tmp_path,
                      monkeypatch)
