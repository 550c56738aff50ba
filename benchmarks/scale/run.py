"""Benchmarks of the scale-out parts (issue 17); results -> results/bench/scale, docs/benchmarks.md. Serving under
load has its own benchmark, `benchmarks.serve.run`.

  python -m benchmarks.scale.run export    # ONNX and OpenVINO fp32 / int8 (dynamic, static) against torch fp32
  python -m benchmarks.scale.run int8-dev  # which feed-forward outputs the int8 graph keeps float32, on dev splits
  python -m benchmarks.scale.run mining    # faiss exact vs IVF vs HNSW on 100k x 100k noisy copies: time, memory, F1
  python -m benchmarks.scale.run mining-scale --sizes 100000 1000000  # `mine` end to end on embedding-like pools
  python -m benchmarks.scale.run bucc      # bucc-like-mining F1 of me5-small and a distilled student
  python -m benchmarks.scale.run stream    # streaming encode: peak memory 20k vs 200k lines, speed, kill + resume
  python -m benchmarks.scale.run throughput  # only stream's speed comparison with plain sentence-transformers
  python -m benchmarks.scale.run render    # rewrite the docs section from saved JSON

Every number comes from a real run on this machine (2 CPU threads for encoding, as the brief's references).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.results import load_json, machine, write_json
from benchmarks.common.script_cli import script_parser
from benchmarks.scale.render import render
from benchmarks.scale.spec import ALL_FLOAT32, COMMAND, OUT, STSB_LANGUAGES

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _save(name: str, payload: dict[str, Any]) -> None:
    write_json(OUT / f"{name}.json", payload)


def _load(name: str) -> dict[str, Any] | None:
    return load_json(OUT / f"{name}.json")


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


def _timing_sentences() -> list[str]:
    """The 1024 STS-B test sentences every speed in the export tables is measured on (2 torch threads)."""
    import torch

    from polyembed.data.readers.sts import read_stsbenchmark
    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root

    torch.set_num_threads(2)
    pairs = read_stsbenchmark(get_dataset("stsbenchmark").path(data_root()), "test")
    return list(dict.fromkeys([*pairs.sentences1, *pairs.sentences2]))[:1024]


def _measured(name: str, variants: dict[str, Any], tasks: Callable[[], list[Any]], sentences: list[str],
              key: Callable[[Any], str] = lambda s: f"{s.task}/{s.subset}") -> dict[str, Any]:
    """Each variant's main scores on `tasks()` (fresh task objects each), each under `key(score)`, and its speed
    on `sentences`."""
    from polyembed import evaluate

    results = {}
    for label, encoder in variants.items():
        scores = {key(s): s.value for s in evaluate(encoder, tasks(), show_progress=False).scores if s.main}
        results[label] = {"sentences_per_second": round(_speed(encoder, sentences), 1), "scores": scores}
        print(name, label, results[label], flush=True)
    return results


def export(models: list[str], limit: int | None = None) -> None:
    """Each model as torch fp32, ONNX fp32 (optimised graph) and int8 on onnxruntime and on OpenVINO, the int8
    graph with every feed-forward output projection float32 (ALL_FLOAT32), and the static int8 graphs (calibrated
    on the export's default sentences, stsb-multi-mt train) on each runtime: encoding speed on the STS-B test
    sentences; STS-B, STS17 en-en and stsb-multi-mt test Spearman, Tatoeba accuracy (mean of both directions)
    for a few languages, and STS-B and stsb-multi-mt dev Spearman (`export_variants.export_tasks`). `limit`: a
    check of the code path on at most that many sentences / pairs per task, in a scratch folder: nothing saved."""
    import tempfile

    sentences = _timing_sentences()[:limit]
    with tempfile.TemporaryDirectory() as scratch:
        _export_rows(models, sentences, Path(scratch) if limit else OUT, limit)


def _export_rows(models: list[str], sentences: list[str], out: Path, limit: int | None) -> None:
    """`export`'s measurements, the exports made in `out`; saved unless `limit` (a check of the code path)."""
    from benchmarks.scale.export_variants import export_tasks, score_key, static_variants
    from polyembed import load_model
    from polyembed.models.onnx_export import (
        FP32_FILE,
        INT8_FILE,
        OPENVINO_FP32_FILE,
        OPENVINO_INT8_FILE,
        export_onnx,
    )

    rows = {} if limit else (_load("export") or {}).get("rows", {})  # other models' rows stay
    for name in models:
        folder = out / f"onnx-{Path(name).name}"
        started = time.perf_counter()
        export_onnx(name, folder, openvino=True, static_int8=True, overwrite=True)
        export_seconds = time.perf_counter() - started
        export_onnx(name, out / f"{folder.name}-share0", float32_share=0.0, overwrite=True)  # as before 2026-11-28
        variants = {"torch fp32": load_model(name), "onnx fp32": load_model(str(folder / FP32_FILE)),
                    "onnx int8": load_model(str(folder / INT8_FILE)),
                    ALL_FLOAT32: load_model(str(out / f"{folder.name}-share0" / INT8_FILE)),
                    "openvino fp32": load_model(str(folder / OPENVINO_FP32_FILE)),
                    "openvino int8": load_model(str(folder / OPENVINO_INT8_FILE)), **static_variants(folder)}
        results = _measured(name, variants, lambda: export_tasks(limit), sentences, score_key)
        size = {f.relative_to(folder).as_posix(): f.stat().st_size for f in folder.rglob("*")
                if f.suffix in (".onnx", ".bin")}
        rows[name] = {"export_seconds": round(export_seconds, 1), "onnx_bytes": size, "variants": results}
        if not limit:
            _save("export", {"rows": rows, "sentences": len(sentences), "machine": machine()})


def int8_dev(models: list[str], shares: list[float]) -> None:
    """How the int8 recipe was chosen: each model exported with each `float32_share` (which feed-forward output
    projections stay float32), its int8 graph scored on the dev splits of STS-B and stsb-multi-mt (STSB_LANGUAGES,
    mono and en-X) against torch fp32, and timed as `export` does. Test splits stay for the export table."""
    from polyembed import load_model
    from polyembed.eval.registry import get_task
    from polyembed.models.onnx_export import INT8_FILE, export_onnx

    sentences = _timing_sentences()
    rows = (_load("int8-dev") or {}).get("rows", {})
    for name in models:
        variants: dict[str, Any] = {"torch fp32": load_model(name)}
        for share in shares:
            folder = OUT / f"onnx-{name}-share{share:g}"
            export_onnx(name, folder, float32_share=share, overwrite=True)
            variants[f"int8, float32 share {share:g}"] = load_model(str(folder / INT8_FILE))
        results = _measured(name, variants, lambda: [
            get_task("stsb", split="dev"), get_task("stsb-multi-mt", languages=STSB_LANGUAGES, split="dev")],
            sentences)
        rows[name] = {"variants": results}
        _save("int8-dev", {"rows": rows, "sentences": len(sentences), "machine": machine()})


def bucc(models: list[str]) -> None:
    """The bucc-like-mining task (gold pairs 5 % of each pool, threshold fitted on the train split) per model."""
    from polyembed import evaluate, load_model
    from polyembed.eval.registry import get_task

    rows = {}
    for name in models:
        result = evaluate(load_model(name), [get_task("bucc-like-mining")], show_progress=False)
        rows[name] = {f"{s.subset}/{s.metric}": s.value for s in result.scores}
        print(name, rows[name], flush=True)
    _save("bucc", {"rows": rows, "machine": machine()})


def _worker(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "OMP_NUM_THREADS": "2"})


def _finish(process: subprocess.Popen) -> list[str]:
    out, err = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"worker failed: {err[-2000:]}")
    return out.split()


MINING_WORKER = """
import resource, sys, time
import numpy as np
from polyembed.mining.bitext import choose_index
from polyembed.mining.margin import mine
size, dimension, seed, kind, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
rng = np.random.default_rng(seed)
source = rng.standard_normal((size, dimension)).astype(np.float32)
perm = rng.permutation(size)
target = np.empty_like(source)
target[perm] = source + 0.6 * rng.standard_normal((size, dimension)).astype(np.float32)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
choice = choose_index(size, kind)
started = time.perf_counter()
pairs = mine(source, target, 4, "ratio", "max", index_factory=choice.factory,
             search_parameters=choice.search_parameters)
seconds = time.perf_counter() - started
np.save(out, np.array([[p.source, p.target] for p in pairs], dtype=np.int64))
np.save(out.replace(".npy", "-gold.npy"), perm)
print(choice.label.replace(" ", "_"), seconds, before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def mining(sizes: list[int], dimension: int = 384, seed: int = 0) -> None:
    """Time, memory and F1 of each faiss index on pools where target perm[i] is a noisy copy of source i (the
    search cost of mining does not depend on what the vectors mean), each in a fresh process so that its peak
    RSS is its own; 'same as exact' is the share of the exact index's pairs the index finds."""
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            exact_pairs: set[tuple[int, int]] | None = None
            exact_f1 = None
            for kind in ("flat", "ivf", "hnsw"):
                found_file = str(Path(scratch) / f"{size}-{kind}.npy")
                label, seconds, before_kb, peak_kb = _finish(
                    _worker(MINING_WORKER, str(size), str(dimension), str(seed), kind, found_file))[-4:]
                found = {(int(s), int(t)) for s, t in np.load(found_file)}
                gold = np.load(found_file.replace(".npy", "-gold.npy"))
                exact_pairs = exact_pairs or found
                correct = sum(1 for s, t in found if gold[s] == t)
                f1 = 2 * correct / (len(found) + size)  # every source has one planted translation
                exact_f1 = exact_f1 or f1
                rows.append({"size": size, "index": label.replace("_", " "), "seconds": round(float(seconds), 2),
                             "vectors_rss_mb": round(int(before_kb) / 1024),
                             "peak_rss_mb": round(int(peak_kb) / 1024),
                             "same_as_exact": round(len(found & exact_pairs) / len(exact_pairs), 4),
                             "f1": round(f1, 4), "f1_of_exact": round(f1 / exact_f1, 4)})
                print(rows[-1], flush=True)
    _save("mining", {"rows": rows, "dimension": dimension, "noise": 0.6, "machine": machine()})


STREAM_WORKER = """
import resource, sys, time
from polyembed.models.loading import load_model
from polyembed.streaming import StreamOptions, encode_to_shards
model = load_model(sys.argv[1])
model.model.encode(["warm-up"] * 64, batch_size=64)
started = time.perf_counter()
options = StreamOptions(shard_size=int(sys.argv[4]))
result = encode_to_shards(model, sys.argv[2], sys.argv[3], options, show_progress=False)
print(result.lines, time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
PLAIN_ST_WORKER = """
import sys, time
from polyembed.models.loading import load_model
model = load_model(sys.argv[1]).model  # the bare sentence-transformers model
lines = open(sys.argv[2], encoding="utf-8").read().splitlines()
model.encode(["warm-up"] * 64, batch_size=64)
started = time.perf_counter()
model.encode(lines, batch_size=64, normalize_embeddings=True)
print(len(lines), time.perf_counter() - started)
"""


def _throughput(model: str, corpus: Path, scratch: Path, repeats: int = 2) -> dict[str, Any]:
    """Sentences per second of plain sentence-transformers `encode` and of `polyembed encode` (default shard
    size) on `corpus`, each in a fresh process, alternating, best of `repeats`."""
    plain, ours = [], []
    for repeat in range(repeats):
        lines, seconds = _finish(_worker(PLAIN_ST_WORKER, model, str(corpus)))[-2:]
        plain.append(int(lines) / float(seconds))
        lines, seconds, _ = _finish(_worker(STREAM_WORKER, model, str(corpus), str(scratch / f"one-{repeat}"),
                                            "100000"))[-3:]
        ours.append(int(lines) / float(seconds))
    return {"lines": int(lines), "repeats": repeats, "sentences_per_second": round(max(plain), 1),
            "polyembed_sentences_per_second": round(max(ours), 1)}


def throughput(model: str, size: int) -> None:
    """Re-measure only the throughput comparison of `stream` (same corpus), keeping its other results."""
    import tempfile

    from polyembed.data.root import data_root

    saved = _load("stream")
    if saved is None:
        raise SystemExit(f"run `{COMMAND} stream` first")
    pool = [line for path in sorted((data_root() / "tatoeba-challenge-v2021-08-07").rglob("*.eng"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:size]
    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(scratch) / "corpus.txt"
        corpus.write_text("".join(f"{line}\n" for line in pool), encoding="utf-8")
        saved["plain_sentence_transformers"] = _throughput(model, corpus, Path(scratch))
    print(saved["plain_sentence_transformers"], flush=True)
    _save("stream", saved)


def stream(model: str, sizes: list[int]) -> None:
    """`polyembed encode --shard-size 2000` in a fresh process per corpus size (the first sizes[0]
    Tatoeba-Challenge English sentences, repeated to size, so that only the size changes): peak RSS (flat
    memory = the peak does not grow with the corpus); throughput with the default shard size (100,000) against
    plain sentence-transformers `encode` on the same lines (both after loading and a warm-up batch); and a
    SIGKILL after the third shard then the same command again, whose folder must be byte-identical to the
    uninterrupted run's."""
    import signal
    import tempfile

    from polyembed.data.root import data_root

    pool = [line for path in sorted((data_root() / "tatoeba-challenge-v2021-08-07").rglob("*.eng"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    pool = pool[: sizes[0]]
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            corpus = Path(scratch) / f"corpus-{size}.txt"
            corpus.write_text("".join(f"{pool[i % len(pool)]}\n" for i in range(size)), encoding="utf-8")
            out = Path(scratch) / f"shards-{size}"
            lines, seconds, peak_kb = _finish(_worker(STREAM_WORKER, model, str(corpus), str(out), "2000"))[-3:]
            rows.append({"lines": int(lines), "seconds": round(float(seconds), 1),
                         "sentences_per_second": round(int(lines) / float(seconds), 1),
                         "peak_rss_mb": round(int(peak_kb) / 1024, 1)})
            print(rows[-1], flush=True)
        first = sizes[0]
        corpus, complete = Path(scratch) / f"corpus-{first}.txt", Path(scratch) / f"shards-{first}"
        plain = _throughput(model, corpus, Path(scratch))
        print("plain sentence-transformers", plain, flush=True)
        killed = Path(scratch) / "killed"
        run = _worker(STREAM_WORKER, model, str(corpus), str(killed), "2000")
        marker = killed / "shard-00002.npy"
        while not marker.exists() and run.poll() is None:
            time.sleep(0.05)
        run.send_signal(signal.SIGKILL)
        run.wait()
        shards_before = len(list(killed.glob("shard-*.npy")))
        _finish(_worker(STREAM_WORKER, model, str(corpus), str(killed), "2000"))
        names = sorted(p.name for p in complete.iterdir())
        identical = names == sorted(p.name for p in killed.iterdir()) and all(
            (complete / name).read_bytes() == (killed / name).read_bytes() for name in names)
        resume = {"lines": first, "shards_when_killed": shards_before, "files": len(names), "identical": identical}
        print("kill and resume", resume, flush=True)
    _save("stream", {"model": model, "shard_size": 2000, "rows": rows, "plain_sentence_transformers": plain,
                     "resume": resume, "machine": machine()})


def main() -> None:
    parser, sub = script_parser(__doc__)
    p = sub.add_parser("export")
    p.add_argument("--models", nargs="+", default=["me5-small", "minilm-en"], help="names or folders")
    p.add_argument("--limit", type=int, help="check the code path on at most N sentences / pairs per task (a tiny "
                   "model's folder, say): nothing is saved and the docs are not rendered")
    p = sub.add_parser("int8-dev")
    p.add_argument("--models", nargs="+", default=["me5-small"])
    p.add_argument("--shares", nargs="+", type=float, default=[0.0, 0.5, 1.0])
    p = sub.add_parser("mining")
    p.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    p = sub.add_parser("mining-scale", help="`polyembed mine` at 10^5+ sentences per side (benchmarks.scale.mining)")
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000], help="sentences per side")
    p.add_argument("--exact-sample", type=int, default=100_000,
                   help="larger pools are compared with exact search on their first this many rows")
    p.add_argument("--indexes", nargs="+", default=["auto"], help="--index kinds to run at every size")
    p.add_argument("--seed-sentences", type=int, default=4000, help="real sentences the pools are drawn around")
    p.add_argument("--scratch", type=Path, help="folder for the pools (default: a temporary one)")
    p = sub.add_parser("bucc")
    p.add_argument("--models", nargs="+", default=["me5-small", "results/bench/distill/recipe-minilm-old-seed-0/model"],
                   help="names or folders (default: me5-small and the demo recipe's seed-0 student)")
    p = sub.add_parser("stream")
    p.add_argument("--model", default="minilm-en")
    p.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000])
    p = sub.add_parser("throughput", help="only the stream benchmark's plain-ST comparison, best of 2")
    p.add_argument("--model", default="minilm-en")
    p.add_argument("--size", type=int, default=20_000)
    sub.add_parser("render")
    args = parser.parse_args()
    if args.command == "export":
        export(args.models, args.limit)
        if args.limit:
            return
    elif args.command == "int8-dev":
        int8_dev(args.models, args.shares)
    elif args.command == "mining":
        mining(args.sizes)
    elif args.command == "mining-scale":
        import tempfile

        from benchmarks.scale.mining import mining_scale

        if args.scratch:
            Path(args.scratch).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
            mining_scale(args.sizes, args.exact_sample, args.indexes, args.seed_sentences, Path(scratch))
    elif args.command == "bucc":
        bucc(args.models)
    elif args.command == "stream":
        stream(args.model, args.sizes)
    elif args.command == "throughput":
        throughput(args.model, args.size)
    print(render())


if __name__ == "__main__":
    main()
