"""The forgetting report: per-language Tatoeba changes, trained vs not trained, worst losses, the loss bound."""

from __future__ import annotations

import math

from polyembed.eval.base import Score
from polyembed.eval.forgetting import LONG_SENTENCE_TASK, PER_LANGUAGE_LIMIT, forgetting_report, forgetting_task_options


def _scores(values: dict[str, tuple[float, int]], task: str = "tatoeba") -> list[Score]:
    rows = [Score(task, "test", lang, "accuracy", value, main=True, n=n) for lang, (value, n) in values.items()]
    rows += [Score(task, "test", lang, "accuracy_x2pivot", 0.0, n=n) for lang, (_, n) in values.items()]
    rows.append(Score(task, "test", "avg", "accuracy", 50.0, n=len(values)))
    rows.append(Score("sts17", "test", "deu", "accuracy", 0.0))  # another task: ignored
    return rows


BEFORE = {"deu": (97.0, 1000), "hau": (86.0, 1000), "xho": (94.0, 142), "yor": (74.0, 1000), "kaz": (90.0, 575)}
AFTER = {"deu": (98.0, 1000), "hau": (70.0, 1000), "xho": (80.0, 142), "yor": (73.5, 1000), "kaz": (88.0, 575)}


def test_changes_are_split_by_training_language_and_the_worst_listed() -> None:
    report = forgetting_report(_scores(BEFORE), _scores(AFTER), ["de", "ha", "kk"])
    by_language = {row.language: row for row in report.languages}
    assert sorted(by_language) == ["deu", "hau", "kaz", "xho", "yor"]  # 'avg' and other tasks left out
    assert by_language["deu"].trained and by_language["hau"].trained and not by_language["yor"].trained
    assert by_language["hau"].change == -16.0
    assert [row.language for row in report.worst()] == ["hau", "xho", "kaz", "yor"]  # gains are not losses
    summary = report.summary()
    assert summary["trained"]["languages"] == 3 and math.isclose(summary["trained"]["change"], (1 - 16 - 2) / 3)
    assert summary["not_trained"]["languages"] == 2 and math.isclose(summary["not_trained"]["change"], -7.25)
    # xho lost 14 points but has 142 test pairs: listed, not counted against the bound; yor lost 0.5 only
    assert summary["beyond_tolerance"] == ["hau", "kaz"]
    assert summary["trained"]["lost_more_than_tolerance"] == 2
    assert summary["not_trained"]["lost_more_than_tolerance"] == 0
    text = report.markdown()
    assert "| in the training data (teacher targets) | 3 |" in text
    assert "| hau | trained | 1000 | 86.00 | 70.00 | -16.00 |" in text
    assert report.to_dict()["languages"][1]["change"] == -16.0


def test_anchored_languages_are_a_group_of_their_own() -> None:
    # anchors have text in the run, so 'not in the training data' must mean no text at all
    report = forgetting_report(_scores(BEFORE), _scores(AFTER), ["de", "ha", "kk"], anchored_languages=["yo"])
    groups = {row.language: row.group for row in report.languages}
    assert groups == {"deu": "trained", "hau": "trained", "kaz": "trained", "yor": "anchored", "xho": "not_trained"}
    summary = report.summary()
    assert summary["anchored"]["languages"] == 1 and summary["anchored"]["change"] == -0.5
    assert summary["not_trained"]["languages"] == 1 and summary["not_trained"]["change"] == -14.0
    assert "| anchor text only | 1 |" in report.markdown()
    assert [row["group"] for row in report.to_dict()["languages"]] == [
        "trained", "trained", "trained", "not_trained", "anchored"
    ]


def test_a_row_cap_below_the_bound_is_said() -> None:
    capped = {lang: (value, 100) for lang, (value, _) in BEFORE.items()}
    report = forgetting_report(_scores(capped), _scores(capped), ["de"])
    assert report.beyond_tolerance() == [] and report.worst() == []
    assert "at most 100 pairs" in report.notes[0] and "at most 100 pairs" in report.markdown()


def test_task_options_cover_every_tatoeba_language() -> None:
    options = forgetting_task_options(max_rows=200)
    assert len(options["languages"]) == 112 and "amh" in options["languages"] and options["max_rows"] == 200


def test_long_sentence_report_reads_its_own_task_and_lists_every_language() -> None:
    before = _scores({"ha": (76.7, 2000), "sw": (92.8, 2000), "rw": (76.5, 2000)}, LONG_SENTENCE_TASK)
    after = _scores({"ha": (65.9, 2000), "sw": (90.0, 2000), "rw": (67.9, 2000)}, LONG_SENTENCE_TASK)
    tatoeba = _scores(BEFORE)  # the other task's rows in the same evaluation are ignored
    report = forgetting_report(before + tatoeba, after + tatoeba, ["ha", "sw"], task=LONG_SENTENCE_TASK)
    assert report.task == LONG_SENTENCE_TASK and report.to_dict()["task"] == LONG_SENTENCE_TASK
    # grouped (trained first), the largest loss first within each group
    assert [(row.language, row.group) for row in report.ordered()] == [
        ("ha", "trained"), ("sw", "trained"), ("rw", "not_trained")
    ]
    text = report.markdown()
    assert "Every language:" in text and "Largest losses" not in text
    assert text.index("| ha | trained") < text.index("| sw | trained") < text.index("| rw | not trained")
    assert report.summary()["beyond_tolerance"] == ["ha", "rw", "sw"]


def test_a_long_report_lists_only_the_worst() -> None:
    many = {f"l{i:02d}": (50.0, 1000) for i in range(PER_LANGUAGE_LIMIT + 1)}
    worse = {**many, "l03": (40.0, 1000)}
    text = forgetting_report(_scores(many), _scores(worse), []).markdown()
    assert "Largest losses:" in text and "| l03 | not trained | 1000 | 50.00 | 40.00 | -10.00 |" in text
    assert "| l04 |" not in text  # no loss: not listed


def test_long_sentence_task_options_cover_every_tico_language() -> None:
    options = forgetting_task_options(max_rows=200, task=LONG_SENTENCE_TASK)
    assert options == {"languages": ["am", "ar", "es_LA", "fr", "ha", "hi", "ru", "rw", "sw", "zh"], "max_rows": 200}
