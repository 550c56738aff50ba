"""The demo's pieces that need no training: task selection for the trained languages and headline numbers."""

from __future__ import annotations

import math

import pytest

from polyembed.demo import (
    comparison_markdown,
    demo_config_path,
    demo_tasks,
    format_headline,
    headline_metrics,
    tatoeba_interval,
    teacher_tasks,
)
from polyembed.eval.base import Score
from polyembed.eval.registry import get_task
from polyembed.eval.runner import EvaluationResult, TaskRun


def _result(name: str, rows: list[tuple[str, str, str, float]]) -> EvaluationResult:
    runs = []
    for task_name in dict.fromkeys(r[0] for r in rows):
        scores = [
            Score(t, "test", subset, metric, value, main=True) for t, subset, metric, value in rows if t == task_name
        ]
        runs.append(TaskRun(task=get_task("sts17"), scores=scores, seconds=0.0, sentences_encoded=0))
    return EvaluationResult(name, runs, 0.0)


ROWS = [
    ("sts17", "en-en", "spearman", 80.0),
    ("sts17", "ar-en", "spearman", 60.0),
    ("sts17", "es-en", "spearman", 70.0),
    ("sts17", "tr-en", "spearman", 50.0),
    ("sts17", "ar-ar", "spearman", 40.0),
    ("sts17", "es-es", "spearman", 85.0),
    ("sts17", "mono-avg", "spearman", 68.0),
    ("sts17", "es-en-wmt", "spearman", 5.0),
    ("sts17", "cross-avg", "spearman", 45.0),
    ("stsb-multi-mt", "en", "spearman", 90.0),
    ("stsb-multi-mt", "en-de", "spearman", 80.0),
    ("stsb-multi-mt", "de", "spearman", 82.0),
    ("stsb-multi-mt", "cross-avg", "spearman", 80.0),
    ("language-bias", "all", "difference", -3.0),
    ("tatoeba", "deu", "accuracy", 90.0),
    ("tatoeba", "kaz", "accuracy", 70.0),
    ("kardes-sts", "en", "spearman", 75.0),
    ("kardes-sts", "en-kk", "spearman", 65.0),
    ("kardes-sts", "kk", "spearman", 73.0),
    ("kardes-sts", "avg", "spearman", 71.0),
]


def test_headline_uses_tracks_4a_only_and_english_on_same_data() -> None:
    head = headline_metrics(_result("m", ROWS))
    assert head["cross_sts"] == pytest.approx((60 + 70 + 50 + 80) / 4)  # 4b (es-en-wmt) and averages left out
    assert head["english_sts"] == pytest.approx((80 + 90) / 2)
    assert head["language_bias_gap"] == -3.0 and head["sts17_es_en_4b"] == 5.0
    assert head["tatoeba_accuracy"] == 80.0 and head["kardes_cross_sts"] == 65.0
    assert head["mono_sts"] == pytest.approx((40 + 85 + 82 + 73) / 4)  # English and averages left out


def test_bias_gap_is_shown_with_its_bootstrap_interval() -> None:
    rows = [
        *ROWS,
        ("language-bias", "all", "difference-ci-low", -4.5),
        ("language-bias", "all", "difference-ci-high", -1.25),
    ]
    head = headline_metrics(_result("m", rows))
    assert (head["language_bias_ci95_low"], head["language_bias_ci95_high"]) == (-4.5, -1.25)
    assert format_headline("language_bias_gap", head) == "-3.00 [-4.50, -1.25]"
    assert format_headline("language_bias_gap", headline_metrics(_result("m", ROWS))) == "-3.00"  # no bootstrap
    assert "| language bias gap (joined - mean) [95% CI] | -3.00 [-4.50, -1.25] |" in comparison_markdown(
        {"teacher": _result("m", rows)}
    )


def test_tatoeba_mean_carries_a_normal_interval_from_its_row_counts() -> None:
    """90% over 100 rows and 70% over 400 rows: variance (0.09/100 + 0.21/400) / 4, one row counted once."""
    rows = [("tatoeba", "deu", 90.0, 100), ("tatoeba", "kaz", 70.0, 400), ("tatoeba", "avg", 80.0, 2)]
    result = EvaluationResult("m", [TaskRun(task=get_task("tatoeba"), scores=[
        Score(t, "test", subset, "accuracy", value, main=True, n=n) for t, subset, value, n in rows
    ], seconds=0.0, sentences_encoded=0)], 0.0)
    half = 196 * math.sqrt((0.09 / 100 + 0.21 / 400) / 4)
    assert tatoeba_interval(result) == pytest.approx((80 - half, 80 + half))
    head = headline_metrics(result)
    assert format_headline("tatoeba_accuracy", head) == f"80.00 [{80 - half:.2f}, {80 + half:.2f}]"
    assert math.isnan(tatoeba_interval(_result("m", ROWS))[0])  # no row counts: no interval, shown bare
    assert format_headline("tatoeba_accuracy", headline_metrics(_result("m", ROWS))) == "80.00"


def test_missing_tasks_give_nan_not_errors() -> None:
    head = headline_metrics(_result("m", ROWS[:4]))
    assert math.isnan(head["tatoeba_accuracy"]) and math.isnan(head["language_bias_gap"])


def test_comparison_ratio_is_against_the_teacher_english() -> None:
    teacher = _result("t", ROWS)
    student = _result("s", [(t, s, m, v + 10 if "-" in s else v) for t, s, m, v in ROWS])
    text = comparison_markdown({"teacher": teacher, "distilled student": student})
    assert "| cross / teacher English (goal >= 90%) | 76.5% | 88.2% |" in text  # 65/85 and 75/85


def test_the_teacher_is_scored_on_english_sts_only() -> None:
    tasks = [get_task(name, **kwargs) for name, kwargs in teacher_tasks()]
    assert [(t.name, list(t.languages)) for t in tasks] == [("sts17", ["en-en"]), ("stsb-multi-mt", ["en"])]
    english_only = [row for row in ROWS if row[1] in ("en-en", "en")]
    teacher = _result("t", english_only)
    student = _result("s", ROWS)
    text = comparison_markdown({"teacher": teacher, "distilled student": student})
    assert "| cross / teacher English (goal >= 90%) | - | 76.5% |" in text  # the ratio needs only English STS
    assert "| Tatoeba accuracy (trained languages) [95% CI] | - | 80.00 |" in text  # not measured: '-', not 'nan'


def test_demo_tasks_follow_the_trained_languages() -> None:
    tasks = dict(demo_tasks(["de", "kk", "ha", "sw"]))
    assert tasks["stsb-multi-mt"]["languages"] == ["en", "de"]
    assert tasks["kardes-sts"]["languages"] == ["en", "kk"]
    assert tasks["tatoeba"]["languages"] == ["deu", "kaz", "swh"]  # no LASER Tatoeba for Hausa
    for name, kwargs in tasks.items():
        get_task(name, **kwargs)  # every option is accepted by its task
    assert demo_config_path().is_file()


def test_demo_report_lists_the_kept_checkpoints_dev_measures_per_language() -> None:
    from polyembed.demo_report import per_language_dev_table

    best = {"step": 48, "eval_dev_negative_mse": -0.2, "eval_dev_mean_accuracy": 0.9,
            "eval_dev_de_mse_english": 0.1, "eval_dev_de_mse_translation": 0.3, "eval_dev_de_accuracy": 0.95,
            "eval_dev_ha_mse_english": 0.1, "eval_dev_ha_mse_translation": 0.5, "eval_dev_ha_accuracy": 0.85}
    table = "\n".join(per_language_dev_table(best))
    assert "step 48" in table and "| de | 0.1000 | 0.3000 | 0.950 |" in table
    assert "| ha | 0.1000 | 0.5000 | 0.850 |" in table
    assert "mean" not in table.split("per language:")[1] and per_language_dev_table({}) == []


def test_forgetting_is_scored_in_every_tatoeba_and_tico_language(tmp_path, shared_data) -> None:
    """Two tiny students on the real LASER Tatoeba (3 rows per language, 112 languages) and TICO-19 (4 rows, 10
    languages), split by training."""
    from polyembed.demo import evaluate_forgetting
    from polyembed.models.loading import load_model
    from tests.helpers import tiny_sentence_transformer

    before = load_model(str(tiny_sentence_transformer(tmp_path / "a", seed=0)))
    after = load_model(str(tiny_sentence_transformer(tmp_path / "b", seed=1)))
    reports = evaluate_forgetting(
        before, after, ["de", "kk", "ha"], shared_data, max_rows=3, show_progress=False, anchored_languages=["it"],
        long_rows=4,
    )
    long = reports["tico19-retrieval"]  # long sentences: all 10 TICO-19 languages, ha trained
    assert len(long.languages) == 10 and all(row.test_pairs == 4 for row in long.languages)
    assert [row.language for row in long.group("trained")] == ["ha"]
    report = reports["tatoeba"]
    assert len(report.languages) == 112 and all(row.test_pairs == 3 for row in report.languages)
    assert sorted(row.language for row in report.group("trained")) == ["deu", "kaz"]  # LASER Tatoeba has no Hausa
    assert [row.language for row in report.group("anchored")] == ["ita"]
    assert len(report.group("not_trained")) == 109
    assert any(row.change != 0 for row in report.languages)  # two different models
    assert "at most 3 pairs" in report.markdown()


def test_demo_report_gives_the_recipe_and_says_when_a_run_changed_it() -> None:
    import yaml

    from polyembed.demo_report import RECIPE_CHOICES, recipe_lines

    preset = yaml.safe_load(demo_config_path().read_text(encoding="utf-8"))
    assert {option: preset[option] for option in RECIPE_CHOICES} == {
        option: value for option, (value, _) in RECIPE_CHOICES.items()
    }, "the report's reasons must describe the packaged demo config"
    kept = recipe_lines(preset)
    assert kept[0] == "## Recipe"
    assert any(line.startswith("- `teacher: minilm-en`:") for line in kept)
    changed = "\n".join(recipe_lines({**preset, "teacher": "mpnet-en"}))
    assert "`teacher: mpnet-en` (your setting; the demo uses `minilm-en`" in changed


def test_the_report_says_which_length_the_saved_student_reads() -> None:
    from polyembed.demo_report import length_line

    kept = length_line({"training": 128, "saved": 512, "saved_from": "starting model"})
    assert kept == ("The saved student reads up to 512 tokens per sentence (the untrained student's own); "
                    "training truncated at 128.")
    assert "set by `inference_max_seq_length`" in length_line(
        {"training": 128, "saved": 256, "saved_from": "inference_max_seq_length"})
    assert length_line({}) == ""


def test_the_report_has_both_forgetting_sections_and_the_saved_length(tmp_path) -> None:
    """`_write_report` on small stand-ins: the Tatoeba and TICO-19 sections, the saved length, results.json."""
    import json

    from polyembed.demo import _write_report
    from polyembed.eval.forgetting import forgetting_report

    def scores(task: str, values: dict[str, float]) -> list[Score]:
        return [Score(task, "test", code, "accuracy", value, main=True, n=100) for code, value in values.items()]

    forgetting = {
        "tatoeba": forgetting_report(scores("tatoeba", {"deu": 97.0}), scores("tatoeba", {"deu": 98.0}), ["de"]),
        "tico19-retrieval": forgetting_report(scores("tico19-retrieval", {"ha": 76.0, "am": 91.0}),
                                              scores("tico19-retrieval", {"ha": 66.0, "am": 88.0}), ["ha"],
                                              task="tico19-retrieval"),
    }
    results = {"teacher": _result("t", ROWS), "untrained student": _result("u", ROWS),
               "distilled student": _result("s", ROWS)}
    training = {"steps": 2, "train_pairs_seen": 64, "pairs_per_second": 1.0, "peak_memory_mb": 1.0, "history": [],
                "best": {}, "details": {"sources": []},
                "max_seq_length": {"training": 128, "saved": 512, "saved_from": "starting model"}}
    summary = {"seconds": 1.0, "evaluation_precision": "fp32", "training": training,
               "config": {"teacher": "minilm-en", "student": "me5-small", "languages": ["de", "ha"]},
               "forgetting": forgetting["tatoeba"].to_dict(),
               "long_sentence_forgetting": forgetting["tico19-retrieval"].to_dict()}
    _write_report(tmp_path, results, summary, forgetting)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Forgetting on long sentences: TICO-19, untrained -> distilled student" in report
    assert report.index("| ha | trained | 100 | 76.00 | 66.00 | -10.00 |") < report.index("| am | not trained")
    assert "reads up to 512 tokens per sentence (the untrained student's own); training truncated at 128" in report
    saved = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert saved["long_sentence_forgetting"]["task"] == "tico19-retrieval"
