"""Tasks by name: the registry `register_task` fills (eval/base.py), with the built-in tasks loaded.

Why a module of its own: the built-in tasks import `eval/base.py` to register themselves, so the lookup that
needs all of them loaded sits above both.
"""

from __future__ import annotations

import inspect
from typing import Any

import polyembed.eval.tasks  # noqa: F401 - registers the built-in tasks
from polyembed.errors import PolyembedError
from polyembed.eval.base import TASKS, Task, TaskMetadata


def get_task(name: str, **kwargs: Any) -> Task:
    """Instantiate a registered task by name."""
    if name not in TASKS:
        raise PolyembedError(f"unknown task '{name}'; known: {', '.join(sorted(TASKS))}")
    parameters = inspect.signature(TASKS[name].__init__).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        accepted = [p for p in parameters if p != "self"]
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            raise PolyembedError(f"task '{name}' has no option {', '.join(unknown)}; it accepts: {', '.join(accepted)}")
    return TASKS[name](**kwargs)


def list_tasks() -> list[TaskMetadata]:
    """Metadata of every registered task."""
    return [TASKS[name].metadata for name in sorted(TASKS)]
