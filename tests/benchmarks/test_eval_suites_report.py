"""The eval-suites section: rendered from stored suite results into its own markers (the rest of the docs file
untouched), the same bytes on a second render, and left alone when the docs show results that are not here."""

from __future__ import annotations

import json

import pytest

DOCS = """# Benchmarks

<!-- eval-suites:start -->
<!-- eval-suites:end -->
<!-- distill:start -->
kept as it is
<!-- distill:end -->
"""


def _results(value: float) -> dict:
    return {
        "seconds": 12.5,
        "environment": {"torch": "2.13.0", "cpu_threads": 2},
        "tasks": [{
            "task": "sts17", "seconds": 3.25, "metadata": {"main_score": "spearman"},
            "scores": [{"subset": "en-en", "value": value, "main": True},
                       {"subset": "en-en", "value": 0.5, "main": False}],
        }],
    }


@pytest.fixture
def suites(tmp_path, monkeypatch: pytest.MonkeyPatch):
    import importlib

    module = importlib.import_module("benchmarks.eval_suites.render")
    results, docs = tmp_path / "results", tmp_path / "benchmarks.md"
    for model, value in (("minilm-en", 87.64), ("me5-small", 86.61)):
        (results / "default" / model).mkdir(parents=True)
        (results / "default" / model / "results.json").write_text(json.dumps(_results(value)), encoding="utf-8")
    (results / "suites-notes.json").write_text(json.dumps({"machine": "a test CPU, 2 cores", "notes": ["a note"]}))
    docs.write_text(DOCS, encoding="utf-8")
    for name, value in (("RESULTS", results), ("DOCS", docs), ("NOTES", results / "suites-notes.json")):
        monkeypatch.setattr(module, name, value)
    return module, docs, results


def test_the_section_renders_between_its_markers_and_again_byte_for_byte(suites) -> None:
    module, docs, _ = suites
    module.render()
    first = docs.read_bytes()
    text = first.decode()
    assert text.startswith("# Benchmarks\n\n<!-- eval-suites:start -->\nProduced by")
    assert "kept as it is" in text and text.count("<!-- eval-suites:end -->") == 1
    assert "Machine: a test CPU, 2 cores." in text
    assert f"- {module.READER_NOTES[0]}" in text and "- a note" not in text  # the notes are the renderer's own
    assert "\n### Reference checks (" in text and "\n### Suite `default`\n" in text
    assert "\n#### default · sts17 (spearman)\n" in text
    assert "| sts17 | en-en | minilm-en | 87.64 | 87.6 | +0.04 |" in text
    assert "| sts17 | spearman | 86.61 | 87.64 | 3.2 | 3.2 |" in text  # models sorted: me5-small first
    module.render()
    assert docs.read_bytes() == first


def test_results_the_docs_show_but_this_machine_lacks_leave_the_docs_alone(suites, capsys) -> None:
    import shutil

    module, docs, results = suites
    module.render()
    shown = docs.read_bytes()
    shutil.rmtree(results / "default" / "me5-small")
    module.render()
    assert docs.read_bytes() == shown
    assert "the docs show default/me5-small, whose results are not in" in capsys.readouterr().out
