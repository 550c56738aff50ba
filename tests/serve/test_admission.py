"""Admission control: the queue's wait estimate, and 429s decided from queued work before the body is parsed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

import polyembed
from polyembed.serve import ServerLimits, create_app
from polyembed.serve.admission import STANDING_INTERVAL_S, WorkQueue
from tests.helpers import tiny_sentence_transformer
from tests.serve.doubles import SlowEncoder


def test_the_wait_is_queued_tokens_over_the_measured_speed() -> None:
    work = WorkQueue()
    work.add(500)
    assert work.wait_seconds() == 0.0  # nothing measured yet: no estimate, no refusal
    work.measured(1000, 1.0)
    assert work.wait_seconds() == pytest.approx(0.5) and work.wait_seconds(500) == pytest.approx(1.0)
    work.measured(3000, 1.0)  # a moving average: one faster batch moves it a fifth of the way
    assert work.tokens_per_second == pytest.approx(1400)
    work.measured(0, 0.0)  # nothing to learn from an empty call
    assert work.tokens_per_second == pytest.approx(1400)
    work.done(800)
    assert work.pending_tokens == 0


def test_a_submitted_job_is_queued_work_before_anything_else_runs(tmp_path) -> None:
    """Admission checks the queue, then submits: the submit counts the tokens with no await in between, so a
    burst of requests cannot all pass the check before the first of them is counted (a CI failure once)."""
    import asyncio

    from polyembed.serve.batching import EmbeddingBatcher

    encoder = polyembed.load_model(str(tiny_sentence_transformer(tmp_path / "tiny", seed=0)))

    async def scenario() -> tuple[list[int], int]:
        batcher = EmbeddingBatcher(encoder, max_wait_ms=0)
        await batcher.start()
        try:
            pending = []
            futures = []
            for tokens in ([3], [4, 5]):
                futures.append(batcher.submit(["one"] * len(tokens), [None] * len(tokens), tokens))
                pending.append(batcher.work.pending_tokens)  # counted before the loop ran anything
            await asyncio.gather(*futures)
            return pending, batcher.work.pending_tokens
        finally:
            await batcher.stop()

    pending, after = asyncio.run(scenario())
    assert pending == [3, 12] and after == 0


def test_a_request_behind_too_much_queued_work_is_429_and_the_queue_empties(tmp_path) -> None:
    encoder = polyembed.load_model(str(tiny_sentence_transformer(tmp_path / "tiny", seed=0)))
    slow = SlowEncoder(encoder)
    slow.delay = 1.0  # long enough that the four requests meet the first one's work on a loaded machine
    app = create_app(slow, ServerLimits(max_queue_seconds=0.05, max_wait_ms=0))
    with TestClient(app) as client, ThreadPoolExecutor(4) as pool:
        assert app.state.batcher.work.tokens_per_second is None  # the warm-up is no measure
        assert client.post("/v1/embeddings", json={"input": "one two"}).status_code == 200  # measures the speed
        assert app.state.batcher.work.tokens_per_second is not None
        responses = list(pool.map(lambda text: client.post("/v1/embeddings", json={"input": text}),
                                  ["one", "two", "three", "four"]))
        codes = sorted(response.status_code for response in responses)
        refused = [response for response in responses if response.status_code == 429]
        metrics = client.get("/metrics").text
        after = client.post("/v1/embeddings", json={"input": "again"})
    assert codes[0] == 200 and refused  # the first is encoded, requests behind it wait too long
    message = refused[0].json()["error"]["message"]
    assert "queue holds about" in message and "limit of 0.05 s" in message
    assert int(refused[0].headers["retry-after"]) >= 1
    assert after.status_code == 200 and app.state.batcher.work.pending_tokens == 0
    assert app.state.in_flight == 0
    assert "polyembed_queue_wait_seconds" in metrics and 'polyembed_requests_total{status="429"}' in metrics


@pytest.mark.parametrize("target", [0.25, 0.0])
def test_a_burst_passes_and_a_standing_queue_is_shed_until_it_has_stayed_short(target: float) -> None:
    now = [0.0]
    work = WorkQueue(target_seconds=target, clock=lambda: now[0])
    work.measured(1000, 1.0)  # 1,000 tokens/s: the target is 250 queued tokens
    for _ in range(8):  # a burst of 0.8 s of work, under the 1 s limit: all accepted
        assert work.refused(1.0, 100) is None
        work.add(100)
    now[0] = 0.5
    work.done(400)
    now[0] = 0.9
    work.done(400)  # drained within the interval: a burst, not an overload
    assert not work.shedding and work.pending_tokens == 0
    now[0] = 1.0
    work.add(600)
    now[0] = 1.5
    work.done(200)
    work.add(200)  # the batches keep it at 0.6 s: a standing queue
    now[0] = 2.1
    refused = work.refused(1.0, 10)  # over the target for more than STANDING_INTERVAL_S, under the limit
    if not target:  # no target: only the limit refuses
        assert refused is None and not work.shedding
        return
    assert work.shedding and refused == pytest.approx(0.61)
    assert work.refused(1.0, 10) == pytest.approx(0.61)  # still standing
    now[0] = 2.3
    work.done(500)  # 0.1 s left: below the target, requests pass again up to it
    assert work.shedding and work.refused(1.0, 100) is None
    work.add(100)
    now[0] = 3.2  # below the target for a whole interval: shedding stops
    assert work.refused(1.0, 10) is None and not work.shedding
    assert STANDING_INTERVAL_S == 1.0


def test_a_shedding_server_refuses_with_its_own_message_and_shows_it_in_metrics(tmp_path) -> None:
    encoder = polyembed.load_model(str(tiny_sentence_transformer(tmp_path / "tiny", seed=0)))
    app = create_app(encoder, ServerLimits(queue_target_seconds=0.1, max_queue_seconds=5.0))
    with TestClient(app) as client:
        work = app.state.batcher.work
        clock = [100.0]
        work._clock = lambda: clock[0]  # the queue's clock, so that the test need not wait
        work.tokens_per_second = 1000.0
        work.add(500)  # 0.5 s queued: under the limit, over the target ...
        clock[0] = 101.5  # ... for 1.5 s
        refused = client.post("/v1/embeddings", json={"input": "one"})
        metrics = client.get("/metrics").text
        work.pending_tokens = 0
        clock[0] = 103.0
        after = client.post("/v1/embeddings", json={"input": "one"})
    assert refused.status_code == 429 and "overloaded" in refused.json()["error"]["message"]
    assert int(refused.headers["retry-after"]) >= 1
    assert "polyembed_queue_shedding 1.0" in metrics
    assert after.status_code == 200 and not work.shedding


def test_after_a_refusal_at_the_limit_requests_wait_for_the_queue_to_drain() -> None:
    """An overload leaves the queue at the limit; near capacity new arrivals would keep it there. After a
    refusal at the limit, requests are refused until the queue is down to `resume_seconds`, then accepted again."""
    work = WorkQueue(resume_seconds=0.25)
    work.measured(1000, 1.0)  # 1,000 tokens/s: the limit of 1 s is 1,000 queued tokens, the resume 250
    work.add(950)
    assert work.refused(1.0, 10) is None  # 0.96 s: under the limit
    assert work.refused(1.0, 100) == pytest.approx(1.05) and work.draining  # over it: the drain starts
    assert work.refused(1.0, 10) == pytest.approx(0.96)  # under the limit, but the queue has not drained
    work.done(600)  # a batch: 0.35 s left, above the resume wait
    assert work.draining and work.refused(1.0, 10) == pytest.approx(0.36)
    work.done(100)  # 0.25 s: drained
    assert not work.draining and work.refused(1.0, 10) is None


def test_a_large_request_refused_beside_a_short_queue_starts_no_drain() -> None:
    work = WorkQueue(resume_seconds=0.25)
    work.measured(1000, 1.0)
    work.add(100)
    assert work.refused(1.0, 5000) == pytest.approx(5.1)  # too much work for the limit on its own
    assert not work.draining and work.refused(1.0, 10) is None  # the queue itself is short: nothing to drain


@pytest.mark.parametrize("resume", [None, 1.0, 2.0])
def test_without_a_resume_wait_below_the_limit_there_is_no_drain(resume: float | None) -> None:
    work = WorkQueue(resume_seconds=resume)
    work.measured(1000, 1.0)
    work.add(990)
    assert work.refused(1.0, 100) is not None and not work.draining
    assert work.refused(1.0, 5) is None  # accepted again as soon as it fits under the limit


def test_a_draining_server_refuses_with_its_own_message_and_shows_it_in_metrics(tmp_path) -> None:
    encoder = polyembed.load_model(str(tiny_sentence_transformer(tmp_path / "tiny", seed=0)))
    app = create_app(encoder, ServerLimits(max_queue_seconds=1.0, resume_queue_seconds=0.2))
    with TestClient(app) as client:
        work = app.state.batcher.work
        work.tokens_per_second = 1000.0
        work.add(1500)  # 1.5 s queued: over the limit
        over = client.post("/v1/embeddings", json={"input": "one"})
        work.pending_tokens = 600  # drained to 0.6 s: under the limit, above the resume wait
        draining = client.post("/v1/embeddings", json={"input": "one"})
        metrics = client.get("/metrics").text
        work.pending_tokens = 0
        after = client.post("/v1/embeddings", json={"input": "one"})
    assert over.status_code == 429 and "over its limit of 1 s" in over.json()["error"]["message"]
    assert draining.status_code == 429
    assert "recovering from overload" in draining.json()["error"]["message"]
    assert "below 0.2 s" in draining.json()["error"]["message"] and draining.headers["retry-after"] == "1"
    assert "polyembed_queue_draining 1.0" in metrics
    assert after.status_code == 200 and not work.draining
