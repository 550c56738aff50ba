"""Data-parallel training with torchrun: two gloo processes on CPU train the same run as one process with the
whole batch (same rows per optimizer step, gradients averaged over the processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import PAIRS, finished, reaped, tiny_sentence_transformer

REPO = Path(__file__).resolve().parents[3]


def _train(config: Path, processes: int, env: dict[str, str]) -> subprocess.Popen:
    """The run of `config` on `processes` gloo processes (torchrun) or in one plain process, started."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(processes),
                "--master-port", str(29500 + os.getpid() % 1000 + processes)] if processes > 1 else [sys.executable]
    return subprocess.Popen([*launcher, "-m", "polyembed", "train", "distill", "--config", str(config)],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_two_gloo_processes_match_one_process_with_the_whole_batch(tmp_path: Path) -> None:
    tsv = tmp_path / "en-de.tsv"
    tsv.write_text("".join(f"{en}\t{de}\n" for en, de in PAIRS), encoding="utf-8")
    options = {
        "teacher": str(tiny_sentence_transformer(tmp_path / "teacher", seed=0)),
        "student": str(tiny_sentence_transformer(tmp_path / "student", seed=1)),
        "languages": ["de"], "datasets": [], "parallel_files": [f"de={tsv}"],
        "max_steps": 10, "eval_steps": 5, "learning_rate": 1e-3, "dev_pairs_per_source": 10, "dev_sts_pairs": 0,
        "precision": "fp32", "dropout": 0.0,  # dropout masks differ per process; without it the runs can agree
    }
    # CPU processes on a GPU machine too: there, each rank would otherwise ask for a GPU of its own
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1",
           "CUDA_VISIBLE_DEVICES": ""}
    started = {}
    for processes, batch in ((1, 14), (2, 7)):  # side by side, one torch thread each
        config = tmp_path / f"run-{processes}.yaml"
        out = tmp_path / f"run-{processes}"
        config.write_text(yaml.safe_dump({**options, "batch_size": batch, "output_dir": str(out)}))
        started[processes] = _train(config, processes, {**env, "POLYEMBED_CACHE": str(tmp_path / f"cache-{processes}")})
    with reaped(*started.values()):  # after a failure, the other run is not left behind
        for run in started.values():
            finished(run, timeout=600)
    runs = {}
    for processes in started:
        out = tmp_path / f"run-{processes}"
        runs[processes] = json.loads((out / "training.json").read_text())
        assert (out / "model" / "config_sentence_transformers.json").is_file()
    single, double = runs[1], runs[2]
    # 70 training rows = 5 steps of 14 rows: the same rows per step (7 from each process), the same schedule.
    assert single["steps"] == double["steps"] == 10
    assert single["train_pairs_seen"] == double["train_pairs_seen"] == 140
    assert [h["step"] for h in double["history"]] == [5, 10]
    for key in ("eval_dev_negative_mse", "eval_dev_mse_translation"):  # agreed to 1e-6 when written
        a, b = single["history"][-1][key], double["history"][-1][key]
        assert a == pytest.approx(b, rel=1e-4), (key, a, b)
