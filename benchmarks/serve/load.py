"""Serving under load, measured: per server and request size the open loop at each offered rate, the sustainable
rate (confirmed, and given up where its control misses the bound), an overload at twice it and the recovery after,
the control, and wrk's closed loop; `queue` repeats it per queue setting, `selftest` measures the generator."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.results import REPO, study_command
from benchmarks.serve.render import render
from benchmarks.serve.sampling import open_loop, raw_ceiling, wrk
from benchmarks.serve.server import default_prompt, isolation, running, sentences
from benchmarks.serve.spec import (
    CONFIRM_HEADROOM,
    CONFIRM_MARGIN,
    CONFIRM_TRIES,
    DRAIN_SECONDS,
    GRID_MISSES,
    P99_BOUND_MS,
    PORT,
    SENTENCE_ORDER,
    SERVER_CORE,
    STEP_DOWNS,
    confirm_seconds,
    recovery_seconds,
    within_bound,
)
from benchmarks.serve.store import load, save


def _measure(kind: str, model: str, setting: str, infinity: Path | None, rates: list[float],
             texts: list[str], sizes: tuple[int, ...] = (1, 16), options: tuple[str, ...] = (),
             closed_loop: bool = True, control: bool = False) -> dict[str, Any]:
    """One server's entry of serve.json: per request size the grid, the confirmed sustainable rate (a lower one
    where its control misses the bound), the overload and recovery at it, the control and wrk's closed loop."""
    entry: dict[str, Any] = {"server": kind, "model": model, "backend": setting, "isolation": isolation(),
                             "sentence_order": SENTENCE_ORDER, "sizes": {}}
    with running(kind, model, setting, infinity, options) as server:
        url = server.url
        prompt = default_prompt(model) if kind == "infinity" else ""  # polyembed applies the model's own
        entry["prompt_sent"] = prompt
        with tempfile.TemporaryDirectory() as scratch:
            for size in sizes:
                body = Path(scratch) / f"body-{size}.jsonl"
                body.write_text("".join(json.dumps({"input": [prompt + t for t in texts[start:start + size]]
                                                    if size > 1 else prompt + texts[start], "model": model}) + "\n"
                                        for start in range(0, len(texts) - size + 1, size)), encoding="utf-8")
                offered = [max(1.0, rate / size) for rate in rates]  # the same sentences per second
                open_loop(url, body, [(min(20.0, offered[0]), 3.0)])  # warm-up
                runs = _grid(url, body, offered)
                drained: dict[str, float | None] = {"grid": _drain(url, body, DRAIN_SECONDS)}
                if drained["grid"] is None:  # still busy with the grid's overloaded rates: a fresh process
                    server.restart()
                    open_loop(url, body, [(min(20.0, offered[0]), 3.0)])
                sustainable, confirmation = _confirmed_rate(url, body, runs)
                metrics = url.replace("/v1/embeddings", "/metrics") if kind == "polyembed" else None
                pid = server.process.pid if server.process else None
                given_up: list[dict[str, Any]] = []
                while True:
                    overload = (open_loop(url, body, [(2 * sustainable, 10.0),
                                                       (sustainable, recovery_seconds(sustainable))], metrics, pid)
                                if sustainable else None)
                    again = None
                    if control and sustainable:  # the recovery's rate again with no overload before it
                        drained["control"] = _drain(url, body, DRAIN_SECONDS)
                        again = open_loop(url, body, [(sustainable, recovery_seconds(sustainable))], metrics, pid)
                    if not _control_missed(again) or len(given_up) >= STEP_DOWNS:
                        break
                    # the rate missed the bound with no overload before it: not sustained, so one step lower
                    given_up.append({"rate": sustainable, "overload": overload, "control": again})
                    print(f"  control missed the bound at {sustainable}/s: one rate lower", flush=True)
                    drained["step_down"] = _drain(url, body, DRAIN_SECONDS)
                    sustainable, tried = _confirmed_rate(url, body, [r for r in runs
                                                                     if r["offered_per_s"] < sustainable])
                    confirmation += tried
                if closed_loop:
                    drained["closed_loop"] = _drain(url, body, DRAIN_SECONDS)
                entry["sizes"][str(size)] = {"open_loop": runs, "sustainable_per_s": sustainable,
                                             "confirmation": confirmation, "drained_s": drained,
                                             "overload": overload, "control": again, "given_up": given_up,
                                             "closed_loop": wrk(url, body) if closed_loop else None}
                print(f"  {size} sentence(s)/request: sustainable {sustainable}/s", flush=True)
        if kind == "polyembed":
            import httpx

            scraped = httpx.get(url.replace("/v1/embeddings", "/metrics"), timeout=10).text
            entry["metrics_seen"] = sorted({line.split("{")[0].split(" ")[0] for line in scraped.splitlines()
                                            if line.startswith("polyembed_")})
    return entry


def _grid(url: str, body: Path, offered: list[float]) -> list[dict[str, Any]]:
    """10 s at each offered rate, lowest first, until GRID_MISSES rates in a row miss the bound. Each rate is its
    own generator run, which ends once its answers are in (or timed out)."""
    runs: list[dict[str, Any]] = []
    for rate in offered:
        runs += open_loop(url, body, [(rate, 10.0)])
        print(f"    {rate}/s: p99 {runs[-1]['p99_ms']} ms", flush=True)
        if len(runs) >= GRID_MISSES and not any(within_bound(r) for r in runs[-GRID_MISSES:]):
            break
    return runs


def _drain(url: str, body: Path, seconds: float = 120.0) -> float | None:
    """Seconds until the server answers one request, sent alone, within the p99 bound: a phase that follows an
    overload starts only once the work left from it is done. A server that sheds its queue is there within the
    first seconds; one that queues without bound (and keeps working for clients that timed out) takes minutes.
    None if it is not there within `seconds`."""
    import httpx

    start = time.monotonic()
    request = body.read_text(encoding="utf-8").splitlines()[0].encode()
    time.sleep(3.0)
    while time.monotonic() - start < seconds:
        sent = time.monotonic()
        try:
            status = httpx.post(url, content=request, headers={"content-type": "application/json"},
                                timeout=seconds).status_code
        except httpx.TransportError:
            status = 0
        if status == 200 and time.monotonic() - sent <= P99_BOUND_MS / 1000:
            return round(time.monotonic() - start, 1)
        time.sleep(1.0)
    return None


def _control_missed(control: list[dict[str, Any]] | None) -> bool:
    """Whether the control (the sustainable rate once more, no overload before it) missed the bound the rate was
    confirmed by: then the rate is not sustained, and a recovery judged at it would measure the rate, not the
    overload."""
    return bool(control) and not within_bound(control[0])


def _confirmed_rate(url: str, body: Path, runs: list[dict[str, Any]]) -> tuple[float | None, list[dict[str, Any]]]:
    """The sustainable rate and the runs that confirmed it: the grid's 10-s runs that got all 200s with p99 within
    the bound are candidates, and the highest whose CONFIRM_HEADROOM multiple keeps CONFIRM_MARGIN of it for
    `confirm_seconds` (each run once the work left by the runs before it is done: `_drain`) is the rate the
    overload and the recovery use.
    Near capacity a rate's p99 varies from run to run, and one that met the bound once by chance, or only with the
    core saturated, would make every later phase at it look slow. At most CONFIRM_TRIES candidates, from the
    highest down."""
    candidates = sorted((r["offered_per_s"] for r in runs if within_bound(r)), reverse=True)
    tried: list[dict[str, Any]] = []
    for rate in candidates[:CONFIRM_TRIES]:
        drained = _drain(url, body)
        tried += open_loop(url, body, [(_headroom_rate(rate), confirm_seconds(rate))])
        tried[-1] |= {"drained_s": drained, "candidate_per_s": rate, "headroom": CONFIRM_HEADROOM,
                      "bound_ms": CONFIRM_MARGIN * P99_BOUND_MS}
        if within_bound(tried[-1], CONFIRM_MARGIN * P99_BOUND_MS):
            return rate, tried
    return None, tried


def _headroom_rate(rate: float) -> float:
    """The rate that confirms candidate `rate` (CONFIRM_HEADROOM times it, to the loadgen's precision)."""
    return round(CONFIRM_HEADROOM * rate, 3)


def _require_tools() -> None:
    """Stop before the first server starts (minutes in) when a tool the run needs is missing."""
    import shutil

    missing = [tool for tool in ("wrk", "taskset") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"benchmarks.serve.run: {', '.join(missing)} not found (Debian: apt-get install wrk "
                         "util-linux); the closed-loop rows run wrk on the client's core")


def run(models: list[str], backends: list[str], infinity: Path | None, engines: list[str],
        rates: list[float]) -> None:
    _require_tools()
    texts = sentences(512)
    saved = load() or {"entries": [], "ceilings": {}}
    for model in models:
        for backend in backends:
            saved["ceilings"][f"{model}/{backend}"] = raw_ceiling(model, backend, texts)
            saved["entries"] = [e for e in saved["entries"]
                                if (e["server"], e["model"], e["backend"]) != ("polyembed", model, backend)]
            saved["entries"].append(_measure("polyembed", model, backend, None, rates, texts, control=True))
            save(saved)
        if infinity is not None:
            for engine in engines:
                saved["entries"] = [e for e in saved["entries"]
                                    if (e["server"], e["model"], e["backend"]) != ("infinity", model, engine)]
                failures = saved.setdefault("failures", {})
                failures.pop(f"infinity {model} {engine}", None)
                try:
                    saved["entries"].append(_measure("infinity", model, engine, infinity, rates, texts,
                                                     control=True))
                except SystemExit as err:  # a server that does not start: the reason goes into the docs
                    reason = next((line for line in reversed(str(err).splitlines()) if "Error" in line), str(err))
                    failures[f"infinity {model} {engine}"] = reason.strip()[:400]
                    print(f"infinity {model} {engine} did not start: {reason}", flush=True)
                save(saved)
    saved["entries"].sort(key=_table_order)
    save(saved)
    render()


def _table_order(entry: dict[str, Any]) -> tuple[str, bool, int, str]:
    """Rows by model, polyembed's first, backends fastest-last as in the acceptance table, whatever order the
    entries were measured (or measured again) in."""
    order = ["torch", "onnx", "onnx-int8", "openvino", "optimum"]
    backend = entry["backend"]
    return (entry["model"], entry["server"] != "polyembed",
            order.index(backend) if backend in order else len(order), backend)


def queue_limits(models: list[str], backend: str, limits: list[float], targets: list[float], repeats: int,
                 rates: list[float], sizes: tuple[int, ...] = (1,), resumes: tuple[float, ...] = (0.25,)) -> None:
    """Overload and recovery at each `--max-queue-seconds`, `--queue-target-seconds` and `--resume-queue-seconds`
    (a resume at or above the limit: no drain after a refusal) (requests of each of
    `sizes` sentences; `rates` in sentences/s, as `run`); repeated, they show whether a recovery above the bound is
    the server's or the machine's at that minute. A lower limit or target leaves less queued work to drain once an
    overload stops. Each run finds its own sustainable rate on the grid and overloads at twice it, as `run` does,
    then offers that rate once more with no overload before it (the control: what the recovery's p99 is compared
    with); the runs alternate between settings."""
    texts = sentences(512)
    saved = load() or {"entries": [], "ceilings": {}}
    for model in models:
        settings = [(limit, target, resume) for limit in limits for target in targets for resume in resumes]
        by_setting: dict[str, list[dict[str, Any]]] = saved.setdefault("queue_limits", {}).setdefault(
            f"{model}/{backend}", {})  # runs add to those stored: the table lists every run in the order made
        for limit, target, resume in settings:
            by_setting.setdefault(f"{limit:g} / {target:g} / {resume:g}", [])
        for repeat in range(repeats):
            for limit, target, resume in settings:
                print(f"{model} {backend}: --max-queue-seconds {limit} --queue-target-seconds {target} "
                      f"--resume-queue-seconds {resume}, repeat {repeat + 1} of {repeats}", flush=True)
                entry = _measure("polyembed", model, backend, None, rates, texts, sizes=sizes,
                                 options=("--max-queue-seconds", str(limit), "--queue-target-seconds", str(target),
                                          "--resume-queue-seconds", str(resume)),
                                 closed_loop=False, control=True)
                by_setting[f"{limit:g} / {target:g} / {resume:g}"] += [{**result, "sentences_per_request": int(size),
                                                                         "sentence_order": SENTENCE_ORDER}
                                                          for size, result in entry["sizes"].items()]
                save(saved)
    render()


def selftest() -> None:
    """The generator against a stub that answers at once: the rates it reaches on its own core."""
    stub = subprocess.Popen(["taskset", "-c", SERVER_CORE, *study_command("benchmarks.serve.loadgen", "stub", "--port",
                                                                          str(PORT))], cwd=REPO)
    try:
        time.sleep(1.5)
        with tempfile.TemporaryDirectory() as scratch:
            body = Path(scratch) / "body.json"
            body.write_text(json.dumps({"input": sentences(1)[0]}), encoding="utf-8")
            runs = open_loop(f"http://127.0.0.1:{PORT}/v1/embeddings", body,
                              [(500.0, 5.0), (1000.0, 5.0), (2000.0, 5.0)])
    finally:
        stub.terminate()
        stub.wait(timeout=30)
    saved = load() or {"entries": [], "ceilings": {}}
    saved["generator_selftest"] = runs
    save(saved)
    print(json.dumps(runs, indent=1))
