"""Dynamic batching of the embedding server: queued requests share model calls cut by a token budget.

Why its own module: the batcher is the server's one worker (it owns the model thread and the queued work that
admission control reads), apart from the HTTP layer in `serve/app.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from polyembed.models.encoder import SentenceEncoder
from polyembed.models.loading import as_encoder
from polyembed.serve.admission import WorkQueue
from polyembed.serve.metrics import ServerMetrics


@dataclass
class _Job:
    sentences: list[str]
    languages: list[str | None]
    tokens: list[int]
    """Each input's length in tokens (what it costs a padded batch)."""
    future: asyncio.Future = field(repr=False)


def token_budget_chunks(lengths: Sequence[int], max_batch_tokens: int, max_batch_size: int,
                        call_overhead_tokens: float = 64.0) -> list[list[int]]:
    """Row indices grouped into model calls of similar length: rows sorted longest first, each call at most
    `max_batch_size` rows and at most `max_batch_tokens` padded tokens (its longest row x its rows; a row longer
    than the budget gets a call of its own). Of the ways to cut the sorted rows into such calls, the one with the
    fewest padded tokens plus `call_overhead_tokens` per call: a call is split where the padding the split saves
    outweighs what one more model call costs, so one long input no longer pads the short ones beside it."""
    order = sorted(range(len(lengths)), key=lambda row: -lengths[row])
    ranked = [lengths[row] for row in order]
    cost = [0.0] + [math.inf] * len(ranked)  # cost[end]: the cheapest cut of the first `end` rows
    start_of = [0] * (len(ranked) + 1)
    for end in range(1, len(ranked) + 1):
        for start in range(end - 1, max(end - max_batch_size, 0) - 1, -1):  # the call ranked[start:end]
            size = end - start
            if size > 1 and ranked[start] * size > max_batch_tokens:
                break  # an earlier start only makes the call longer and larger
            total = cost[start] + call_overhead_tokens + ranked[start] * size
            if total < cost[end]:
                cost[end], start_of[end] = total, start
    chunks: list[list[int]] = []
    end = len(ranked)
    while end > 0:
        chunks.append(order[start_of[end]:end])
        end = start_of[end]
    return chunks[::-1]


class EmbeddingBatcher:
    """Dynamic batching: requests that arrive together share one `encode` call per language; the model runs on
    one worker thread so the event loop keeps accepting requests while it encodes."""

    def __init__(self, encoder: SentenceEncoder, max_batch_size: int = 64, max_wait_ms: float = 5.0,
                 max_batch_tokens: int = 16_384, metrics: ServerMetrics | None = None,
                 call_overhead_tokens: float = 64.0, queue_target_seconds: float = 0.0,
                 resume_queue_seconds: float | None = None) -> None:
        self.encoder = as_encoder(encoder)
        self.work = WorkQueue(queue_target_seconds, resume_seconds=resume_queue_seconds)
        self.max_batch_size = max_batch_size
        self.max_batch_tokens = max_batch_tokens
        self.call_overhead_tokens = call_overhead_tokens
        self.max_wait = max_wait_ms / 1000
        self.metrics = metrics or ServerMetrics()
        self.batches_run = 0
        self.model_calls = 0
        self._queue: asyncio.Queue[_Job] | None = None
        self._worker: asyncio.Task | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="polyembed-encode")

    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._worker = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        self._executor.shutdown(wait=True)

    async def embed(self, sentences: list[str], languages: list[str | None],
                    tokens: list[int] | None = None) -> np.ndarray:
        """L2-normalised float32 rows for `sentences`, in order; `tokens` is each one's length in tokens (by
        default an estimate from its words and characters)."""
        return await self.submit(sentences, languages, tokens)

    def submit(self, sentences: list[str], languages: list[str | None],
               tokens: list[int] | None = None) -> asyncio.Future:
        """Queue a job and count its tokens as queued work at once, with no await in between, so admission
        that checks the queue and then submits is atomic: a burst of requests cannot all pass the check before
        any of them is counted. The future holds the rows; cancelling it before its batch starts drops the job
        unencoded."""
        if self._queue is None:
            raise RuntimeError("EmbeddingBatcher.start() was not called")
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        lengths = tokens if tokens is not None else [max(len(sentence.split()), len(sentence) // 3) + 2
                                                     for sentence in sentences]  # text without spaces too
        self.work.add(sum(lengths))
        self._queue.put_nowait(_Job(sentences, languages, lengths, future))  # unbounded: never waits
        self.metrics.queue_depth.set(self._queue.qsize())
        return future

    async def _run(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            jobs = [await self._queue.get()]
            size = len(jobs[0].sentences)
            deadline = loop.time() + self.max_wait
            while size < self.max_batch_size:
                if not self._queue.empty():  # what queued while the previous batch encoded joins at once
                    job = self._queue.get_nowait()
                else:
                    timeout = deadline - loop.time()
                    if timeout <= 0:
                        break
                    try:
                        job = await asyncio.wait_for(self._queue.get(), timeout)
                    except TimeoutError:
                        break
                jobs.append(job)
                size += len(job.sentences)
            self.metrics.queue_depth.set(self._queue.qsize())
            live = [job for job in jobs if not job.future.done()]  # a cancelled job's client has gone
            self.metrics.cancelled.inc(len(jobs) - len(live))
            try:
                if live:
                    await self._answer(live)
            finally:
                self.work.done(sum(sum(job.tokens) for job in jobs))

    async def _answer(self, jobs: list[_Job]) -> None:
        """Encode `jobs` together; when that fails, each job again on its own, so a request that breaks the
        model fails alone instead of taking the requests batched with it along."""
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(self._executor, self._encode_jobs, jobs)
        except Exception as err:
            if len(jobs) > 1:
                for job in jobs:
                    if not job.future.done():  # a job whose client has gone is not retried
                        await self._answer([job])
                return
            if not jobs[0].future.done():
                jobs[0].future.set_exception(err)
            return
        self.batches_run += 1
        for job, vectors in zip(jobs, results, strict=True):
            if not job.future.done():
                job.future.set_result(vectors)

    def _encode_jobs(self, jobs: Sequence[_Job]) -> list[np.ndarray]:
        """Every job's inputs in model calls within the token budget (`token_budget_chunks`; the encoder routes
        each call's rows by language), split back per job."""
        sentences = [sentence for job in jobs for sentence in job.sentences]
        languages = [language for job in jobs for language in job.languages]
        cap = self.encoder.max_seq_length
        lengths = [min(length, cap) if cap else length for job in jobs for length in job.tokens]
        rows: np.ndarray | None = None
        metrics = self.metrics
        for chunk in token_budget_chunks(lengths, self.max_batch_tokens, self.max_batch_size,
                                         self.call_overhead_tokens):
            started = time.perf_counter()
            vectors = self.encoder.encode([sentences[row] for row in chunk], [languages[row] for row in chunk],
                                          batch_size=len(chunk), normalize=True)
            seconds = time.perf_counter() - started
            metrics.encode_seconds.observe(seconds)
            self.work.measured(sum(lengths[row] for row in chunk), seconds)
            if rows is None:
                rows = np.zeros((len(sentences), vectors.shape[1]), dtype=np.float32)
            rows[chunk] = vectors
            self.model_calls += 1
            metrics.batch_sentences.observe(len(chunk))
            metrics.batch_tokens.observe(lengths[chunk[0]] * len(chunk))
        metrics.tokens.inc(sum(lengths))
        assert rows is not None  # every job has at least one input
        out: list[np.ndarray] = []
        start = 0
        for job in jobs:  # each job's rows are contiguous in the flat order
            out.append(rows[start : start + len(job.sentences)].copy())
            start += len(job.sentences)
        return out
