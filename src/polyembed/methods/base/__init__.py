"""The training layer every method shares: options, the run folder, trainer setup, and the method registry.

A method is one folder `methods/<name>/` whose `__init__.py` registers a `TrainingMethod`: its config class
(a `TrainConfig` subclass; `BitextConfig` for methods trained on bitext), `prepare` (read and validate all
input, before any model loads) and `build` (the model, datasets, losses and evaluator as a `TrainingJob`).
Everything else — run-folder checks, checkpoints, exact resume, the best checkpoint, `training.json`, the
atomic model save, the CLI command and the API call — comes from here.
"""

from typing import TYPE_CHECKING, Any

from polyembed.methods.base.config import BitextConfig, TrainConfig
from polyembed.methods.base.registry import TrainingMethod, get_method, list_methods, register_method, train

if TYPE_CHECKING:  # what `__getattr__` imports on first use, for type checkers
    from polyembed.methods.base.run import RunFolder
    from polyembed.methods.base.trainer import TrainingJob, TrainResult

_LAZY = {"RunFolder": "polyembed.methods.base.run", "TrainingJob": "polyembed.methods.base.trainer",
         "TrainResult": "polyembed.methods.base.trainer"}
"""Imported on first use: the trainer brings sentence-transformers, which a method's options do not need."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BitextConfig",
    "RunFolder",
    "TrainConfig",
    "TrainResult",
    "TrainingJob",
    "TrainingMethod",
    "get_method",
    "list_methods",
    "register_method",
    "train",
]
