"""The EMMA-X benchmark's docs renderer on stored results (tests/benchmarks/fixtures: a real seed-0 run and its
ablations, as `benchmarks/emmax.py run / ablation --seed 0` (now `benchmarks.emmax.run`) saved them on 2026-11-25)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import rendered_twice, stored_report

EMPTY_SECTIONS = ("# Benchmarks\n\n<!-- emmax-authors:start -->\n<!-- emmax-authors:end -->\n\n"
                  "<!-- emmax-ablation:start -->\n<!-- emmax-ablation:end -->\n")


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """benchmarks.emmax.render with its results folder, docs file and figure in tmp_path."""
    emmax_report, docs, results = stored_report("benchmarks.emmax.render", "emmax-authors", EMPTY_SECTIONS,
                                                tmp_path / "docs" / "benchmarks.md", tmp_path, monkeypatch)
    monkeypatch.setattr(emmax_report, "REPO", tmp_path)
    monkeypatch.setattr(emmax_report, "FIGURE", tmp_path / "docs" / "figures" / "rank-shares.png")
    return emmax_report, docs, results


def test_the_sections_render_from_stored_results_and_again_byte_for_byte(report) -> None:
    module, docs, _ = report
    first = rendered_twice(module, docs)
    # seed 0's warm-up: Tatoeba head, long-tail, STS17 cross, mining F1
    assert "| phase 1 (warm-up) | 94.3 | 74.1 | 69.9 | 90.4 |" in first
    assert "Seeds 0 (cells: mean, then each seed); x86_64, 2 cores." in first
    assert "| 0 | phase 1 (warm-up) | 150 |" in first  # the classifier table's last warm-up evaluation
    assert (docs.parent / "figures" / "rank-shares.png").is_file()
    ablation = first[first.index("<!-- emmax-ablation:start -->"):]
    assert "| N = 2 |" in ablation and "| FCN classifier |" in ablation
    assert "| variant | deu | rus | kaz | tat | tuk | uig | uzb | aze |" in ablation


@pytest.mark.parametrize("command", ["python -m benchmarks.emmax.run budget --seed 0",
                                     "python benchmarks/emmax.py budget --seed 0"])  # as sections rendered before
def test_a_table_whose_results_are_missing_leaves_the_section_alone(report, capsys, command: str) -> None:
    module, docs, results = report
    shown = EMPTY_SECTIONS.replace("<!-- emmax-authors:end -->", f"`{command}`\n<!-- emmax-authors:end -->")
    docs.write_text(shown, encoding="utf-8")
    module.render()
    text = docs.read_text(encoding="utf-8")
    assert text.startswith(shown.split("<!-- emmax-ablation:start -->")[0])  # no budget JSON: kept as it was
    assert "left alone" in capsys.readouterr().out
    assert "| N = 2 |" in text  # the ablation section has its own results and renders
