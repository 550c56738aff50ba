"""Balanced mixing of several training sources, as in multilingual distillation (Reimers & Gurevych 2020, §3):
"we balance the data set sizes by drawing for a mini batch roughly the same number of samples from each
data set. Data from smaller data sets is repeated."

`BalancedBatchSampler` is a sentence-transformers batch sampler over a dataset whose rows are the
concatenation of the sources. An epoch draws `max(source sizes)` rows from every source (smaller ones are
reshuffled and repeated) and deals them out round by round (one row of every source per round), so every
batch holds about `batch_size / n_sources` rows of each source.

With `lengths`, rows are also grouped by length to cut padding (on CPU a batch of 15-token sentences
trains ~4x faster than one padded to 50): inside a window of `group_batches` batches, each source's rows
are sorted by length before they are dealt, so a batch gets the k-th shortest rows of every source, and
the batches of the window are then shuffled. Balance per batch is kept; only which rows meet changes.
The order depends only on (seed, epoch), which is what lets a resumed run skip exactly the batches it
had already trained on.

Data-parallel training (`processes` > 1): the order is built for the global batch (batch_size x processes)
and cut into per-process batches; the trainer hands consecutive ones to the processes, so one optimizer step
trains on the rows a single process with the global batch would have used.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from sentence_transformers.base.sampler import DefaultBatchSampler


def balanced_order(
    sizes: Sequence[int],
    seed: int,
    epoch: int = 0,
    *,
    lengths: Sequence[int] | np.ndarray | None = None,
    batch_size: int = 64,
    group_batches: int = 16,
) -> np.ndarray:
    """Row indices of one balanced epoch over sources of `sizes` laid out back to back (see module doc)."""
    sizes = [int(s) for s in sizes]
    if not sizes or min(sizes) <= 0:
        raise ValueError(f"balanced mixing needs non-empty sources, got sizes {sizes}")
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    rng = np.random.default_rng([seed, epoch])
    per_source = max(sizes)
    streams = []
    for offset, size in zip(offsets, sizes, strict=True):
        repeats = -(-per_source // size)
        stream = np.concatenate([rng.permutation(size) for _ in range(repeats)])[:per_source]
        streams.append(stream + offset)
    rounds = np.stack(streams, axis=1)  # rounds[r, s]: the r-th draw of source s
    if lengths is None:
        for row in rounds:  # vary which source opens a round, so batch edges favour none
            rng.shuffle(row)
        return rounds.reshape(-1)
    lengths = np.asarray(lengths)
    # A window holds whole batches (rounds * n_sources divisible by batch_size), so batches never straddle
    # two windows' length groups; only the epoch's last window can end in a short batch.
    step = batch_size // math.gcd(batch_size, len(sizes))
    window = step * max(1, round(group_batches * batch_size / len(sizes) / step))
    out: list[np.ndarray] = []
    for start in range(0, per_source, window):
        block = rounds[start : start + window].copy()
        for column in range(block.shape[1]):  # sort each source's rows of the window by length
            block[:, column] = block[np.argsort(lengths[block[:, column]], kind="stable"), column]
        flat = block.reshape(-1)
        batches = [flat[i : i + batch_size] for i in range(0, len(flat), batch_size)]
        short = batches.pop() if len(batches[-1]) < batch_size else None
        out.extend(batches[index] for index in rng.permutation(len(batches)))
        if short is not None:
            out.append(short)
    return np.concatenate(out)


class BalancedBatchSampler(DefaultBatchSampler):
    """Batches with about the same number of rows from each source (optionally length-grouped); give it
    to the trainer as `batch_sampler=functools.partial(BalancedBatchSampler, source_sizes=..., lengths=...)`."""

    def __init__(
        self,
        dataset: Any,
        batch_size: int,
        drop_last: bool,
        *,
        source_sizes: Sequence[int],
        lengths: Sequence[int] | None = None,
        processes: int = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(dataset, batch_size=batch_size, drop_last=drop_last, **kwargs)
        self.processes = processes
        if sum(source_sizes) != len(dataset):
            raise ValueError(f"source sizes sum to {sum(source_sizes)} but the dataset has {len(dataset)} rows")
        if lengths is not None and len(lengths) != len(dataset):
            raise ValueError(f"{len(lengths)} lengths for a dataset of {len(dataset)} rows")
        self.source_sizes = list(source_sizes)
        self.lengths = None if lengths is None else np.asarray(lengths)
        self.epoch_rows = max(self.source_sizes) * len(self.source_sizes)

    def __iter__(self) -> Iterator[list[int]]:
        order = balanced_order(
            self.source_sizes, self.seed, self.epoch, lengths=self.lengths, batch_size=self.batch_size * self.processes
        )
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch.tolist()

    def __len__(self) -> int:
        full, rest = divmod(self.epoch_rows, self.batch_size)
        return full if self.drop_last or not rest else full + 1


def rows_in_steps(steps: int, source_sizes: Sequence[int], batch_size: int, drop_last: bool = False) -> int:
    """Rows a `BalancedBatchSampler` deals in its first `steps` batches: full batches, except that each
    epoch ends in one short batch when the balanced epoch does not divide evenly (kept unless drop_last).
    Exact across a resume, since it depends only on the step count."""
    epoch_rows = max(source_sizes) * len(source_sizes)
    full, rest = divmod(epoch_rows, batch_size)
    if drop_last or not rest:
        return steps * batch_size
    epochs, within = divmod(steps, full + 1)
    return epochs * epoch_rows + within * batch_size
