import json
from pathlib import Path

import pytest

from polyembed.errors import DataError
from polyembed.eval.api import evaluate
from polyembed.eval.runner import EmbeddingCache, run_tasks
from tests.eval.mock_tasks import FailingMock, PairSimilarityMock


def test_cache_encodes_each_unique_sentence_once(hashing_encoder, tmp_path: Path) -> None:
    cache = EmbeddingCache(hashing_encoder, tmp_path, show_progress=False)
    first = cache.embed(["a", "b", "a"])
    second = cache.embed(["b", "c"])
    assert hashing_encoder.calls == [2, 1]
    assert cache.encoded_count == 3 and cache.requested_count == 5
    assert first.shape == (3, 256) and (first[0] == first[2]).all() and (first[1] == second[0]).all()
    assert abs(float((first**2).sum(1)[0]) - 1.0) < 1e-5


def test_run_tasks_collects_scores_and_timing(hashing_encoder, tmp_path: Path) -> None:
    result = run_tasks(hashing_encoder, [PairSimilarityMock()], data_root=tmp_path, show_progress=False)
    run = result.runs[0]
    assert {s.subset for s in run.scores} == {"en", "de", "avg"}
    assert run.sentences_encoded == 8 and all(s.main for s in run.scores)
    assert result.environment["torch"].startswith("2.")


def test_evaluate_writes_report_and_plots(hashing_encoder, tmp_path: Path) -> None:
    out = tmp_path / "report"
    evaluate(hashing_encoder, [PairSimilarityMock()], out_dir=out, data_root=tmp_path, show_progress=False)
    data = json.loads((out / "results.json").read_text())
    assert data["model"] == "hashing-test" and data["tasks"][0]["task"] == "mock-pairs"
    rows = data["tasks"][0]["scores"]
    assert {"task", "split", "subset", "metric", "value", "model"} <= set(rows[0])
    report = (out / "report.md").read_text()
    assert "## mock-pairs" in report and "| en |" in report and "plots/mock-pairs.png" in report
    assert (out / "plots" / "mock-pairs.png").stat().st_size > 1000
    assert not [p for p in out.iterdir() if p.name.startswith(".polyembed-staging")]


def test_failed_run_leaves_no_partial_output(hashing_encoder, tmp_path: Path) -> None:
    out = tmp_path / "report"
    with pytest.raises(DataError, match="corrupt.txt:3"):
        evaluate(hashing_encoder, [PairSimilarityMock(), FailingMock()], out_dir=out, data_root=tmp_path,
                 show_progress=False)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_rerun_replaces_only_the_reports_own_files(hashing_encoder, tmp_path: Path) -> None:
    out = tmp_path / "report"
    evaluate(hashing_encoder, [PairSimilarityMock()], out_dir=out, data_root=tmp_path, show_progress=False)
    earlier_plots = sorted((out / "plots").iterdir())
    assert earlier_plots
    (out / "thesis.txt").write_text("mine")
    (out / "notes").mkdir()
    (out / "notes" / "n.txt").write_text("mine too")
    (out / "plots" / "drawn-by-hand.png").write_bytes(b"mine")
    evaluate(hashing_encoder, [PairSimilarityMock(languages=["en"])], out_dir=out, data_root=tmp_path,
             show_progress=False, plots=False)
    # The earlier report's plots go (this report has none); everything the user put there stays.
    assert not any(path.exists() for path in earlier_plots)
    assert (out / "thesis.txt").read_text() == "mine" and (out / "notes" / "n.txt").read_text() == "mine too"
    assert (out / "plots" / "drawn-by-hand.png").read_bytes() == b"mine"
    rows = json.loads((out / "results.json").read_text())["tasks"][0]["scores"]
    assert {row["subset"] for row in rows} == {"en", "avg"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    assert not [p for p in out.iterdir() if p.name.startswith(".polyembed-staging")]


def test_task_options_are_checked(tmp_path: Path) -> None:
    from polyembed.errors import PolyembedError
    from polyembed.eval.registry import get_task

    assert get_task("tatoeba", languages="deu, amh").languages == ("deu", "amh")
    with pytest.raises(PolyembedError, match="has no option foo"):
        get_task("tatoeba", foo=1)
    with pytest.raises(PolyembedError, match="multi-way"):
        get_task("parallel-retrieval", dataset="tico19")


def test_only_the_chosen_subsets_datasets_are_required(tmp_path: Path, shared_data: Path) -> None:
    from polyembed.errors import DatasetNotFoundError
    from polyembed.eval.api import check_datasets
    from polyembed.eval.registry import get_task

    (tmp_path / "tico19-test").symlink_to(shared_data / "tico19-test")
    check_datasets([get_task("comparable-mining", languages=["tico19:fr"])], tmp_path)
    with pytest.raises(DatasetNotFoundError, match="tatoeba-challenge"):
        check_datasets([get_task("comparable-mining")], tmp_path)
