"""The fixed cost of a model call: the open loop's sentences encoded in batches as the server batches them, each
batch cut into calls by `token_budget_chunks` at each `--call-overhead-tokens`, on the server's core."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

from benchmarks.common.results import REPO, study_command
from benchmarks.serve.render import render
from benchmarks.serve.server import on_server_core, sentences
from benchmarks.serve.spec import ONE_THREAD, OVERHEADS
from benchmarks.serve.store import load, save


def call_costs(models: list[str], backends: list[str]) -> None:
    """Each model and backend on the server's core, one thread: sentences/s encoding the open loop's requests
    batched as the server batches them (16 sentences: one request; 64: four), the batch cut into calls by
    `token_budget_chunks` at each `call_overhead_tokens` of OVERHEADS. -> serve.json "call_costs"."""
    saved = load() or {"entries": [], "ceilings": {}}
    for model in models:
        for backend in backends:
            print(f"{model} {backend}: timing batches cut at each call cost", flush=True)
            command = study_command("benchmarks.serve.run", "calls-inner", model, backend)
            done = subprocess.run(on_server_core(command), capture_output=True, text=True, cwd=REPO,
                                  env={**os.environ, **ONE_THREAD})
            if done.returncode != 0:
                raise SystemExit(f"{model} {backend}: the timing process failed:\n{done.stderr[-3000:]}")
            saved.setdefault("call_costs", {})[f"{model}/{backend}"] = json.loads(done.stdout.strip().splitlines()[-1])
            save(saved)
    render()


def call_costs_here(model: str, backend: str) -> dict[str, Any]:
    """The measurement of `call_costs` in this process (pinned by the caller): best of two passes per setting."""
    from polyembed.models.backends import load_with_backend
    from polyembed.serve.batching import token_budget_chunks

    encoder = load_with_backend(model, backend)
    texts = sentences(512)
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
