"""The scale section's `mining-scale` table on small stored results (tests/benchmarks/fixtures/scale/
mining-scale.json, made up for the test in the layout `benchmarks.scale.mining` saves): its rows, its place among
the section's tables, byte-stable; shown in the docs without its JSON, it keeps its text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import rendered_twice, stored_report

SECTIONS = "# Benchmarks\n\n<!-- scale:start -->\n<!-- scale:end -->\n\nNotes\n"


def test_the_mining_scale_table_renders_from_stored_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report("benchmarks.scale.render", "scale", SECTIONS, tmp_path / "benchmarks.md", tmp_path,
                                    monkeypatch)
    first = rendered_twice(module, docs)
    assert "`python -m benchmarks.scale.run mining-scale`: `polyembed mine` end to end" in first
    assert "pools drawn around 4,000 real sentences encoded with me5-small" in first
    assert "50% of the source rows have a planted translation" in first
    assert "| 100,000 | flat | exact flat | 80.5 | 120 | 900 | 0.9000 | 1.0000 | the whole pool |" in first
    assert ("| 100,000 | auto | IVF1264,Flat (nprobe=16) | 20.25 | 120 | 1,100 | 0.8995 | 0.9985 | the whole pool |"
            in first)
    assert ("| 1,000,000 | auto | IVF4000,Flat (nprobe=16) | 600.0 | 120 | 2,500 | 0.8000 | 0.9971 | first 100,000 "
            "rows |" in first)
    assert first.index("scale.run mining`") < first.index("scale.run mining-scale`") < first.index("scale.run bucc`")


def test_without_its_json_the_docs_keep_the_tables_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = SECTIONS.replace("<!-- scale:end -->", "`python -m benchmarks.scale.run mining-scale`: measured "
                            "elsewhere\n\n| n per side | --index |\n|---|---|\n| 1 | auto |\n<!-- scale:end -->")
    module, docs, results = stored_report("benchmarks.scale.render", "scale", text, tmp_path / "benchmarks.md",
                                          tmp_path, monkeypatch)
    (results / "mining-scale.json").unlink()
    rendered = rendered_twice(module, docs)
    kept = ("`python -m benchmarks.scale.run mining-scale`: measured elsewhere\n\n| n per side | --index |\n"
            "|---|---|\n| 1 | auto |\n\n")
    assert kept in rendered
    assert rendered.index("scale.run mining`") < rendered.index(kept) < rendered.index("scale.run bucc`")
