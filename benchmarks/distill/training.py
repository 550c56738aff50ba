"""The distillation benchmark's measuring steps that its acceptance runs and its studies share: store and read a
table's JSON, train one run and score it on the demo's tasks."""

from __future__ import annotations

import time
from typing import Any

from benchmarks.common.results import load_json, write_json
from benchmarks.distill.spec import OUT


def save(name: str, payload: dict[str, Any]) -> None:
    """Store one table's JSON (`name`.json in the study's folder)."""
    write_json(OUT / f"{name}.json", payload)


def load(name: str) -> dict[str, Any] | None:
    """One table's stored JSON, None when it is not here."""
    return load_json(OUT / f"{name}.json")


def evaluate(model: Any, label: str, languages: list[str]) -> Any:
    """The demo's tasks for `languages` (`polyembed.eval.headline`), so every row is scored as the demo scores."""
    from polyembed.eval.headline import evaluate_on_demo_tasks

    return evaluate_on_demo_tasks(model, label, languages)


def train_and_evaluate(config: Any, origin: Any, label: str) -> tuple[Any, Any, float]:
    """Train one distillation run (replacing its output folder) and evaluate its model on the demo tasks;
    also returns the training's wall seconds (teacher labels and setup included, evaluation not)."""
    from dataclasses import replace

    from polyembed.methods.distill.train import train_distill
    from polyembed.models.loading import load_model

    started = time.perf_counter()
    # checkpoints go once the run has finished: a recipe series otherwise fills the disk
    training = train_distill(replace(config, keep_checkpoints=False), origin=origin, overwrite=True)
    seconds = time.perf_counter() - started
    return training, evaluate(load_model(training.model_dir), label, config.languages), seconds


def main_scores(result: Any) -> dict[str, float]:
    """Every task's main score per subset, e.g. {'sts17/ar-en': 67.1}, kept for later comparisons."""
    return {f"{s.task}/{s.subset}": s.value for s in result.scores if s.main}
