"""The WACSE dev-choice table: means over seeds and the change against the defaults, only runs trained with
today's options counting; a choice that resolves to a run already scored reuses it."""

from __future__ import annotations

import importlib

import pytest

from benchmarks.wacse import spec


def test_each_choice_is_compared_with_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    wacse = importlib.import_module("benchmarks.wacse.render_dev")
    sts = {f"en-{c}": 60.0 for c in spec.DEV_STS_LANGUAGES} | {c: 70.0 for c in spec.DEV_STS_LANGUAGES}
    sts["en"] = 85.0
    better = {key: value + 2 for key, value in sts.items()}
    saved = {"steps": 300, "batch_size": 32, "machine": "x86_64, 2 cores", "me5-small": {"sts": sts}, "trained": {
        "seed-0/defaults-0": {"best": {"eval_dev_mean_accuracy": 0.80}, "sts": sts},
        "seed-1/defaults-1": {"best": {"eval_dev_mean_accuracy": 0.82}, "sts": sts},
        "seed-0/cls-pooling-0": {"best": {"eval_dev_mean_accuracy": 0.78}, "sts": better},
        "seed-1/before": {"best": {"eval_dev_mean_accuracy": 0.5}, "sts": sts},  # cls-pooling at other options
    }}

    def fingerprints(name: str, seed: int) -> str:
        return f"{name}-{seed}"

    table = "\n".join(wacse.dev_table(saved, fingerprints))
    assert "| me5-small (untrained) | - | - | - | 60.00 | 70.00 | 85.00 |" in table
    assert "| defaults | the defaults | 2 | 81.00 | 60.00 | 70.00 | 85.00 |" in table
    # seed 0 only: against the defaults' seed 0 (80), not their mean over both seeds (81)
    assert "| cls-pooling | pooling=cls | 1 | 78.00 (-2.00) | 62.00 (+2.00) | 72.00 (+2.00) | 87.00 (+2.00) |" in table
    assert "wtr-scale-20" not in table  # not run: no row


def test_the_dev_table_renders_into_its_docs_section(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    wacse = importlib.import_module("benchmarks.wacse.render_dev")
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n<!-- wacse-dev:start -->\n<!-- wacse-dev:end -->\n\nNotes\n", encoding="utf-8")
    monkeypatch.setattr(wacse, "OUT", tmp_path)
    monkeypatch.setattr(wacse, "DOCS", docs)
    sts = {f"en-{c}": 60.0 for c in spec.DEV_STS_LANGUAGES} | {c: 70.0 for c in spec.DEV_STS_LANGUAGES}
    now = spec.run_fingerprint({"max_steps": 100, "batch_size": 32, "seed": 0})
    (tmp_path / "dev.json").write_text(json.dumps({"steps": 100, "batch_size": 32, "machine": "x86_64, 2 cores",
                                                   "me5-small": {"sts": sts}, "trained": {f"seed-0/{now}": {
                                                       "best": {"eval_dev_mean_accuracy": 0.8}, "sts": sts}}}),
                                       encoding="utf-8")
    wacse.render()
    first = docs.read_text(encoding="utf-8")
    assert "\n#### WACSE dev choices\n" in first and "| defaults | the defaults | 1 | 80.00 |" in first
    assert first.endswith("<!-- wacse-dev:end -->\n\nNotes\n")
    wacse.render()
    assert docs.read_text(encoding="utf-8") == first


def test_the_fingerprint_is_of_the_resolved_options(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    defaults = spec.run_fingerprint({"max_steps": 100, "seed": 0})
    assert spec.run_fingerprint({"max_steps": 100, "seed": 0, "pooling": "model"}) == defaults  # a default spelt out
    assert spec.run_fingerprint({"max_steps": 100, "seed": 0, "keep_checkpoints": False,
                                  "output_dir": str(tmp_path)}) == defaults  # housekeeping and folder aside
    assert spec.run_fingerprint({"max_steps": 100, "seed": 1}) != defaults
    assert spec.run_fingerprint({"max_steps": 100, "seed": 0, "pooling": "cls"}) != defaults
    assert spec.run_fingerprint({"max_steps": 100, "seed": 0, "awp_links": "one"}) != defaults
    tr = spec.run_fingerprint({"max_steps": 100, "seed": 0, "objectives": ["tr"]})
    assert spec.run_fingerprint({"max_steps": 100, "seed": 0, "objectives": ["tr"], "awp_links": "one",
                                  "aligner": "itermax", "wtr_scale": 20.0}) == tr  # options of untrained objectives
    assert spec.run_fingerprint({"max_steps": 100, "seed": 0, "objectives": ["tr", "wtr"], "aligner": "itermax"}) != \
        spec.run_fingerprint({"max_steps": 100, "seed": 0, "objectives": ["tr", "wtr"]})
    run = tmp_path / "config.yaml"  # a run folder's config.yaml, as training writes it
    run.write_text(yaml.safe_dump({"max_steps": 100, "seed": 0, "output_dir": "elsewhere"}), encoding="utf-8")
    assert spec.run_fingerprint(config_file=run) == defaults


def test_a_choice_that_resolves_to_a_scored_run_is_not_trained_again(tmp_path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs are kept by what they trained (their folder's config.yaml), so a choice that resolves to a run
    already scored for that seed (as 'defaults' once a choice becomes the default) is not trained again, also
    from a dev.json of the older layout (rows by choice name); a folder trained with other options is set aside
    (renamed with its fingerprint), never resumed or mixed in."""
    import json

    import yaml

    import polyembed.eval.api
    import polyembed.methods.modular.pipeline
    import polyembed.models.loading

    wacse = importlib.import_module("benchmarks.wacse.run_dev")
    monkeypatch.setattr(wacse, "OUT", tmp_path)
    monkeypatch.setattr(wacse, "render", lambda: None)
    choice = next(name for name, options in spec.DEV_CHOICES.items() if options)
    budget = {"max_steps": 100, "batch_size": 32, "seed": 0}
    (tmp_path / "dev.json").write_text(json.dumps({"runs": {"me5-small": {"sts": {}}, "earlier/seed-0": {
        "sts": {"en-kk": 1.0}, "best": {"eval_dev_mean_accuracy": 0.9}}, f"{choice}/seed-0": {
        "sts": {"en-kk": 2.0}, "best": {"eval_dev_mean_accuracy": 0.9}}}}), encoding="utf-8")
    for name, options in (("earlier", budget), (choice, {**budget, "pooling": "cls"})):  # scored before
        (tmp_path / "dev" / "seed-0" / name).mkdir(parents=True)
        (tmp_path / "dev" / "seed-0" / name / "config.yaml").write_text(yaml.safe_dump(options), encoding="utf-8")
    trained = []

    def run_stage(method: str, path, show_progress: bool, **options) -> dict:
        trained.append((method, path, options))
        return {"model_dir": str(path / "model"), "best": {"eval_dev_mean_accuracy": 0.5}, "wall_seconds": 1.0}

    monkeypatch.setattr(polyembed.methods.modular.pipeline, "run_stage", run_stage)
    monkeypatch.setattr(polyembed.models.loading, "load_model", lambda path: path)
    monkeypatch.setattr(polyembed.eval.api, "evaluate", lambda model, tasks, show_progress: type(
        "Result", (), {"scores": []})())
    wacse.dev([0], 100, 32, ["defaults", choice])
    folder = tmp_path / "dev" / "seed-0" / choice
    assert trained == [("wacse", folder, {**spec.DEV_CHOICES[choice], **budget, "keep_checkpoints": False})]
    defaults, before = spec.run_fingerprint(budget), spec.run_fingerprint({**budget, "pooling": "cls"})
    assert (folder.parent / f"{choice}-{before}" / "config.yaml").is_file()  # set aside
    saved = json.loads((tmp_path / "dev.json").read_text(encoding="utf-8"))
    assert saved["trained"][f"seed-0/{defaults}"]["sts"] == {"en-kk": 1.0}
    assert saved["trained"][f"seed-0/{before}"]["folder"] == f"dev/seed-0/{choice}-{before}"  # follows its folder
    mine = saved["trained"][f"seed-0/{spec.run_fingerprint({**budget, **spec.DEV_CHOICES[choice]})}"]
    assert mine["choice"] == choice and mine["folder"] == f"dev/seed-0/{choice}"


def test_a_warm_up_added_on_top_trains_the_encoder_as_long_as_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    added = spec.choice_options("head-warmup-50-added", 100, 32, 0)
    assert added["max_steps"] - added["awp_head_warmup_steps"] == spec.choice_options("defaults", 100, 32, 0)[
        "max_steps"]
    assert spec.choice_options("head-warmup-50", 100, 32, 0)["max_steps"] == 100  # the warm-up within the budget
