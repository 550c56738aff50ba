"""Suites name real registered tasks with valid options, and an unknown suite is a clear error."""

from __future__ import annotations

import pytest

from polyembed.errors import PolyembedError
from polyembed.eval.base import TASKS
from polyembed.eval.registry import list_tasks
from polyembed.eval.suites import SUITES, suite_tasks


@pytest.mark.parametrize("name", sorted(SUITES))
def test_every_suite_builds_its_tasks(name: str) -> None:
    tasks = suite_tasks(name)
    assert [task.name for task in tasks] == [task_name for task_name, _ in SUITES[name]]


def test_default_is_a_subset_of_full_with_every_task_type() -> None:
    default, full = ({task.name for task in suite_tasks(name)} for name in ("default", "full"))
    assert default - {"geometry-multi30k"} <= full
    built_in = {meta.type for meta in list_tasks() if TASKS[meta.name].__module__.startswith("polyembed.")}
    assert {task.metadata.type for task in suite_tasks("default")} == built_in  # docs/guide/evaluation.md's promise


def test_unknown_suite_is_a_clear_error() -> None:
    with pytest.raises(PolyembedError, match="unknown suite 'nope'; known: default, full"):
        suite_tasks("nope")
