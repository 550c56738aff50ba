"""`python -m benchmarks.scale.run mining-scale`: `polyembed mine` on pools of 10^5 to 10^6+ sentences per side,
each run in a process of its own: wall time, peak RSS, the index `--index auto` (or another kind) chose, F1
against planted translation pairs and against exact search.

The vectors have the neighbourhood structure of real sentence embeddings, not of Gaussian noise: a few thousand
real sentences (Tatoeba-Challenge test sentences of every language pair under the data root, distinct,
shuffled with a fixed seed) are encoded once with me5-small (cached in results/bench/scale/), and each pool row
is drawn around one of them: seed + SPREAD * (Gaussian noise with the seeds' own covariance), L2-normalised (a
Gaussian mixture with one component per real sentence, all sharing the seeds' covariance, scaled). Half the
source rows (GOLD_SHARE) have a planted translation in the target side, a noisy copy of the source row
(NOISE * the same shaped noise); the other rows of both sides are independent draws. Rows are stored float16
in `.npy` files and read memory-mapped, as `encode --shard-size` shards are. The pools are made in blocks of
BLOCK rows with a seed per block and the translations stay inside their block, so the first m rows of a larger
pool (m a multiple of BLOCK) are the pool of size m: a self-contained sub-pool.

F1 against the planted pairs is at the best threshold (BUCC's protocol: the cut of the scores that maximises
F1). 'F1 vs exact': the pairs (mode max, no threshold) against those of the exact flat index on the same pool;
where the full exact run is too slow (n > --exact-sample), both run on the first --exact-sample rows of each
side, the index chosen as it was for n.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.results import load_json, machine, write_json
from benchmarks.scale.spec import OUT

SEED_MODEL = "me5-small"
BLOCK = 5_000
GOLD_SHARE = 0.5
SPREAD = 0.5
"""Standard deviation of a row around its real seed, in units of the seeds' covariance."""
NOISE = 0.3
"""Standard deviation of a planted translation around its source row, in the same units."""
RESULT = "mining-scale"


def seed_embeddings(count: int, model: str = SEED_MODEL) -> np.ndarray:
    """`count` real sentences encoded with `model` (L2-normalised float32), cached under OUT."""
    cache = OUT / f"mining-seeds-{model}-{count}.npy"
    if cache.is_file():
        return np.load(cache)
    from polyembed.data.root import data_root
    from polyembed.models.loading import load_model

    folder = data_root() / "tatoeba-challenge-v2021-08-07"
    lines = dict.fromkeys(line.strip() for path in sorted(p for p in folder.rglob("tatoeba-test-*") if p.is_file())
                          for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    sentences = list(lines)
    order = np.random.default_rng(0).permutation(len(sentences))[:count]
    if len(order) < count:
        raise SystemExit(f"{folder}: only {len(order)} distinct sentences, {count} asked for")
    started = time.perf_counter()
    vectors = load_model(model).encode([sentences[i] for i in order], None, batch_size=64, normalize=True,
                                       show_progress_bar=True)
    print(f"encoded {count} seed sentences with {model} in {time.perf_counter() - started:.0f} s", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors.astype(np.float32))
    return vectors.astype(np.float32)


def _normalized(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def write_pool(folder: Path, size: int, seeds: np.ndarray, seed: int = 0) -> np.ndarray:
    """source/target .npy (float16) and .txt ('s<i>' / 't<j>' lines) of `size` rows each in `folder`; returns
    the planted target row of every source row (-1: none). Made block by block: memory stays at a block."""
    from numpy.lib.format import open_memmap

    if size % BLOCK:
        raise SystemExit(f"pool sizes are whole blocks of {BLOCK:,} rows; got {size:,}")
    folder.mkdir(parents=True, exist_ok=True)
    dimension = seeds.shape[1]
    shape = np.linalg.cholesky(np.cov(seeds, rowvar=False) + 1e-6 * np.eye(dimension))  # noise with their covariance
    source = open_memmap(folder / "source.npy", mode="w+", dtype=np.float16, shape=(size, dimension))
    target = open_memmap(folder / "target.npy", mode="w+", dtype=np.float16, shape=(size, dimension))
    gold = np.full(size, -1, dtype=np.int64)

    for start in range(0, size, BLOCK):
        rng = np.random.default_rng([seed, start])  # a block is the same at every pool size

        def draw(count: int, rng: np.random.Generator = rng) -> np.ndarray:
            centres = seeds[rng.integers(len(seeds), size=count)]
            return centres + SPREAD * rng.standard_normal((count, dimension)) @ shape.T

        rows = draw(BLOCK)
        paired = np.flatnonzero(rng.random(BLOCK) < GOLD_SHARE)
        copies = rows[paired] + NOISE * rng.standard_normal((len(paired), dimension)) @ shape.T
        targets = np.concatenate([copies, draw(BLOCK - len(paired))])
        order = rng.permutation(BLOCK)  # target row start + position of each of `targets` rows
        placed = np.empty(BLOCK, dtype=np.int64)
        placed[order] = np.arange(BLOCK)
        source[start : start + BLOCK] = _normalized(rows).astype(np.float16)
        target[start : start + BLOCK] = _normalized(targets[order]).astype(np.float16)
        gold[start + paired] = start + placed[np.arange(len(paired))]
    source.flush()
    target.flush()
    del source, target
    for name, prefix in (("source", "s"), ("target", "t")):
        with (folder / f"{name}.txt").open("w", encoding="utf-8") as handle:
            handle.writelines(f"{prefix}{i}\n" for i in range(size))
    np.save(folder / "gold.npy", gold)
    return gold


WORKER = """
import json, sys, time
from polyembed.messages import show_messages
from polyembed.mining.bitext import mine_files
def status_kb(field):  # this process's own memory: getrusage's maxrss also counts the parent's pages at fork
    for line in open("/proc/self/status", encoding="ascii"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
show_messages()
folder, output, index = sys.argv[1:4]
start_kb = status_kb("VmRSS")
started = time.perf_counter()
result = mine_files("unused", f"{folder}/source.txt", f"{folder}/target.txt", output,
                    source_embeddings=f"{folder}/source.npy", target_embeddings=f"{folder}/target.npy", index=index,
                    overwrite=True, show_progress=False)
print(json.dumps({"seconds": time.perf_counter() - started, "index": result.index, "pairs": result.pairs,
                  "start_rss_kb": start_kb, "peak_rss_kb": status_kb("VmHWM")}))
"""


def run_mine(folder: Path, index: str, output: Path) -> dict[str, Any]:
    """`mine_files` on the pool in `folder` in a fresh process (its peak RSS is this run's alone)."""
    process = subprocess.run([sys.executable, "-c", WORKER, str(folder), str(output), index], capture_output=True,
                             text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if process.returncode != 0:
        raise SystemExit(f"mine failed on {folder} ({index}): {process.stderr[-3000:]}")
    print(process.stderr.strip()[-2000:], flush=True)
    return json.loads(process.stdout.strip().splitlines()[-1])


def read_pairs(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source rows, target rows, scores) of a mined TSV of 's<i>' / 't<j>' lines."""
    scores, sources, targets = [], [], []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            score, source, target = line.rstrip("\n").split("\t")
            scores.append(float(score))
            sources.append(int(source[1:]))
            targets.append(int(target[1:]))
    return np.asarray(sources, dtype=np.int64), np.asarray(targets, dtype=np.int64), np.asarray(scores)


def gold_f1(pairs: tuple[np.ndarray, np.ndarray, np.ndarray], gold: np.ndarray) -> dict[str, float]:
    """F1 against the planted pairs at the best threshold, and with every pair kept."""
    from polyembed.mining.margin import fit_threshold, prf

    sources, targets, scores = pairs
    correct = gold[sources] == targets
    n_gold = int((gold >= 0).sum())
    best = fit_threshold(scores, correct, n_gold)
    return {"f1": round(best.f1, 4), "precision": round(best.precision, 4), "recall": round(best.recall, 4),
            "threshold": round(best.threshold, 4),
            "f1_all_pairs": round(prf(int(correct.sum()), len(correct), n_gold)[2], 4)}


def agreement(found: tuple[np.ndarray, ...], exact: tuple[np.ndarray, ...]) -> dict[str, float]:
    """How the pairs of an index compare with those of exact search: share of the exact pairs found, and F1."""
    mine = set(zip(found[0].tolist(), found[1].tolist(), strict=True))
    reference = set(zip(exact[0].tolist(), exact[1].tolist(), strict=True))
    both = len(mine & reference)
    precision, recall = both / max(1, len(mine)), both / max(1, len(reference))
    return {"same_as_exact": round(recall, 4),
            "f1_vs_exact": round(2 * precision * recall / (precision + recall), 4) if both else 0.0}


def kind_of(label: str) -> str:
    """The `--index` kind that names the index a run used (to use it again on a sub-pool)."""
    if label.startswith("exact"):
        return "flat"
    if "PQ" in label:
        return "pq"
    return "ivf-sq8" if ",SQ8" in label else ("hnsw" if "HNSW" in label else "ivf")


def _timed_row(size: int, requested: str, run: dict[str, Any], gold: dict[str, float]) -> dict[str, Any]:
    return {"size": size, "requested": requested, "index": run["index"], "seconds": round(run["seconds"], 1),
            "start_rss_mb": round(run["start_rss_kb"] / 1024), "peak_rss_mb": round(run["peak_rss_kb"] / 1024),
            "pairs": run["pairs"], **gold}


def mining_scale(sizes: list[int], exact_sample: int, indexes: list[str], seed_sentences: int,
                 scratch: Path) -> None:
    """Every size and index kind (see the module docstring); the JSON is rewritten after each run."""
    if exact_sample % BLOCK:
        raise SystemExit(f"--exact-sample is a whole number of blocks of {BLOCK:,} rows; got {exact_sample:,}")
    seeds = seed_embeddings(seed_sentences)
    saved = load_json(OUT / f"{RESULT}.json") or {}
    rows = [row for row in saved.get("rows", []) if row["size"] not in sizes or row["requested"] not in indexes]
    for size in sizes:
        folder = scratch / f"pool-{size}"
        started = time.perf_counter()
        gold = write_pool(folder, size, seeds)
        print(f"pool of {size:,} rows per side written in {time.perf_counter() - started:.0f} s", flush=True)
        exact_pool = min(size, exact_sample)
        if exact_pool < size:
            sub = scratch / f"pool-{exact_pool}"
            write_pool(sub, exact_pool, seeds)
        else:
            sub = folder
        exact = run_mine(sub, "flat", scratch / "exact.tsv")
        exact_pairs = read_pairs(scratch / "exact.tsv")
        if exact_pool == size:  # the reference run is a row of its own
            rows = [row for row in rows if not (row["size"] == size and row["requested"] == "flat")]
            rows.append({**_timed_row(size, "flat", exact, gold_f1(exact_pairs, gold)), "exact_pool": size,
                         "same_as_exact": 1.0, "f1_vs_exact": 1.0})
            print(rows[-1], flush=True)
        for requested in indexes:
            if requested == "flat" and exact_pool == size:
                continue
            run = run_mine(folder, requested, scratch / "mined.tsv")
            found = read_pairs(scratch / "mined.tsv")
            row = _timed_row(size, requested, run, gold_f1(found, gold))
            if exact_pool < size:  # the same kind of index against exact search on the sub-pool
                run_mine(sub, kind_of(run["index"]), scratch / "sub.tsv")
                found = read_pairs(scratch / "sub.tsv")
            rows.append({**row, "exact_pool": exact_pool, **agreement(found, exact_pairs)})
            print(rows[-1], flush=True)
            write_json(OUT / f"{RESULT}.json", _payload(rows, seeds, seed_sentences))
        write_json(OUT / f"{RESULT}.json", _payload(rows, seeds, seed_sentences))


def _payload(rows: list[dict[str, Any]], seeds: np.ndarray, seed_sentences: int) -> dict[str, Any]:
    return {"rows": sorted(rows, key=lambda row: (row["size"], row["requested"] != "flat", row["requested"])),
            "dimension": int(seeds.shape[1]), "seed_model": SEED_MODEL, "seed_sentences": seed_sentences,
            "gold_share": GOLD_SHARE, "spread": SPREAD, "noise": NOISE, "block": BLOCK, "machine": machine()}
