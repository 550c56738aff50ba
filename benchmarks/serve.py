"""Serving under load (issue 39): polyembed serve and Infinity side by side -> results/bench/serve, docs.

  python benchmarks/serve.py selftest                      # the load generator's own ceiling (stub server)
  python benchmarks/serve.py run --models minilm-en me5-small --backends torch onnx-int8 \\
      [--infinity /path/to/infinity-venv --infinity-engines torch optimum] [--rates 50 100 200 400 800]
  python benchmarks/serve.py queue [--models minilm-en] [--limits 1.0] [--targets 0 0.25] [--resumes 1 0.25]
      [--repeats 2] [--sizes 1]
  python benchmarks/serve.py malformed [--models minilm-en me5-small] [--backend onnx-int8]
  python benchmarks/serve.py render

Every server runs on core 0 with one torch / onnxruntime thread (held there by a cpuset cgroup where the
machine lets us make one, else by `taskset`) and no line logged per request (`--no-access-log`; Infinity
`--log-level warning`), the load generator on core 1 (`taskset`). Per server and request
size (1 and 16 sentences): the open loop at each offered rate (requests of
16 sentences at a 16th of it: the same sentences per second; `loadgen.py`: latency from the scheduled send
time; the grid, lowest rate first, stops after two rates in a row that miss the bound), the sustainable rate (the
highest offered rate whose requests all got a 200 with p99 <= 500 ms in the grid's 10 s and whose 1.1x kept p99
<= 400 ms, over the run and in each 10 s, for as long as the recovery phase below: otherwise the next lower one), an
overload at twice that rate for 10 s followed by the sustainable rate for long enough that 100 requests leave after its
first 10 s (40-120 s; statuses; recovery: the p99 of those requests, and of each 10 s), the control (the same
phase once more with no overload before it: near capacity, p99 varies between runs on one machine), and wrk's
closed loop with 200 connections. Each phase after an overloaded one waits until the server answers a request
sent alone within the bound (`_drain`): a server that queues without bound is otherwise still working for
clients that have given up. The open loop sends the 512 STS-B test sentences in turn (one or 16 per
request; wrk repeats the first request), Infinity's with the model's default prompt in front, since it applies
none: both servers embed the same token sequences.
Beside them, the raw `encode` ceiling of the same model and backend on the same core (batch 64). Infinity
(`infinity-emb`, which needs numpy < 2 and sentence-transformers < 4) runs from its own virtual environment.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from docs_sections import missing_tables, publish, shown_table
from loadgen import SETTLE_S, WINDOW_S
from result_files import cpu_description, write_json

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
OUT = REPO / "results" / "bench" / "serve"
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- serve-load:start -->", "<!-- serve-load:end -->"
SERVER_CORE, CLIENT_CORE = "0", "1"
CPUSET = Path("/sys/fs/cgroup/cpuset/polyembed-serve-bench")
"""A cgroup (v1 cpuset) holding the server's core only, where the machine lets us make one: `taskset` sets an
affinity the process may widen again, and onnxruntime does by default (a thread pinned to each physical core)."""
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
              "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"}
P99_BOUND_MS = 500.0
CONFIRM_SECONDS, CONFIRM_TRIES = 20.0, 4
CONFIRM_HEADROOM, CONFIRM_MARGIN = 1.1, 0.8
"""A candidate rate is confirmed by a run at CONFIRM_HEADROOM times it whose p99 (over the run and in each 10 s)
stays within CONFIRM_MARGIN of the bound; each guards against one way a recovery stays over the bound long after
the overload while its control holds it. Capacity: the work an overload leaves behind drains only with capacity to
spare, and a rate the core serves only at its capacity drains it slowly. Latency: near capacity p99 varies from run
to run, and a rate whose own p99 sits near the bound leaves no room for the leftover work. Runs from a6236bd to
6349526 confirmed with the margin alone (at the rate itself), a run of df79671 with the headroom alone."""
GRID_MISSES = 2
"""The grid stops after this many rates in a row that miss the bound: the rates above them are beyond capacity,
and their overload would only lengthen the drain that follows."""
STEP_DOWNS = 2
"""How many times a rate whose control missed the bound is given up for the next lower one."""
RECOVERY_REQUESTS, RECOVERY_SECONDS = 100, (40.0, 120.0)
"""The recovery (and its control) lasts long enough that at least RECOVERY_REQUESTS are sent after its first
`loadgen.SETTLE_S` (within the bounds): the p99 of fewer is the slowest single request, one stall of the machine."""
DRAIN_SECONDS = 90.0
"""How long a phase waits for the work left by an overloaded one (`_drain`); after the grid, a server not done by
then is restarted."""
PORT = 8790


SENTENCE_ORDER = "shuffled once (seed 0)"
"""The file groups its sentences by source, and the long news sentences came as one clump: at a steady rate, a
burst of nearly twice the work every 512 requests (every 5 s at 100 requests/s), which set the p99 near capacity.
Shuffled once with a fixed seed, every server gets the same sentences in the same order at an even mean length."""


def _sentences(count: int) -> list[str]:
    """STS-B test sentences of ordinary length (8-30 words), the same for every server, in SENTENCE_ORDER."""
    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root

    rows = (get_dataset("stsbenchmark").path(data_root()) / "sts-test.csv").read_text(encoding="utf-8").splitlines()
    texts = [row.split("\t")[5] for row in rows if row.count("\t") >= 6]
    picked = [t for t in texts if 8 <= len(t.split()) <= 30][:count]
    random.Random(0).shuffle(picked)
    return picked


def _server_cpuset() -> Path | None:
    """CPUSET, made with the server's core where cgroup v1's cpuset is mounted writable; None elsewhere."""
    try:
        CPUSET.mkdir(exist_ok=True)
        (CPUSET / "cpuset.cpus").write_text(SERVER_CORE)
        (CPUSET / "cpuset.mems").write_text((CPUSET.parent / "cpuset.mems").read_text().strip())
    except OSError:
        return None
    return CPUSET


def _on_server_core(command: list[str]) -> list[str]:
    """`command` held to the server's core: inside `_server_cpuset` (no thread it starts can leave the core)
    where there is one, else by `taskset` alone."""
    cpuset = _server_cpuset()
    if cpuset is None:
        return ["taskset", "-c", SERVER_CORE, *command]
    return ["sh", "-c", f'echo $$ > {cpuset / "cgroup.procs"} && exec taskset -c {SERVER_CORE} "$@"', "sh", *command]


def _isolation() -> str:
    """How the server is held to its core (recorded with each entry)."""
    return "cpuset" if _server_cpuset() is not None else "taskset"


def _wait_ready(process: subprocess.Popen, url: str, seconds: float = 600) -> None:
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}): {process.stderr.read().decode()[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(1)
    raise SystemExit(f"no ready answer from {url} within {seconds:.0f} s")


_Sample = tuple[float, float | None, float | None, float | None, float | None]
"""(wall-clock time, model seconds, padded tokens, CPU seconds of the server process, the server's estimated queue
wait in seconds)."""


def _open_loop(url: str, body: Path, phases: list[tuple[float, float]], metrics_url: str | None = None,
               pid: int | None = None) -> list[dict[str, Any]]:
    """`loadgen.py` at the phases' rates; with `metrics_url` (polyembed's /metrics) or the server's `pid`, the
    server's own account of each window as well (`_server_windows`)."""
    spec = ",".join(f"{rate}:{seconds}" for rate, seconds in phases)
    samples: list[_Sample] = []
    done_event = threading.Event()
    sampler = threading.Thread(target=_sample_server, args=(metrics_url, pid, samples, done_event), daemon=True)
    if metrics_url or pid:
        sampler.start()
    try:
        done = subprocess.run(["taskset", "-c", CLIENT_CORE, sys.executable, str(HERE / "loadgen.py"), "run", "--url",
                               url, "--body", str(body), "--phases", spec], capture_output=True, text=True, check=True)
    finally:
        done_event.set()
        if sampler.is_alive():
            sampler.join()
    found = json.loads(done.stdout)
    if samples:
        for phase in found:
            if "started_epoch_s" in phase:
                phase["server_windows"] = _server_windows(samples, phase["started_epoch_s"], phase["seconds"])
                waits = _queue_waits(samples, phase["started_epoch_s"], phase["seconds"])
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
        samples.append((time.time(), _metric_total(text, "polyembed_encode_duration_seconds_sum") if text else None,
                        _metric_total(text, "polyembed_batch_padded_tokens_sum") if text else None,
                        _cpu_seconds(pid) if pid else None,
                        _metric_total(text, WAIT_METRIC) if WAIT_METRIC in text else None))
        done.wait(1.0)


def _cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of a process, all its threads (/proc/PID/stat); None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _metric_total(text: str, name: str) -> float:
    """The sum of a metric's samples over its labels in Prometheus' text format."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith((name + " ", name + "{")))


def _queue_waits(samples: list[_Sample], started: float, seconds: float) -> list[tuple[float, float]]:
    """(seconds into the phase, the server's estimated queue wait) of each sample inside the phase: how long the
    work an overload left behind took to drain, second by second."""
    return [(round(s[0] - started, 1), round(s[4], 3)) for s in samples
            if len(s) > 4 and s[4] is not None and started <= s[0] <= started + seconds]


def _server_windows(samples: list[_Sample], started: float, seconds: float) -> list[dict | None]:
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


def _wrk(url: str, body: Path, connections: int = 200, seconds: int = 10) -> dict[str, Any]:
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


def _raw_ceiling(model: str, backend: str, sentences: list[str]) -> float:
    """Sentences per second of plain `encode` (batch 64) for the model and backend, on the server's core."""
    code = ("import json, sys, time\nfrom polyembed.models.backends import load_with_backend\n"
            f"encoder = load_with_backend({model!r}, {backend!r})\nsentences = json.loads(sys.stdin.read())\n"
            "encoder.encode(sentences[:64], batch_size=64)\nstarted = time.perf_counter()\n"
            "encoder.encode(sentences, batch_size=64)\nprint(len(sentences) / (time.perf_counter() - started))\n")
    done = subprocess.run(_on_server_core([sys.executable, "-c", code]), input=json.dumps(sentences),
                          capture_output=True, text=True, check=True, env={**os.environ, **ONE_THREAD})
    return round(float(done.stdout.strip().splitlines()[-1]), 1)


def _server_command(kind: str, model: str, setting: str, infinity: Path | None,
                    options: tuple[str, ...] = ()) -> tuple[list[str], str, str, str | None]:
    """(command, embeddings URL, readiness URL, working folder) of one server. Neither writes a line per request
    (uvicorn's access log), whose formatting and writing would take time from encoding on the one core. Infinity
    starts inside its model folder with the model id ".": its optimum engine names the ONNX file by the path it
    globbed, and the optimum-onnx it installs with finds only a path relative to the model folder."""
    base = f"http://127.0.0.1:{PORT}"
    if kind == "polyembed":
        return ([sys.executable, "-m", "polyembed", "serve", "-m", model, "--backend", setting, "--port", str(PORT),
                 "--no-access-log", *options],
                f"{base}/v1/embeddings", f"{base}/ready", None)
    path = _infinity_model(model, with_onnx=setting == "optimum")
    assert infinity is not None
    return ([str(infinity / "bin" / "infinity_emb"), "v2", "--model-id", ".", "--served-model-name", model,
             "--engine", setting, "--device", "cpu", "--batch-size", "64", "--port", str(PORT),
             "--log-level", "warning"],
            f"{base}/embeddings", f"{base}/health", path)


def _default_prompt(model: str) -> str:
    """The text the model prepends by default ("query: " for e5). Infinity applies no prompt, so its requests carry
    it: both servers then embed the same token sequence, and Infinity's vectors are the model's."""
    from polyembed.models.backends import load_with_backend

    return load_with_backend(model, "torch").prompt  # a sentence-transformers model's own metadata


def _infinity_model(model: str, with_onnx: bool) -> str:
    """The model folder Infinity loads. Its optimum engine runs an ONNX file from the folder and does not export
    one, preferring a file named '*quantize*' on CPU: it gets polyembed's own export (fp32 as model.onnx, int8 as
    model_quantized.onnx, at the top: optimum-onnx matches the bare file name against the path Infinity found),
    so both servers run the same int8 graph on onnxruntime."""
    from polyembed.models.backends import load_with_backend
    from polyembed.models.loading import resolve_model_path
    from polyembed.models.onnx_export import FP32_FILE, INT8_FILE

    path, _ = resolve_model_path(model)
    modern = "sentence_transformers.base" in (Path(path) / "modules.json").read_text(encoding="utf-8")
    if not with_onnx and not modern:
        return path
    folder = OUT / "infinity-models" / model
    folder.mkdir(parents=True, exist_ok=True)
    rewritten = _classic_module_files(Path(path)) if modern else {}
    replaced = {name.split("/")[0] for name in rewritten}
    for item in Path(path).iterdir():
        link = folder / item.name
        if item.name in replaced or link.exists() or link.is_symlink() or item.suffix == ".onnx":
            continue
        link.symlink_to(item.resolve())
    for name, text in rewritten.items():  # real files: never written through a link into the model itself
        for part in (folder / name.split("/")[0], folder / name):
            if part.is_symlink():
                part.unlink()
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    if not with_onnx:
        return str(folder)
    export = Path(load_with_backend(model, "onnx").path)
    for source, name in ((FP32_FILE, "model.onnx"), (INT8_FILE, "model_quantized.onnx")):
        link = folder / name
        if not link.exists():
            link.symlink_to(export / source)
    return str(folder)


def _classic_module_files(path: Path) -> dict[str, str]:
    """The module files of a folder saved by sentence-transformers 6, rewritten as sentence-transformers 3 (which
    Infinity needs) reads them: classic module paths, and each module's config under its old keys. Same weights,
    same pooling; Infinity applies no prompt either way."""
    classic = {"Transformer": "sentence_transformers.models.Transformer",
               "Pooling": "sentence_transformers.models.Pooling",
               "Normalize": "sentence_transformers.models.Normalize"}
    modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
    for module in modules:
        module["type"] = classic[module["type"].rsplit(".", 1)[-1]]
    pooling = json.loads((path / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    mode = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens"}
    tokenizer = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
    if tokenizer.get("tokenizer_class") == "TokenizersBackend":  # transformers 5's name for a tokenizer.json
        tokenizer["tokenizer_class"] = "PreTrainedTokenizerFast"
    return {"modules.json": json.dumps(modules, indent=2), "tokenizer_config.json": json.dumps(tokenizer),
            "sentence_bert_config.json": json.dumps({"max_seq_length": 512, "do_lower_case": False}),
            "1_Pooling/config.json": json.dumps({"word_embedding_dimension": pooling["embedding_dimension"],
                                                 mode[pooling["pooling_mode"]]: True,
                                                 "include_prompt": pooling.get("include_prompt", True)})}


def _measure(kind: str, model: str, setting: str, infinity: Path | None, rates: list[float],
             texts: list[str], sizes: tuple[int, ...] = (1, 16), options: tuple[str, ...] = (),
             closed_loop: bool = True, control: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {"server": kind, "model": model, "backend": setting, "isolation": _isolation(),
                             "sentence_order": SENTENCE_ORDER, "sizes": {}}
    with _running(kind, model, setting, infinity, options) as server:
        url = server.url
        prompt = _default_prompt(model) if kind == "infinity" else ""  # polyembed applies the model's own
        entry["prompt_sent"] = prompt
        with tempfile.TemporaryDirectory() as scratch:
            for size in sizes:
                body = Path(scratch) / f"body-{size}.jsonl"
                body.write_text("".join(json.dumps({"input": [prompt + t for t in texts[start:start + size]]
                                                    if size > 1 else prompt + texts[start], "model": model}) + "\n"
                                        for start in range(0, len(texts) - size + 1, size)), encoding="utf-8")
                offered = [max(1.0, rate / size) for rate in rates]  # the same sentences per second
                _open_loop(url, body, [(min(20.0, offered[0]), 3.0)])  # warm-up
                runs = _grid(url, body, offered)
                drained: dict[str, float | None] = {"grid": _drain(url, body, DRAIN_SECONDS)}
                if drained["grid"] is None:  # still busy with the grid's overloaded rates: a fresh process
                    server.restart()
                    _open_loop(url, body, [(min(20.0, offered[0]), 3.0)])
                sustainable, confirmation = _confirmed_rate(url, body, runs)
                metrics = url.replace("/v1/embeddings", "/metrics") if kind == "polyembed" else None
                pid = server.process.pid if server.process else None
                given_up: list[dict[str, Any]] = []
                while True:
                    overload = (_open_loop(url, body, [(2 * sustainable, 10.0),
                                                       (sustainable, _recovery_seconds(sustainable))], metrics, pid)
                                if sustainable else None)
                    again = None
                    if control and sustainable:  # the recovery's rate again with no overload before it
                        drained["control"] = _drain(url, body, DRAIN_SECONDS)
                        again = _open_loop(url, body, [(sustainable, _recovery_seconds(sustainable))], metrics, pid)
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
                                             "closed_loop": _wrk(url, body) if closed_loop else None}
                print(f"  {size} sentence(s)/request: sustainable {sustainable}/s", flush=True)
        if kind == "polyembed":
            import httpx

            scraped = httpx.get(url.replace("/v1/embeddings", "/metrics"), timeout=10).text
            entry["metrics_seen"] = sorted({line.split("{")[0].split(" ")[0] for line in scraped.splitlines()
                                            if line.startswith("polyembed_")})
    return entry


class _Server:
    """A server on the server's core with one thread; `restart` gives a fresh process (a server that queued
    without bound through the grid's overloaded rates would otherwise still be working for clients that gave up)."""

    def __init__(self, kind: str, model: str, setting: str, infinity: Path | None, options: tuple[str, ...]) -> None:
        self.command, self.url, self.ready, self.folder = _server_command(kind, model, setting, infinity, options)
        self.label = f"{kind} {model} {setting}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        print(f"{self.label}: starting", flush=True)
        self.process = subprocess.Popen(_on_server_core(self.command), stdout=subprocess.DEVNULL,
                                        cwd=self.folder, stderr=subprocess.PIPE, env={**os.environ, **ONE_THREAD})
        _wait_ready(self.process, self.ready)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def _running(kind: str, model: str, setting: str, infinity: Path | None,
             options: tuple[str, ...] = ()) -> Iterator[_Server]:
    """A started, ready server; stopped after."""
    server = _Server(kind, model, setting, infinity, options)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _grid(url: str, body: Path, offered: list[float]) -> list[dict[str, Any]]:
    """10 s at each offered rate, lowest first, until GRID_MISSES rates in a row miss the bound. Each rate is its
    own generator run, which ends once its answers are in (or timed out)."""
    runs: list[dict[str, Any]] = []
    for rate in offered:
        runs += _open_loop(url, body, [(rate, 10.0)])
        print(f"    {rate}/s: p99 {runs[-1]['p99_ms']} ms", flush=True)
        if len(runs) >= GRID_MISSES and not any(_within_bound(r) for r in runs[-GRID_MISSES:]):
            break
    return runs


def _confirm_seconds(rate: float) -> float:
    """How long a candidate rate must hold the bound again: as long as the recovery and its control
    (`_recovery_seconds`), over the whole phase. Near capacity a rate that holds for 20 s often misses over 40 s
    with no overload before it (the control); confirmed on a shorter run, the recovery and the control that follow
    would be judged at a rate the machine does not sustain for their length."""
    return _recovery_seconds(rate)


def _recovery_seconds(rate: float) -> float:
    """The recovery phase's length at `rate` requests/s: RECOVERY_REQUESTS after the settling time, within bounds."""
    least, most = RECOVERY_SECONDS
    return float(min(most, max(least, SETTLE_S + math.ceil((RECOVERY_REQUESTS + 1) / rate))))


_RECOVERY_TEXT = f"about {RECOVERY_REQUESTS} requests sent from {SETTLE_S:g} s into it on"


def _confirm_length(entries: list[dict[str, Any]]) -> str:
    """How long the confirmation ran: as long as the recovery phase (`_confirm_seconds`); in rows measured
    before that, 20 s, or as long as RECOVERY_REQUESTS take where that was longer."""
    def name(entry: dict[str, Any]) -> str:
        return f"{entry['server']} {entry['model']} {entry['backend']}"

    def short(result: dict[str, Any]) -> bool:
        ran = result["confirmation"][-1].get("seconds", CONFIRM_SECONDS)
        return ran < _confirm_seconds(result["sustainable_per_s"])

    confirmed = [e for e in entries if any(r.get("sustainable_per_s") for r in e["sizes"].values())]
    old = [name(e) for e in confirmed if any(short(r) for r in e["sizes"].values() if r.get("sustainable_per_s"))]
    least, most = RECOVERY_SECONDS
    text = f"the length of the recovery phase ({least:g}-{most:g} s), in each {WINDOW_S:g} s of it"
    old_text = f"{CONFIRM_SECONDS:.0f} s, or as long as {RECOVERY_REQUESTS} requests take where that is longer"
    if old and len(old) == len(confirmed):
        return old_text
    return text + (f" (the rows of {', '.join(old)}: {old_text})" if old else "")


def _margin_text(entries: list[dict[str, Any]]) -> str:
    """How the confirming run was stricter than the grid: at CONFIRM_HEADROOM times the rate with p99 within
    CONFIRM_MARGIN of the bound, or (runs from before) the margin alone at the rate; rows confirmed otherwise are
    named."""
    def rule(result: dict[str, Any]) -> str:
        tried = result.get("confirmation") or [{}]
        return ("headroom" if "headroom" in tried[0] and "bound_ms" in tried[0] else "margin" if "bound_ms" in tried[0]
                else "plain")

    rows: dict[str, list[str]] = {"headroom": [], "margin": [], "plain": []}
    for entry in entries:
        for result in entry["sizes"].values():
            if result.get("confirmation"):
                name = f"{entry['server']} {entry['model']} {entry['backend']}"
                rows[rule(result)] += [name] if name not in rows[rule(result)] else []
    texts = {"headroom": f" at {CONFIRM_HEADROOM:g}x that rate with p99 <= {CONFIRM_MARGIN * P99_BOUND_MS:.0f} ms "
                         f"({CONFIRM_MARGIN:.0%} of the bound; the work an overload leaves behind drains only with "
                         "capacity to spare and with room under the bound, and near capacity p99 varies from run to "
                         "run)",
             "margin": f" with p99 <= {CONFIRM_MARGIN * P99_BOUND_MS:.0f} ms ({CONFIRM_MARGIN:.0%} of the bound: near "
                       "capacity p99 varies from run to run, and a rate confirmed by a hair missed the bound in the "
                       "recovery or control after it as often as not)",
             "plain": ""}
    used = [kind for kind in ("headroom", "margin", "plain") if rows[kind]]
    if len(used) <= 1:
        return texts[used[0]] if used else ""
    return "; ".join(f"the rows of {', '.join(rows[kind])}:{texts[kind] or ' at the rate itself'}" for kind in used)


def _recovery_length(entries: list[dict[str, Any]]) -> str:
    """How long the rows' recovery phases lasted: 40-120 s for RECOVERY_REQUESTS, 20 s in runs from before."""
    short = [f"{e['server']} {e['model']} {e['backend']}" for e in entries
             if any(r.get("overload") and r["overload"][-1]["seconds"] <= 20 for r in e["sizes"].values())]
    least, most = RECOVERY_SECONDS
    long_text = f"{least:g}-{most:g} s: {_RECOVERY_TEXT}"
    if not short:
        return long_text
    return "20 s" if len(short) == len(entries) else f"{long_text}; the rows of {', '.join(short)}: 20 s"


def _queue_recovery_length(found: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    """How long the queue runs' recovery phases lasted (20 s in the runs from before RECOVERY_REQUESTS)."""
    phases = [r["overload"][-1]["seconds"] for runs in found.values() for results in runs.values()
              for r in results if r.get("overload")]
    least, most = RECOVERY_SECONDS
    short = sum(seconds <= 20 for seconds in phases)
    if short == len(phases):
        return "20 s"
    return f"{least:g}-{most:g} s: {_RECOVERY_TEXT}" + (f"; {short} of the runs: 20 s" if short else "")


def _recovery_p99(phase: dict[str, Any]) -> float | None:
    """The p99 of a recovery or control phase from `SETTLE_S` into it. Runs from before its 40-s phases stored
    the p99 of the second half of 20 s: the same requests."""
    return phase.get("p99_after_settle_ms", phase.get("p99_last_half_ms"))


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


def _within_bound(run: dict[str, Any], bound: float = P99_BOUND_MS) -> bool:
    """All 200s, with the p99 within `bound` over the run and over each WINDOW_S of it: a rate whose p99 crosses
    the bound in some 10 s without any overload before it is not sustained, and a recovery judged at that rate
    would measure the rate, not the overload."""
    windows = [w for w in run.get("p99_windows_ms", []) if w is not None]
    return (set(run["statuses"]) == {"200"} and (run["p99_ms"] or 1e9) <= bound
            and all(w <= bound for w in windows))


def _control_missed(control: list[dict[str, Any]] | None) -> bool:
    """Whether the control (the sustainable rate once more, no overload before it) missed the bound the rate was
    confirmed by: then the rate is not sustained, and a recovery judged at it would measure the rate, not the
    overload."""
    return bool(control) and not _within_bound(control[0])


def _confirmed_rate(url: str, body: Path, runs: list[dict[str, Any]]) -> tuple[float | None, list[dict[str, Any]]]:
    """The sustainable rate and the runs that confirmed it: the grid's 10-s runs that got all 200s with p99 within
    the bound are candidates, and the highest whose CONFIRM_HEADROOM multiple keeps CONFIRM_MARGIN of it for
    `_confirm_seconds` (each run once the work left by the runs before it is done: `_drain`) is the rate the
    overload and the recovery use.
    Near capacity a rate's p99 varies from run to run, and one that met the bound once by chance, or only with the
    core saturated, would make every later phase at it look slow. At most CONFIRM_TRIES candidates, from the
    highest down."""
    candidates = sorted((r["offered_per_s"] for r in runs if _within_bound(r)), reverse=True)
    tried: list[dict[str, Any]] = []
    for rate in candidates[:CONFIRM_TRIES]:
        drained = _drain(url, body)
        tried += _open_loop(url, body, [(_headroom_rate(rate), _confirm_seconds(rate))])
        tried[-1] |= {"drained_s": drained, "candidate_per_s": rate, "headroom": CONFIRM_HEADROOM,
                      "bound_ms": CONFIRM_MARGIN * P99_BOUND_MS}
        if _within_bound(tried[-1], CONFIRM_MARGIN * P99_BOUND_MS):
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
        raise SystemExit(f"serve.py: {', '.join(missing)} not found (Debian: apt-get install wrk util-linux); the "
                         "closed-loop rows run wrk on the client's core")


def run(models: list[str], backends: list[str], infinity: Path | None, engines: list[str],
        rates: list[float]) -> None:
    _require_tools()
    texts = _sentences(512)
    saved = _load() or {"entries": [], "ceilings": {}}
    for model in models:
        for backend in backends:
            saved["ceilings"][f"{model}/{backend}"] = _raw_ceiling(model, backend, texts)
            saved["entries"] = [e for e in saved["entries"]
                                if (e["server"], e["model"], e["backend"]) != ("polyembed", model, backend)]
            saved["entries"].append(_measure("polyembed", model, backend, None, rates, texts, control=True))
            _save(saved)
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
                _save(saved)
    saved["entries"].sort(key=_table_order)
    _save(saved)
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
    texts = _sentences(512)
    saved = _load() or {"entries": [], "ceilings": {}}
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
                _save(saved)
    render()


def _queue_rows(found: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    """The table of `queue`: per run, the sustainable rate, the overload's statuses and p99, the recovery p99."""
    lines = ["", f"{QUEUE_OPENING}): each run finds its sustainable rate on the grid, "
             f"overloads at twice it for 10 s, then offers the sustainable rate ({_queue_recovery_length(found)}); "
             "statuses of both phases, overload p99 of the 200s of the 10 s at twice the rate, "
             f"recovery p99 from {SETTLE_S:g} s on; control: the same phase once more with no overload before it "
             "(runs in the "
             "order made, alternating between settings; a target or resume shown '-' predates its option: no "
             "target, no drain; a resume at or above the limit: no drain; recovered: as in the main table"
             + _queue_order_text(found) + "):", "",
             f"| model | backend | sentences / request | {QUEUE_SETTING} | "
             "sustainable (req/s) | overload statuses | overload p99 ms | recovery p99 ms | control p99 ms | "
             "recovered |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key, by_setting in found.items():
        model, backend = key.rsplit("/", 1)
        for setting, runs in by_setting.items():
            label = _setting_label(setting)
            for result in runs:
                control = result.get("control")
                overload = result.get("overload") or []
                statuses = _overload_statuses(result)
                lines.append(f"| {model} | {backend} | {result.get('sentences_per_request', 1)} | {label} | "
                             f"{result['sustainable_per_s'] or '-'} | "
                             + _statuses_text(statuses)
                             + f" | {overload[0]['p99_ms'] if overload else '-'} | "
                             f"{_recovery_p99(overload[-1]) if overload else '-'} | "
                             f"{_control_cell(control)} | {_recovered(result)} |")
    named = [([*key.rsplit("/", 1), str(r.get("sentences_per_request", 1)), _setting_label(setting)], r)
             for key, by_setting in found.items() for setting, runs in by_setting.items() for r in runs]
    return (lines + _window_lines(named, ["model", "backend", "sentences / request", QUEUE_SETTING],
                                  f"Queue runs per {WINDOW_S:g} s")
            + _second_lines(named, ["model", "backend", "sentences / request", QUEUE_SETTING], "Queue runs"))


def _queue_order_text(found: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    """How many of the queue runs sent the sentences in file order (with its clump of long ones) and how many in
    SENTENCE_ORDER."""
    runs = [r for by_setting in found.values() for rs in by_setting.values() for r in rs]
    shuffled = sum("sentence_order" in r for r in runs)
    if not shuffled:
        return ""
    return (f"; sentences {SENTENCE_ORDER} in {shuffled} of the {len(runs)} runs, in file order (its long news "
            "sentences as one clump) in the others")


def _back_after(phase: dict[str, Any]) -> str:
    """The second of the phase's first SETTLE_S from which every second's 200s had p99 within the bound and no
    request got another answer ('0': from the start; '> 10': not within them)."""
    slow = [i for i, (p99, other) in enumerate(zip(phase["p99_seconds_ms"], phase["not_ok_seconds"], strict=True))
            if other or (p99 is not None and p99 > P99_BOUND_MS)]
    after = slow[-1] + 1 if slow else 0
    return f"> {len(phase['p99_seconds_ms'])}" if after == len(phase["p99_seconds_ms"]) else str(after)


def _second_lines(rows: list[tuple[list[str], dict[str, Any]]], heads: list[str], opening: str) -> list[str]:
    """The first SETTLE_S of the recovery and its control second by second, for the runs that stored it: how long
    the work an overload left behind took to drain (the server's queue wait) and the latency to come back."""
    rows = [(cells, r) for cells, r in rows if r.get("overload") and "p99_seconds_ms" in r["overload"][-1]
            and r.get("control") and "p99_seconds_ms" in r["control"][0]]
    if not rows:
        return []

    def seconds(phase: dict[str, Any]) -> str:
        return " / ".join(_number(p99) + (f" ({other})" if other else "") for p99, other
                          in zip(phase["p99_seconds_ms"], phase["not_ok_seconds"], strict=True))

    def waits(phase: dict[str, Any]) -> str:
        found = phase.get("queue_wait_per_s") or []
        return " / ".join(_number(wait) for at, wait in found if at < SETTLE_S) or "-"

    lines = ["", f"{opening}, the first {SETTLE_S:g} s of the recovery and of its control second by second: the p99 "
             "(ms) of the 200s of the requests sent in each second (in brackets, how many got another answer: a "
             "429 of the queue limit or of the drain after it); the queue wait the server estimated (s, /metrics, "
             f"sampled each second); back from: the second from which every second stayed within {P99_BOUND_MS:.0f}"
             " ms with no other answer:", "",
             "| " + " | ".join(heads) + " | rate (req/s) | recovery p99 per s | recovery queue wait per s | back from "
             "(s) | control p99 per s | control back from (s) |", "|" + "---|" * (len(heads) + 6)]
    for cells, result in rows:
        recovery, control = result["overload"][-1], result["control"][0]
        lines.append("| " + " | ".join(cells) + f" | {result['sustainable_per_s']:g} | {seconds(recovery)} | "
                     f"{waits(recovery)} | {_back_after(recovery)} | {seconds(control)} | {_back_after(control)} |")
    return lines


QUEUE_SETTING = "--max-queue-seconds / --queue-target-seconds / --resume-queue-seconds"


def _setting_label(setting: str) -> str:
    """A queue run's setting as `limit / target / resume`; runs from before an option show it as '-'."""
    parts = setting.split(" / ")
    return " / ".join(parts + ["-"] * (3 - len(parts)))


def _grid_rate(result: dict[str, Any]) -> float | None:
    """The highest rate that held the bound in its 10 s on the grid: the acceptance's p99 bound, before the
    confirmation holds the rate to its margin for longer."""
    return max((r["offered_per_s"] for r in result.get("open_loop", []) if _within_bound(r)), default=None)


def _confirmed_cells(result: dict[str, Any]) -> str:
    """The sustainable rate (in brackets: the grid's own where confirming it failed, and the rates given up because
    their control missed the bound) and the confirming run's p99."""
    sustainable, tried = result["sustainable_per_s"], result["confirmation"]
    grid = _grid_rate(result)
    given_up = [f"control missed at {attempt['rate']}" for attempt in result.get("given_up", [])]
    grid_given_up = any(attempt["rate"] == grid for attempt in result.get("given_up", []))
    notes = ([f"grid {grid}"] if grid != sustainable and not grid_given_up else []) + given_up
    rate = f"{sustainable or '-'}" + (f" ({'; '.join(notes)})" if notes else "")
    return f"{rate} | {tried[-1]['p99_ms'] if sustainable else '-'} | "


def _order_text(entries: list[dict[str, Any]]) -> str:
    """In which order the rows' requests sent the sentences: rows without the field sent them in file order, whose
    long news sentences come as one clump (a burst of work every 512 requests)."""
    in_file_order = [f"{e['server']} {e['model']} {e['backend']}" for e in entries if "sentence_order" not in e]
    if not in_file_order:
        return f", {SENTENCE_ORDER}"
    clump = " (whose long news sentences come as one clump: a burst of work every 512 requests)"
    if len(in_file_order) == len(entries):
        return ", in file order" + clump
    return f", {SENTENCE_ORDER}; the rows of {', '.join(in_file_order)} in file order" + clump


def _drain_sentence(entries: list[dict[str, Any]]) -> str:
    """How the phases after an overloaded one started: after `_drain`, or (rows measured before it) a 3 s pause."""
    paused = [f"{e['server']} {e['model']} {e['backend']}" for e in entries
              if not all("drained_s" in result for result in e["sizes"].values())]
    if len(paused) == len(entries):
        return ""
    return (" Each phase after an overloaded one starts once the server answers a request sent alone within "
            f"{P99_BOUND_MS:.0f} ms (a server that queues without bound is otherwise still working for clients that "
            "gave up)" + (f"; the rows of {', '.join(paused)} paused 3 s instead" if paused else "") + ".")


def _overload_statuses(result: dict[str, Any]) -> dict[str, int]:
    """Statuses over the overload and the recovery phase together."""
    statuses: dict[str, int] = {}
    for phase in result.get("overload") or []:
        for code, count in phase["statuses"].items():
            statuses[code] = statuses.get(code, 0) + count
    return statuses


def _recovered(result: dict[str, Any]) -> str:
    """Whether the sustainable p99 is back `SETTLE_S` into the recovery: "yes" within the bound; "as control"
    above it, but with no larger share of requests over the bound than the control (the same rate with no overload
    before it, measured a minute later: on a machine whose capacity moves, the rate's own tail at that time) by
    `_slower_than_control`; "no" otherwise, or when any request of the overload or the recovery got neither a 200
    nor a 429."""
    overload = result.get("overload")
    if not overload:
        return "-"
    recovery = _recovery_p99(overload[-1])
    control = (result.get("control") or [{}])[0]
    if recovery is None or set(_overload_statuses(result)) - {"200", "429"}:
        return "no"
    if recovery <= P99_BOUND_MS:
        return "yes"
    slower = _slower_than_control(overload[-1], control)
    if slower is None:  # runs that kept no latencies: the p99s themselves
        slower = _recovery_p99(control) is None or recovery > _recovery_p99(control)
    return "no" if slower else "as control"


_AS_CONTROL_TEST = (f"one-sided Fisher's exact test on the requests sent from {SETTLE_S:g} s on, p < 0.05 counts as "
                    "more; runs that kept no latencies: a recovery p99 not above the control's")


def _slower_than_control(recovery: dict[str, Any], control: dict[str, Any]) -> bool | None:
    """Whether more of the recovery's requests from `SETTLE_S` on went unanswered within the bound (slower, refused
    or failed) than of the control's, beyond chance: one-sided Fisher's exact test, p < 0.05. The p99 of 100 requests
    is their second slowest, and of two samples of one rate either is the higher half the time: comparing the p99s
    themselves would call a recovery slow by a coin toss. None where a phase kept no latencies."""
    from scipy.stats import fisher_exact

    if "latencies_after_settle_ms" not in recovery or "latencies_after_settle_ms" not in control:
        return None

    def slow_and_fast(phase: dict[str, Any]) -> list[int]:
        fast = sum(latency <= P99_BOUND_MS for latency in phase["latencies_after_settle_ms"])
        return [phase["requests_after_settle"] - fast, fast]

    return bool(fisher_exact([slow_and_fast(recovery), slow_and_fast(control)], alternative="greater").pvalue < 0.05)


def _acceptance_lines(saved: dict[str, Any]) -> list[str]:
    """Issue 39's acceptance from the main table: sentences/s at the sustainable rate of polyembed against Infinity
    per backend class (torch; ONNX int8 against Infinity's optimum engine) and int8 against torch, then the
    overload of polyembed's rows (statuses that are neither 200 nor 429, recovery)."""
    rates = {(e["server"], e["model"], e["backend"], size): (r["sustainable_per_s"] or 0.0) * int(size)
             for e in saved["entries"] for size, r in e["sizes"].items()}  # 0.0: no rate held the bound
    grid = {(e["server"], e["model"], e["backend"], size): (_grid_rate(r) or 0.0) * int(size)
            for e in saved["entries"] for size, r in e["sizes"].items()}
    pairs = sorted({(model, size) for server, model, _, size in rates if server == "polyembed"},
                   key=lambda pair: (pair[0], int(pair[1])))
    if not pairs:
        return []

    def cell(key: tuple[str, str, str, str]) -> str:
        return "-" if key not in rates else f"{rates[key]:g}" if rates[key] else "none"

    def ratio(top: tuple[str, str, str, str], bottom: tuple[str, str, str, str]) -> tuple[str, bool]:
        """The cell and whether it compares grid rates: sustainable rates where both sides have one; else both
        sides' grid rates, named with them (a side with no rate through the confirmation would otherwise leave the
        comparison out)."""
        if rates.get(top) and rates.get(bottom):
            return f"{rates[top] / rates[bottom]:.2f}x", False
        if top not in rates or bottom not in rates or not (grid[top] or grid[bottom]):
            return "-", False  # a side not measured, or neither held even the grid's lowest rate
        held = " / ".join(f"{grid[key]:g}" if grid[key] else "none" for key in (top, bottom))
        text = f"{grid[top] / grid[bottom]:.2f}x" if grid[top] and grid[bottom] else "-"
        return f"{text} (grid {held})", True

    lines = ["", "Acceptance: sentences/s at the sustainable rate (the main table's), polyembed against Infinity per "
             "backend class and int8 against torch:", "",
             "| model | sentences / request | polyembed torch | Infinity torch | polyembed onnx-int8 | "
             "Infinity optimum (ONNX) | polyembed / Infinity, torch | polyembed / Infinity, ONNX | int8 / torch |",
             "|---|---|---|---|---|---|---|---|---|"]
    by_grid = False
    for model, size in pairs:
        ours, theirs = ("polyembed", model, "torch", size), ("infinity", model, "torch", size)
        ours_q, theirs_q = ("polyembed", model, "onnx-int8", size), ("infinity", model, "optimum", size)
        ratios = [ratio(ours, theirs), ratio(ours_q, theirs_q), ratio(ours_q, ours)]
        by_grid = by_grid or any(on_grid for _, on_grid in ratios)
        lines.append(f"| {model} | {size} | {cell(ours)} | {cell(theirs)} | {cell(ours_q)} | {cell(theirs_q)} | "
                     f"{' | '.join(text for text, _ in ratios)} |")
    if not all(rates.values()):
        lines += ["", "none: no offered rate held the bound, in its 10 s on the grid or (where one did) in its "
                  "confirmation (the main table's 'grid' note names the rate that held on the grid)."]
    if by_grid:
        lines += ["", "(grid A / B): a side has no sustainable rate, so the ratio is of both sides' highest rates "
                  "that held the bound in their 10 s on the grid, in sentences/s (the same offered rates for both; "
                  "the acceptance's p99 bound without the confirmation's headroom and margin; none: not even the "
                  "lowest)."]
    ours_rows = [r for e in saved["entries"] if e["server"] == "polyembed" for r in e["sizes"].values()
                 if r.get("overload")]
    given_up = [{"overload": attempt["overload"]} for r in ours_rows for attempt in r.get("given_up", [])
                if attempt.get("overload")]  # every overload's requests count, also at a rate given up after it
    counted = ours_rows + given_up
    failed = sum(n for r in counted for code, n in _overload_statuses(r).items() if code not in ("200", "429"))
    verdicts = [_recovered(r) for r in ours_rows]
    lines += ["", f"Overload of polyembed's {len(ours_rows)} rows"
              + (f" (and {len(given_up)} at rates given up after their control)" if given_up else "") + ": "
              f"{sum(sum(_overload_statuses(r).values()) for r in counted):,} requests, {failed} answered with "
              f"neither a 200 nor a 429; recovered {SETTLE_S:g} s after the overload: {verdicts.count('yes')} within "
              f"{P99_BOUND_MS:.0f} ms, {verdicts.count('as control')} above it but not slower than their control, "
              f"{verdicts.count('no')} not."]
    return lines


def _window_lines(rows: list[tuple[list[str], dict[str, Any]]], heads: list[str], opening: str) -> list[str]:
    """Recovery and control per 10 s for the runs that stored it (`rows`: the cells that name a run under
    `heads`, and its result): a p99 above the bound in one window with the windows around it low is a stall of
    that moment (seen in the control as well), a run of them is the server."""
    rows = [(cells, r) for cells, r in rows
            if r.get("overload") and "p99_windows_ms" in r["overload"][-1] and r.get("control")]
    if not rows:
        return []

    def windows(phase: dict[str, Any], key: str = "p99_windows_ms") -> str:
        return " / ".join(_number(v) for v in phase[key]) if key in phase else "-"

    def server(phase: dict[str, Any]) -> str:
        if "server_windows" not in phase:
            return "-"
        return " / ".join("-" if w is None else _server_cell(w) for w in phase["server_windows"])

    accounted = any("server_windows" in r["overload"][-1] for _, r in rows)

    lines = ["", f"{opening}: the p99 (ms) of the requests sent in each {WINDOW_S:g} s of the recovery phase and of "
             f"its control, and how many were sent from {SETTLE_S:g} s on (what the recovered column judges); steal: "
             "CPU seconds the hypervisor took from this machine's two vCPUs in each window (`/proc/stat`; '-' where "
             "not recorded), time in which neither server nor generator ran"
             + ("; model: the server's own /metrics per window, milliseconds of model calls per thousand padded "
                "tokens and (in brackets) the share of the window they took, then, where recorded, the share of "
                "the core the whole server process used (`/proc/PID/stat`: model, HTTP, tokenising), then, where "
                "recorded, the mean of the queue wait the server estimated (/metrics, sampled each second): the "
                "same cost with a higher latency is queueing, a higher cost a slower machine, a CPU share near "
                "100 % a saturated core, a falling wait the overload's leftover work draining"
                if accounted else "") + ":", "",
             "| " + " | ".join(heads) + f" | rate (req/s) | seconds | requests from {SETTLE_S:g} s, recovery / "
             f"control | recovery p99 per {WINDOW_S:g} s | steal s | " + ("model | " if accounted else "")
             + f"control p99 per {WINDOW_S:g} s | steal s | " + ("model | " if accounted else "") + "recovered |",
             "|" + "---|" * (len(heads) + 8 + 2 * accounted)]
    for cells, result in rows:
        recovery, control = result["overload"][-1], result["control"][0]
        lines.append("| " + " | ".join(cells) + f" | {result['sustainable_per_s']:g} | {recovery['seconds']:g} | "
                     f"{recovery['requests_after_settle']} / {control['requests_after_settle']} | "
                     f"{windows(recovery)} | {windows(recovery, 'steal_windows_s')} | "
                     + (f"{server(recovery)} | " if accounted else "")
                     + f"{windows(control)} | {windows(control, 'steal_windows_s')} | "
                     + (f"{server(control)} | " if accounted else "") + f"{_recovered(result)} |")
    return lines


def _server_cell(window: dict[str, Any]) -> str:
    """'cost (model share, cpu share, queue wait)' of one window; what the server did not report is left out."""
    shares = ([f"{window['model_busy']:.0%}"] if "model_busy" in window else []) + (
        [f"cpu {window['cpu_busy']:.0%}"] if "cpu_busy" in window else []) + (
        [f"wait {window['queue_wait_s']:.2f} s"] if "queue_wait_s" in window else [])
    cost = _number(window["model_ms_per_1k_tokens"]) if "model_ms_per_1k_tokens" in window else ""
    return f"{cost} ({', '.join(shares)})".strip()


def _control_cell(control: list[dict[str, Any]] | None) -> str:
    """The control's p99 from `SETTLE_S` on, with any status but 200 beside it (a rate refused without overload)."""
    if not control:
        return "-"
    other = {code: count for code, count in control[0]["statuses"].items() if code != "200"}
    return f"{_recovery_p99(control[0])}" + "".join(f" ({code}: {count})" for code, count in sorted(other.items()))


CALLS_OPENING = "Batches cut by length (`python benchmarks/serve.py calls`"
QUEUE_OPENING = "Queue limit (`python benchmarks/serve.py queue`"
MALFORMED_OPENING = "Malformed requests (`python benchmarks/serve.py malformed`"
MALFORMED_SUMMARY = "Malformed suite per model"
OVERHEADS = [0, 8, 16, 32, 64, 128, 256, 1_000_000]
"""`call_overhead_tokens` values `calls` tries; the last never cuts a batch (one padded call per batch)."""


def call_costs(models: list[str], backends: list[str]) -> None:
    """Each model and backend on the server's core, one thread: sentences/s encoding the open loop's requests
    batched as the server batches them (16 sentences: one request; 64: four), the batch cut into calls by
    `token_budget_chunks` at each `call_overhead_tokens` of OVERHEADS. -> serve.json "call_costs"."""
    saved = _load() or {"entries": [], "ceilings": {}}
    for model in models:
        for backend in backends:
            print(f"{model} {backend}: timing batches cut at each call cost", flush=True)
            command = [sys.executable, str(Path(__file__)), "calls-inner", model, backend]
            done = subprocess.run(_on_server_core(command), capture_output=True, text=True,
                                  env={**os.environ, **ONE_THREAD})
            if done.returncode != 0:
                raise SystemExit(f"{model} {backend}: the timing process failed:\n{done.stderr[-3000:]}")
            saved.setdefault("call_costs", {})[f"{model}/{backend}"] = json.loads(done.stdout.strip().splitlines()[-1])
            _save(saved)
    render()


def _call_costs_here(model: str, backend: str) -> dict[str, Any]:
    """The measurement of `call_costs` in this process (pinned by the caller): best of two passes per setting."""
    from polyembed.models.backends import load_with_backend
    from polyembed.serve.batching import token_budget_chunks

    encoder = load_with_backend(model, backend)
    texts = _sentences(512)
    lengths = [len(ids) for ids in encoder.tokenizer(texts, add_special_tokens=True)["input_ids"]]
    encoder.encode(texts[:64], batch_size=64)  # warm-up
    result: dict[str, Any] = {}
    for size in (16, 64):
        batches = [list(range(start, start + size)) for start in range(0, len(texts) - size + 1, size)]
        by_overhead: dict[str, dict[str, float]] = {}
        for overhead in OVERHEADS:
            plans = [[[rows[i] for i in chunk] for chunk in token_budget_chunks([lengths[r] for r in rows], 16_384,
                                                                                64, overhead)] for rows in batches]
            best = float("inf")
            for _ in range(2):
                started = time.perf_counter()
                for plan in plans:
                    for chunk in plan:
                        encoder.encode([texts[row] for row in chunk], batch_size=len(chunk), normalize=True)
                best = min(best, time.perf_counter() - started)
            by_overhead[str(overhead)] = {"sentences_per_s": round(len(batches) * size / best, 1),
                                          "calls_per_batch": round(sum(map(len, plans)) / len(plans), 2)}
        result[str(size)] = by_overhead
    return result


MALFORMED_LIMITS = ("--max-concurrent-requests", "8", "--max-request-tokens", "256", "--max-body-bytes", "65536")
"""The limits the malformed suite's server runs with: low enough that single requests and a burst reach them."""


def _malformed_cases(texts: list[str]) -> list[tuple[str, bytes, int | None]]:
    """(case, raw body, the status the issue asks for; None: any 4xx)."""
    return [("lone high surrogate", b'{"input": "a \\ud800 b"}', 400),
            ("lone low surrogate among good inputs", b'{"input": ["ok", "\\udc00"]}', 400),
            ("two high surrogates", b'{"input": ["fine", "x \\udbff\\udbff y"]}', 400),
            ("low surrogate before a high one", b'{"input": "\\udc00\\ud800"}', 400),
            ("bytes that are not UTF-8", b'{"input": "\xff\xfe"}', None),
            ("truncated JSON", b'{"input": ["a", ', None),
            ("input of the wrong type", b'{"input": 5}', None),
            ("no inputs", b'{"input": []}', None),
            ("body over --max-body-bytes 65536", json.dumps({"input": ["word " * 2000] * 8}).encode(), 413),
            ("tokens over --max-request-tokens 256", json.dumps({"input": " ".join(texts[:40])}).encode(), 413)]


def malformed(models: list[str], backend: str) -> None:
    """Bad requests mixed into concurrent good traffic on a real server (MALFORMED_LIMITS): every bad one a 4xx,
    every good one a 200 (its embedding compared with the same sentence sent alone afterwards), then a burst of
    large requests over --max-concurrent-requests (429 with Retry-After; /metrics scraped every 20 ms while it
    runs, the most requests in flight and queued it showed), and a probe sentence embedded alone before, between
    and after: identical vectors."""
    texts = _sentences(512)
    saved = _load() or {"entries": [], "ceilings": {}}
    found = saved.setdefault("malformed", {})
    for model in models:
        with _running("polyembed", model, backend, None, MALFORMED_LIMITS) as server:
            found[f"{model}/{backend}"] = _malformed_on(server.url, texts)
        print(json.dumps(found[f"{model}/{backend}"], indent=1), flush=True)
        _save(saved)
    render()


def _malformed_on(url: str, texts: list[str]) -> dict[str, Any]:
    """The malformed suite against one running server (see `malformed`)."""
    import httpx
    import numpy as np

    metrics_url = url.replace("/v1/embeddings", "/metrics")
    with httpx.Client(timeout=60) as client, ThreadPoolExecutor(6) as pool:
        def post(body: bytes) -> httpx.Response:
            return client.post(url, content=body, headers={"content-type": "application/json"})

        def probe() -> list[float]:
            return post(json.dumps({"input": "A fixed probe sentence."}).encode()).json()["data"][0]["embedding"]

        probes = [probe()]
        good = [json.dumps({"input": text}).encode() for text in texts[:48]]
        jobs: list[tuple[str, bytes, int | None]] = [("good", body, 200) for body in good]
        for index, case in enumerate(_malformed_cases(texts)):  # spread among the good ones
            jobs.insert(2 + 5 * index, case)
        answers = list(pool.map(lambda job: post(job[1]), jobs))
        probes.append(probe())
        alone = [post(body).json()["data"][0]["embedding"] for body in good]
        burst_body = json.dumps({"input": texts[:16]}).encode()
        with ThreadPoolExecutor(24) as burst_pool:
            pending = [burst_pool.submit(post, burst_body) for _ in range(24)]
            during: list[str] = []  # what /metrics shows while the burst runs, every 20 ms
            while not all(future.done() for future in pending):
                during.append(httpx.get(metrics_url, timeout=10).text)
                time.sleep(0.02)
            burst = [future.result() for future in pending]
        probes.append(probe())
        after = httpx.get(metrics_url, timeout=10).text
    in_traffic = [answer.json()["data"][0]["embedding"] for job, answer in zip(jobs, answers, strict=True)
                  if job[0] == "good" and answer.status_code == 200]
    cosines = [float(np.dot(x, y) / np.linalg.norm(x) / np.linalg.norm(y))
               for x, y in zip(in_traffic, alone, strict=True)] if len(in_traffic) == len(alone) else []

    def gauge(name: str) -> float | None:
        """The highest value of a gauge over the scrapes during the burst."""
        values = [float(line.split()[-1]) for text in during for line in text.splitlines()
                  if line.startswith(name + " ")]
        return max(values, default=None)

    def message(answer: httpx.Response) -> str:
        if answer.headers.get("content-type", "").startswith("application/json"):
            return str(answer.json().get("error", {}).get("message", ""))[:160]
        return answer.text[:160]

    return {"limits": list(MALFORMED_LIMITS),
            "cases": [{"case": job[0], "expected": job[2], "status": answer.status_code, "error": message(answer)}
                      for job, answer in zip(jobs, answers, strict=True) if job[0] != "good"],
            "good": {"sent": len(good),
                     "statuses": _count(answer.status_code for job, answer in zip(jobs, answers, strict=True)
                                        if job[0] == "good"),
                     "min_cosine_to_alone": round(min(cosines), 6) if cosines else None},
            "burst": {"sent": len(burst), "statuses": _count(answer.status_code for answer in burst),
                      "retry_after_on_every_429": all(answer.headers.get("retry-after") for answer in burst
                                                      if answer.status_code == 429),
                      "scrapes_during": len(during),
                      "in_flight_during": gauge("polyembed_requests_in_flight"),
                      "queue_depth_during": gauge("polyembed_queue_depth")},
            "probe_identical": all(vector == probes[0] for vector in probes[1:]),
            "requests_by_status": {line.split('"')[1]: int(float(line.split()[-1])) for line in after.splitlines()
                                   if line.startswith("polyembed_requests_total{")}}


def _statuses_text(statuses: dict[str, int]) -> str:
    """"200: 90, 429: 10" in code order ("-" for none)."""
    return ", ".join(f"{code}: {count}" for code, count in sorted(statuses.items())) or "-"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _count(statuses: Iterable[int]) -> dict[str, int]:
    return dict(sorted(Counter(map(str, statuses)).items()))


def _malformed_lines(found: dict[str, dict[str, Any]]) -> list[str]:
    """The malformed suite's tables: one row per bad request and model, then one per model for the good traffic,
    the burst, the probe and the server's own count."""
    lines = ["", f"{MALFORMED_OPENING}, the server started with `{' '.join(MALFORMED_LIMITS)}`): each bad request "
             "sent among 48 good single-sentence requests on 6 concurrent connections; then 24 requests of 16 "
             "sentences at once (over the concurrency limit), /metrics scraped every 20 ms while it runs; a probe "
             "sentence embedded alone before, between and after. Expected: the status the issue names ('4xx': "
             "any):", "",
             "| model | backend | bad request | expected | status | error message |", "|---|---|---|---|---|---|"]
    for key, result in found.items():
        model, backend = key.rsplit("/", 1)
        for case in result["cases"]:
            message = case["error"].replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {model} | {backend} | {case['case']} | {case['expected'] or '4xx'} | {case['status']} "
                         f"| {message} |")
    lines += ["", f"{MALFORMED_SUMMARY}: the bad requests' statuses against the expected ones, the good requests "
              "among them, the burst, the probe, and the server's own count of answers by status (/metrics):", "",
              "| model | backend | bad requests as expected | good requests | lowest cosine, good request to the "
              "same sentence alone | burst of 24 | Retry-After on every 429 | most in flight / queued seen during "
              "the burst | probe identical | answers by status (/metrics) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for key, result in found.items():
        model, backend = key.rsplit("/", 1)
        good, burst, cases = result["good"], result["burst"], result["cases"]
        expected = sum(400 <= c["status"] < 500 and c["status"] == (c["expected"] or c["status"]) for c in cases)
        lines.append(f"| {model} | {backend} | {expected} of {len(cases)} | "
                     + _statuses_text(good["statuses"])
                     + f" | {good['min_cosine_to_alone']} | "
                     + _statuses_text(burst["statuses"])
                     + f" | {'yes' if burst['retry_after_on_every_429'] else 'no'} | "
                     f"{_number(burst['in_flight_during'])} / {_number(burst['queue_depth_during'])} | "
                     f"{'yes' if result['probe_identical'] else 'no'} | "
                     + _statuses_text(result["requests_by_status"]) + " |")
    return lines


def selftest() -> None:
    """The generator against a stub that answers at once: the rates it reaches on its own core."""
    stub = subprocess.Popen(["taskset", "-c", SERVER_CORE, sys.executable, str(HERE / "loadgen.py"), "stub",
                             "--port", str(PORT)])
    try:
        time.sleep(1.5)
        with tempfile.TemporaryDirectory() as scratch:
            body = Path(scratch) / "body.json"
            body.write_text(json.dumps({"input": _sentences(1)[0]}), encoding="utf-8")
            runs = _open_loop(f"http://127.0.0.1:{PORT}/v1/embeddings", body,
                              [(500.0, 5.0), (1000.0, 5.0), (2000.0, 5.0)])
    finally:
        stub.terminate()
        stub.wait(timeout=30)
    saved = _load() or {"entries": [], "ceilings": {}}
    saved["generator_selftest"] = runs
    _save(saved)
    print(json.dumps(runs, indent=1))


def _load() -> dict[str, Any] | None:
    path = OUT / "serve.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _save(payload: dict[str, Any]) -> None:
    write_json(OUT / "serve.json", {**payload, "machine": cpu_description()})


def _cell(run: dict[str, Any] | None) -> str:
    if not run:
        return "-"
    statuses = _statuses_text(run["statuses"])
    return f"{run['ok_per_s']}/s, p50 {run['p50_ms']} / p99 {run['p99_ms']} ms ({statuses})"


def _held_text(entries: list[dict[str, Any]]) -> str:
    """How the entries' servers were held to their core: a cpuset cgroup (no thread leaves it) or `taskset`, which
    onnxruntime's threads leave; rows measured before entries recorded it count as `taskset`."""
    held = {entry.get("isolation", "taskset") for entry in entries}
    if held == {"cpuset"}:
        return "held to one core by a cpuset cgroup (no thread it starts can leave it)"
    if held == {"taskset"}:
        return "pinned to one core by `taskset`"
    return ("held to one core by a cpuset cgroup in the rows measured since that was added, by `taskset` in the "
            "others")


def render() -> None:
    saved = _load()
    command = "python benchmarks/serve.py run"
    if not saved or not saved.get("entries"):  # `queue` or `calls` alone: their tables wait for a `run`
        if missing_tables(DOCS, START, END, {"serving under load": command}, set()):
            print("no `run` results here: the docs section is left alone until `serve.py run` has run")
        return
    confirmed = all("confirmation" in result for entry in saved["entries"] for result in entry["sizes"].values())
    lines = [START, "## Serving under load (issue 39)", "",
             f"`{command}` ({saved['machine']}): each server {_held_text(saved['entries'])} with one thread, the "
             "open-loop generator (`benchmarks/loadgen.py`) and wrk on the other. Sustainable: the highest offered "
             f"rate whose requests all got a 200 with p99 <= {P99_BOUND_MS:.0f} ms"
             + (f", in its 10 s on the grid and again over {_confirm_length(saved['entries'])}"
                f"{_margin_text(saved['entries'])} (otherwise "
                "the next lower rate is tried; the grid's rate in brackets where it differs; p99 there: the "
                "confirming run)"
                if confirmed else "") + ". Overload: twice that for 10 s, "
             f"then the sustainable rate ({_recovery_length(saved['entries'])}; statuses over both phases; "
             f"recovery: p99 of the requests sent from {SETTLE_S:g} s into it on"
             + ("; control: the same phase once more, no overload before it, its p99 from "
                f"{SETTLE_S:g} s on; recovered: 'yes' with the recovery p99 <= {P99_BOUND_MS:.0f} ms, 'as control' "
                f"above that but with no larger share of requests over {P99_BOUND_MS:.0f} ms (or refused) than the "
                f"control ({_AS_CONTROL_TEST}), 'no' otherwise or if any request got neither a 200 nor a 429"
                if confirmed else "") + ")."
             + (f" A rate whose control missed the bound the rate was confirmed by is not sustained: it is given up "
                f"for the next lower one, confirmed, overloaded and controlled again (at most {STEP_DOWNS} times; "
                "'control missed at' in the rate's cell)."
                if any("given_up" in r for e in saved["entries"] for r in e["sizes"].values()) else "")
             + " Raw "
             "encode: the same model and backend, plain `encode` with batch 64 on the same core, in sentences/s."
             + _drain_sentence(saved["entries"]),
             ""]
    if all("prompt_sent" in entry for entry in saved["entries"]):
        lines[-2] += (" The open loop sends the STS-B test sentences in turn, one or 16 per request (wrk repeats the "
                      "first request)" + _order_text(saved["entries"]) + "; Infinity, which applies no prompt, gets "
                      "the model's default prompt in the text, so both servers embed the same tokens.")
    if saved.get("generator_selftest"):
        reached = max(r["ok_per_s"] for r in saved["generator_selftest"])
        lines += [f"The generator alone, against a stub server: {reached}/s answered at its highest offered rate.", ""]
    lines += ["| server | model | backend | sentences / request | sustainable (req/s) | "
              + ("p99 ms there | " if confirmed else "") + "sentences/s there | raw encode "
              "sentences/s | overload statuses | recovery p99 ms | "
              + ("control p99 ms | recovered | " if confirmed else "") + "wrk 200 connections |",
              "|---|---|---|---|---|" + ("---|---|---|" if confirmed else "") + "---|---|---|---|---|"]
    for entry in saved["entries"]:
        for size, result in entry["sizes"].items():
            sustainable = result["sustainable_per_s"]
            overload = result.get("overload") or []
            statuses = _overload_statuses(result)
            ceiling = saved["ceilings"].get(f"{entry['model']}/{entry['backend']}", "-") \
                if entry["server"] == "polyembed" else "-"
            closed = result["closed_loop"]
            lines.append(
                f"| {entry['server']} | {entry['model']} | {entry['backend']} | {size} | "
                + (_confirmed_cells(result) if confirmed else f"{sustainable or '-'} | ")
                + f"{sustainable * int(size) if sustainable else '-'} | {ceiling} | "
                + _statuses_text(statuses)
                + f" | {_recovery_p99(overload[-1]) if overload else '-'} | "
                + (f"{_control_cell(result.get('control'))} | {_recovered(result)} | " if confirmed else "")
                + f"{closed['requests_per_s']}/s, p50 {closed['p50_ms']} / p99 {closed['p99_ms']} ms, "
                f"non-2xx {closed['non_2xx']} |")
    if confirmed:
        lines += _acceptance_lines(saved)
    named = [([e["server"], e["model"], e["backend"], size], r) for e in saved["entries"]
             for size, r in e["sizes"].items()]
    heads = ["server", "model", "backend", "sentences / request"]
    lines += _window_lines(named, heads, f"Recovery per {WINDOW_S:g} s") + _second_lines(named, heads, "Recovery")

    def by_rate(entry: dict[str, Any], size: str) -> dict[float, dict[str, Any]]:
        """A row's runs by the rate of single-sentence requests they stand for (16 sentences at a 16th)."""
        return {round(run["offered_per_s"] * int(size), 3): run for run in entry["sizes"][size]["open_loop"]}

    rates = sorted({rate for entry in saved["entries"] for size in entry["sizes"] for rate in by_rate(entry, size)})
    stopped = any(len(r["open_loop"]) < len(rates)
                  and not any(_within_bound(run) for run in r["open_loop"][-GRID_MISSES:])
                  for e in saved["entries"] for r in e["sizes"].values())
    stop_text = f"; a row's grid stops after {GRID_MISSES} rates in a row that miss the bound" if stopped else ""
    lines += ["", "Open loop, each offered rate (answered 200s per second, latency of the 200s, statuses; '-': "
              f"not offered to that server{stop_text}):" if any(len(by_rate(e, s)) < len(rates)
                                                                for e in saved["entries"] for s in e["sizes"]) else
              "Open loop, each offered rate (answered 200s per second, latency of the 200s, statuses):", "",
              "| server | model | backend | sentences / request | " + " | ".join(f"{r:.0f}/s" for r in rates) + " |",
              "|---|---|---|---|" + "---|" * len(rates)]
    for entry in saved["entries"]:
        for size in entry["sizes"]:
            runs = by_rate(entry, size)
            lines.append(f"| {entry['server']} | {entry['model']} | {entry['backend']} | {size} | "
                         + " | ".join(_cell(runs.get(rate)) for rate in rates) + " |")
    costs = saved.get("call_costs")
    kept = [] if costs else shown_table(DOCS, START, END, CALLS_OPENING)
    if kept:
        print("no call costs in serve.json here: the docs keep the table they show")
        lines += ["", *kept]
    if costs:
        shown = [value for value in map(str, OVERHEADS) if all(value in cost[size] for cost in costs.values()
                                                                for size in cost)]
        label = {str(OVERHEADS[-1]): "never cut"}
        lines += ["", f"{CALLS_OPENING}, the server's core, one thread): "
                  "sentences/s encoding the open loop's sentences in batches of 16 (one request) and 64 (four), each "
                  "batch cut into model calls by `token_budget_chunks` at each `--call-overhead-tokens` (best of two "
                  "passes; calls per batch in brackets):", "",
                  "| model | backend | sentences / batch | " + " | ".join(label.get(v, v) for v in shown) + " |",
                  "|---|---|---|" + "---|" * len(shown)]
        for key, cost in costs.items():
            model, backend = key.rsplit("/", 1)
            for size, by_overhead in cost.items():
                lines.append(f"| {model} | {backend} | {size} | " + " | ".join(
                    f"{by_overhead[v]['sentences_per_s']} ({by_overhead[v]['calls_per_batch']})" for v in shown) + " |")
    if saved.get("queue_limits"):
        lines += _queue_rows(saved["queue_limits"])
    elif queue_kept := shown_table(DOCS, START, END, QUEUE_OPENING):
        print("no queue-limit runs in serve.json here: the docs keep the table they show")
        lines += ["", *queue_kept]
    if saved.get("malformed"):
        lines += _malformed_lines(saved["malformed"])
    elif malformed_kept := shown_table(DOCS, START, END, MALFORMED_OPENING):
        print("no malformed-suite runs in serve.json here: the docs keep the tables they show")
        lines += ["", *malformed_kept, "", *shown_table(DOCS, START, END, MALFORMED_SUMMARY)]
    for server, reason in saved.get("failures", {}).items():
        lines += ["", f"Not measured: {server}, which did not start: `{reason}`"]
    seen = sorted({name for e in saved["entries"] for name in e.get("metrics_seen", [])})  # rows of several runs
    if seen:
        lines += ["", "Metrics scraped from `/metrics` after the load: " + ", ".join(f"`{m}`" for m in seen) + "."]
    lines += ["", END]
    publish(DOCS, START, END, lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run")
    one.add_argument("--models", nargs="+", default=["minilm-en", "me5-small"])
    one.add_argument("--backends", nargs="*", default=["torch", "onnx-int8", "openvino"])
    one.add_argument("--infinity", type=Path, help="an infinity-emb virtual environment")
    one.add_argument("--infinity-engines", nargs="+", default=["torch", "optimum"])
    one.add_argument("--rates", nargs="+", type=float, default=[50, 100, 200, 400, 800])
    costs = sub.add_parser("calls", help="the fixed cost of a model call, and what cutting batches by length gives")
    costs.add_argument("--models", nargs="+", default=["minilm-en", "me5-small"])
    costs.add_argument("--backends", nargs="+", default=["torch", "onnx-int8", "openvino"])
    inner = sub.add_parser("calls-inner", help=argparse.SUPPRESS)
    inner.add_argument("model")
    inner.add_argument("backend")
    queue = sub.add_parser("queue", help="overload and recovery per --max-queue-seconds and --queue-target-seconds")
    queue.add_argument("--models", nargs="+", default=["minilm-en", "me5-small"])
    queue.add_argument("--backend", default="onnx-int8")
    queue.add_argument("--limits", nargs="+", type=float, default=[1.0])
    queue.add_argument("--targets", nargs="+", type=float, default=[0.0, 0.25])
    queue.add_argument("--resumes", nargs="+", type=float, default=[0.25],
                       help="--resume-queue-seconds values (at or above the limit: no drain after a refusal)")
    queue.add_argument("--repeats", type=int, default=2)
    queue.add_argument("--rates", nargs="+", type=float, default=[100, 140, 200, 280, 400])
    queue.add_argument("--sizes", nargs="+", type=int, default=[1], help="sentences per request")
    bad = sub.add_parser("malformed", help="bad requests among concurrent good ones, a burst over the limits")
    bad.add_argument("--models", nargs="+", default=["minilm-en", "me5-small"])
    bad.add_argument("--backend", default="onnx-int8")
    sub.add_parser("selftest")
    sub.add_parser("render")
    args = parser.parse_args()
    if args.command == "run":
        run(args.models, args.backends, args.infinity, args.infinity_engines, args.rates)
    elif args.command == "queue":
        queue_limits(args.models, args.backend, args.limits, args.targets, args.repeats, args.rates,
                     tuple(args.sizes), tuple(args.resumes))
    elif args.command == "malformed":
        malformed(args.models, args.backend)
    elif args.command == "calls":
        call_costs(args.models, args.backends)
    elif args.command == "calls-inner":
        print(json.dumps(_call_costs_here(args.model, args.backend)))
    elif args.command == "selftest":
        selftest()
    else:
        render()


if __name__ == "__main__":
    main()
