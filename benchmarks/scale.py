"""Benchmarks of the scale-out parts (issue 17); results -> results/bench/scale, docs/benchmarks.md.

  python benchmarks/scale.py export    # ONNX fp32 / int8 against torch fp32: speed, STS-B test and Tatoeba kept
  python benchmarks/scale.py mining    # faiss exact vs IVF vs HNSW on pools of noisy-copy vectors: time, recall
  python benchmarks/scale.py stream    # streaming encode: peak memory at 10x the corpus size (shards of 2,000)
  python benchmarks/scale.py serve     # polyembed serve on loopback: 200 concurrent clients, latency, bad requests
  python benchmarks/scale.py render    # rewrite the docs section from saved JSON

Every number comes from a real run on this machine (2 CPU threads for encoding, as the brief's references).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from docs_sections import missing_tables, replace_section

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "results" / "bench" / "scale"
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- scale:start -->", "<!-- scale:end -->"
TATOEBA_LANGUAGES = ["deu", "amh", "kaz", "swh"]
TABLES = ("export", "mining", "stream", "serve")


def _save(name: str, payload: dict[str, Any]) -> None:
    from polyembed.outputs import atomic_write

    with atomic_write(OUT / f"{name}.json") as handle:
        handle.write(json.dumps(payload, indent=2))


def _load(name: str) -> dict[str, Any] | None:
    path = OUT / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}


def _speed(encoder: Any, sentences: list[str], repeats: int = 2) -> float:
    """Sentences per second (best of `repeats`, batch 64) on `sentences`."""
    from polyembed import encode

    encode(encoder, sentences[:64])  # warm-up: first-call allocations
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        encode(encoder, sentences, batch_size=64)
        best = min(best, time.perf_counter() - started)
    return len(sentences) / best


def export(models: list[str]) -> None:
    """Each model as torch fp32, ONNX fp32 (optimised graph) and ONNX int8: encoding speed on the STS-B test
    sentences, STS-B test Spearman and Tatoeba accuracy (mean of both directions) for a few languages."""
    import torch

    from polyembed import evaluate, load_model
    from polyembed.data.readers.sts import read_stsbenchmark
    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root
    from polyembed.eval.base import get_task
    from polyembed.models.onnx_export import FP32_FILE, export_onnx

    torch.set_num_threads(2)
    pairs = read_stsbenchmark(get_dataset("stsbenchmark").path(data_root()), "test")
    sentences = list(dict.fromkeys([*pairs.sentences1, *pairs.sentences2]))[:1024]
    rows = {}
    for name in models:
        folder = OUT / f"onnx-{name}"
        started = time.perf_counter()
        export_onnx(name, folder, overwrite=True)
        export_seconds = time.perf_counter() - started
        variants = {"torch fp32": load_model(name), "onnx fp32": load_model(str(folder / FP32_FILE)),
                    "onnx int8": load_model(str(folder))}
        results = {}
        for label, encoder in variants.items():
            tasks = [get_task("stsb"), get_task("tatoeba", languages=TATOEBA_LANGUAGES)]
            scores = {f"{s.task}/{s.subset}": s.value for s in evaluate(encoder, tasks, show_progress=False).scores
                      if s.main}
            results[label] = {"sentences_per_second": round(_speed(encoder, sentences), 1), "scores": scores}
            print(name, label, results[label], flush=True)
        size = {f.name: f.stat().st_size for f in folder.glob("*.onnx")}
        rows[name] = {"export_seconds": round(export_seconds, 1), "onnx_bytes": size, "variants": results}
        _save("export", {"rows": rows, "sentences": len(sentences), "machine": _machine()})


def mining(sizes: list[int], dimension: int = 384, seed: int = 0) -> None:
    """Time and recall of each faiss index on pools where target perm[i] is a noisy copy of source i (the
    search cost of mining does not depend on what the vectors mean; recall is against the exact index)."""
    from polyembed.mining.bitext import choose_index
    from polyembed.mining.margin import mine

    rows = []
    for size in sizes:
        rng = np.random.default_rng(seed)
        source = rng.standard_normal((size, dimension)).astype(np.float32)
        perm = rng.permutation(size)
        target = np.empty_like(source)
        target[perm] = source + 0.6 * rng.standard_normal((size, dimension)).astype(np.float32)
        exact_pairs = None
        for kind in ("flat", "ivf", "hnsw"):
            choice = choose_index(size, kind)
            started = time.perf_counter()
            pairs = mine(source, target, 4, "ratio", "max", index_factory=choice.factory,
                         search_parameters=choice.search_parameters)
            seconds = time.perf_counter() - started
            found = {(p.source, p.target) for p in pairs}
            exact_pairs = exact_pairs or found
            correct = sum(1 for s, t in found if perm[s] == t)
            rows.append({"size": size, "index": choice.label, "seconds": round(seconds, 2),
                         "same_as_exact": round(len(found & exact_pairs) / len(exact_pairs), 4),
                         "correct": round(correct / size, 4)})
            print(rows[-1], flush=True)
    _save("mining", {"rows": rows, "dimension": dimension, "machine": _machine()})


STREAM_WORKER = """
import resource, sys, time
from polyembed.streaming import StreamOptions, encode_to_shards
started = time.perf_counter()
result = encode_to_shards(sys.argv[1], sys.argv[2], sys.argv[3], StreamOptions(shard_size=2000), show_progress=False)
print(result.lines, time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def stream(model: str, sizes: list[int]) -> None:
    """Peak RSS of `polyembed encode --shard-size 2000` in a fresh process per corpus size (Tatoeba-Challenge
    English sentences, repeated to size): flat memory means the peak does not grow with the corpus."""
    import tempfile

    from polyembed.data.root import data_root

    pool = [line for path in sorted((data_root() / "tatoeba-challenge-v2021-08-07").rglob("*.eng"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            corpus = Path(scratch) / f"corpus-{size}.txt"
            corpus.write_text("".join(f"{pool[i % len(pool)]}\n" for i in range(size)), encoding="utf-8")
            out = Path(scratch) / f"shards-{size}"
            done = subprocess.run([sys.executable, "-c", STREAM_WORKER, model, str(corpus), str(out)], check=True,
                                  capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "2"})
            lines, seconds, peak_kb = done.stdout.split()[-3:]
            rows.append({"lines": int(lines), "seconds": round(float(seconds), 1),
                         "peak_rss_mb": round(int(peak_kb) / 1024, 1)})
            print(rows[-1], flush=True)
    _save("stream", {"model": model, "shard_size": 2000, "rows": rows, "machine": _machine()})


BAD_REQUESTS = [
    b"{not json", b'["a list"]', b'{"model": "m"}', b'{"input": 3}', b'{"input": []}', b'{"input": [""]}',
    b'{"input": [[1, 2]]}', b'{"input": "x", "language": "xq1"}', b'{"input": "x", "dimensions": 7}',
    b'{"input": "x", "encoding_format": "int8"}',
]


def serve(model: str, clients: int, requests_per_client: int, port: int = 8765) -> None:
    """Start `polyembed serve` on 127.0.0.1, send `clients` concurrent clients x `requests_per_client` requests
    (one sentence each), then the malformed-request suite, then one more good request: latency percentiles,
    throughput, errors, and whether every bad request got a 4xx while the server kept serving."""
    import asyncio

    import httpx

    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root

    sentences = (get_dataset("stsbenchmark").path(data_root()) / "sts-test.csv").read_text(
        encoding="utf-8").splitlines()
    texts = [line.split("\t")[5] for line in sentences if line.count("\t") >= 6][:2000]
    server = subprocess.Popen(
        [sys.executable, "-m", "polyembed", "serve", "-m", model, "--port", str(port), "--max-wait-ms", "10"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "2"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                httpx.get(f"{url}/health", timeout=2)
                break
            except httpx.TransportError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server did not start") from None
                time.sleep(0.5)

        async def client(index: int, http: httpx.AsyncClient, latencies: list[float], errors: list[str]) -> None:
            for request in range(requests_per_client):
                text = texts[(index * requests_per_client + request) % len(texts)]
                started = time.perf_counter()
                try:
                    reply = await http.post(f"{url}/v1/embeddings", json={"input": text}, timeout=300)
                    if reply.status_code != 200:
                        errors.append(str(reply.status_code))
                except httpx.HTTPError as err:
                    errors.append(type(err).__name__)
                latencies.append(time.perf_counter() - started)

        async def load() -> tuple[list[float], list[str], float]:
            latencies: list[float] = []
            errors: list[str] = []
            limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
            async with httpx.AsyncClient(limits=limits) as http:
                started = time.perf_counter()
                await asyncio.gather(*(client(i, http, latencies, errors) for i in range(clients)))
                return latencies, errors, time.perf_counter() - started

        latencies, errors, seconds = asyncio.run(load())
        bad = [httpx.post(f"{url}/v1/embeddings", content=body, headers={"content-type": "application/json"},
                          timeout=30).status_code for body in BAD_REQUESTS]
        still_serving = httpx.post(f"{url}/v1/embeddings", json={"input": "still here?"}, timeout=30).status_code
    finally:
        server.terminate()
        server.wait(timeout=30)
    ordered = sorted(latencies)
    result = {
        "model": model, "clients": clients, "requests": len(latencies), "errors": len(errors),
        "error_kinds": sorted(set(errors)), "seconds": round(seconds, 1),
        "requests_per_second": round(len(latencies) / seconds, 1),
        "p50_ms": round(1000 * ordered[len(ordered) // 2], 1),
        "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1),
        "bad_request_statuses": bad, "served_after_bad_requests": still_serving,
    }
    print(result, flush=True)
    _save("serve", {**result, "machine": _machine()})


def render() -> str:
    lines = [START, "## Scale: export, mining, streaming (issue 17)", ""]
    exported = _load("export")
    if exported:
        lines += [
            f"`python benchmarks/scale.py export`: encoding speed on {exported['sentences']} STS-B test sentences "
            "(batch 64, 2 threads, best of 2), STS-B test Spearman and Tatoeba accuracy (mean of both "
            f"directions, {', '.join(TATOEBA_LANGUAGES)}).",
            "",
            "| model | variant | sentences/s | speed-up | STS-B test | kept | Tatoeba mean | kept |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, row in exported["rows"].items():
            base = row["variants"]["torch fp32"]
            base_tatoeba = np.mean([v for k, v in base["scores"].items() if k.startswith("tatoeba/")
                                    and not k.endswith("avg")])
            for label, result in row["variants"].items():
                tatoeba = np.mean([v for k, v in result["scores"].items() if k.startswith("tatoeba/")
                                   and not k.endswith("avg")])
                sts, base_sts = result["scores"]["stsb/en"], base["scores"]["stsb/en"]
                lines.append(
                    f"| {name} | {label} | {result['sentences_per_second']} | "
                    f"{result['sentences_per_second'] / base['sentences_per_second']:.2f}x | {sts:.2f} | "
                    f"{100 * sts / base_sts:.1f}% | {tatoeba:.2f} | {100 * tatoeba / base_tatoeba:.1f}% |"
                )
        lines.append("")
    mined = _load("mining")
    if mined:
        lines += [
            f"`python benchmarks/scale.py mining`: margin mining (ratio, k=4, max) of n x n noisy-copy vectors "
            f"({mined['dimension']}-d); 'same as exact': share of the exact index's pairs found; 'correct': share "
            "of the planted pairs found.",
            "",
            "| n | index | seconds | same as exact | correct |",
            "|---|---|---|---|---|",
            *[f"| {r['size']:,} | {r['index']} | {r['seconds']} | {r['same_as_exact']:.4f} | {r['correct']:.4f} |"
              for r in mined["rows"]],
            "",
        ]
    streamed = _load("stream")
    if streamed:
        lines += [
            f"`python benchmarks/scale.py stream`: `encode --shard-size {streamed['shard_size']}` with "
            f"{streamed['model']}, a fresh process per corpus size.",
            "",
            "| lines | seconds | peak RSS MB |",
            "|---|---|---|",
            *[f"| {r['lines']:,} | {r['seconds']} | {r['peak_rss_mb']} |" for r in streamed["rows"]],
            "",
        ]
    served = _load("serve")
    if served:
        lines += [
            f"`python benchmarks/scale.py serve`: `polyembed serve -m {served['model']}` on 127.0.0.1, "
            f"{served['clients']} concurrent clients, one sentence per request, then {len(BAD_REQUESTS)} malformed "
            "requests and one more good one.",
            "",
            "| requests | errors | seconds | requests/s | p50 ms | p99 ms | malformed: statuses | served after |",
            "|---|---|---|---|---|---|---|---|",
            f"| {served['requests']} | {served['errors']} | {served['seconds']} | {served['requests_per_second']} | "
            f"{served['p50_ms']} | {served['p99_ms']} | {', '.join(map(str, served['bad_request_statuses']))} | "
            f"{served['served_after_bad_requests']} |",
            "",
        ]
    lines.append(END)
    section = "\n".join(lines)
    present = {name for name in TABLES if _load(name) is not None}
    missing = missing_tables(DOCS, START, END, {name: f"benchmarks/scale.py {name}" for name in TABLES}, present)
    if missing:  # results/ is not in git: keep the tables measured elsewhere
        print(f"docs/benchmarks.md left as it is: no {', '.join(m + '.json' for m in missing)} in {OUT}")
        return section
    replace_section(DOCS, START, END, section)
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("export")
    p.add_argument("--models", nargs="+", default=["me5-small", "minilm-en"])
    p = sub.add_parser("mining")
    p.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    p = sub.add_parser("stream")
    p.add_argument("--model", default="minilm-en")
    p.add_argument("--sizes", type=int, nargs="+", default=[4_000, 40_000])
    p = sub.add_parser("serve")
    p.add_argument("--model", default="minilm-en")
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--requests", type=int, default=5, help="requests per client")
    sub.add_parser("render")
    args = parser.parse_args()
    if args.command == "export":
        export(args.models)
    elif args.command == "mining":
        mining(args.sizes)
    elif args.command == "stream":
        stream(args.model, args.sizes)
    elif args.command == "serve":
        serve(args.model, args.clients, args.requests)
    print(render())


if __name__ == "__main__":
    main()
