"""The open loop and what is read beside it: `loadgen` at each phase's rates on the client's core, the server's own
account of each window (its /metrics and its process's CPU time), wrk's closed loop, and the raw `encode`
ceiling of a model on the server's core."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.common.results import REPO, study_command
from benchmarks.serve.server import on_server_core
from benchmarks.serve.spec import CLIENT_CORE, ONE_THREAD
from benchmarks.serve.spec_phases import WINDOW_S

_Sample = tuple[float, float | None, float | None, float | None, float | None]
"""(wall-clock time, model seconds, padded tokens, CPU seconds of the server process, the server's estimated queue
wait in seconds)."""


def open_loop(url: str, body: Path, phases: list[tuple[float, float]], metrics_url: str | None = None,
               pid: int | None = None) -> list[dict[str, Any]]:
    """`loadgen` at the phases' rates; with `metrics_url` (polyembed's /metrics) or the server's `pid`, the
    server's own account of each window as well (`server_windows`)."""
    spec = ",".join(f"{rate}:{seconds}" for rate, seconds in phases)
    samples: list[_Sample] = []
    done_event = threading.Event()
    sampler = threading.Thread(target=_sample_server, args=(metrics_url, pid, samples, done_event), daemon=True)
    if metrics_url or pid:
        sampler.start()
    try:
        command = study_command("benchmarks.serve.loadgen", "run", "--url", url, "--body", str(body), "--phases", spec)
        done = subprocess.run(["taskset", "-c", CLIENT_CORE, *command], capture_output=True, text=True, check=True,
                              cwd=REPO)
    finally:
        done_event.set()
        if sampler.is_alive():
            sampler.join()
    found = json.loads(done.stdout)
    if samples:
        for phase in found:
            if "started_epoch_s" in phase:
                phase["server_windows"] = server_windows(samples, phase["started_epoch_s"], phase["seconds"])
                waits = queue_waits(samples, phase["started_epoch_s"], phase["seconds"])
                if waits:
                    phase["queue_wait_per_s"] = waits
    return found


WAIT_METRIC = "polyembed_queue_wait_seconds"


def _sample_server(metrics_url: str | None, pid: int | None, samples: list[_Sample], done: threading.Event) -> None:
    """Every second until `done`: (wall-clock time, model seconds and padded tokens as the server counts them,
    CPU seconds of the server process, the queue wait the server estimates), None for what is not there."""
    import httpx

    while not done.is_set():
        text = ""
        if metrics_url:
            with contextlib.suppress(httpx.HTTPError):
                text = httpx.get(metrics_url, timeout=5).text
        samples.append((time.time(), metric_total(text, "polyembed_encode_duration_seconds_sum") if text else None,
                        metric_total(text, "polyembed_batch_padded_tokens_sum") if text else None,
                        cpu_seconds(pid) if pid else None,
                        metric_total(text, WAIT_METRIC) if WAIT_METRIC in text else None))
        done.wait(1.0)


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of a process, all its threads (/proc/PID/stat); None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metric_total(text: str, name: str) -> float:
    """The sum of a metric's samples over its labels in Prometheus' text format."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith((name + " ", name + "{")))


def queue_waits(samples: list[_Sample], started: float, seconds: float) -> list[tuple[float, float]]:
    """(seconds into the phase, the server's estimated queue wait) of each sample inside the phase: how long the
    work an overload left behind took to drain, second by second."""
    return [(round(s[0] - started, 1), round(s[4], 3)) for s in samples
            if len(s) > 4 and s[4] is not None and started <= s[0] <= started + seconds]


def server_windows(samples: list[_Sample], started: float, seconds: float) -> list[dict | None]:
    """Per WINDOW_S of a phase, from the server's /metrics: the share of the window its model calls took
    (`model_busy`) and their cost (`model_ms_per_1k_tokens`, per thousand padded tokens); from /proc, the share of
    the core the whole server process used (`cpu_busy`: model, HTTP, tokenising). The same cost with a high latency
    is queueing; a higher cost is a slower machine (same calls, more time); a CPU share near 1 is a saturated core;
    a low one with a high latency is time lost waiting; the mean of the queue wait the server estimated, sampled
    each second (`queue_wait_s`), shows how fast the work an overload left behind drains. None where the samples do
    not cover a window."""
    out: list[dict | None] = []
    for index in range(math.ceil(seconds / WINDOW_S - 1e-9)):
        begin, end = started + index * WINDOW_S, started + min(seconds, (index + 1) * WINDOW_S)
        inside = [s for s in samples if begin - 0.5 <= s[0] <= end + 0.5]
        if len(inside) < 2 or inside[-1][0] - inside[0][0] < WINDOW_S / 2:
            out.append(None)
            continue
        first, last = inside[0], inside[-1]
        span = last[0] - first[0]
        window: dict[str, float | None] = {}
        if first[1] is not None and last[1] is not None and first[2] is not None and last[2] is not None:
            model, tokens = last[1] - first[1], last[2] - first[2]
            window |= {"model_busy": round(model / span, 3),
                       "model_ms_per_1k_tokens": round(1e6 * model / tokens, 1) if tokens else None}
        if first[3] is not None and last[3] is not None:
            window["cpu_busy"] = round((last[3] - first[3]) / span, 3)
        waits = [s[4] for s in inside if len(s) > 4 and s[4] is not None and begin <= s[0] <= end]
        if waits:
            window["queue_wait_s"] = round(sum(waits) / len(waits), 3)
        out.append(window or None)
    return out


def wrk(url: str, body: Path, connections: int = 200, seconds: int = 10) -> dict[str, Any]:
    """wrk's closed loop: requests/s, latency percentiles and non-2xx answers (it sends the first body only)."""
    script = body.with_suffix(".lua")
    first = body.read_text(encoding="utf-8").splitlines()[0]
    script.write_text(f'wrk.method = "POST"\nwrk.body = {json.dumps(first)}\n'
                      'wrk.headers["Content-Type"] = "application/json"\n', encoding="utf-8")
    done = subprocess.run(["taskset", "-c", CLIENT_CORE, "wrk", "-t1", f"-c{connections}", f"-d{seconds}s",
                           "--latency", "--timeout", "30s", "-s", str(script), url],
                          capture_output=True, text=True, check=True)
    text = done.stdout

    def millis(label: str) -> float | None:
        found = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.MULTILINE)
        if not found:
            return None
        return round(float(found.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1000.0}[found.group(2)], 1)

    rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    errors = re.search(r"Socket errors: (.*)", text)
    return {"connections": connections, "seconds": seconds, "requests_per_s": float(rate.group(1)) if rate else None,
            "p50_ms": millis("50"), "p99_ms": millis("99"), "non_2xx": int(non_2xx.group(1)) if non_2xx else 0,
            "socket_errors": errors.group(1).strip() if errors else ""}


def raw_ceiling(model: str, backend: str, sentences: list[str]) -> float:
    """Sentences per second of plain `encode` (batch 64) for the model and backend, on the server's core."""
    code = ("import json, sys, time\nfrom polyembed.models.backends import load_with_backend\n"
            f"encoder = load_with_backend({model!r}, {backend!r})\nsentences = json.loads(sys.stdin.read())\n"
            "encoder.encode(sentences[:64], batch_size=64)\nstarted = time.perf_counter()\n"
            "encoder.encode(sentences, batch_size=64)\nprint(len(sentences) / (time.perf_counter() - started))\n")
    done = subprocess.run(on_server_core([sys.executable, "-c", code]), input=json.dumps(sentences),
                          capture_output=True, text=True, check=True, env={**os.environ, **ONE_THREAD})
    return round(float(done.stdout.strip().splitlines()[-1]), 1)
