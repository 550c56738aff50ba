"""The small public Python API: load a model, encode (language-routed when asked), evaluate, train. Re-exports
and thin entry points only; the logic lives in the layers below (`models`, `eval`, `methods`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyembed.eval.api import evaluate
from polyembed.models.encoding import encode, encode_lines
from polyembed.models.hub import push_to_hub
from polyembed.models.loading import load_model

if TYPE_CHECKING:
    from polyembed.methods.base import TrainConfig, TrainResult
    from polyembed.methods.distill.config import DistillConfig


def train(
    method: str,
    config: str | Path | TrainConfig | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
    show_progress: bool = True,
    **options: Any,
) -> TrainResult:
    """Run a registered training method (`polyembed train --help` lists them) from a YAML file or a config
    object, with keyword overrides; every option is checked before any model loads.

    Example: ``train("distill", languages=["de", "sw"], max_steps=200, output_dir="runs/de-sw")``.
    """
    from polyembed.methods.base.registry import train as run

    return run(method, config, resume=resume, overwrite=overwrite, show_progress=show_progress, **options)


def train_distill(
    config: str | Path | DistillConfig | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
    show_progress: bool = True,
    **options: Any,
) -> TrainResult:
    """Multilingual knowledge distillation: `train("distill", ...)`."""
    return train("distill", config, resume=resume, overwrite=overwrite, show_progress=show_progress, **options)


__all__ = ["encode", "encode_lines", "evaluate", "load_model", "push_to_hub", "train", "train_distill"]
