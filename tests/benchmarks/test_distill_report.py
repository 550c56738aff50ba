"""The distillation benchmark's long-sentence table, rendered from recipe runs built with the real reports."""

from __future__ import annotations

import importlib

import pytest

from polyembed.eval.base import Score
from polyembed.eval.forgetting import LONG_SENTENCE_TASK, TASK, forgetting_report


def _scores(task: str, values: dict[str, float]) -> list[Score]:
    return [Score(task, "test", language, "accuracy", value, main=True, n=2000) for language, value in values.items()]


UNTRAINED = {LONG_SENTENCE_TASK: {"ha": 76.7, "sw": 92.8, "rw": 76.5}, TASK: {"deu": 97.0, "yor": 74.0}}


def _run(long: dict[str, float], tatoeba: dict[str, float], cross: float) -> dict:
    def report(task: str, after: dict[str, float]) -> dict:
        before = _scores(task, UNTRAINED[task])
        return forgetting_report(before, _scores(task, after), ["de", "ha", "sw"], task=task).to_dict()

    return {"headline": {"cross_sts": cross}, "forgetting": report(TASK, tatoeba),
            "long_sentence_forgetting": report(LONG_SENTENCE_TASK, long)}


@pytest.fixture
def distill_report(monkeypatch: pytest.MonkeyPatch):
    return importlib.import_module("benchmarks.distill.render_long")


def test_long_sentences_per_language_beside_tatoeba_and_cross_sts(distill_report) -> None:
    saved = {
        "baselines": {"me5-small": {"headline": {"cross_sts": 60.0}}},
        "rows": {
            "demo": {"runs": {
                "0": _run({"ha": 65.9, "sw": 90.0, "rw": 67.9}, {"deu": 98.0, "yor": 73.0}, 66.0),
                "1": _run({"ha": 67.9, "sw": 91.0, "rw": 68.9}, {"deu": 98.0, "yor": 72.0}, 67.0),
            }},
            "older": {"runs": {"0": {"headline": {"cross_sts": 61.0}, "forgetting": {}}}},  # no long report: left out
        },
    }
    lines = distill_report.long_sentence_table(saved)
    table = "\n".join(lines)
    assert "| language | group | untrained | demo (2 seeds) |" in table and "older" not in table
    # trained languages first, the largest loss first: ha lost 9.8 on the mean of the seeds, sw 2.3
    assert "| ha | trained | 76.70 | 66.90 (-9.80) |" in table
    assert table.index("| ha |") < table.index("| sw |") < table.index("| rw | not trained |")
    assert "| Tatoeba mean, trained | | 97.00 | 98.00 (+1.00) |" in table
    assert "| Tatoeba mean, not trained | | 74.00 | 72.50 (-1.50) |" in table
    assert "| cross-lingual STS | | 60.00 | 66.50 (+6.50) |" in table
    assert distill_report.long_sentence_table({"rows": {"older": saved["rows"]["older"]}}) == []


def test_the_long_sentence_section_renders_on_its_own_and_never_drops_a_recipe(distill_report, tmp_path,
                                                                                monkeypatch) -> None:
    saved = {
        "baselines": {"me5-small": {"headline": {"cross_sts": 60.0}}},
        "machine": {"cpus": 2},
        "rows": {"demo": {"overrides": {}, "runs": {
            "0": _run({"ha": 65.9, "sw": 90.0, "rw": 67.9}, {"deu": 98.0, "yor": 73.0}, 66.0),
            "1": _run({"ha": 76.0, "sw": 92.5, "rw": 68.9}, {"deu": 98.0, "yor": 72.0}, 67.0),
        }}},
    }
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\nother text\n", encoding="utf-8")
    monkeypatch.setattr(distill_report, "DOCS", docs)
    monkeypatch.setattr(distill_report, "_load", lambda name: saved if name == "recipes" else None)
    distill_report.render_long_sentences()
    text = docs.read_text(encoding="utf-8")
    assert text.startswith("# Benchmarks\n\nother text\n") and "<!-- recipes: demo -->" in text
    assert "- `demo`: the demo config (seeds 0, 1)" in text
    assert "| demo | 0 | ha -10.80, sw -2.80 | 66.00 |" in text  # per seed: the bound is per run
    assert "| demo | 1 | none | 67.00 |" in text  # ha -0.70, sw -0.30: within a point
    distill_report.render_long_sentences()
    assert docs.read_text(encoding="utf-8") == text  # byte-stable
    saved["rows"] = {"other": saved["rows"]["demo"]}  # demo's JSON gone: the docs keep showing it
    distill_report.render_long_sentences()
    assert docs.read_text(encoding="utf-8") == text


def test_ablation_rows_stored_before_the_dev_mse_counted_both_terms_are_marked(tmp_path, monkeypatch) -> None:
    """A row stored without `dev_mse_both_terms` counts the translation term only: its dev MSE is marked `*`."""
    render = importlib.import_module("benchmarks.distill.render")
    headline = {"cross_sts": 71.0, "english_sts": 84.0, "language_bias_gap": -0.7, "tatoeba_accuracy": 89.6}

    def row(mse: float, **stored: bool) -> dict:
        return {"options": {"max_pairs_per_source": 1000, "seed": 0, "max_steps": 150, "eval_steps": 150},
                "headline": headline, "dev_negative_mse": -mse, "pairs_per_second": 18.0, **stored}

    ablation = {"rows": {"older": row(0.1508), "newer": row(0.1612, dev_mse_both_terms=True)}}
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n<!-- distill:start -->\n<!-- distill:end -->\n", encoding="utf-8")
    monkeypatch.setattr(render, "DOCS", docs)
    monkeypatch.setattr(render, "_load", lambda name: ablation if name == "ablation" else None)
    monkeypatch.setattr(render, "render_long_sentences", lambda: "")
    text = render.render()
    assert "\n### Multilingual knowledge distillation\n" in text
    assert "or the translation term only where marked `*`):" in text
    assert "| older | - | 150 | 71.00 | 84.00 | -0.70 | 89.60 | 0.1508* | 18.0 |" in text
    assert "| newer | - | 150 | 71.00 | 84.00 | -0.70 | 89.60 | 0.1612 | 18.0 |" in text
    assert docs.read_text(encoding="utf-8") == f"# Benchmarks\n\n{text}\n"
