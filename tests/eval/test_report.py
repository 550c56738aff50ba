"""Reports: results.json rows, the markdown tables (averages last, missing values as a dash), the one-number
summary per task."""

from __future__ import annotations

import json
import math
from pathlib import Path

from polyembed.eval.base import Score
from polyembed.eval.report import is_average, score_table, task_summary, write_report_md, write_results_json
from polyembed.eval.runner import run_tasks
from tests.eval.mock_tasks import PairSimilarityMock


def _score(subset: str, metric: str, value: float, main: bool = True) -> Score:
    return Score("t", "test", subset, metric, value, main=main, n=10)


def test_averages_are_recognised_and_listed_last() -> None:
    assert is_average("avg") and is_average("cross-avg") and not is_average("en-avg-x") and not is_average("de")
    table = score_table([_score("avg", "spearman", 50.0), _score("de", "spearman", 40.0),
                         _score("de", "pearson", math.nan, main=False), _score("en", "spearman", 60.0)])
    rows = table.splitlines()
    assert rows[0] == "| subset | spearman | pearson | n |"
    assert rows[2].startswith("| de | 40.00 | — |") and rows[-1].startswith("| **avg** | 50.00 |")
    assert score_table([]) == "_no scores_\n"


def test_task_summary_prefers_the_avg_row_else_the_mean_of_measured_subsets() -> None:
    assert task_summary([_score("de", "s", 40.0), _score("avg", "s", 47.0)]) == 47.0
    assert task_summary([_score("de", "s", 40.0), _score("en", "s", 60.0), _score("x-avg", "s", 1.0)]) == 50.0
    assert math.isnan(task_summary([_score("de", "s", 40.0, main=False)]))


def test_results_json_and_report_md_from_a_run(hashing_encoder, tmp_path: Path) -> None:
    result = run_tasks(hashing_encoder, [PairSimilarityMock()], data_root=tmp_path, show_progress=False)
    data = json.loads(write_results_json(result, tmp_path / "results.json").read_text())
    task = data["tasks"][0]
    assert data["model"] == "hashing-test" and task["task"] == "mock-pairs" and task["languages"] == ["en", "de"]
    assert {row["subset"] for row in task["scores"]} == {"en", "de", "avg"}
    assert all(row["model"] == "hashing-test" for row in task["scores"])
    text = write_report_md(result, tmp_path / "report.md", {"mock-pairs": ["plots/mock.png"]}).read_text()
    assert "## Summary" in text and "| mock-pairs | STS | cosine |" in text and "![mock-pairs](plots/mock.png)" in text
