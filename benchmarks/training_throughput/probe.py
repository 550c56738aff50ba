"""The instruments both jobs of the training-throughput study are measured with, so neither is timed differently.

- `watching_trainers`: every `SentenceTransformerTrainer.train()` in the block gets the same `Probe` callback and a
  timer around the call, and leaves a `TrainerRecord`. Why a patch of the class: polyembed builds its trainer
  inside `polyembed.train` (no hook to add a callback from outside, and src/ stays as users run it); patching the
  class the plain script uses too puts the very same instrument on both.
- `PhaseClock`: wall time per named phase; for the plain job around its own blocks, for polyembed around the
  functions of `polyembed.methods.distill.train` that do the same work (`timed_functions`), looked up by name at
  call time there, so wrapping them changes nothing else.
- `fresh_embedding_cache`: polyembed keeps the teacher's embeddings in a persistent store, so a second run would
  find them and skip the teacher; each polyembed run gets an empty store (the converted built-in models are
  linked in, not converted again), so both jobs embed the English side from scratch, every repeat.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from transformers import TrainerCallback


class Probe(TrainerCallback):
    """When training began, when each optimizer step began and ended, and when evaluations and checkpoints
    finished (the trainer calls `on_evaluate` / `on_save` once they are done)."""

    def __init__(self) -> None:
        self.train_begin = 0.0
        self.last_step_end = 0.0
        self.step_seconds = 0.0
        self.steps = 0
        self.evaluated: list[float] = []
        self.saved: list[float] = []
        self._step_start = 0.0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.train_begin = time.perf_counter()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step_start = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.last_step_end = time.perf_counter()
        self.step_seconds += self.last_step_end - self._step_start
        self.steps += 1

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.evaluated.append(time.perf_counter())

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.saved.append(time.perf_counter())


@dataclass
class TrainerRecord:
    """One `trainer.train()` call: its timings, the trainer's arguments and, until `release`, the trainer itself
    (to replay its batch sampler and read its rows once the job's clock has stopped)."""

    call_start: float
    call_end: float
    probe: Probe
    steps: int
    train_runtime: float
    """The trainer's own `train_runtime` metric (the whole call, evaluation and checkpoint included)."""
    arguments: dict[str, Any]
    trainer: Any = None

    def batches(self, count: int) -> list[list[int]]:
        """The first `count` batches (row indices) the trainer's own batch sampler deals for epoch 0, built as
        the trainer builds it (`get_batch_sampler` with its seed)."""
        import torch

        trainer = self.trainer
        generator = torch.Generator()
        generator.manual_seed(trainer.args.seed)
        sampler = trainer.get_batch_sampler(
            trainer.train_dataset, batch_size=trainer.args.train_batch_size,
            drop_last=trainer.args.dataloader_drop_last,
            valid_label_columns=trainer.data_collator.valid_label_columns, generator=generator,
            seed=trainer.args.seed)
        return [list(map(int, batch)) for batch in itertools.islice(iter(sampler), count)]

    def release(self) -> None:
        """Drop the trainer (and with it the model and optimizer) once its batches and rows were read."""
        self.trainer = None


@contextlib.contextmanager
def watching_trainers() -> Iterator[list[TrainerRecord]]:
    """Within the block, every `SentenceTransformerTrainer.train()` is probed and timed; the records arrive in the
    yielded list in call order."""
    from sentence_transformers import SentenceTransformerTrainer

    records: list[TrainerRecord] = []
    own = SentenceTransformerTrainer.__dict__.get("train")
    original = SentenceTransformerTrainer.train

    def train(self: Any, *args: Any, **kwargs: Any) -> Any:
        probe = Probe()
        self.add_callback(probe)
        start = time.perf_counter()
        output = original(self, *args, **kwargs)
        end = time.perf_counter()
        records.append(TrainerRecord(start, end, probe, int(self.state.global_step),
                                     float(output.metrics.get("train_runtime", 0.0)), self.args.to_dict(), self))
        return output

    SentenceTransformerTrainer.train = train  # type: ignore[method-assign]
    try:
        yield records
    finally:
        if own is None:
            del SentenceTransformerTrainer.train
        else:
            SentenceTransformerTrainer.train = own  # type: ignore[method-assign]


@dataclass
class PhaseClock:
    """Seconds per named phase (a phase entered twice adds up)."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def timed(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """`function`, with each call's wall time added to phase `name`."""

        def call(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name):
                return function(*args, **kwargs)

        return call


@contextlib.contextmanager
def timed_functions(clock: PhaseClock, module: ModuleType, phases: dict[str, str]) -> Iterator[None]:
    """Each function (or class) `module.<attribute>` of `phases` (attribute -> phase) timed into `clock` within the
    block, then restored."""
    originals = {attribute: getattr(module, attribute) for attribute in phases}
    for attribute, name in phases.items():
        setattr(module, attribute, clock.timed(name, originals[attribute]))
    try:
        yield
    finally:
        for attribute, original in originals.items():
            setattr(module, attribute, original)


@contextlib.contextmanager
def fresh_embedding_cache(scratch: Path) -> Iterator[Path]:
    """Point `POLYEMBED_CACHE` at a new folder in `scratch` holding links to everything of the current cache but
    its embedding stores, for the block; the user's cache is never written."""
    from polyembed.models.cache import ENV_VAR, cache_dir

    real = cache_dir()
    folder = Path(tempfile.mkdtemp(prefix="cache-", dir=scratch))
    for entry in real.iterdir():
        if entry.name != "embeddings":
            (folder / entry.name).symlink_to(entry.resolve())
    before = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = str(folder)
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = before


def model_folder(name: str) -> str:
    """What the plain script hands `SentenceTransformer(...)` for a model polyembed knows by `name`: a built-in's
    folder (converted now if it never was, before anything is timed), else the folder or Hub id as given."""
    from polyembed.models.loading import BUILTIN_MODELS

    if name in BUILTIN_MODELS:
        return str(BUILTIN_MODELS[name].folder())
    return str(Path(name).expanduser().resolve()) if Path(name).expanduser().exists() else name
