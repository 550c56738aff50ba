"""Admission control of the embedding server: refuse early and cheaply what cannot be served in time.

Why a raw ASGI middleware: past saturation most requests must be refused, and a refusal that goes through
FastAPI (body read, JSON and pydantic parsing, an exception handler) costs about as much event-loop time as a
request served, on the same core the model needs: the server then answers fewer requests the more it is
offered. Here a refusal is decided from the headers and the batcher's state alone and written as a prepared
response, before the body is read.

Four limits. `max_concurrent_requests`: requests accepted at once. `max_queue_seconds`: the wait a new request
would have behind the work already queued (queued tokens / the tokens per second the model has been encoding),
which bounds the latency of what is accepted whatever the request sizes. `resume_queue_seconds`: once a request
has been refused at that limit, requests are refused until the queue has drained to this wait. Why: an overload
leaves the queue at the limit, and at a rate the server only just sustains, new arrivals keep it there; the
backlog then drains at the few per cent of capacity the server has to spare, every request waiting about the
limit long after the overload has stopped. Refused arrivals add nothing, so the queue drains at the server's full
speed. Bursts that stay under the limit are untouched. `queue_target_seconds`: the wait a queue may keep for
longer than STANDING_INTERVAL_S. The last tells a burst from an overload, as CoDel
does for packet queues: a burst fills the queue and drains, an overload keeps it full. Bursts up to
`max_queue_seconds` pass; once the wait has stayed above the target for a whole interval the server sheds
everything above the target until the wait has stayed below it for an interval. So an overload leaves about
the target's worth of work behind instead of the limit's, and the requests it accepts wait about the target.
Near capacity the queue of ordinary load can stand above a small target too, so the target is off by default
(docs/benchmarks.md, "Queue limit").

Hostile input is bounded here too, since only the middleware sees the raw ASGI stream: a head over
`max_headers` / `max_header_bytes` is a 431; an accepted request's body is read here, counted as it arrives, so
a chunked body or a Content-Length that lies is a 413 as soon as it passes `max_body_bytes` (memory stays
bounded by the cap); and a body that takes longer than `body_timeout_seconds` is a 408, which frees the
concurrency slot that a stalled client would otherwise hold for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from polyembed.serve import auth
from polyembed.serve.metrics import ServerMetrics

logger = logging.getLogger(__name__)

REFUSAL_PAUSE_S = 0.5
"""How long a 429 is held before it is sent. Refusing is cheap but not free: closed-loop clients that retry at
once without backoff (wrk, a naive retry loop) made refusals most of the server's work, and it answered fewer
requests than with no limit at all. Holding each refusal costs a timer, and caps such a client's retries."""

STANDING_INTERVAL_S = 1.0
"""How long the wait must stay above `queue_target_seconds` before the queue counts as standing (and below it
before shedding stops). Longer than a batch (the wait falls at the end of each), short beside an overload."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def error_body(message: str, param: str | None = None, kind: str = "invalid_request_error",
               code: str | None = None) -> dict[str, Any]:
    """OpenAI's error body, which every 4xx and 5xx of the server carries."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class WorkQueue:
    """The batcher's queued work in tokens, and the model's measured speed: the wait a new request would have;
    and whether that wait has stood above `target_seconds` (0: no target) long enough to shed load."""

    def __init__(self, target_seconds: float = 0.0, clock: Callable[[], float] = time.monotonic,
                 resume_seconds: float | None = None) -> None:
        """`resume_seconds`: the wait to which the queue must drain after a refusal at the limit (None: none, a
        request is accepted again as soon as its wait is under the limit)."""
        self.pending_tokens = 0
        self.tokens_per_second: float | None = None
        self.target_seconds = target_seconds
        self.shedding = False
        self.draining = False  # refused at the limit: refusing until the wait is at most `resume_seconds`
        self.resume_seconds = resume_seconds
        self._clock = clock
        self._short_at = self._long_at = clock()  # the last time the wait was at or below the target / above it

    def add(self, tokens: int) -> None:
        self._note()  # the wait just before a request joins: what a burst's arrivals are measured from
        self.pending_tokens += tokens
        self._note()

    def done(self, tokens: int) -> None:
        self.pending_tokens = max(0, self.pending_tokens - tokens)
        self._note()  # the wait just after a batch: the lowest point, which a standing queue keeps above target
        self._resume()

    def measured(self, tokens: int, seconds: float) -> None:
        """One model call's tokens and time: a moving average, so a changed load shows within a few batches."""
        if seconds <= 0 or tokens <= 0:
            return
        rate = tokens / seconds
        self.tokens_per_second = rate if self.tokens_per_second is None else 0.8 * self.tokens_per_second + 0.2 * rate

    def refused(self, limit: float, extra_tokens: int = 0) -> float | None:
        """The wait that refuses a request of `extra_tokens` (None: accept it): over `limit`; after such a
        refusal, until the queue has drained to `resume_seconds`; or over the target while shedding. An idle server
        takes any size."""
        self._resume()
        if not self.pending_tokens:
            return None
        self._note()
        wait = self.wait_seconds(extra_tokens)
        if wait > limit:
            # a large request refused beside a short queue starts no drain: `_resume` ends it at once
            self.draining = self.resume_seconds is not None and self.resume_seconds < limit
            self._resume()
            return wait
        if self.draining or (self.shedding and self.wait_seconds() > self.target_seconds):
            return wait
        return None

    def _resume(self) -> None:
        """End a drain once the queued work is down to `resume_seconds`."""
        if self.draining and (self.resume_seconds is None or self.wait_seconds() <= self.resume_seconds):
            self.draining = False

    def _note(self) -> None:
        """Track how long the wait has been above or below the target, and start or stop shedding."""
        if self.target_seconds <= 0:
            return
        now = self._clock()
        if self.wait_seconds() > self.target_seconds:
            self._long_at = now
            if now - self._short_at > STANDING_INTERVAL_S:
                self.shedding = True
        else:
            self._short_at = now
            if now - self._long_at > STANDING_INTERVAL_S:
                self.shedding = False

    def wait_seconds(self, extra_tokens: int = 0) -> float:
        """Estimated seconds until `extra_tokens` more would be encoded; 0 before any measurement."""
        if not self.tokens_per_second:
            return 0.0
        return (self.pending_tokens + extra_tokens) / self.tokens_per_second


class AdmissionMiddleware:
    """Outermost layer of the server: the 431 of a request head over the header limits; with `api_key_digest`,
    the 401 of a request without the key (`serve/auth.py`); and, on `POST .../v1/embeddings`, the 413 of a body
    over `max_body_bytes` (declared, or counted as it arrives), the 408 of a body slower than
    `body_timeout_seconds`, the 429 (with Retry-After) beyond the concurrency or queue-time limit, the in-flight
    count, and the per-status request counter and latency histogram (so refusals and 500s are counted like
    answers)."""

    def __init__(self, app: ASGIApp, *, limits: Any, metrics: ServerMetrics, work: WorkQueue,
                 state: Any, api_key_digest: bytes | None = None) -> None:
        self.app, self.limits, self.metrics, self.work, self.state = app, limits, metrics, work, state
        self.api_key_digest = api_key_digest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        embeddings = scope["path"].endswith("/v1/embeddings")
        started = time.perf_counter()
        too_large = head_refusal(scope, self.limits.max_headers, self.limits.max_header_bytes)
        if too_large is not None:
            await _respond(send, *too_large)
            if embeddings:
                self._count(too_large[0], started)
            return
        unauthorized = auth.refusal(scope, self.api_key_digest) if self.api_key_digest is not None else None
        if unauthorized is not None:
            await _respond(send, 401, error_body(unauthorized[0], code=unauthorized[1]), auth.CHALLENGE)
            if embeddings:
                self._count(401, started)
            return
        if not embeddings:
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            if refusal[0] == 429:
                await refusal_pause(self.limits.max_queue_seconds)
            await _respond(send, *refusal)
            self._count(refusal[0], started)
            return
        status = 500
        self.state.in_flight += 1
        self.metrics.in_flight.inc()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            body = await self._read_body(receive)
            if body is None:  # the client went away while sending
                status = 499
            elif isinstance(body, tuple):
                status = body[0]
                await _respond(send, *body)
            else:
                await self.app(scope, _replay(body, receive), send_status)
        finally:  # an exception here becomes the JSON 500 further out
            self.state.in_flight -= 1
            self.metrics.in_flight.dec()
            self._count(status, started)

    async def _read_body(self, receive: Receive) -> bytes | tuple[int, dict[str, Any], dict[str, str]] | None:
        """The whole body, or the refusal of one that passes `max_body_bytes` (refused as soon as it does, whatever
        its Content-Length said) or does not arrive within `body_timeout_seconds`; None when the client is gone."""
        limit, timeout = self.limits.max_body_bytes, self.limits.body_timeout_seconds
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        break
                    if chunk:
                        chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            logger.warning("a request body did not arrive in %g s: refused with a 408", timeout)
            return 408, error_body(f"the request body did not arrive within {timeout:g} s (received {size:,} "
                                   "bytes)"), {"connection": "close"}
        if size > limit:
            if message.get("more_body", False):
                await _drain(receive, limit // DRAIN_SHARE)
            return 413, error_body(f"the request body has more than {limit:,} bytes; at most {limit:,}"), {
                "connection": "close"}
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _refusal(self, scope: Scope) -> tuple[int, dict[str, Any], dict[str, str]] | None:
        limits = self.limits
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > limits.max_body_bytes:
                return 413, error_body(f"the request body has {int(value):,} bytes; at most "
                                       f"{limits.max_body_bytes:,}"), {}
        if self.state.in_flight >= limits.max_concurrent_requests:
            return 429, error_body(f"the server is at its limit of {limits.max_concurrent_requests} concurrent "
                                   "requests; retry shortly"), {"retry-after": "1"}
        wait = self.work.refused(limits.max_queue_seconds)
        if wait is not None:
            message, headers = queue_refusal(wait, limits.max_queue_seconds, self.work)
            return 429, error_body(message), headers
        return None

    def _count(self, status: int, started: float) -> None:
        self.metrics.requests.labels(status=str(status)).inc()
        self.metrics.request_seconds.observe(time.perf_counter() - started)


def head_refusal(scope: Scope, max_headers: int, max_header_bytes: int) -> tuple[
    int, dict[str, Any], dict[str, str]
] | None:
    """The 431 of a request whose head has more than `max_headers` fields or `max_header_bytes` (its path, query
    and header names and values). `polyembed serve` refuses such a head already while it arrives
    (`serve/protocol.py`); this check holds under any other ASGI server."""
    headers = scope.get("headers", ())
    if len(headers) > max_headers:
        return 431, error_body(f"the request has {len(headers):,} header fields; at most {max_headers:,}"), {
            "connection": "close"}
    size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
    size += sum(len(name) + len(value) for name, value in headers)
    if size > max_header_bytes:
        return 431, error_body(f"the request head has {size:,} bytes; at most {max_header_bytes:,}"), {
            "connection": "close"}
    return None


LINGER_S = 2.0
"""After a body passes the cap, how long the rest of it is read and dropped before the 413 and the close."""
DRAIN_SHARE = 4
"""... and how much of it: a quarter of the cap, so a body up to 1.25x the cap gets its answer, while a client that
streams without end costs the server little more than the cap itself."""


async def _drain(receive: Receive, budget: int) -> None:
    """Before a 413 mid-body: read and drop what is left of the body, for at most `LINGER_S` and `budget` bytes
    (memory stays flat). Why: the 413 closes the connection, and closing it while the client is still sending
    makes the kernel reset it, which discards the answer the client has not read yet (a client that sends its
    whole body before it reads never sees the 413). A client that finishes within the budget gets its answer; one
    that sends on past it is cut off."""
    read = 0
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(LINGER_S):
            while read <= budget:
                message = await receive()
                if message["type"] == "http.disconnect" or not message.get("more_body", False):
                    return
                read += len(message.get("body", b""))


def _replay(body: bytes, receive: Receive) -> Receive:
    """The app's receive: the body read already, in one message, then the client's own stream (a disconnect)."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def queue_refusal(wait: float, limit: float, work: WorkQueue) -> tuple[str, dict[str, str]]:
    """The message and Retry-After header of a refusal for queued work: retry once the excess has drained."""
    if wait <= limit and work.draining:
        queued = work.wait_seconds()
        return (f"the server is recovering from overload: its queue holds about {queued:.1f} s of work, and it "
                f"accepts requests again below {work.resume_seconds:g} s; retry shortly",
                {"retry-after": str(max(1, math.ceil(queued - (work.resume_seconds or 0.0))))})
    if wait <= limit:  # shedding: the queue has stood above the target
        return (f"the server is overloaded: its queue has held more than {work.target_seconds:g} s of work for "
                f"over {STANDING_INTERVAL_S:g} s; retry shortly",
                {"retry-after": str(max(1, math.ceil(wait - work.target_seconds)))})
    return (f"the server's queue holds about {wait:.1f} s of work, over its limit of {limit:g} s; retry shortly",
            {"retry-after": str(max(1, math.ceil(wait - limit)))})


async def refusal_pause(max_queue_seconds: float) -> None:
    """Hold a 429 before it is sent: a pause, not work, so a client that retries at once cannot flood the loop."""
    await asyncio.sleep(min(REFUSAL_PAUSE_S, max_queue_seconds))


async def _respond(send: Send, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
    payload = json.dumps(body).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
           *((name.encode(), value.encode()) for name, value in headers.items())]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})
