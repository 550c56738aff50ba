"""Training launched as several processes by torchrun or `accelerate launch` (one per GPU, or gloo processes on
CPU): the Hugging Face trainer under `fit` does the data-parallel part (DDP, sharded batches, gradient
all-reduce, saving on the main process); this module gives the rest of a run the same split of work.

- The run folder belongs to the main process: it checks, creates, writes config.yaml, the final model and
  training.json; the other processes wait for it and never write there.
- Method setup (`build`: teacher targets, student, vocabulary transfer) runs on the main process first, so the
  others find the teacher's embeddings in the shared embedding store instead of encoding them again.

Each process trains `batch_size` rows per step, so N processes see N x batch_size rows per optimizer step: pass
batch_size / N to keep the single-process schedule. Every process needs the data root, the model cache and the
output folder at the same paths (a shared filesystem on a cluster).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any


def launched_distributed() -> bool:
    """True in a process started by torchrun / accelerate launch with more than one process."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def process_state() -> Any:
    """accelerate's PartialState for this launch (gloo on CPU), created once and shared with the trainer;
    None for a plain single-process run, which must not initialise a process group."""
    if not launched_distributed():
        return None
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def process_count() -> int:
    """Processes training together (1 without a launcher): each optimizer step sees this many batches."""
    state = process_state()
    return 1 if state is None else int(state.num_processes)


def is_main_process() -> bool:
    state = process_state()
    return state is None or state.is_main_process


def wait_for_everyone() -> None:
    state = process_state()
    if state is not None:
        state.wait_for_everyone()


@contextlib.contextmanager
def main_process_first() -> Iterator[None]:
    """The main process runs the block, then the others (no-op in a single process)."""
    state = process_state()
    if state is None:
        yield
        return
    with state.main_process_first():
        yield
