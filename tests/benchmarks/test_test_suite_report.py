"""The fresh-clone study: its runner reads pytest's summary from a real command's output, and its renderer
(tests/benchmarks/fixtures/test-suite: made up for the test, in the layout `python -m benchmarks.test_suite.run
run` saves) shows every step and the parallel run's cut against the 35 % goal, byte-stable; a smaller cut is
called a miss; without stored results the docs stay."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.benchmarks.helpers import docs_kept_without, rendered_twice, stored_report

SECTIONS = "# Benchmarks\n\n<!-- test-suite:start -->\n<!-- test-suite:end -->\n\nAfter\n"
MODULE = "benchmarks.test_suite.render"
FIXTURE = "test-suite"


def test_a_step_is_timed_and_its_pytest_summary_read(tmp_path: Path) -> None:
    from benchmarks.test_suite.run import timed

    command = "echo collecting; echo '==== 12 passed, 1 skipped, 3 deselected in 4.25s (0:00:04) ===='"
    step = timed(command, tmp_path, dict(os.environ), tmp_path / "step.log")
    assert step["exit_code"] == 0 and step["wall_seconds"] >= 0
    assert step["pytest_summary"] == "12 passed, 1 skipped, 3 deselected in 4.25s (0:00:04)"
    assert step["pytest_seconds"] == 4.25
    assert "collecting" in (tmp_path / "step.log").read_text(encoding="utf-8")
    failed = timed("echo broken; exit 3", tmp_path, dict(os.environ), tmp_path / "failed.log")
    assert failed["exit_code"] == 3 and failed["last_line"] == "broken" and "pytest_seconds" not in failed


def test_ci_has_no_data_root_and_fresh_caches_are_empty_folders_of_their_own(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.test_suite.run import clone_environment

    monkeypatch.setenv("POLYEMBED_DATA", "/somewhere")
    env = clone_environment(tmp_path, empty_caches=True)
    assert "POLYEMBED_DATA" not in env and env["HF_HUB_OFFLINE"] == "1"
    assert {env[name] for name in ("POLYEMBED_CACHE", "UV_CACHE_DIR", "PIP_CACHE_DIR")} == {
        str(tmp_path / folder) for folder in ("polyembed", "uv", "pip")}
    kept = clone_environment(tmp_path, empty_caches=False)
    assert kept.get("UV_CACHE_DIR") == os.environ.get("UV_CACHE_DIR") and "POLYEMBED_DATA" not in kept


def test_the_section_renders_every_step_and_the_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report(MODULE, FIXTURE, SECTIONS, tmp_path / "benchmarks.md", tmp_path, monkeypatch)
    first = rendered_twice(module, docs)
    assert "`python -m benchmarks.test_suite.run run --empty-caches --demo` (AMD EPYC (AVX-512 with VNNI)" in first
    assert "new, empty uv, pip and polyembed caches" in first
    assert "| setup | `make setup` | 361 s (6 min 01 s) | exit 0 |" in first  # its last line names local paths
    assert ("| serial | `make test PYTEST_WORKERS='-p no:xdist'` | 515 s (8 min 35 s) | exit 0; 1598 passed, 2 "
            "skipped in 508.07s (0:08:28) |") in first
    assert "| demo | `make demo` | 299 s (4 min 59 s) | exit 0; wrote results/demo/report.md / results" in first
    assert ("**The parallel run's pytest time is 41% below the serial run's** (302 s against 508 s; wall time 40% "
            "below), which meets the goal of 35%.") in first
    assert "0000000" not in first  # no commit hash in user docs


def test_a_small_cut_is_called_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, results = stored_report(MODULE, FIXTURE, SECTIONS, tmp_path / "benchmarks.md", tmp_path,
                                          monkeypatch)
    payload = json.loads((results / "results.json").read_text(encoding="utf-8"))
    payload["steps"]["parallel"]["pytest_seconds"] = 400.0
    (results / "results.json").write_text(json.dumps(payload), encoding="utf-8")
    module.render()
    assert "is 21% below the serial run's** (400 s against 508 s" in docs.read_text(encoding="utf-8")
    assert "which misses the goal of 35%" in docs.read_text(encoding="utf-8")
    payload["steps"]["serial"]["exit_code"] = 2
    (results / "results.json").write_text(json.dumps(payload), encoding="utf-8")
    module.render()
    assert "The two test runs did not both pass: no comparison." in docs.read_text(encoding="utf-8")


def test_without_stored_results_the_docs_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs_kept_without(MODULE, FIXTURE, SECTIONS, "results.json", tmp_path, monkeypatch)


def test_a_page_without_the_section_gets_the_command_that_fills_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, results = stored_report(MODULE, FIXTURE, "# Benchmarks\n", tmp_path / "benchmarks.md", tmp_path,
                                          monkeypatch)
    (results / "results.json").unlink()
    module.render()
    assert docs.read_text(encoding="utf-8") == (
        "# Benchmarks\n\n<!-- test-suite:start -->\nNot measured on this machine yet: `python -m "
        "benchmarks.test_suite.run run --empty-caches --demo`.\n<!-- test-suite:end -->\n")
