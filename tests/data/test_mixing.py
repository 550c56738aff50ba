"""Balanced mixing: every batch holds the same number of rows from each source, small sources repeat."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from polyembed.data.mixing import BalancedBatchSampler, balanced_order, rows_in_steps


class Rows:
    """Any object with a length serves as the sampler's dataset."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


def source_of(sizes: list[int]) -> np.ndarray:
    """Row index -> source index for sources laid out back to back."""
    return np.repeat(np.arange(len(sizes)), sizes)


def batches(order: np.ndarray, batch_size: int) -> list[np.ndarray]:
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def sampler(sizes: list[int], batch_size: int, drop_last: bool = False, **kwargs) -> BalancedBatchSampler:
    return BalancedBatchSampler(Rows(sum(sizes)), batch_size, drop_last, source_sizes=sizes, **kwargs)


def test_every_batch_has_k_rows_of_each_source() -> None:
    sizes = [3, 10, 5]
    order = balanced_order(sizes, seed=0)
    assert len(order) == max(sizes) * len(sizes)
    owner = source_of(sizes)
    for batch in batches(order, 6):
        assert Counter(owner[batch].tolist()) == {0: 2, 1: 2, 2: 2}


def test_epoch_draws_max_size_rows_from_every_source() -> None:
    sizes = [3, 10, 5]
    order = balanced_order(sizes, seed=4)
    counts = Counter(order.tolist())
    assert set(counts) == set(range(sum(sizes)))  # every row of every source is used
    owner = source_of(sizes)
    assert Counter(owner[order].tolist()) == {0: 10, 1: 10, 2: 10}
    assert all(counts[row] == 1 for row in range(3, 13))  # the largest source: each row once
    assert sorted(counts[row] for row in range(3)) == [3, 3, 4]  # 3 rows fill 10 draws: repeated
    assert sorted(counts[row] for row in range(13, 18)) == [2] * 5


def test_order_depends_only_on_seed_and_epoch() -> None:
    sizes = [7, 20, 11]
    first = balanced_order(sizes, seed=1, epoch=0)
    np.testing.assert_array_equal(first, balanced_order(sizes, seed=1, epoch=0))
    assert not np.array_equal(first, balanced_order(sizes, seed=1, epoch=1))
    assert not np.array_equal(first, balanced_order(sizes, seed=2, epoch=0))


def test_rejects_empty_sources() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        balanced_order([], seed=0)
    with pytest.raises(ValueError, match="non-empty"):
        balanced_order([4, 0], seed=0)


def test_length_grouping_cuts_padding_and_keeps_balance() -> None:
    sizes = [150, 400, 250, 90]
    batch_size = 8
    lengths = np.random.default_rng(0).integers(3, 80, size=sum(sizes))
    owner = source_of(sizes)

    def mean_batch_max(order: np.ndarray) -> float:
        return float(np.mean([lengths[b].max() for b in batches(order, batch_size)]))

    plain = balanced_order(sizes, seed=0, batch_size=batch_size)
    grouped = balanced_order(sizes, seed=0, lengths=lengths, batch_size=batch_size)
    assert mean_batch_max(grouped) < 0.8 * mean_batch_max(plain)
    assert len(grouped) == max(sizes) * len(sizes)
    assert Counter(owner[grouped].tolist()) == {s: max(sizes) for s in range(len(sizes))}
    assert set(grouped.tolist()) == set(range(sum(sizes)))
    for batch in batches(grouped, batch_size):
        assert Counter(owner[batch].tolist()) == dict.fromkeys(range(len(sizes)), 2)
    np.testing.assert_array_equal(grouped, balanced_order(sizes, seed=0, lengths=lengths, batch_size=batch_size))
    assert not np.array_equal(grouped, balanced_order(sizes, 0, 1, lengths=lengths, batch_size=batch_size))


def test_sampler_batches_balanced_and_epoch_aware() -> None:
    sizes = [3, 10, 5]
    batch_sampler = sampler(sizes, 6, seed=5)
    owner = source_of(sizes)
    first = list(batch_sampler)
    assert len(first) == len(batch_sampler) == 5
    assert all(isinstance(row, int) for batch in first for row in batch)
    for batch in first:
        assert Counter(owner[batch].tolist()) == {0: 2, 1: 2, 2: 2}
    assert list(batch_sampler) == first
    assert [b for batch in first for b in batch] == balanced_order(sizes, 5, 0, batch_size=6).tolist()
    batch_sampler.set_epoch(1)
    assert list(batch_sampler) != first


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("with_lengths", [False, True])
def test_sampler_len_matches_iteration(drop_last: bool, with_lengths: bool) -> None:
    sizes = [4, 9, 6]  # epoch: 27 rows
    lengths = list(range(sum(sizes))) if with_lengths else None
    batch_sampler = sampler(sizes, 6, drop_last, lengths=lengths)
    produced = list(batch_sampler)
    assert len(produced) == len(batch_sampler) == (4 if drop_last else 5)
    assert sum(len(b) for b in produced) == (24 if drop_last else 27)
    assert all(len(b) == 6 for b in produced[:4])


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize(("sizes", "batch_size"), [([4, 9, 6], 6), ([70], 8), ([5, 5], 5)])
def test_rows_in_steps_counts_what_the_sampler_deals_over_epochs(
    sizes: list[int], batch_size: int, drop_last: bool
) -> None:
    batch_sampler = sampler(sizes, batch_size, drop_last)
    dealt = [0]
    for epoch in range(3):
        batch_sampler.set_epoch(epoch)
        for batch in batch_sampler:
            dealt.append(dealt[-1] + len(batch))
    assert [rows_in_steps(step, sizes, batch_size, drop_last) for step in range(len(dealt))] == dealt


def test_sampler_rejects_sizes_not_matching_dataset() -> None:
    with pytest.raises(ValueError, match="sum to 17 but the dataset has 18 rows"):
        BalancedBatchSampler(Rows(18), 6, False, source_sizes=[3, 10, 4])
    with pytest.raises(ValueError, match="lengths"):
        BalancedBatchSampler(Rows(18), 6, False, source_sizes=[3, 10, 5], lengths=[1] * 17)


def test_length_grouping_survives_batch_size_not_multiple_of_sources() -> None:
    sizes = [1000] * 10
    lengths = np.random.default_rng(0).integers(3, 80, size=sum(sizes))

    def mean_spread(batch_size: int) -> float:
        order = balanced_order(sizes, seed=0, lengths=lengths, batch_size=batch_size)
        return float(np.mean([np.ptp(lengths[b]) for b in batches(order, batch_size)]))

    # 60 = 6 x 10 sources: batches line up with the length groups (spread ~14 tokens); 64 should be as tight
    assert mean_spread(64) < 1.5 * mean_spread(60)
