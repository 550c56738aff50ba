"""The new-language head-to-head's runner: each method's options, the budget in steps, and the calibration probe
kept where the main run at the probe's steps finds it (no training here: the trainer is replaced by a recorder)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from polyembed.config import build_config
from polyembed.methods.modular.pipeline import ModularPipelineConfig


def test_the_modular_recipe_gets_each_stage_the_budget_steps_and_the_shared_caps() -> None:
    runner = importlib.import_module("benchmarks.new_language.run")
    family = runner.FAMILIES["turkic"]
    options = runner.method_options("modular", family, 40, 1)
    config, _ = build_config(ModularPipelineConfig, None, {**options, "output_dir": "unused"})
    assert (config.la_steps, config.se_steps, config.cla_steps) == (40, 40, 40)
    assert config.languages == family.languages and config.seed == 1 and config.student == runner.BASE
    assert config.max_pairs == runner.PAIRS_PER_LANGUAGE and config.batch_size == runner.BATCH_SIZE
    assert config.unknown_language == "pivot"  # languages outside the bundle are still scored
    tr = runner.method_options("tr", family, 40, 1)
    assert (tr["max_pairs_per_source"], tr["batch_size"]) == (config.max_pairs, config.batch_size)


def test_budget_steps_fill_the_minutes_after_the_fixed_cost_and_never_drop_below_the_probe() -> None:
    runner = importlib.import_module("benchmarks.new_language.run")
    assert runner.budget_steps({"fixed_seconds": 60.0, "seconds_per_step": 2.0}, 8) == 210  # (480 - 60) / 2
    assert runner.budget_steps({"fixed_seconds": 900.0, "seconds_per_step": 2.0}, 8) == runner.PROBE_STEPS


def test_a_run_at_the_probe_steps_reuses_the_calibration_folder(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A method whose fixed cost fills the budget (the modular pipeline's stages) runs at the probe's steps: the
    calibration's run is that run, so `run` must find it in the same folder instead of training it again."""
    runner = importlib.import_module("benchmarks.new_language.run")
    folders: list[Path] = []

    def record(method: str, family: Any, steps: int, seed: int, folder: Path) -> dict[str, Any]:
        folders.append(folder)
        return {"steps": steps, "train_seconds": 200.0, "wall_seconds": 700.0, "peak_memory_mb": 1024.0,
                "model_dir": str(folder / "model"), "stages": 19}

    monkeypatch.setattr(runner, "_train", record)
    monkeypatch.setattr(runner, "OUT", tmp_path)
    monkeypatch.setattr(runner, "RESULTS", tmp_path / "results.json")
    monkeypatch.setattr(runner, "score", lambda *args, **kwargs: None)
    monkeypatch.setattr(runner, "render", lambda: None)
    runner.calibrate("turkic", ["modular"])
    calibration = runner._load()["calibration"]["turkic"]["modular"]
    assert calibration["seconds_per_step"] == 25.0 and calibration["fixed_seconds"] == 500.0  # 200 s / 8 steps
    runner.run("turkic", [0], 8.0, ["modular"])  # 480 s < 500 s fixed: the probe's steps
    assert folders[0] == folders[1] == tmp_path / "turkic" / "seed-0" / f"modular-{runner.PROBE_STEPS}"
    entry = runner._load()["families"]["turkic"]["runs"]["modular/seed-0"]
    assert entry["steps"] == runner.PROBE_STEPS and entry["stages"] == 19
