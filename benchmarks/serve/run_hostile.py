"""Hostile clients among good ones on `polyembed serve`, and the serving code's speed against a baseline commit.

  python -m benchmarks.serve.run_hostile load [--seconds 20] [--connections 300] [--rates 0 100] [--backend onnx-int8]
  python -m benchmarks.serve.run_hostile throughput [--baseline-src /tmp/base/src] [--repeats 3]

load: one minilm-en server (on core 0 with one thread, as in `benchmarks.serve.run`; --body-timeout 2, --max-body-bytes
1 MiB, other limits default), clients on core 1. Per rate (0: closed loop; else an open loop at that many
requests/s over the connections, latency from each request's scheduled send), after 3 s of warm-up: (a) good
requests alone (one STS-B sentence each), (b) the same with bad clients from a second process, each sending again
once answered: slow bodies (Content-Length 1,000, 10 bytes, then nothing: 408 expected), chunked bodies without
end (413), a 1 MiB header value and 20,000 header fields (431). Acceptance: no 5xx, and the good requests' p99
(of their 200s) in (b) within 2x of (a).
throughput: `polyembed encode` (5,000 STS-B training sentences, minilm-en, --language en, all cores) and the
server (closed loop, 16 connections, default limits) of this checkout against the code at --baseline-src (`git
worktree add /tmp/base dbe707a`), one at a time, in turns (ABBA), PYTHONPATH naming each side's src.
Results: results/bench/serve_hostile/{load-pause-*s,throughput}.json.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.common.results import REPO, RESULTS, machine, study_command, write_json
from benchmarks.common.script_cli import script_parser
from benchmarks.serve.loadgen import percentile, read_response
from benchmarks.serve.sampling import cpu_seconds
from benchmarks.serve.server import on_server_core, sentences
from benchmarks.serve.spec import CLIENT_CORE, ONE_THREAD

OUT = RESULTS / "serve_hostile"
HOST, PORT, MODEL = "127.0.0.1", 8791, "minilm-en"
HOSTILE_LIMITS = ("--body-timeout", "2", "--max-body-bytes", str(2**20))
TIMEOUT_S = 30.0
"""A request (good or bad) with no answer after this long counts as 'TimeoutError'."""
CHUNK = b"%x\r\n%s\r\n" % (2**16, b"x" * 2**16)
EXPECTED = {"slow-body": "408", "chunked-endless": "413", "header-1MiB": "431", "headers-20000": "431"}
ERRORS = (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError, IndexError)


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(src)}


class Server:
    """`polyembed serve` from the code at `src` on core 0 with one thread; its log in a file (a pipe nobody
    reads would fill with the warnings each refusal logs, and stall the server)."""

    def __init__(self, backend: str, options: tuple[str, ...], src: Path, log: Path) -> None:
        self.command = [sys.executable, "-m", "polyembed", "serve", "-m", MODEL, "--backend", backend, "--host",
                        HOST, "--port", str(PORT), "--no-access-log", *options]
        self.src, self.log = src, log
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(on_server_core(self.command), stdout=subprocess.DEVNULL, stderr=log,
                                            env={**_env(self.src), **ONE_THREAD})
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"the server exited ({self.process.returncode}): {self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://{HOST}:{PORT}/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(1)
        raise SystemExit(f"the server was not ready within 900 s; its log: {self.log}")

    def __exit__(self, *_: object) -> None:
        self.process.terminate()  # type: ignore[union-attr]
        try:
            self.process.wait(timeout=60)  # type: ignore[union-attr]
        except subprocess.TimeoutExpired:
            self.process.kill()  # type: ignore[union-attr]

    def statuses(self) -> Counter[str]:  # the server's own count of embedding requests by status
        with urllib.request.urlopen(f"http://{HOST}:{PORT}/metrics", timeout=10) as answer:
            text = answer.read().decode()
        return Counter({line.split('"')[1]: int(float(line.split()[-1])) for line in text.splitlines()
                        if line.startswith("polyembed_requests_total{")})


def _requests(count: int = 512) -> list[bytes]:
    """Good requests, one STS-B test sentence each."""
    bodies = [json.dumps({"input": text}).encode() for text in sentences(count)]
    return [b"POST /v1/embeddings HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (HOST.encode(), PORT, len(body), body) for body in bodies]


async def _good_loop(requests: list[bytes], connections: int, rate: float, seconds: float) -> list[tuple[str, float]]:
    """(status or error name, latency s) of every good request sent in `seconds` over `connections` keep-alive
    connections: a closed loop (rate 0) or connection i's k-th request scheduled at (i + k * connections) / rate."""
    turn = itertools.count()
    start = time.perf_counter()
    deadline = start + seconds
    found: list[tuple[str, float]] = []

    async def connection(index: int) -> None:
        reader: asyncio.StreamReader | None = None
        writer: asyncio.StreamWriter | None = None
        for k in itertools.count():
            scheduled = start + (index + k * connections) / rate if rate else time.perf_counter()
            if scheduled >= deadline:
                break
            await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
            request = requests[next(turn) % len(requests)]
            for _ in range(2):  # a kept-alive connection the server closed meanwhile: once more on a new one
                fresh = writer is None
                try:
                    if reader is None or writer is None:
                        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, PORT), TIMEOUT_S)
                    writer.write(request)
                    status = str(await asyncio.wait_for(read_response(reader), TIMEOUT_S))
                    break
                except ERRORS as err:
                    status = type(err).__name__
                    if writer is not None:
                        writer.close()
                    reader = writer = None
                    if fresh or isinstance(err, TimeoutError):
                        break
            found.append((status, time.perf_counter() - scheduled))
        if writer is not None:
            writer.close()

    await asyncio.gather(*(connection(i) for i in range(connections)))
    return found


def _bad_pieces(kind: str) -> Iterator[bytes]:
    """What one bad client sends, piece by piece (after the last piece it waits for the answer)."""
    head = b"POST /v1/embeddings HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n" % (HOST.encode(), PORT)
    if kind == "slow-body":
        yield head + b'Content-Length: 1000\r\n\r\n{"input": "'
    elif kind == "chunked-endless":
        yield head + b"Transfer-Encoding: chunked\r\n\r\n"
        yield from itertools.repeat(CHUNK, 1024)  # 64 MiB at most: a server that never refuses shows as a timeout
        yield b"0\r\n\r\n"
    elif kind == "header-1MiB":
        yield head + b"X-Big: " + b"a" * 2**20 + b"\r\nContent-Length: 2\r\n\r\n{}"
    else:
        yield head + b"".join(b"X-Field-%d: v\r\n" % i for i in range(20_000)) + b"Content-Length: 2\r\n\r\n{}"


async def _bad_once(kind: str) -> str:
    """One bad request: the status it got, or the error that ended it."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, PORT), TIMEOUT_S)
    except ERRORS as err:
        return f"connect {type(err).__name__}"

    async def send() -> None:
        try:
            for piece in _bad_pieces(kind):
                writer.write(piece)
                await writer.drain()
        except OSError:
            pass  # the server closed the connection: the answer, if any, is read below

    sender = asyncio.create_task(send())
    try:
        return str(await asyncio.wait_for(read_response(reader), TIMEOUT_S))
    except ERRORS as err:
        return type(err).__name__
    finally:
        sender.cancel()
        writer.close()


async def _bad_loop(counts: dict[str, int], seconds: float, pause: float) -> dict[str, dict[str, int]]:
    """`counts[kind]` clients of each kind, each sending its bad request again `pause` s after its answer."""
    deadline = time.perf_counter() + seconds
    found: dict[str, Counter[str]] = {kind: Counter() for kind in counts}

    async def client(kind: str) -> None:
        while time.perf_counter() < deadline:
            found[kind][await _bad_once(kind)] += 1
            await asyncio.sleep(pause)

    await asyncio.gather(*(client(kind) for kind, count in counts.items() for _ in range(count)))
    return {kind: dict(statuses) for kind, statuses in found.items()}


def _phase(requests: list[bytes], connections: int, rate: float, seconds: float, server: Server,
           bad: dict[str, int] | None, pause: float) -> dict[str, Any]:
    """One phase of good load, with the bad clients (in their own process, on the clients' core) when `bad`."""
    before, cpu_before = server.statuses(), cpu_seconds(server.process.pid)  # type: ignore[union-attr]
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = study_command("benchmarks.serve.run_hostile", "bad-clients", "--seconds", str(seconds), "--pause",
                            str(pause), "--counts", json.dumps(bad))
    helper = subprocess.Popen(["taskset", "-c", CLIENT_CORE, *command], stdout=subprocess.PIPE, text=True,
                              cwd=REPO) if bad else None
    good = asyncio.run(_good_loop(requests, connections, rate, seconds))
    bad_found: dict[str, dict[str, int]] = {}
    if helper is not None:
        out, _ = helper.communicate(timeout=seconds + 2 * TIMEOUT_S + 60)
        bad_found = json.loads(out.strip().splitlines()[-1])
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    statuses = Counter(status for status, _ in good)
    latencies = [latency * 1000 for status, latency in good if status == "200"]
    fives = sum(n for status, n in statuses.items() if status.startswith("5"))
    fives += sum(n for found in bad_found.values() for status, n in found.items() if status.startswith("5"))
    server_statuses = server.statuses() - before
    server_cpu = cpu_seconds(server.process.pid)  # type: ignore[union-attr]
    return {"rate": rate, "phase": "b: good + bad" if bad else "a: good only", "seconds": seconds,
            "good_sent": len(good), "good_statuses": dict(sorted(statuses.items())),
            "good_200_per_s": round(len(latencies) / seconds, 1),
            "p50_ms": _pct(latencies, 50), "p99_ms": _pct(latencies, 99),
            "5xx": fives, "bad_clients": bad or {}, "bad_statuses": bad_found,
            "server_statuses": dict(sorted(server_statuses.items())),
            "server_5xx": sum(n for status, n in server_statuses.items() if status.startswith("5")),
            "server_cpu_s": round(server_cpu - cpu_before, 1) if server_cpu and cpu_before else None,
            "bad_clients_cpu_s": round(after_children.ru_utime + after_children.ru_stime - children.ru_utime
                                       - children.ru_stime, 1) if bad else None}


def _pct(values: list[float], q: float) -> float | None:
    return round(value, 1) if (value := percentile(values, q)) is not None else None


def _statuses(found: dict[str, int]) -> str:
    return ", ".join(f"{status}: {count}" for status, count in sorted(found.items())) or "-"


def load(seconds: float, connections: int, rates: list[float], backend: str, bad: dict[str, int],
         pause: float) -> None:
    started = time.perf_counter()
    requests = _requests()
    log = OUT / f"load-pause-{pause:g}s-server.log"
    OUT.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    phases: list[dict[str, Any]] = []
    os.sched_setaffinity(0, {int(CLIENT_CORE)})  # the clients' core (the server's command sets its own)
    with Server(backend, HOSTILE_LIMITS, REPO / "src", log) as server:
        for rate in rates:
            asyncio.run(_good_loop(requests, connections, rate, 3.0))  # warm-up: connections, caches
            for bad_now in (None, bad):
                phases.append(_phase(requests, connections, rate, seconds, server, bad_now, pause))
                print(json.dumps({k: v for k, v in phases[-1].items() if k != "bad_clients"}), flush=True)
                time.sleep(3)  # the last slow bodies time out
    server_log = log.read_text(errors="replace")
    ratios = {str(a["rate"]): round(b["p99_ms"] / a["p99_ms"], 2) if a["p99_ms"] and b["p99_ms"] else None
              for a, b in zip(phases[::2], phases[1::2], strict=True)}
    no_5xx = all(phase["5xx"] == phase["server_5xx"] == 0 for phase in phases)
    payload = {"machine": machine(), "command": sys.argv, "backend": backend, "model": MODEL, "bad_pause_s": pause,
               "connections": connections, "server_options": [*HOSTILE_LIMITS, "(others default)"], "phases": phases,
               "p99_ratio_b_over_a": ratios,
               "no_5xx": no_5xx, "accepted": no_5xx and all(r is not None and r <= 2 for r in ratios.values()),
               "server_log_tracebacks": server_log.count("Traceback"), "wall_s": round(time.perf_counter() - started)}
    write_json(OUT / f"load-pause-{pause:g}s.json", payload)
    print(f"\n{connections} connections, {seconds:g} s per phase, {MODEL} {backend}, {' '.join(HOSTILE_LIMITS)}, bad "
          f"clients {bad}, {pause:g} s pause after each answer\n")
    print("| loop | phase | good sent | good statuses | good 200/s | p50 ms | p99 ms | 5xx (all) | bad clients' "
          "statuses | server CPU s | p99 b/a |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for phase in phases:
        loop = f"open {phase['rate']:g}/s" if phase["rate"] else "closed"
        bad_cell = "; ".join(f"{kind} {_statuses(found)}" for kind, found in phase["bad_statuses"].items()) or "-"
        ratio = ratios[str(phase["rate"])] if phase["phase"].startswith("b") else ""
        print(f"| {loop} | {phase['phase']} | {phase['good_sent']} | {_statuses(phase['good_statuses'])} | "
              f"{phase['good_200_per_s']} | {phase['p50_ms']} | {phase['p99_ms']} | {phase['5xx']} | {bad_cell} | "
              f"{phase['server_cpu_s']} | {ratio} |")
    unexpected = [(phase["rate"], kind, status) for phase in phases for kind, found in phase["bad_statuses"].items()
                  for status in found if status != EXPECTED[kind]]
    print(f"\naccepted: {payload['accepted']} (no 5xx: {payload['no_5xx']}); bad answers other than expected: "
          f"{unexpected or 'none'}; tracebacks in the server log: {payload['server_log_tracebacks']}; "
          f"wall {payload['wall_s']} s")


def _encode_input(count: int) -> list[str]:
    """`count` distinct STS-B training sentences, in file order."""
    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root

    rows = (get_dataset("stsbenchmark").path(data_root()) / "sts-train.csv").read_text(encoding="utf-8")
    texts = [text.strip() for row in rows.splitlines() if row.count("\t") >= 6 for text in row.split("\t")[5:7]]
    return list(dict.fromkeys(text for text in texts if text))[:count]


def throughput(baseline_src: Path, repeats: int, count: int, seconds: float, connections: int, backend: str) -> None:
    started = time.perf_counter()
    sides = {"baseline": baseline_src.resolve(), "new": (REPO / "src").resolve()}
    for side, src in sides.items():  # each side imports its own package
        where = subprocess.run([sys.executable, "-c", "import polyembed; print(polyembed.__file__)"], env=_env(src),
                               capture_output=True, text=True, check=True).stdout.strip()
        if not Path(where).resolve().is_relative_to(src):
            raise SystemExit(f"{side}: polyembed imported from {where}, not from {src}")
        print(f"{side}: {where}", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    for side in sides:
        (OUT / f"throughput-{side}-server.log").unlink(missing_ok=True)
    order = [side for i in range(repeats) for side in (("baseline", "new") if i % 2 == 0 else ("new", "baseline"))]
    encode_runs: list[dict[str, Any]] = []
    server_runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "sentences.txt"
        source.write_text("\n".join(_encode_input(count)) + "\n", encoding="utf-8")
        for index, side in enumerate(order):
            output = Path(scratch) / f"{side}-{index}.npy"
            began = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "polyembed", "encode", str(source), "-o", str(output), "-m",
                                   MODEL, "--language", "en"], env=_env(sides[side]), capture_output=True, text=True)
            wall = time.perf_counter() - began
            if done.returncode != 0:
                raise SystemExit(f"{side} encode failed: {done.stderr[-3000:]}")
            encode_runs.append({"side": side, "sentences": count, "wall_s": round(wall, 2),
                                "sentences_per_s": round(count / wall, 1)})
            print(json.dumps(encode_runs[-1]), flush=True)
        import numpy as np

        outputs = {side: np.load(Path(scratch) / f"{side}-{order.index(side)}.npy").astype(np.float32)
                   for side in sides}
        max_diff = float(np.abs(outputs["baseline"] - outputs["new"]).max())
    requests = _requests()
    os.sched_setaffinity(0, {int(CLIENT_CORE)})  # from here on (encode had all cores)
    for index, side in enumerate(order):
        with Server(backend, (), sides[side], OUT / f"throughput-{side}-server.log"):
            asyncio.run(_good_loop(requests, connections, 0, 2.0))  # warm-up
            good = asyncio.run(_good_loop(requests, connections, 0, seconds))
        latencies = [latency * 1000 for status, latency in good if status == "200"]
        server_runs.append({"side": side, "run": index, "statuses": dict(Counter(status for status, _ in good)),
                            "requests_per_s": round(len(latencies) / seconds, 1), "p50_ms": _pct(latencies, 50),
                            "p99_ms": _pct(latencies, 99)})
        print(json.dumps(server_runs[-1]), flush=True)

    def ratio(runs: list[dict[str, Any]], key: str) -> float:
        pairs = [(runs[i], runs[i + 1]) for i in range(0, len(runs), 2)]  # each repeat's two runs: median new / base
        return round(statistics.median(
            (a if a["side"] == "new" else b)[key] / (b if a["side"] == "new" else a)[key] for a, b in pairs), 3)

    payload = {"machine": machine(), "command": sys.argv, "model": MODEL, "backend": backend,
               "baseline_src": str(sides["baseline"]), "encode": encode_runs, "encode_max_abs_diff": max_diff,
               "server": {"connections": connections, "seconds": seconds, "runs": server_runs},
               "ratios_new_over_baseline": {"encode_sentences_per_s": ratio(encode_runs, "sentences_per_s"),
                                            "server_requests_per_s": ratio(server_runs, "requests_per_s"),
                                            "server_p99": ratio(server_runs, "p99_ms")},
               "wall_s": round(time.perf_counter() - started)}
    write_json(OUT / "throughput.json", payload)
    print(f"\nencode: {count} sentences, {MODEL}, --language en (sentences/s over the command's wall time, start-up "
          "included)\n\n| run | side | wall s | sentences/s |\n|---|---|---|---|")
    for index, run in enumerate(encode_runs):
        print(f"| {index} | {run['side']} | {run['wall_s']} | {run['sentences_per_s']} |")
    print(f"\nserver: {MODEL} {backend}, closed loop, {connections} connections, {seconds:g} s\n\n"
          "| run | side | statuses | requests/s (200) | p50 ms | p99 ms |\n|---|---|---|---|---|---|")
    for run in server_runs:
        print(f"| {run['run']} | {run['side']} | {_statuses(run['statuses'])} | {run['requests_per_s']} | "
              f"{run['p50_ms']} | {run['p99_ms']} |")
    print(f"\nnew / baseline (median of paired runs): {payload['ratios_new_over_baseline']}; encode outputs' max "
          f"abs difference {max_diff:.2e}; wall {payload['wall_s']} s")


def main() -> None:
    parser, sub = script_parser(__doc__)
    one = sub.add_parser("load", help="good load alone, then with bad clients, on one server")
    one.add_argument("--seconds", type=float, default=20.0)
    one.add_argument("--connections", type=int, default=300)
    one.add_argument("--rates", nargs="+", type=float, default=[0.0, 100.0], help="0: a closed loop")
    one.add_argument("--backend", default="onnx-int8")
    one.add_argument("--bad", default='{"slow-body": 32, "chunked-endless": 4, "header-1MiB": 4, '
                                      '"headers-20000": 4}', help="bad clients of each kind (JSON)")
    two = sub.add_parser("throughput", help="encode and serve: this checkout against the baseline's code")
    two.add_argument("--baseline-src", type=Path, default=Path("/tmp/base/src"))
    for flag, default in (("--repeats", 3), ("--sentences", 5000), ("--seconds", 15.0), ("--connections", 16)):
        two.add_argument(flag, type=type(default), default=default)
    two.add_argument("--backend", default="onnx-int8")
    helper = sub.add_parser("bad-clients", help=argparse.SUPPRESS)
    helper.add_argument("--seconds", type=float, required=True)
    helper.add_argument("--counts", required=True)
    for parser_ in (one, helper):
        parser_.add_argument("--pause", type=float, default=0.1, help="seconds a bad client waits after an answer")
    args = parser.parse_args()
    if args.command == "load":
        bad = json.loads(args.bad)
        if unknown := set(bad) - set(EXPECTED):
            raise SystemExit(f"--bad: unknown kinds {sorted(unknown)}; known: {', '.join(EXPECTED)}")
        load(args.seconds, args.connections, args.rates, args.backend, bad, args.pause)
    elif args.command == "throughput":
        throughput(args.baseline_src, args.repeats, args.sentences, args.seconds, args.connections, args.backend)
    else:
        print(json.dumps(asyncio.run(_bad_loop(json.loads(args.counts), args.seconds, args.pause))))


if __name__ == "__main__":
    main()
