"""The new-language head-to-head renderer: reads stored results only, a row per language with the mean over
seeds (each seed shown), intervals on test rows, the share of the base model's error removed, and the budgets
as they came out."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

MACHINE = {"cpu": "Test CPU, 2 cores"}


def _entry(method: str, seed: int, yor: float, hau: float) -> dict:
    scores = {"mafand-retrieval/yor": {"value": yor, "n": 1558}, "mafand-retrieval/hau": {"value": hau, "n": 1500},
              "mafand-retrieval/avg": {"value": (yor + hau) / 2, "n": 2}}
    return {"method": method, "seed": seed, "minutes": 8.0, "steps": 100, "wall_seconds": 480.0,
            "train_seconds": 300.0, "peak_memory_mb": 2048.0, "machine": MACHINE, "dev": scores, "test": scores,
            "elsewhere": {"tatoeba/deu": {"value": 95.0, "n": 1000}}}


def test_the_section_shows_every_language_each_seed_and_the_error_cut(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    report = importlib.import_module("benchmarks.new_language.render")
    base = {"dev": {"mafand-retrieval/yor": {"value": 70.0, "n": 500},
                    "mafand-retrieval/hau": {"value": 60.0, "n": 500}},
            "test": {"mafand-retrieval/yor": {"value": 70.0, "n": 1558},
                     "mafand-retrieval/hau": {"value": 60.0, "n": 1500}},
            "elsewhere": {"tatoeba/deu": {"value": 96.0, "n": 1000}}}
    payload = {"families": {"african": {"languages": ["yo", "ha"], "datasets": ["mafand-mt"], "runs": {
        "me5-small": base, "tr/seed-0": _entry("tr", 0, 82.0, 76.0), "tr/seed-1": _entry("tr", 1, 84.0, 76.0),
        "distill/seed-0": _entry("distill", 0, 71.0, 61.0)}}}}
    results = tmp_path / "results.json"
    results.write_text(json.dumps(payload), encoding="utf-8")
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n<!-- new-language:start -->\n<!-- new-language:end -->\n\nNotes\n",
                    encoding="utf-8")
    monkeypatch.setattr(report, "RESULTS", results)
    monkeypatch.setattr(report, "DOCS", docs)
    report.render()
    text = docs.read_text(encoding="utf-8")
    assert text.endswith("\n\nNotes\n") and "on Test CPU, 2 cores" in text
    assert "| subset | me5-small | distill | tr |" in text
    assert "- tr: WACSE's translation ranking alone." in text  # each method row said what it is
    assert "| mafand-retrieval/yor | 70.0 | 71.0 | 83.0 (82.0 / 84.0) |" in text  # dev: no intervals
    assert "| mafand-retrieval/yor | 70.0 ±2.3 | 71.0 ±2.3 | 83.0 (82.0 / 84.0) ±1.9 |" in text  # test
    assert "mafand-retrieval/avg" not in text  # the tables' own mean row instead
    assert "| mean | 65.0 | 66.0 | 79.5 |" in text
    assert "| mafand-retrieval/yor | 3 % | 43 % |" in text and "| mean | 3 % | 41 % |" in text  # (79.5-65)/35
    assert "| tr | 1 | 100 | 8.0 | 5.0 | 2.0 |" in text
    assert "| tr | 40 % (mafand-retrieval/hau) | 41 % | -1.0 (tatoeba/deu) |" in text  # (76-60)/40; 95 -> 96


def test_without_stored_results_the_section_is_left_as_it_is(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """results/ is not in git: on a clone without results.json the measured section stays, and the renderer says
    what to run."""
    report = importlib.import_module("benchmarks.new_language.render")
    docs = tmp_path / "benchmarks.md"
    shown = "# Benchmarks\n\n<!-- new-language:start -->\nmeasured\n<!-- new-language:end -->\n"
    docs.write_text(shown, encoding="utf-8")
    monkeypatch.setattr(report, "RESULTS", tmp_path / "results.json")
    monkeypatch.setattr(report, "DOCS", docs)
    with pytest.raises(SystemExit, match="python -m benchmarks.new_language.run"):
        report.render()
    assert docs.read_text(encoding="utf-8") == shown


def test_curve_points_forgetting_and_sts_test_rows_have_their_own_tables(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A family scored on retrieval and STS test rows (the Turkic one): error cuts and means count retrieval only;
    curve points stay out of the main tables and get the budget curve; forgetting rows list what moved."""
    report = importlib.import_module("benchmarks.new_language.render")

    def scores(tat: float, sts: float) -> dict:
        return {"tatoeba/tat": {"value": tat, "n": 1000}, "kardes-sts/en-kk": {"value": sts, "n": 800},
                "kardes-sts/cross-avg": {"value": sts, "n": 1}}

    def run(method: str, minutes: float, tat: float, curve: bool = False) -> dict:
        return {"method": method, "seed": 0, "minutes": minutes, "steps": int(10 * minutes), "curve": curve,
                "wall_seconds": 60.0 * minutes, "train_seconds": 50.0 * minutes, "peak_memory_mb": 1024.0,
                "machine": MACHINE, "dev": {"kardes-sts/en-kk": {"value": tat - 10, "n": 300}},
                "test": scores(tat, 70.0), "elsewhere": {"tatoeba/deu": {"value": 95.0, "n": 1000}}}

    base = {"dev": {"kardes-sts/en-kk": {"value": 50.0, "n": 300}}, "test": scores(60.0, 65.0),
            "elsewhere": {"tatoeba/deu": {"value": 96.0, "n": 1000}},
            "forgetting": {"tatoeba/deu": {"value": 96.0, "n": 1000}, "tatoeba/kab": {"value": 40.0, "n": 1000},
                           "tatoeba/ido": {"value": 80.0, "n": 400}, "tatoeba/tat": {"value": 60.0, "n": 1000}}}
    main = run("tr", 8, 80.0)
    main["forgetting"] = {"tatoeba/deu": {"value": 95.5, "n": 1000}, "tatoeba/kab": {"value": 37.0, "n": 1000},
                          "tatoeba/ido": {"value": 82.0, "n": 400}, "tatoeba/tat": {"value": 80.0, "n": 1000}}
    payload = {"families": {"turkic": {
        "languages": ["tt", "kk"], "datasets": ["tatoeba-challenge"],
        "described": {"data": "Tatoeba-Challenge pairs", "dev": "Kardes STS dev", "test": "Tatoeba and Kardes"},
        "runs": {"me5-small": base, "tr/seed-0": main, "tr/seed-0/2-minutes": run("tr", 2, 70.0, curve=True)}}}}
    results = tmp_path / "results.json"
    results.write_text(json.dumps(payload), encoding="utf-8")
    docs = tmp_path / "benchmarks.md"
    docs.write_text("<!-- new-language:start -->\n<!-- new-language:end -->\n", encoding="utf-8")
    monkeypatch.setattr(report, "RESULTS", results)
    monkeypatch.setattr(report, "DOCS", docs)
    report.render()
    text = docs.read_text(encoding="utf-8")
    assert "Dev (Kardes STS dev):" in text and "(Tatoeba-Challenge pairs)" in text
    assert "| retrieval mean |" not in text  # one retrieval row: nothing to average
    assert "| tatoeba/tat | 50 % |" in text and "| mean | 50 % |" in text  # (80-60)/40; the STS row is not cut
    assert "| tr | 8 | 80 | 0 | 70.0 | 80.0 |" in text and "| tr | 2 | 20 | 0 | 60.0 | 70.0 |" in text  # curve
    assert "| tr | 2 | 20 | 0.0 |" not in text  # the curve point is not a main-table run
    assert "| kardes-sts/cross-avg change |" in text  # the test split's cross-lingual STS in the summary
    assert "| tr | 50 % (tatoeba/tat) | 50 % | -1.0 (tatoeba/deu) | +5.0 |" in text
    assert "| tr/seed-0 | 3 | 2 | tatoeba/kab -3.0 | tatoeba/kab -3.0 | tatoeba/ido +2.0 |" in text
    assert "| tatoeba/kab | 1000 | 40.0 ±3.0 | -3.0 |" in text and "| tatoeba/ido | 400 |" in text
    assert "tatoeba/deu | 1000 | 96.0" not in text  # moved by half a point only
    # a trained language (tat = tt) is not forgetting: left out of the summary, named above it
    assert "the trained languages' rows (tatoeba/tat) are left out" in text and "| tatoeba/tat | 1000 |" not in text
