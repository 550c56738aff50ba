"""Tasks by name (`polyembed.eval.registry`), and a new task added as tests/eval/toy_task.py shows in
docs/contributing/evaluation-task.md."""

from __future__ import annotations

import pytest

from polyembed.errors import PolyembedError
from polyembed.eval.api import evaluate
from polyembed.eval.registry import get_task, list_tasks


def test_a_new_task_is_one_class_and_one_registration(hashing_encoder, tmp_path) -> None:
    from tests.eval.toy_task import ToyParaphraseRetrieval

    assert "toy-paraphrases" in {meta.name for meta in list_tasks()}
    task = get_task("toy-paraphrases", languages="de")
    assert isinstance(task, ToyParaphraseRetrieval) and task.languages == ("de",)
    result = evaluate(hashing_encoder, ["toy-paraphrases"], out_dir=tmp_path, show_progress=False, plots=False)
    scores = {score.subset: score.value for score in result.scores}
    assert set(scores) == {"en", "de"} and all(0 <= value <= 100 for value in scores.values())
    assert (tmp_path / "results.json").is_file()


def test_unknown_tasks_and_options_are_clear_errors() -> None:
    with pytest.raises(PolyembedError, match="unknown task 'nope'; known: .*tatoeba"):
        get_task("nope")
    with pytest.raises(PolyembedError, match="task 'tatoeba' has no option colour; it accepts: languages"):
        get_task("tatoeba", colour="red")
