"""An open-loop HTTP load generator: requests leave at a fixed rate whether or not earlier ones were answered.

Why our own: wrk (closed loop) sends the next request only after a reply, so a slow server lowers the offered
load and hides its queueing ("coordinated omission"); wrk2, oha and vegeta are not in Debian's archive here.
Each request's latency counts from the moment it was scheduled to leave, so time spent waiting for a free
connection counts too. Raw HTTP/1.1 on asyncio streams with keep-alive connections, no client library: one core
sends thousands of requests per second (`selftest` measures it against a stub server).

  python -m benchmarks.serve.loadgen run --url http://127.0.0.1:8000/v1/embeddings --body bodies.jsonl \\
      --phases 200:10[,400:10,200:20]              # JSON summary on stdout
  (--body: one JSON body, or JSON Lines with one body per line, sent in turn: a server sees different inputs,
  as it would in use, rather than one repeated text)
  python -m benchmarks.serve.loadgen stub --port 9000   # a server that answers every POST at once (for selftest)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
from urllib.parse import urlsplit

from benchmarks.serve.spec_phases import SETTLE_S, WINDOW_S  # imports nothing: the generator starts fast

KEEP_ALIVE_S = 4.0
"""Idle connections older than this are not reused (below uvicorn's 5 s keep-alive timeout)."""
STEAL_SAMPLE_S = 0.5


def steal_seconds() -> float | None:
    """CPU time the hypervisor gave to other guests, all CPUs together, since boot (the 'steal' field of
    /proc/stat): a latency window with steal in it was slowed by the machine, not by the server. None where
    the kernel does not report it."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = handle.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


async def read_response(reader: asyncio.StreamReader) -> int:
    """Status code of one HTTP/1.1 response; reads its body (Content-Length or chunked)."""
    status_line = await reader.readuntil(b"\r\n")
    status = int(status_line.split()[1])
    length, chunked = 0, False
    while True:
        line = await reader.readuntil(b"\r\n")
        if line == b"\r\n":
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
        elif name.strip().lower() == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length:
        await reader.readexactly(length)
    return status


class OpenLoop:
    """Sends the bodies in turn at fixed rates, phase after phase, over a pool of keep-alive connections."""

    def __init__(self, url: str, bodies: bytes | list[bytes], timeout: float, max_connections: int) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        head = (f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Content-Type: application/json\r\n")
        self.requests = [(head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body
                         for body in ([bodies] if isinstance(bodies, bytes) else bodies)]
        self.sent = 0
        self.timeout, self.max_connections = timeout, max_connections
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []
        self.open = 0
        self.started_epoch = 0.0
        """Wall-clock time (`time.time()`) of the first phase's start: other samplers align with the phases by it."""
        self.steal: list[tuple[float, float]] = []
        """(seconds since the run's start, `steal_seconds()`), every STEAL_SAMPLE_S while it runs."""

    async def _sample_steal(self, start: float) -> None:
        while (stolen := steal_seconds()) is not None:
            self.steal.append((time.perf_counter() - start, stolen))
            await asyncio.sleep(STEAL_SAMPLE_S)

    def _idle_connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """The most recently used idle connection; those idle for KEEP_ALIVE_S or closed by the server are
        dropped (uvicorn closes a keep-alive connection after 5 idle seconds, and a request written to it would
        fail as no HTTP client lets it: they expire idle connections first too)."""
        while self.idle:
            reader, writer, since = self.idle.pop()
            if time.perf_counter() - since < KEEP_ALIVE_S and not reader.at_eof():
                return reader, writer
            writer.close()
            self.open -= 1
        return None

    async def _one(self, scheduled: float, phase: int, results: list[tuple[int, float, float, str]]) -> None:
        connection = self._idle_connection()
        try:
            if connection is None:
                if self.open >= self.max_connections:
                    results.append((phase, scheduled, math.nan, "no free connection"))
                    return
                self.open += 1
                connection = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), self.timeout)
            reader, writer = connection
            writer.write(self.requests[self.sent % len(self.requests)])
            self.sent += 1
            status = await asyncio.wait_for(read_response(reader), self.timeout)
            results.append((phase, scheduled, time.perf_counter() - scheduled, str(status)))
            self.idle.append((reader, writer, time.perf_counter()))
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError, IndexError) as err:
            results.append((phase, scheduled, math.nan, type(err).__name__))
            if connection is not None:
                connection[1].close()
            self.open -= 1

    async def run(self, phases: list[tuple[float, float]]) -> list[tuple[int, float, float, str]]:
        results: list[tuple[int, float, float, str]] = []
        tasks: list[asyncio.Task] = []
        start = time.perf_counter()
        self.started_epoch = time.time()
        sampler = asyncio.create_task(self._sample_steal(start))
        offset = 0.0
        for phase, (rate, duration) in enumerate(phases):
            for index in range(int(rate * duration)):
                scheduled = start + offset + index / rate
                delay = scheduled - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.create_task(self._one(scheduled, phase, results)))
            offset += duration
        await asyncio.gather(*tasks)
        sampler.cancel()
        if (stolen := steal_seconds()) is not None:
            self.steal.append((time.perf_counter() - start, stolen))
        for _, writer, _ in self.idle:
            writer.close()
        return [(phase, scheduled - start, latency, status) for phase, scheduled, latency, status in results]


def _steal_between(steal: list[tuple[float, float]], begin: float, end: float) -> float | None:
    """Seconds stolen from `begin` to `end` (seconds since the start), from the samples nearest inside them."""
    inside = [stolen for at, stolen in steal if begin - STEAL_SAMPLE_S / 2 <= at <= end + STEAL_SAMPLE_S]
    return round(inside[-1] - inside[0], 2) if len(inside) > 1 else None


def summary(results: list[tuple[int, float, float, str]], phases: list[tuple[float, float]],
            steal: list[tuple[float, float]] | None = None) -> list[dict]:
    """Per phase: offered rate, requests, statuses, achieved rate of 200s and latency percentiles (ms) of 200s;
    `p99_last_half_ms`: the p99 of 200s scheduled in the phase's second half; `p99_after_settle_ms`: of 200s
    scheduled from SETTLE_S into the phase (a recovery's p99 once the time it may take to recover has passed),
    `requests_after_settle` their count, all statuses, `latencies_after_settle_ms` the 200s' latencies (sorted: what a
    comparison with another phase needs); `p99_windows_ms`: the p99 of each WINDOW_S of the phase, so
    a lone slow request shows apart from a slow stretch; `p99_seconds_ms` and `not_ok_seconds`, per second of the
    first SETTLE_S: the p99 of the 200s and the count of other answers (how many seconds a recovery took);
    `steal_windows_s`, with `steal` samples, the CPU seconds the hypervisor took from this machine in each of those
    windows."""
    out = []
    start = 0.0
    for phase, (rate, duration) in enumerate(phases):
        mine = [r for r in results if r[0] == phase]
        ok = [r for r in mine if r[3] == "200"]

        def p99(selected: list[tuple[int, float, float, str]]) -> float | None:
            value = percentile([r[2] * 1000 for r in selected], 99)
            return round(value, 1) if value is not None else None

        statuses: dict[str, int] = {}
        for r in mine:
            statuses[r[3]] = statuses.get(r[3], 0) + 1
        windows = math.ceil(duration / WINDOW_S - 1e-9)
        seconds = range(min(math.ceil(duration - 1e-9), int(SETTLE_S)))
        out.append({"offered_per_s": rate, "seconds": duration, "requests": len(mine), "statuses": statuses,
                    "ok_per_s": round(len(ok) / duration, 1),
                    **{f"p{q}_ms": (round(v, 1) if (v := percentile([r[2] * 1000 for r in ok], q)) is not None
                                    else None) for q in (50, 95, 99)},
                    "p99_last_half_ms": p99([r for r in ok if r[1] >= start + duration / 2]),
                    "p99_after_settle_ms": p99([r for r in ok if r[1] >= start + SETTLE_S]),
                    "requests_after_settle": sum(r[1] >= start + SETTLE_S for r in mine),
                    "latencies_after_settle_ms": sorted(round(r[2] * 1000, 1) for r in ok if r[1] >= start + SETTLE_S),
                    "p99_windows_ms": [p99([r for r in ok if start + i * WINDOW_S <= r[1] < start + (i + 1) * WINDOW_S])
                                       for i in range(windows)],
                    "p99_seconds_ms": [p99([r for r in ok if start + i <= r[1] < start + i + 1]) for i in seconds],
                    "not_ok_seconds": [sum(r[3] != "200" and start + i <= r[1] < start + i + 1 for r in mine)
                                       for i in seconds]})
        if steal:
            out[-1]["steal_windows_s"] = [
                _steal_between(steal, start + i * WINDOW_S, min(start + duration, start + (i + 1) * WINDOW_S))
                for i in range(windows)]
        start += duration
    return out


def read_bodies(path: str) -> list[bytes]:
    """The request bodies of a file: the whole file as one JSON document, else one per non-empty line."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        json.loads(data)
        return [data.strip()]
    except json.JSONDecodeError:
        pass
    bodies = []
    for number, line in enumerate(data.splitlines(), 1):
        if line.strip():
            try:
                json.loads(line)
            except json.JSONDecodeError as err:
                raise SystemExit(f"{path}:{number}: not a JSON body ({err.msg})") from None
            bodies.append(line.strip())
    if not bodies:
        raise SystemExit(f"{path}: no request body")
    return bodies


async def _stub(port: int, seen: list[bytes] | None = None) -> None:
    """A server that answers every POST at once (`seen`, when given, collects the bodies)."""
    body = b'{"ok": true}'
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                length = 0
                while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                if seen is not None:
                    seen.append(body)
                writer.write(reply)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--url", required=True)
    run.add_argument("--body", required=True, help="file with the JSON request body, or JSON Lines: one per line")
    run.add_argument("--phases", required=True, help="RATE:SECONDS[,RATE:SECONDS...], one after another")
    run.add_argument("--timeout", type=float, default=30.0)
    run.add_argument("--max-connections", type=int, default=2048)
    stub = sub.add_parser("stub")
    stub.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    if args.command == "stub":
        asyncio.run(_stub(args.port))
        return
    phases = [(float(rate), float(seconds)) for rate, seconds in (p.split(":") for p in args.phases.split(","))]
    generator = OpenLoop(args.url, read_bodies(args.body), args.timeout, args.max_connections)
    results = asyncio.run(generator.run(phases))
    out = summary(results, phases, generator.steal)
    offset = 0.0
    for phase, (_, seconds) in zip(out, phases, strict=True):
        phase["started_epoch_s"] = round(generator.started_epoch + offset, 3)
        offset += seconds
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
