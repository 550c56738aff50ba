"""The open-loop load generator of the serving benchmark, against its own stub server on loopback."""

from __future__ import annotations

import asyncio
import importlib
import socket

import pytest


def test_requests_leave_at_the_offered_rate_and_are_summarised_per_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    loadgen = importlib.import_module("benchmarks.serve.loadgen")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def scenario() -> list:
        stub = asyncio.create_task(loadgen._stub(port))
        await asyncio.sleep(0.2)
        try:
            generator = loadgen.OpenLoop(f"http://127.0.0.1:{port}/v1/embeddings", b'{"input": "hi"}', 5.0, 64)
            return await generator.run([(100.0, 0.5), (200.0, 0.5)])
        finally:
            stub.cancel()

    results = asyncio.run(scenario())
    phases = loadgen.summary(results, [(100.0, 0.5), (200.0, 0.5)])
    assert [p["requests"] for p in phases] == [50, 100]  # every scheduled request left, answered or not
    assert all(p["statuses"] == {"200": p["requests"]} and p["ok_per_s"] == 2 * p["requests"] for p in phases)
    assert all(0 < p["p50_ms"] <= p["p99_ms"] for p in phases)
    assert min(r[1] for r in results if r[0] == 1) >= 0.5 - 1e-6  # phase 2 is scheduled after phase 1


def test_percentiles_take_the_nearest_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    loadgen = importlib.import_module("benchmarks.serve.loadgen")
    assert loadgen.percentile(list(range(1, 101)), 99) == 99 and loadgen.percentile([], 50) is None


def test_a_recovery_is_summarised_after_it_settles_and_per_window(monkeypatch: pytest.MonkeyPatch) -> None:
    loadgen = importlib.import_module("benchmarks.serve.loadgen")
    # phase 0: 10 s of overload; phase 1: 25 s at one request a second, slow for its first 10 s, then one hiccup
    results = [(0, t * 0.1, 2.0, "200" if t % 2 else "429") for t in range(100)]
    results += [(1, 10.0 + t, 0.9 if t < 10 else (0.7 if t == 17 else 0.1), "200") for t in range(25)]
    results.append((1, 30.5, float("nan"), "TimeoutError"))
    overload, recovery = loadgen.summary(results, [(10.0, 10.0), (1.0, 25.0)])
    assert overload["p99_windows_ms"] == [2000.0] and overload["requests_after_settle"] == 0
    assert recovery["requests_after_settle"] == 16  # scheduled from 10 s into the phase, the timeout included
    assert recovery["p99_after_settle_ms"] == 700.0  # 15 answers: the nearest rank is the slowest one
    assert recovery["p99_windows_ms"] == [900.0, 700.0, 100.0]
    assert recovery["p99_last_half_ms"] == 700.0
    assert recovery["p99_seconds_ms"] == [900.0] * 10 and recovery["not_ok_seconds"] == [0] * 10  # first 10 s
    assert overload["p99_seconds_ms"] == [2000.0] * 10 and overload["not_ok_seconds"] == [5] * 10  # 429 each other
    assert "steal_windows_s" not in recovery  # no samples: nothing claimed
    steal = [(t / 2, 3.0 + (0.4 if t / 2 >= 27.0 else 0.0)) for t in range(0, 72)]  # 0.4 s taken at 27 s
    overload, recovery = loadgen.summary(results, [(10.0, 10.0), (1.0, 25.0)], steal)
    assert overload["steal_windows_s"] == [0.0] and recovery["steal_windows_s"] == [0.0, 0.4, 0.0]


def test_steal_is_read_from_proc_stat_where_the_kernel_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    loadgen = importlib.import_module("benchmarks.serve.loadgen")
    stolen = loadgen.steal_seconds()
    assert stolen is None or stolen >= 0.0


def test_bodies_from_json_lines_are_sent_in_turn(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    loadgen = importlib.import_module("benchmarks.serve.loadgen")
    lines = tmp_path / "bodies.jsonl"
    lines.write_text('{"input": "a"}\n\n{"input": "b"}\n{"input": "c"}\n', encoding="utf-8")
    single = tmp_path / "body.json"
    single.write_text('{\n  "input": ["a", "b"]\n}\n', encoding="utf-8")
    assert loadgen.read_bodies(str(single)) == [b'{\n  "input": ["a", "b"]\n}']
    bodies = loadgen.read_bodies(str(lines))
    assert bodies == [b'{"input": "a"}', b'{"input": "b"}', b'{"input": "c"}']
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    seen: list[bytes] = []

    async def scenario() -> list:
        stub = asyncio.create_task(loadgen._stub(port, seen))
        await asyncio.sleep(0.2)
        try:
            generator = loadgen.OpenLoop(f"http://127.0.0.1:{port}/v1/embeddings", bodies, 5.0, 8)
            return await generator.run([(50.0, 0.14)])
        finally:
            stub.cancel()

    results = asyncio.run(scenario())
    assert len(results) == 7 and sorted(seen) == sorted(bodies * 2 + bodies[:1])
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"input": "a"}\n{"input": \n', encoding="utf-8")
    with pytest.raises(SystemExit, match="broken.jsonl:2: not a JSON body"):
        loadgen.read_bodies(str(broken))
