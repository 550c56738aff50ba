"""Before and after: every subset with its interval, forgetting per language, and the report and JSON that
`evaluate(..., baseline=...)` writes."""

import json
import math
from pathlib import Path

import pytest

from polyembed.eval.api import evaluate
from polyembed.eval.base import Score
from polyembed.eval.compare import compare_scores, score_half_width
from tests.conftest import HashingEncoder
from tests.eval.mock_tasks import PairSimilarityMock


def _score(task: str, subset: str, value: float, n: int | None, metric: str = "accuracy") -> Score:
    return Score(task=task, split="test", subset=subset, metric=metric, value=value, main=True, n=n)


def test_intervals_follow_the_metric_and_the_row_count() -> None:
    assert score_half_width("accuracy", 50.0, 1000) == pytest.approx(100 * 1.96 * math.sqrt(0.25 / 1000))
    assert score_half_width("accuracy", 50.0, 100) > score_half_width("accuracy", 50.0, 1000)
    wide, narrow = score_half_width("spearman", 60.0, 200), score_half_width("spearman", 60.0, 2000)
    assert wide > narrow > 0
    assert score_half_width("aer", 20.0, 500) is None and score_half_width("accuracy", 80.0, None) is None


def test_every_subset_is_a_row_and_only_clear_changes_are_marked() -> None:
    before = [_score("tatoeba", "deu", 95.0, 1000), _score("tatoeba", "yor", 40.0, 1000),
              _score("sts", "en-de", 70.0, 1379, "spearman")]
    after = [_score("tatoeba", "deu", 94.8, 1000), _score("tatoeba", "yor", 60.0, 1000),
             _score("sts", "en-de", 71.0, 1379, "spearman"), _score("tatoeba", "zul", 50.0, 1000)]
    comparison = compare_scores(before, after, "trained", "base", trained_languages=["yo"])
    rows = {(r.task, r.subset): r for r in comparison.rows}
    assert set(rows) == {("tatoeba", "deu"), ("tatoeba", "yor"), ("sts", "en-de")}  # scored in both only
    assert rows[("tatoeba", "yor")].clear and rows[("tatoeba", "yor")].change == pytest.approx(20.0)
    assert not rows[("tatoeba", "deu")].clear and not rows[("sts", "en-de")].clear
    [forgetting] = comparison.forgetting
    assert {r.language: r.group for r in forgetting.languages} == {"deu": "not_trained", "yor": "trained"}
    text = comparison.markdown()
    assert "| tatoeba | yor | 40.00 | 60.00 | **+20.00 ±" in text
    assert "| tatoeba | deu | 95.00 | 94.80 | -0.20 ±" in text
    assert "Forgetting, LASER Tatoeba" in text


def test_evaluate_with_a_baseline_writes_both_and_the_comparison(tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = evaluate(HashingEncoder(16, name="after"), [PairSimilarityMock()], out_dir=out, data_root=tmp_path,
                      show_progress=False, baseline=HashingEncoder(256, name="before"), trained_languages=["de"])
    assert result.baseline is not None and result.baseline.model == "before"
    assert [(r.subset, r.before, r.after) for r in result.comparison.rows] == [
        (s.subset, b.value, s.value) for b, s in zip(result.baseline.scores, result.scores, strict=True)]
    data = json.loads((out / "results.json").read_text())
    assert data["model"] == "after" and data["baseline"]["model"] == "before"
    assert {row["subset"] for row in data["comparison"]["rows"]} == {"en", "de", "avg"}
    report = (out / "report.md").read_text()
    assert "## Compared with `before`" in report and "| mock-pairs | de |" in report
