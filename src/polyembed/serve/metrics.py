"""Prometheus metrics of the embedding server, scraped from `GET /metrics`.

Why these: an operator sizing or debugging an embedding server asks how many requests wait (queue depth), how
full the batches are (sentences and padded tokens per batch), where the latency goes (request and encode
histograms) and what fails (requests by status). Each app owns its own registry, so two servers in one process
(tests, a notebook) do not share counters.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
TOKEN_BUCKETS = (16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536)


class ServerMetrics:
    """The server's counters, gauges and histograms (names prefixed `polyembed_`)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.requests = Counter("polyembed_requests", "Embedding requests answered, by HTTP status.",
                                ["status"], registry=registry)
        self.request_seconds = Histogram("polyembed_request_duration_seconds",
                                         "Time from a request's arrival to its answer (embedding requests).",
                                         buckets=LATENCY_BUCKETS, registry=registry)
        self.in_flight = Gauge("polyembed_requests_in_flight", "Embedding requests accepted and not yet answered.",
                               registry=registry)
        self.queue_wait = Gauge("polyembed_queue_wait_seconds",
                                "Estimated wait behind the queued work: queued tokens / recent tokens per second.",
                                registry=registry)
        self.shedding = Gauge("polyembed_queue_shedding",
                              "1 while the queue has stood above its target and requests above it get a 429.",
                              registry=registry)
        self.draining = Gauge("polyembed_queue_draining",
                              "1 after a request was refused at the queue limit, until the queue has drained to "
                              "--resume-queue-seconds (requests get a 429 meanwhile).", registry=registry)
        self.queue_depth = Gauge("polyembed_queue_depth", "Requests waiting for a batch (not yet encoding).",
                                 registry=registry)
        self.batch_sentences = Histogram("polyembed_batch_size_sentences",
                                         "Sentences per model call (a batch over the token budget makes several).",
                                         buckets=SIZE_BUCKETS, registry=registry)
        self.batch_tokens = Histogram("polyembed_batch_padded_tokens",
                                      "Padded tokens per model call (longest input x inputs).",
                                      buckets=TOKEN_BUCKETS, registry=registry)
        self.encode_seconds = Histogram("polyembed_encode_duration_seconds", "Model time per model call.",
                                        buckets=LATENCY_BUCKETS, registry=registry)
        self.tokens = Counter("polyembed_tokens", "Input tokens encoded (the model tokenizer's count).",
                              registry=registry)
        self.gc_seconds = Histogram("polyembed_gc_duration_seconds",
                                    "Python garbage collections in the server process, by generation: a pause of "
                                    "every thread, the model's included.", ["generation"],
                                    buckets=LATENCY_BUCKETS, registry=registry)
        self.cancelled = Counter("polyembed_requests_cancelled",
                                 "Requests whose client disconnected before their batch was encoded (not encoded).",
                                 registry=registry)

    def watch_gc(self) -> Callable[[str, dict[str, int]], None]:
        """Time the process's garbage collections into `gc_seconds` from now on; returns the callback, for
        `gc.callbacks.remove` when the server stops."""
        started: list[float] = []

        def callback(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                started[:] = [time.perf_counter()]
            elif started:
                self.gc_seconds.labels(generation=str(info["generation"])).observe(time.perf_counter() - started[0])

        gc.callbacks.append(callback)
        return callback

    def render(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)
