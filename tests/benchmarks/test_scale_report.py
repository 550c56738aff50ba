"""The scale renderer on small stored results (tests/benchmarks/fixtures/scale: one tiny model, made up for the
test, in the layout `benchmarks.scale.run` saves): shares kept against torch fp32, a variant missing a score,
the tables present, byte-stable; a table shown in the docs whose JSON is absent keeps its text there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import rendered_twice, stored_report

SECTIONS = "# Benchmarks\n\n<!-- scale:start -->\n<!-- scale:end -->\n\nNotes\n"


def test_the_section_renders_from_stored_results_and_again_byte_for_byte(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report("benchmarks.scale.render", "scale", SECTIONS, tmp_path / "benchmarks.md", tmp_path,
                                    monkeypatch)
    first = rendered_twice(module, docs)
    assert ("| tiny | torch fp32 | 100.0 | 1.00x | 80.00 | 100.0% | 85.00 | 100.0% | 60.00 | 100.0% | 75.00 | "
            "100.0% |") in first  # the Tatoeba mean leaves out 'avg'
    assert ("| tiny | onnx int8 | 250.0 | 2.50x | 79.20 | 99.0% | 85.00 | 100.0% | 61.20 | 102.0% | 74.00 | "
            "98.7% |") in first
    assert "| tiny | openvino int8 | 300.0 | 3.00x | 78.00 | 97.5% | - | - | - | - | - | - |\n" in first
    assert ("| model | variant | en-de | en-ru | Tatoeba amh | Tatoeba deu | Tatoeba kaz | Tatoeba swh |\n"
            in first)  # each pair and language beside the means
    assert "| tiny | onnx int8 | 61.20 (102.0%) | 49.50 (99.0%) | 80.00 (100.0%) | 90.00 (100.0%) | " in first
    assert "| tiny | openvino int8 | - | - | - | - | - | - |\n" in first
    assert ("| tiny | openvino static int8 | 400.0 | 4.00x | 79.60 | 99.5% | 84.15 | 99.0% | 59.40 | 99.0% | 75.00 | "
            "100.0% |") in first  # a static int8 graph (export --static-int8) beside the dynamic ones
    assert "Per language: STS-B and stsb-multi-mt dev (Spearman x100;" in first  # dev splits: 'dev/' keys
    assert "| model | variant | STS-B | en-de | de |\n" in first
    assert "| tiny | openvino static int8 | 83.16 (99.0%) | 62.00 (100.0%) | 63.00 (90.0%) |\n" in first
    assert "| tiny | onnx int8 | - | - | - |\n" in first
    assert "| model | variant | sentences/s | speed-up | STS-B | en-de | de |\n" in first  # int8-dev: dev splits
    assert ("| tiny | int8, float32 share 0.5 | 250.0 | 2.50x | 79.20 (99.0%) | 59.40 (99.0%) | 70.70 (101.0%) |"
            in first)
    assert first.index("scale.run export`") < first.index("scale.run int8-dev`") < first.index("scale.run mining`")
    assert "| 20,000 | exact flat | 3.12 | 160 | 231 | 1.0000 | 0.9900 | 1.0000 |" in first
    assert "| distilled demo student (seed 0) | 54.18 | nan |" in first  # a subset it lacks
    assert "| 200,000 | 448.6 | - | 941.4 |" in first
    assert "6 shard files on disk, then run again: 21 files, byte-identical" in first
    assert "scale.run serve" not in first  # serving under load: benchmarks.serve.run
    assert first.endswith("<!-- scale:end -->\n\nNotes\n")


def test_a_shown_table_without_its_json_keeps_its_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mining.json gone (measured on another machine): the mining table keeps the docs' text, in its place among
    the tables, and the tables with stored results are rendered around it (the docs name the table by the command
    as sections rendered before the benchmarks became a package wrote it)."""
    text = SECTIONS.replace("<!-- scale:end -->", "`python benchmarks/scale.py mining`: measured elsewhere\n\n"
                            "| n | index |\n|---|---|\n| 1 | flat |\n<!-- scale:end -->")
    module, docs, results = stored_report("benchmarks.scale.render", "scale", text, tmp_path / "benchmarks.md",
                                          tmp_path, monkeypatch)
    (results / "mining.json").unlink()
    rendered = rendered_twice(module, docs)
    kept = "`python benchmarks/scale.py mining`: measured elsewhere\n\n| n | index |\n|---|---|\n| 1 | flat |\n\n"
    assert kept in rendered and "| tiny | onnx int8 | 250.0 | 2.50x |" in rendered
    assert rendered.index("scale.run export`") < rendered.index(kept) < rendered.index("scale.run bucc`")
