"""The batcher apart from HTTP: token-budget chunks, batches formed while the model works, cancelled jobs."""

from __future__ import annotations

import numpy as np

import polyembed
from tests.serve.doubles import SlowEncoder, record_calls


def test_token_budget_chunks_sort_by_length_and_respect_both_caps() -> None:
    from polyembed.serve.batching import token_budget_chunks

    lengths = [3, 500, 4, 5, 3, 200]
    chunks = token_budget_chunks(lengths, max_batch_tokens=400, max_batch_size=3)
    assert sorted(row for chunk in chunks for row in chunk) == list(range(6))  # every row once
    assert chunks[0] == [1]  # longer than the budget: alone
    for chunk in chunks:
        assert len(chunk) <= 3 and [lengths[row] for row in chunk] == sorted((lengths[row] for row in chunk),
                                                                            reverse=True)
        assert len(chunk) == 1 or max(lengths[row] for row in chunk) * len(chunk) <= 400
    assert token_budget_chunks([7] * 5, max_batch_tokens=1000, max_batch_size=64) == [[0, 1, 2, 3, 4]]


def test_a_batch_is_cut_by_length_only_where_the_padding_saved_outweighs_a_call() -> None:
    """Two long and six short rows: one call pads 8 x 40 = 320 tokens, two calls 2 x 40 + 6 x 10 = 140. Cut
    when another call costs less than the 180 tokens saved, not when it costs more."""
    from polyembed.serve.batching import token_budget_chunks

    lengths = [10, 40, 10, 10, 40, 10, 10, 10]
    assert token_budget_chunks(lengths, 16_384, 64, call_overhead_tokens=100) == [[1, 4], [0, 2, 3, 5, 6, 7]]
    assert token_budget_chunks(lengths, 16_384, 64, call_overhead_tokens=200) == [[1, 4, 0, 2, 3, 5, 6, 7]]
    # at no overhead, every distinct length gets its own call
    assert token_budget_chunks([3, 2, 1], 16_384, 64, call_overhead_tokens=0) == [[0], [1], [2]]


def test_requests_queued_during_a_batch_share_the_next_one_without_waiting(encoder) -> None:
    """Even at max_wait_ms 0, the requests that arrive while a batch encodes are encoded together next."""
    import asyncio

    from polyembed.serve.batching import EmbeddingBatcher

    slow = SlowEncoder(encoder)
    calls = record_calls(slow)

    async def scenario() -> list[np.ndarray]:
        batcher = EmbeddingBatcher(slow, max_wait_ms=0, call_overhead_tokens=10_000)  # one call per batch
        await batcher.start()
        try:
            slow.delay = 0.3
            busy = asyncio.ensure_future(batcher.embed(["first"], [None]))
            await asyncio.sleep(0.1)  # "first" is encoding now
            queued = [asyncio.ensure_future(batcher.embed([text], [None])) for text in ("second", "third", "fourth")]
            await busy
            return list(await asyncio.gather(*queued))
        finally:
            await batcher.stop()

    vectors = asyncio.run(scenario())
    assert calls[0] == ["first"] and sorted(calls[1]) == ["fourth", "second", "third"] and len(calls) == 2
    for text, rows in zip(("second", "third", "fourth"), vectors, strict=True):
        assert np.allclose(rows, polyembed.encode(encoder, [text], normalize=True), atol=1e-5)


def test_a_cancelled_request_is_dropped_before_it_is_encoded(encoder) -> None:
    """What a client disconnect does: the waiting job leaves the queue unencoded; the batch at work finishes."""
    import asyncio

    from polyembed.serve.batching import EmbeddingBatcher

    slow = SlowEncoder(encoder)
    calls = record_calls(slow)

    async def scenario() -> np.ndarray:
        batcher = EmbeddingBatcher(slow, max_wait_ms=0)
        await batcher.start()
        try:
            slow.delay = 0.5
            busy = asyncio.ensure_future(batcher.embed(["first"], [None]))
            await asyncio.sleep(0.1)  # "first" is encoding now
            gone = asyncio.ensure_future(batcher.embed(["gone"], [None]))
            await asyncio.sleep(0.05)
            gone.cancel()
            first = await busy
            slow.delay = 0.0
            await batcher.embed(["after"], [None])
            assert batcher.metrics.cancelled._value.get() == 1
            return first
        finally:
            await batcher.stop()

    first = asyncio.run(scenario())
    assert ["gone"] not in calls and ["first"] in calls and ["after"] in calls
    assert np.allclose(first, polyembed.encode(encoder, ["first"], normalize=True), atol=1e-5)
