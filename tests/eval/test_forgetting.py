"""The forgetting report: per-language Tatoeba changes, trained vs not trained, worst losses, the loss bound."""

from __future__ import annotations

import math

from polyembed.eval.base import Score
from polyembed.eval.forgetting import forgetting_report, forgetting_task_options


def _scores(values: dict[str, tuple[float, int]]) -> list[Score]:
    rows = [Score("tatoeba", "test", lang, "accuracy", value, main=True, n=n) for lang, (value, n) in values.items()]
    rows += [Score("tatoeba", "test", lang, "accuracy_x2pivot", 0.0, n=n) for lang, (_, n) in values.items()]
    rows.append(Score("tatoeba", "test", "avg", "accuracy", 50.0, n=len(values)))
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
