"""The WACSE ablation renderer: means over seeds with each seed in brackets, the low- and high-resource means,
and only the runs trained with today's options (a run saved before a default changed drops out)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from benchmarks.wacse import spec

SECTION = "# Benchmarks\n\n<!-- wacse:start -->\n<!-- wacse:end -->\n"


def _renderers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[ModuleType, ModuleType, Path]:
    """The ablation's and the dev choices' renderers with their results, docs (holding `text`) and figures pointed
    into tmp_path."""
    wacse = importlib.import_module("benchmarks.wacse.render")
    wacse_dev = importlib.import_module("benchmarks.wacse.render_dev")
    docs = tmp_path / "benchmarks.md"
    docs.write_text(text, encoding="utf-8")
    for module in (wacse, wacse_dev):
        monkeypatch.setattr(module, "OUT", tmp_path)
        monkeypatch.setattr(module, "DOCS", docs)
    monkeypatch.setattr(wacse, "FIGURES", tmp_path / "figures")
    return wacse, wacse_dev, docs


def test_the_ablation_renders_todays_runs_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wacse, wacse_dev, docs = _renderers(tmp_path, monkeypatch, SECTION + "\nNotes\n")

    def scores(low: float, high: float) -> dict[str, float]:
        return ({f"tatoeba/{code}": low for code in spec.LOW.values()}
                | {f"tatoeba/{code}": high for code in spec.HIGH} | {"sts17/cross-avg": 60.0})

    def run(name: str, seed: int, low: float, fingerprint: str | None = None) -> dict:
        now = spec.run_fingerprint(spec.variant_options(name, 300, 32, seed))
        return {"scores": scores(low, 90.0), "fingerprint": fingerprint or now, "wall_seconds": 100.0 + seed,
                "best": {"eval_dev_mean_accuracy": 0.8 + seed / 100},
                "dev_sts": {"en": 80.0, "kk": 70.0, "uz": 60.0 + seed, "en-kk": 50.0, "en-uz": 40.0},
                "peak_memory_mb": 2048.0, "words": {str(seed): {"aligned_word_cosine": 50.0, "word_retrieval": 40.0,
                                                              "dev_pairs": 300, "dev_links": 900}}}

    words = {str(s): {"aligned_word_cosine": 45.0, "word_retrieval": 30.0, "dev_pairs": 300, "dev_links": 900}
             for s in (0, 1)}
    payload = {"machine": "x86_64, 2 cores", "steps": 300, "batch_size": 32, "runs": {
        "me5-small": {"scores": scores(70.0, 95.0), "words": words},
        "tr/seed-0": run("tr", 0, 80.0), "tr/seed-1": run("tr", 1, 82.0),
        "tr+awp/seed-0": run("tr+awp", 0, 10.0, fingerprint="before"),  # trained before a default changed
        "tr+wtr/seed-0": run("tr+wtr", 0, 80.0), "tr+wtr/seed-1": {**run("tr+wtr", 1, 80.0), "resumed": True},
    }}
    payload["runs"]["tr+wtr-itermax/seed-0"] = run("tr+wtr-itermax", 0, 70.0, fingerprint="before an option was added")
    folder = tmp_path / "seed-0" / "tr+wtr-itermax"  # ... whose folder says it trained with today's options
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(spec.variant_options("tr+wtr-itermax", 300, 32, 0)),
                                        encoding="utf-8")
    (tmp_path / "ablation.json").write_text(json.dumps(payload), encoding="utf-8")
    wacse.render()
    text = docs.read_text(encoding="utf-8")
    assert "| me5-small | 70.0 | 70.0 |" in text and "| 70.0 | 95.0 | 60.0 | 45.0 (45.0 / 45.0) |" in text
    assert ("| tr | 81.0 (80.0 / 82.0) |" in text
            and "| 81.0 (80.0 / 82.0) | 90.0 (90.0 / 90.0) | 60.0 (60.0 / 60.0) | 50.0 (50.0 / 50.0) | "
            "40.0 (40.0 / 40.0) | 100.5 (100.0 / 101.0) | 2.0 (2.0 / 2.0) |" in text)
    assert "| tr+awp |" not in text
    assert "| tr+wtr-itermax | 70.0 |" in text
    assert "| 100.0 | 2.0 (2.0 / 2.0) |" in text.split("| tr+wtr |")[1].split("\n")[0]  # resumed: no time
    assert "| tr | 80.5 (80.0 / 81.0) | 45.0 (45.0 / 45.0) | 65.2 (65.0 / 65.5) | 80.0 (80.0 / 80.0) |" in text
    assert "| me5-small | - |" not in text  # untrained me5-small has no dev STS stored here: no dev row
    assert "seed 0: 300 pairs, 900 links; seed 1: 300 pairs, 900 links" in text
    assert text.endswith("<!-- wacse:end -->\n\nNotes\n")


def test_the_budget_curve_pairs_each_seed_with_tr_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wacse = importlib.import_module("benchmarks.wacse.render")
    monkeypatch.setattr(wacse, "OUT", tmp_path)  # no run folders: each run counts by its stored fingerprint

    def run(name: str, steps: int, seed: int, low: float, sts: float, fingerprint: str | None = None) -> dict:
        now = spec.run_fingerprint(spec.variant_options(name, steps, 32, seed))
        return {"fingerprint": fingerprint or now, "scores": {f"tatoeba/{code}": low for code in spec.LOW.values()}
                | {"sts17/cross-avg": sts}}

    payload = {"runs": {}, "budget": {"batch_size": 32, "runs": {
        "tr@100/seed-0": run("tr", 100, 0, 80.0, 60.0), "tr@100/seed-1": run("tr", 100, 1, 82.0, 62.0),
        "tr+awp+wtr@100/seed-0": run("tr+awp+wtr", 100, 0, 81.0, 58.0),
        "tr+awp+wtr@100/seed-1": run("tr+awp+wtr", 100, 1, 81.0, 61.0),
        "tr@200/seed-0": run("tr", 200, 0, 85.0, 63.0),
        "tr+awp+wtr@200/seed-0": run("tr+awp+wtr", 200, 0, 1.0, 1.0, fingerprint="before"),  # other options
    }}}
    lines = wacse.budget_table(payload)
    assert "| steps | seed | tr: low mean | tr: STS17 cross | tr+awp+wtr: low mean | tr+awp+wtr: STS17 cross | " \
           "tr+awp+wtr change: low mean | tr+awp+wtr change: STS17 cross |" in lines
    assert "| 100 | 0 | 80.0 | 60.0 | 81.0 | 58.0 | 1.0 | -2.0 |" in lines
    assert "| 100 | mean | 81.0 | 61.0 | 81.0 | 59.5 | 0.0 | -1.5 |" in lines
    assert "| 200 | 0 | 85.0 | 63.0 | - | - | - | - |" in lines and "| 200 | mean |" not in "\n".join(lines)
    assert wacse.budget_table({"runs": {}}) == []


def test_a_budget_run_of_one_seed_keeps_the_other_seeds_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A curve grows a seed at a time, on checkouts whose results/ differ: the docs' rows for the steps and seeds
    not run here stay, the means take them in, and a row run here replaces the docs' row of the same seed."""
    wacse = importlib.import_module("benchmarks.wacse.render")
    monkeypatch.setattr(wacse, "OUT", tmp_path)

    def run(name: str, steps: int, low: float, sts: float) -> dict:
        return {"fingerprint": spec.run_fingerprint(spec.variant_options(name, steps, 32, 1)),
                "scores": {f"tatoeba/{code}": low for code in spec.LOW.values()} | {"sts17/cross-avg": sts}}

    shown = ["`python benchmarks/wacse.py budget` (batch 32): ...", "",
             "| steps | seed | tr: low mean | tr: STS17 cross | tr+awp+wtr: low mean | tr+awp+wtr: STS17 cross | "
             "tr+awp+wtr change: low mean | tr+awp+wtr change: STS17 cross |", "|---|---|---|---|---|---|---|---|",
             "| 100 | 0 | 80.0 | 60.0 | 79.0 | 58.0 | -1.0 | -2.0 |",
             "| 100 | 1 | 1.0 | 1.0 | 1.0 | 1.0 | 0.0 | 0.0 |",
             "| 300 | 0 | 82.0 | 66.0 | 81.0 | 56.0 | -1.0 | -10.0 |",
             "| 300 | 1 | 82.0 | 68.0 | 81.4 | 59.4 | -0.6 | -8.6 |",
             "| 300 | mean | 82.0 | 67.0 | 81.2 | 57.7 | -0.8 | -9.3 |"]
    payload = {"runs": {}, "budget": {"batch_size": 32, "runs": {
        "tr@100/seed-1": run("tr", 100, 82.0, 62.0), "tr+awp+wtr@100/seed-1": run("tr+awp+wtr", 100, 82.0, 61.0)}}}
    lines = wacse.budget_table(payload, shown)
    assert [line for line in lines if line.startswith("| 100 |")] == [
        "| 100 | 0 | 80.0 | 60.0 | 79.0 | 58.0 | -1.0 | -2.0 |", "| 100 | 1 | 82.0 | 62.0 | 82.0 | 61.0 | 0.0 | -1.0 |",
        "| 100 | mean | 81.0 | 61.0 | 80.5 | 59.5 | -0.5 | -1.5 |"]
    assert "| 300 | mean | 82.0 | 67.0 | 81.2 | 57.7 | -0.8 | -9.3 |" in lines
    assert lines[-1].endswith("100 steps seed 0, 300 steps seed 0, 300 steps seed 1.")
    assert wacse.budget_table({"runs": {}}, shown)[-1].endswith(
        "100 steps seed 0, 100 steps seed 1, 300 steps seed 0, 300 steps seed 1.")


def test_a_row_keeps_its_scores_while_its_folder_trained_todays_options(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A saved fingerprint that differs only because the fingerprint's inputs changed (an option added since,
    whose default trains as before) keeps the row: its folder's config.yaml is what decides. A folder trained with
    other options is set aside and the run trained and scored again."""
    import yaml

    import polyembed.eval.api
    import polyembed.methods.modular.pipeline
    import polyembed.models.loading

    wacse = importlib.import_module("benchmarks.wacse.run")
    trained, evaluated = [], []

    def run_stage(method: str, path: Path, show_progress: bool, **options) -> dict:
        trained.append(path)
        return {"model_dir": str(path / "model"), "best": {"eval_dev_mean_accuracy": 0.5}, "wall_seconds": 1.0}

    monkeypatch.setattr(wacse, "OUT", tmp_path)
    monkeypatch.setattr(wacse, "aligned_words", lambda *args: None)
    monkeypatch.setattr(wacse, "under_alignment", lambda vectors: {"word_retrieval": 1.0})
    monkeypatch.setattr(polyembed.methods.modular.pipeline, "run_stage", run_stage)
    monkeypatch.setattr(polyembed.models.loading, "load_model", lambda path: path)
    monkeypatch.setattr(polyembed.models.loading, "as_sentence_transformer", lambda encoder: (encoder,))
    monkeypatch.setattr(polyembed.eval.api, "evaluate", lambda model, tasks, show_progress: evaluated.append(
        model) or type("Result", (), {"scores": []})())
    saved = {"scores": {"tatoeba/kaz": 50.0}, "words": {"0": {"word_retrieval": 9.0}}, "fingerprint": "old-rules"}
    runs = {"tr/seed-0": dict(saved), "tr+awp/seed-0": dict(saved)}
    dev = ([], [], [])
    for name, changed in (("tr", {}), ("tr+awp", {"pooling": "cls"})):
        options = spec.variant_options(name, 300, 32, 0)
        folder = tmp_path / "seed-0" / name
        folder.mkdir(parents=True)
        (folder / "config.yaml").write_text(yaml.safe_dump({**options, **changed}), encoding="utf-8")
        wacse._train({"runs": runs}, runs, f"{name}/seed-0", folder, options, dev)
    today = spec.run_fingerprint(spec.variant_options("tr", 300, 32, 0))
    assert runs["tr/seed-0"]["scores"] == {"tatoeba/kaz": 50.0} and runs["tr/seed-0"]["fingerprint"] == today
    awp_model = str(tmp_path / "seed-0" / "tr+awp" / "model")
    assert runs["tr+awp/seed-0"]["scores"] == {} and runs["tr/seed-0"]["dev_sts"] == {}  # dev STS added once
    assert evaluated == [str(tmp_path / "seed-0" / "tr" / "model"), awp_model, awp_model]
    assert (tmp_path / "seed-0").is_dir() and len(list((tmp_path / "seed-0").glob("tr+awp-*"))) == 1  # set aside


def test_rows_and_the_budget_curve_of_runs_not_here_keep_the_docs_text(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """results/ is not in git: a run of some variants on another checkout adds its rows, and the rows (ablation
    and dev) and the budget curve the docs show for variants not run there stay as they are, in their place."""
    wacse, wacse_dev, docs = _renderers(tmp_path, monkeypatch, SECTION)

    def run(name: str, low: float, steps: int = 300) -> dict:
        return {"scores": {f"tatoeba/{code}": low for code in spec.LOW.values()} | {"sts17/cross-avg": 60.0},
                "fingerprint": spec.run_fingerprint(spec.variant_options(name, steps, 32, 0)),
                "best": {"eval_dev_mean_accuracy": low / 100},
                "dev_sts": {"en": 80.0, "kk": 70.0, "uz": 60.0, "en-kk": 50.0, "en-uz": 40.0}}

    before = {"steps": 300, "batch_size": 32,
              "runs": {"tr/seed-0": run("tr", 80.0), "tr+wtr/seed-0": run("tr+wtr", 70.0)},
              "budget": {"batch_size": 32, "runs": {"tr@100/seed-0": run("tr", 75.0, 100)}}}
    (tmp_path / "ablation.json").write_text(json.dumps(before), encoding="utf-8")
    wacse.render()
    shown = docs.read_text(encoding="utf-8")
    rows = [line for line in shown.splitlines() if line.startswith(("| tr |", "| tr+wtr |", "| 100 |"))]
    assert len(rows) == 5  # tr and tr+wtr in the ablation and the dev table, one budget row
    later = {"steps": 300, "batch_size": 32, "runs": {"tr-cls/seed-0": run("tr-cls", 60.0)}}
    (tmp_path / "ablation.json").write_text(json.dumps(later), encoding="utf-8")
    wacse.render()
    text = docs.read_text(encoding="utf-8")
    assert all(row in text.splitlines() for row in rows)
    assert text.index("| tr+wtr | 70.0 |") < text.index("| tr-cls | 60.0 |")  # in the variants' order
    assert text.count("| tr-cls |") == 2 and text.count("\n#### Budget curve\n") == 1
    assert "this checkout's results, so their settings and machine may differ from the line above): tr, tr+wtr." \
        in text
    later["runs"]["tr/seed-0"] = run("tr", 99.0)  # a variant run here replaces what the docs show
    (tmp_path / "ablation.json").write_text(json.dumps(later), encoding="utf-8")
    wacse.render()
    text = docs.read_text(encoding="utf-8")
    assert "| tr | 99.0 |" in text and "| tr | 80.0 |" not in text


def test_a_figure_of_another_run_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The figures are in git and results/ is not: each image records the run it shows, and the section names
    the figures whose run is not one the table counts (other options, or no record in the image)."""
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    wacse, wacse_dev, docs = _renderers(tmp_path, monkeypatch, SECTION)
    scores = {f"tatoeba/{code}": 80.0 for code in spec.LOW.values()} | {"sts17/cross-avg": 60.0}
    payload = {"steps": 300, "batch_size": 32, "runs": {"tr/seed-1": {
        "scores": scores, "fingerprint": spec.run_fingerprint(spec.variant_options("tr", 300, 32, 1))}}}
    (tmp_path / "ablation.json").write_text(json.dumps(payload), encoding="utf-8")
    (tmp_path / "figures").mkdir()
    records = {"me5-small": {"model": "me5-small", "seed": 1, "fingerprint": None},
               "tr": {"model": "tr", "seed": 1, "fingerprint": payload["runs"]["tr/seed-1"]["fingerprint"]},
               "tr+awp+wtr": {"model": "tr+awp+wtr", "seed": 1, "fingerprint": "older options"},
               "tr+wtr": None}
    for name, record in records.items():
        info = PngInfo()
        if record:
            info.add_text("Description", json.dumps(record))
        Image.new("RGB", (4, 4)).save(tmp_path / "figures" / f"wacse-words-{name}.png", pnginfo=info)
    wacse.render()
    text = docs.read_text(encoding="utf-8")
    assert "![tr](figures/wacse-words-tr.png)" in text and "![tr+wtr](figures/wacse-words-tr+wtr.png)" in text
    assert text.count("Drawn from runs other than this table's") == 1
    assert "with other options than today's): tr+wtr, tr+awp+wtr." in text
