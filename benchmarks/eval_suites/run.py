"""Benchmark: evaluate the offline models on the `default` and `full` suites; their section of docs/benchmarks.md.

    python -m benchmarks.eval_suites.run                       # both suites, both models (full takes long)
    python -m benchmarks.eval_suites.run --suites default      # only the default suite
    python -m benchmarks.eval_suites.run --render-only         # rewrite the section from saved results

Raw results go to results/bench/<suite>/<model>/ (results.json, report.md, plots); the section between the
eval-suites markers is rendered from every results.json found there, so suites can be run separately. The
machine is kept in results/bench/suites-notes.json, so a re-render writes the same bytes; the notes on the runs'
conditions under it are the renderer's READER_NOTES.
A suite, model or throughput table the docs show whose results are not here leaves the docs alone (results/ is
not in git).
"""

from __future__ import annotations

import argparse
import os
import time

from benchmarks.common.results import RESULTS, cpu_description, write_json
from benchmarks.eval_suites.render import render
from benchmarks.eval_suites.spec import NOTES

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def run_suite(model: str, suite: str) -> None:
    """Evaluate one model on one suite through the public API (writes results/bench/<suite>/<model>)."""
    from polyembed import evaluate

    start = time.perf_counter()
    evaluate(model, suite=suite, out_dir=RESULTS / suite / model)
    print(f"[{suite}] {model}: {time.perf_counter() - start:.1f} s", flush=True)


def measure_throughput(model_name: str, n: int = 1024, batch_size: int = 64, repeats: int = 3) -> dict:
    """Sentences per second (batch 64, 2 torch threads) on STS-B test English sentences: polyembed's
    `encode` and plain sentence-transformers on the same model folder and sentences (best of `repeats`)."""
    import torch
    from sentence_transformers import SentenceTransformer

    from polyembed import encode, load_model
    from polyembed.data.registry import get_dataset

    torch.set_num_threads(2)
    pairs = get_dataset("stsbenchmark").load("test")
    sentences = list(dict.fromkeys(pairs.sentences1 + pairs.sentences2))[:n]
    model = load_model(model_name)
    plain = SentenceTransformer(model.path, device="cpu")

    def best_seconds(run: object) -> float:
        run(sentences[:batch_size])  # warm-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run(sentences)
            times.append(time.perf_counter() - start)
        return min(times)

    ours = best_seconds(lambda texts: encode(model, texts, batch_size=batch_size))
    theirs = best_seconds(lambda texts: plain.encode(texts, batch_size=batch_size))
    return {
        "model": model_name,
        "sentences": len(sentences),
        "batch_size": batch_size,
        "threads": 2,
        "seconds": round(ours, 2),
        "sentences_per_second": round(len(sentences) / ours, 1),
        "plain_sentence_transformers_per_second": round(len(sentences) / theirs, 1),
    }


def main() -> None:
    from polyembed.messages import show_messages

    show_messages()  # the library's progress notes in the benchmark's log
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", default="default,full")
    parser.add_argument("--models", default="minilm-en,me5-small")
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--throughput", action="store_true", help="also measure encoding throughput")
    args = parser.parse_args()
    if args.throughput and not args.render_only:
        rows = [measure_throughput(model) for model in args.models.split(",")]
        write_json(RESULTS / "throughput.json", rows)
    if not args.render_only and args.suites:
        for suite in args.suites.split(","):
            for model in args.models.split(","):
                run_suite(model, suite)
    if not args.render_only:
        write_json(NOTES, {"machine": cpu_description()})
    render()


if __name__ == "__main__":
    main()
