"""The run folder: created only after the checks, removed again when a run fails before its first
checkpoint, kept once a checkpoint exists, and never deleted unless it is a polyembed run."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.errors import PolyembedError
from polyembed.methods.base import RunFolder, TrainConfig


def _fail_inside(run: RunFolder, config: TrainConfig, make_checkpoint: bool = False) -> None:
    with pytest.raises(RuntimeError), run.started(config, resume=False, overwrite=False):
        assert (run.path / "config.yaml").is_file()
        if make_checkpoint:
            (run.checkpoints / "checkpoint-5").mkdir(parents=True)
            (run.checkpoints / "checkpoint-5" / "trainer_state.json").write_text("{}")
        raise RuntimeError("model failed to load")


def test_a_failed_start_leaves_nothing_behind(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "a" / "run")
    _fail_inside(run, TrainConfig(output_dir=str(run.path)))
    assert list(tmp_path.iterdir()) == []
    mine = tmp_path / "mine"
    mine.mkdir()  # the user's empty folder stays, emptied of what the run wrote
    _fail_inside(RunFolder(mine), TrainConfig(output_dir=str(mine)))
    assert mine.is_dir() and list(mine.iterdir()) == []


def test_a_run_with_a_checkpoint_is_kept_for_resume(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    config = TrainConfig(output_dir=str(run.path))
    _fail_inside(run, config, make_checkpoint=True)
    assert run.last_checkpoint() == run.checkpoints / "checkpoint-5"
    run.check(config, resume=True, overwrite=False)
    with pytest.raises(PolyembedError, match=r"max_steps: None in the run, 9 now"):
        run.check(TrainConfig(output_dir=str(run.path), max_steps=9), resume=True, overwrite=False)
    with pytest.raises(PolyembedError, match="not empty"):
        run.check(config, resume=False, overwrite=False)
    run.check(config, resume=False, overwrite=True)  # a polyembed run: --overwrite may replace it


def test_overwrite_never_deletes_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    (tmp_path / "thesis.txt").write_text("mine")
    with pytest.raises(PolyembedError, match="not a polyembed run folder"):
        RunFolder(tmp_path).check(TrainConfig(output_dir=str(tmp_path)), resume=False, overwrite=True)
    assert (tmp_path / "thesis.txt").read_text() == "mine"


def test_a_run_folder_older_than_an_option_resumes_at_its_default(tmp_path: Path) -> None:
    """A config.yaml written before an option existed lacks it: the run trained as the option's default, so
    resuming with the default works and resuming with another value is refused."""
    import yaml

    run = RunFolder(tmp_path / "run")
    config = TrainConfig(output_dir=str(run.path))
    _fail_inside(run, config, make_checkpoint=True)
    saved = yaml.safe_load((run.path / "config.yaml").read_text())
    del saved["checkpoint"], saved["lr_schedule"]
    (run.path / "config.yaml").write_text(yaml.safe_dump(saved))
    run.check(config, resume=True, overwrite=False)
    with pytest.raises(PolyembedError, match=r"checkpoint: 'best' in the run, 'final' now"):
        run.check(TrainConfig(output_dir=str(run.path), checkpoint="final"), resume=True, overwrite=False)


@pytest.mark.parametrize("state", ["", '{"global_step": 1', None])
def test_resume_skips_a_checkpoint_killed_while_saving(tmp_path: Path, state: str | None) -> None:
    """The trainer writes trainer_state.json last and in place: a kill can leave it missing, empty or cut
    short, and resuming from that checkpoint would crash on its state."""
    run = RunFolder(tmp_path / "run")
    for step, text in ((5, '{"global_step": 5}'), (10, state)):
        (run.checkpoints / f"checkpoint-{step}").mkdir(parents=True)
        if text is not None:
            (run.checkpoints / f"checkpoint-{step}" / "trainer_state.json").write_text(text)
    assert run.last_checkpoint() == run.checkpoints / "checkpoint-5"


def test_a_user_config_yaml_does_not_make_a_folder_a_run(tmp_path: Path) -> None:
    """A folder of the user's files with their own config.yaml (a database's, say) is refused by --overwrite,
    and nothing in it is touched."""
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "thesis.txt").write_text("thesis")
    (project / "config.yaml").write_text("port: 5432\n")
    run = RunFolder(project)
    config = TrainConfig(output_dir=str(project))
    with pytest.raises(PolyembedError, match=r"not a polyembed run folder \(no \.polyembed-run\.json\)"):
        run.check(config, resume=False, overwrite=True)
    assert (project / "thesis.txt").read_text() == "thesis"
    assert (project / "config.yaml").read_text() == "port: 5432\n"
    assert (project / "src").is_dir()


def test_overwrite_replaces_only_what_the_run_wrote(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    config = TrainConfig(output_dir=str(run.path))
    _fail_inside(run, config, make_checkpoint=True)
    assert run.is_run_folder()
    (run.path / "notes.txt").write_text("my notes")  # the user's file, added to the run folder later
    run.check(config, resume=False, overwrite=True)
    with run.started(config, resume=False, overwrite=True):
        assert not run.checkpoints.exists()  # the earlier run's checkpoints are gone
        assert (run.path / "config.yaml").is_file() and run.is_run_folder()
    assert (run.path / "notes.txt").read_text() == "my notes"


def test_a_record_that_is_not_polyembed_s_does_not_count(tmp_path: Path) -> None:
    (tmp_path / ".polyembed-run.json").write_text("[1, 2]")
    (tmp_path / "thesis.txt").write_text("mine")
    with pytest.raises(PolyembedError, match="not a polyembed run folder"):
        RunFolder(tmp_path).check(TrainConfig(output_dir=str(tmp_path)), resume=False, overwrite=True)
    assert (tmp_path / "thesis.txt").read_text() == "mine"
