"""The run folder of a training run: checked before any model loads, created only after every check, removed
again when the run fails before its first checkpoint, and continued exactly by `--resume`.

Layout: `.polyembed-run.json` (the record that polyembed made this folder), `config.yaml` (the resolved
options), `checkpoints/checkpoint-N/` (Hugging Face trainer state), `model/` (the best checkpoint's model, saved
atomically) and `training.json` (the `TrainResult`). `--overwrite` replaces only a folder with that record, and
in it only the entries polyembed writes (`RUN_ENTRIES`): a user's own `config.yaml` in a folder of other files
never makes it a run folder.

In a run launched as several processes (torchrun, accelerate launch) the folder belongs to the main process:
the others skip the checks and never write here (`polyembed.methods.base.distributed`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from polyembed.config import dump_config
from polyembed.errors import PolyembedError, argument
from polyembed.methods.base.distributed import is_main_process
from polyembed.models.saving import save_model_atomically
from polyembed.outputs import atomic_write, check_output_dir, make_dirs, remove_created_dirs

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.yaml"
CHECKPOINT_DIR = "checkpoints"
TRAINER_STATE_FILE = "trainer_state.json"
HOUSEKEEPING_OPTIONS = frozenset({"keep_checkpoints", "report_to"})
"""Options that do not change what is trained: a resumed run may set them differently."""
MODEL_DIR = "model"
SUMMARY_FILE = "training.json"
RUN_RECORD = ".polyembed-run.json"
"""Written first into every run folder: what `--overwrite` checks before it deletes anything."""
RUN_ENTRIES = (RUN_RECORD, CONFIG_FILE, CHECKPOINT_DIR, MODEL_DIR, SUMMARY_FILE, "logs", "student-init")
"""The entries of a run folder that polyembed writes (the trainer's, the student's first copy, TensorBoard's):
the only ones `--overwrite` removes."""


class RunFolder:
    """One run's folder: what may be written there, and how a run starts, resumes and ends."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser().resolve()

    @property
    def checkpoints(self) -> Path:
        return self.path / CHECKPOINT_DIR

    @property
    def model_dir(self) -> Path:
        return self.path / MODEL_DIR

    def check(self, config: Any, resume: bool, overwrite: bool) -> None:
        """Before any model loads: a resumed run must have the same options (the error names those that
        differ); a fresh run needs an empty folder, and `overwrite` only ever deletes a polyembed run folder."""
        if not is_main_process():
            return
        check_output_dir(self.path, argument("--output-dir"))
        saved = self.path / CONFIG_FILE
        if resume:
            if saved.is_file():
                self._check_same_options(config)
            if (self.path / SUMMARY_FILE).is_file():  # the trainer would run one more step past the end
                raise PolyembedError(
                    f"{self.path} holds a finished run ({SUMMARY_FILE}; its model is in {self.model_dir}): nothing "
                    "to resume; pass --overwrite to train it again, or a new --output-dir"
                )
            return
        if self.path.is_dir() and any(self.path.iterdir()):
            if not overwrite:
                raise PolyembedError(
                    f"{self.path} is not empty: pass --resume to continue its run or --overwrite to start again"
                )
            if not self.is_run_folder():
                raise PolyembedError(
                    f"{self.path} holds files but is not a polyembed run folder (no {RUN_RECORD}): refusing to "
                    f"delete anything in it with {argument('--overwrite')}; choose an empty or new "
                    f"{argument('--output-dir')}"
                )

    def is_run_folder(self) -> bool:
        """Whether polyembed made this folder for a training run (its record is there and reads as one)."""
        try:
            record = json.loads((self.path / RUN_RECORD).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return False
        return isinstance(record, dict) and record.get("kind") == "polyembed training run"

    def _write_record(self, config: Any) -> None:
        if not (self.path / RUN_RECORD).is_file():
            with atomic_write(self.path / RUN_RECORD) as handle:
                handle.write(json.dumps({"kind": "polyembed training run", "config": type(config).__name__},
                                        indent=1) + "\n")

    def _remove_own_entries(self) -> None:
        """`--overwrite`: remove what an earlier run wrote; anything else in the folder stays (and is named)."""
        for name in RUN_ENTRIES[1:] + RUN_ENTRIES[:1]:  # the record last: an interrupted removal can be redone
            item = self.path / name
            if item.is_symlink() or item.is_file():
                item.unlink()
            elif item.is_dir():
                shutil.rmtree(item)
        others = sorted(item.name for item in self.path.iterdir())
        if others:
            logger.warning(f"{self.path}: kept {len(others)} entries an earlier run did not write: "
                           f"{', '.join(others[:5])}{' ...' if len(others) > 5 else ''}")

    def option_differences(self, config: Any) -> str | None:
        """None when the folder's config.yaml holds `config`'s options (housekeeping aside; an option newer than
        the folder counts as its default); else what differs, 'key: A in the run, B now; ...'."""
        now = {key: value for key, value in dataclasses.asdict(config).items() if key not in HOUSEKEEPING_OPTIONS}
        try:
            before = yaml.safe_load((self.path / CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            before = None
        if isinstance(before, dict):
            before = {key: value for key, value in before.items() if key not in HOUSEKEEPING_OPTIONS}
            # An option newer than the run folder is absent from its config.yaml: the run trained as its default.
            before = {**{key: value for key, value in _defaults(config).items() if key in now and key not in before},
                      **before}
        if before == now:
            return None
        if not isinstance(before, dict):
            return f"its {CONFIG_FILE} cannot be read"
        keys = [key for key in now if before.get(key) != now[key]] + [key for key in before if key not in now]
        return "; ".join(f"{key}: {before.get(key)!r} in the run, {now.get(key)!r} now" for key in keys)

    def _check_same_options(self, config: Any) -> None:
        differ = self.option_differences(config)
        if differ is not None:
            raise PolyembedError(
                f"cannot resume in {self.path}: its {CONFIG_FILE} differs from this run's options ({differ}); "
                "resume with the same options, or pass --overwrite to start again"
            )

    @contextlib.contextmanager
    def started(self, config: Any, resume: bool, overwrite: bool) -> Iterator[RunFolder]:
        """Create the folder and write config.yaml (after `check` passed); when the block fails before the
        first checkpoint, remove what this run wrote, so a corrected rerun is not refused as 'not empty'."""
        if not is_main_process():
            yield self
            return
        if overwrite and not resume and self.is_run_folder():
            self._remove_own_entries()
        fresh = not any(os.path.lexists(self.path / name) for name in RUN_ENTRIES)
        created = make_dirs(self.path)
        try:
            self._write_record(config)
            with atomic_write(self.path / CONFIG_FILE) as handle:
                handle.write(dump_config(config))
            yield self
        except BaseException:
            if fresh and self.last_checkpoint() is None:
                self._remove_contents(created)
            raise

    def _remove_contents(self, created: list[Path]) -> None:
        if self.path in created:
            shutil.rmtree(self.path, ignore_errors=True)
        else:  # the user's (empty) folder stays; what this run put in it goes
            with contextlib.suppress(OSError):
                self._remove_own_entries()
        remove_created_dirs(created)

    def last_checkpoint(self) -> Path | None:
        """The newest complete checkpoint. The trainer writes trainer_state.json last and in place, so a
        SIGKILL during saving can leave a newer checkpoint without it, or with it empty or cut short: only a
        state file that parses counts."""
        if not self.checkpoints.is_dir():
            return None
        numbered = [path for path in self.checkpoints.glob("checkpoint-*") if path.name.split("-")[-1].isdigit()]
        for path in sorted(numbered, key=lambda path: int(path.name.split("-")[-1]), reverse=True):
            if _complete(path):
                return path
            logger.warning(f"{path}: its trainer state is missing or cut short (a run killed while saving); "
                           "resuming from an earlier checkpoint")
        return None

    def remove_checkpoints(self) -> None:
        """Delete checkpoints/ after a finished run (by the main process): with `save_total_limit` 2 a 12-layer
        model still leaves ~1 GB of trainer state per run, which benchmark series pile up."""
        if is_main_process():
            shutil.rmtree(self.checkpoints, ignore_errors=True)

    def save_model(self, model: Any, save: Any = None) -> Path:
        """The final model, all-or-nothing (by the main process); `save(model, folder)` replaces `model.save`."""
        return save_model_atomically(model, self.model_dir, save=save) if is_main_process() else self.model_dir

    def write_summary(self, summary: dict[str, Any]) -> None:
        """training.json, atomically (by the main process)."""
        if not is_main_process():
            return
        with atomic_write(self.path / SUMMARY_FILE) as handle:
            handle.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")


def _complete(checkpoint: Path) -> bool:
    """Whether `checkpoint` has a trainer_state.json that parses (the trainer writes it after everything else)."""
    try:
        return isinstance(json.loads((checkpoint / TRAINER_STATE_FILE).read_text(encoding="utf-8")), dict)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False


def _defaults(config: Any) -> dict[str, Any]:
    """Each option's default, as `dataclasses.asdict` would write it."""
    out = {}
    for field in dataclasses.fields(config):
        if field.default is not dataclasses.MISSING:
            out[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            out[field.name] = field.default_factory()
    return out
