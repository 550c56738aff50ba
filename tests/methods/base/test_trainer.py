"""The shared trainer's logging: `report_to: tensorboard` leaves event files in the run's logs/ folder, which
outlive the checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.environment import IncompatibleEnvironmentError
from polyembed.methods.base import train
from polyembed.methods.base.trainer import LOGS_FOLDER
from tests.helpers import PAIRS, tiny_sentence_transformer

pytestmark = pytest.mark.usefixtures("offline_cache")


def _distill(tmp_path: Path, **extra: object) -> object:
    teacher = tiny_sentence_transformer(tmp_path / "teacher", seed=0)
    student = tiny_sentence_transformer(tmp_path / "student", seed=1)
    tsv = tmp_path / "en-de.tsv"
    tsv.write_text("".join(f"{en}\t{de}\n" for en, de in PAIRS), encoding="utf-8")
    return train("distill", teacher=str(teacher), student=str(student), languages=["de"], datasets=[],
                 parallel_files=[f"de={tsv}"], batch_size=8, max_steps=4, eval_steps=2, dev_pairs_per_source=10,
                 dev_sts_pairs=0, precision="fp32", output_dir=str(tmp_path / "run"), show_progress=False, **extra)


def test_tensorboard_logs_losses_and_dev_metrics_into_the_run(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    result = _distill(tmp_path, report_to="tensorboard", keep_checkpoints=False)
    logs = Path(result.output_dir) / LOGS_FOLDER
    events = list(logs.rglob("events.out.tfevents.*"))
    assert events and not (Path(result.output_dir) / "checkpoints").exists()
    accumulator = EventAccumulator(str(events[0].parent))
    accumulator.Reload()
    tags = accumulator.Tags()["scalars"]
    assert "train/loss" in tags and any(tag.startswith("eval/") for tag in tags)
    assert [event.step for event in accumulator.Scalars("train/loss")][-1] == 4


def test_a_missing_logger_package_stops_before_training(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import polyembed.environment as environment

    real = environment.installed_version
    monkeypatch.setattr(environment, "installed_version",
                        lambda name: None if name == "trackio" else real(name))
    with pytest.raises(IncompatibleEnvironmentError, match="trackio is not installed"):
        _distill(tmp_path, report_to="trackio")
    assert not (tmp_path / "run").exists()
