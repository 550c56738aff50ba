"""The modular benchmark's docs renderer on stored results (tests/benchmarks/fixtures/modular: a real seed-0 run
without the Single baselines, as `benchmarks/modular.py run --seed 0 --no-baselines` saved it on 2026-11-25)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import rendered_twice, stored_report

EMPTY_SECTIONS = ("# Benchmarks\n\n<!-- modular:start -->\n<!-- modular:end -->\n\n"
                  "<!-- modular-vocabulary:start -->\n<!-- modular-vocabulary:end -->\n")


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """benchmarks.modular.render with its results folder and docs file in tmp_path."""
    module, docs, _ = stored_report("benchmarks.modular.render", "modular", EMPTY_SECTIONS, tmp_path / "benchmarks.md",
                                    tmp_path, monkeypatch)
    return module, docs


def test_a_seed_renders_from_its_stored_results_and_again_byte_for_byte(report) -> None:
    module, docs = report
    first = rendered_twice(module, docs)
    # CLA's effect in seed 0: mode mono (no adapters) against mode cross, the same bundle
    assert "| Multi_m (bundle, mode mono) | 86.8 | 80.0 | 79.5 | 79.8 | 67.5 | 58.1 | 51.6 | 96.8 | 95.5 | 62.0 |" \
        in first
    assert "| Multi_mc (bundle, mode cross) | 86.8 | 76.9 | 78.8 | 77.0 | 70.1 | 69.1 | 56.0 | 98.0 | 96.2 | 81.5 |" \
        in first
    assert "Single_m" not in first.split("Multi_m against Single_m")[0].split("| model |")[1]  # not run: no row
    assert "not measured yet (the Single baselines have not run for every seed)" in first
    assert "| kk | 23,667,072 (20%) | cla | 100 | 93.0 -> 98.8 |" in first
    # a run stored before the routing measure named its identifier: langid.py on the first Tatoeba rows
    assert ("Language routing (`encode` without a language: langid.py restricted to the bundle's languages) on "
            "the first Tatoeba rows, seed 0: en ") in first


def test_the_vocabulary_section_without_its_results_is_left_as_it_was(report, capsys) -> None:
    module, docs = report
    shown = EMPTY_SECTIONS.replace("<!-- modular-vocabulary:end -->",
                                   "`modular.py vocabulary --seed 0 --language kk`\n<!-- modular-vocabulary:end -->")
    docs.write_text(shown, encoding="utf-8")
    module.render()
    text = docs.read_text(encoding="utf-8")
    assert "`modular.py vocabulary --seed 0 --language kk`\n<!-- modular-vocabulary:end -->" in text
    assert "vocabulary section is left alone" in capsys.readouterr().out
    assert "| Multi_mc (bundle, mode cross) |" in text  # the seeds' section has its own results and renders


def test_the_routing_line_names_the_identifier_and_rows_a_run_stored(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    module, docs, results = stored_report("benchmarks.modular.render", "modular", EMPTY_SECTIONS,
                                          tmp_path / "benchmarks.md", tmp_path, monkeypatch)
    stored = json.loads((results / "seed-0.json").read_text(encoding="utf-8"))
    stored["routing_accuracy"] = {"identifier": "the n-gram identifier", "rows": "held-out Tatoeba rows",
                                  "accuracy": {"en": 99.0, "de": 98.0}}
    (results / "seed-0.json").write_text(json.dumps(stored), encoding="utf-8")
    module.render()
    assert ("Language routing (`encode` without a language: the n-gram identifier restricted to the bundle's "
            "languages) on held-out Tatoeba rows, seed 0: en 99.0 %, de 98.0 %") in docs.read_text(encoding="utf-8")
