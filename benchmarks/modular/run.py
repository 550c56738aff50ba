"""The modular sentence encoders' miniature of the paper (issue 14): results -> results/bench/modular, docs.

  python -m benchmarks.modular.run run --seed 0          # pipeline, Single baselines, demo student, evaluation
  python -m benchmarks.modular.run run --seed 1 --steps 100 --languages de ru kk
  python -m benchmarks.modular.run vocabulary --seed 0 --language kk   # new vocabulary (FOCUS) vs pruned, one language
  python -m benchmarks.modular.run render                # rewrite the docs section from the saved seeds

One seed: the modular pipeline (pruned vocabularies -> LA -> SE -> CLA, English pivot) on me5-small for the
languages, the paper's Single_m / Single_c / Single_mc on the same pairs and step budget (Single_m: the SE steps
of every encoder; Single_c: the CLA steps of every language), the distilled student of `polyembed demo`'s
config, then every model on the same trimmed tasks: stsb-multi-mt (mono, en-X), Kardes STS (mono, en-X),
STS2017 en-en and LASER Tatoeba. Every step is a resumable run folder, so a rerun continues where it stopped.
Every number comes from a real run on this machine; nothing is copied in.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from typing import Any

from benchmarks.common.results import load_json, write_json
from benchmarks.common.script_cli import invocation, script_parser
from benchmarks.modular.render import render
from benchmarks.modular.spec import BASE, COMMAND, KARDES, LASER, OUT, PIVOT, ROWS, STSB, recorded_before

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _tasks(languages: list[str], max_pairs: int, max_rows: int) -> list[tuple[str, dict[str, Any]]]:
    stsb = [code for code in languages if code in STSB]
    kardes = [code for code in languages if code in KARDES]
    tatoeba = [LASER[code] for code in languages if LASER.get(code)]
    tasks: list[tuple[str, dict[str, Any]]] = [("sts17", {"languages": ["en-en"]}),
                                               ("stsb-multi-mt", {"languages": ["en", *stsb], "max_pairs": max_pairs})]
    if kardes:
        tasks.append(("kardes-sts", {"languages": ["en", *kardes], "max_pairs": max_pairs}))
    if tatoeba:
        tasks.append(("tatoeba", {"languages": tatoeba, "max_rows": max_rows}))
    return tasks


def _scores(result: Any) -> dict[str, float]:
    """'task/subset' -> the task's main metric (Spearman or accuracy, x100)."""
    metric = {"sts17": "spearman", "stsb-multi-mt": "spearman", "kardes-sts": "spearman", "tatoeba": "accuracy"}
    return {f"{s.task}/{s.subset}": round(float(s.value), 2) for s in result.scores if metric.get(s.task) == s.metric}


def _per_language(scores: dict[str, float], languages: list[str]) -> dict[str, dict[str, float]]:
    """Each language's monolingual STS, cross-lingual STS with English and Tatoeba accuracy (English: STS-B
    and STS2017 en-en mean)."""
    out: dict[str, dict[str, float]] = {}
    english = [scores[k] for k in ("stsb-multi-mt/en", "sts17/en-en") if k in scores]
    if english:  # the vocabulary comparison scores one language and no English task
        out[PIVOT] = {"mono": sum(english) / len(english)}
    for code in languages:
        task = "kardes-sts" if code in KARDES else "stsb-multi-mt"
        row = {"mono": scores.get(f"{task}/{code}", math.nan), "cross": scores.get(f"{task}/en-{code}", math.nan)}
        if LASER.get(code):
            row["tatoeba"] = scores.get(f"tatoeba/{LASER[code]}", math.nan)
        out[code] = row
    return out


def _routing_accuracy(languages: list[str], rows: int) -> dict[str, Any]:
    """How often the bundle's language identifier (restricted to the bundle's languages, as `encode` without a
    language does) names the right language on Tatoeba rows the n-gram identifier never trains on (every
    `HELD_OUT_EVERY`-th): the non-English side and the English side. Names the identifier that answered."""
    from polyembed.data.readers.parallel import read_tatoeba
    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root
    from polyembed.models.langid import identify_languages
    from polyembed.models.ngram_langid import HELD_OUT_EVERY, ngram_identifier

    def held_out(texts: list[str]) -> list[str]:
        return [text for i, text in enumerate(texts) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1][:rows]

    folder = data_root(None) / get_dataset("tatoeba").folder
    candidates = [PIVOT, *languages]
    accuracy: dict[str, float] = {}
    english: list[str] = []
    for code in languages:
        if not LASER.get(code):
            continue
        pairs = read_tatoeba(folder, LASER[code])
        sentences = held_out(pairs.source)
        english += held_out(pairs.target)
        found = identify_languages(sentences, candidates)
        accuracy[code] = round(100 * sum(f == code for f in found) / len(sentences), 1)
    found = identify_languages(english, candidates)
    accuracy[PIVOT] = round(100 * sum(f == PIVOT for f in found) / len(english), 1)
    ngram = ngram_identifier()
    identifier = ("the n-gram identifier" if ngram is not None and all(ngram.knows(c) for c in candidates)
                  else "langid.py")
    return {"identifier": identifier, "rows": "held-out Tatoeba rows", "accuracy": accuracy}


def run(seed: int, steps: int, languages: list[str], batch_size: int, max_seq_length: int, max_pairs: int,
        max_rows: int, baselines: bool = True) -> None:
    from sentence_transformers import SentenceTransformer

    from polyembed.config import build_config
    from polyembed.eval.api import evaluate
    from polyembed.eval.headline import demo_config_path
    from polyembed.eval.registry import get_task
    from polyembed.methods.base.registry import train
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.methods.modular.pipeline import ModularPipelineConfig, run_pipeline, run_stage
    from polyembed.models.loading import load_model
    from polyembed.models.modular import save_modular_bundle

    started = time.perf_counter()
    out = OUT / f"seed-{seed}"
    config = ModularPipelineConfig(languages=languages, student=BASE, vocabulary="prune", la_steps=steps,
                                   se_steps=steps, cla_steps=steps, batch_size=batch_size,
                                   max_seq_length=max_seq_length, seed=seed, output_dir=str(out / "pipeline"))
    print(f"== modular pipeline, seed {seed}: {PIVOT} + {', '.join(languages)}, {steps} steps per stage")
    pipeline = run_pipeline(config)
    shared = {"student": BASE, "languages": [PIVOT, *languages], "batch_size": batch_size,
              "max_seq_length": max_seq_length, "seed": seed}
    singles: dict[str, dict[str, Any]] = {}
    demo: dict[str, Any] = {}
    demo_folder = out / "demo-student"
    if baselines:
        singles["single-m"] = run_stage("modular-single", out / "single-m", True, pairs="monolingual",
                                        max_steps=steps * (len(languages) + 1), **shared)
        singles["single-c"] = run_stage("modular-single", out / "single-c", True, pairs="cross-lingual",
                                        max_steps=steps * len(languages), **shared)
        singles["single-mc"] = run_stage("modular-single", out / "single-mc", True, pairs="cross-lingual",
                                         max_steps=steps * len(languages),
                                         **{**shared, "student": singles["single-m"]["model_dir"]})
        if not (demo_folder / "training.json").is_file():
            print("== the demo's distilled student")
            demo_config, _ = build_config(DistillConfig, demo_config_path(),
                                          {"seed": seed, "output_dir": str(demo_folder)})
            train("distill", demo_config, resume=(demo_folder / "config.yaml").is_file())
        demo = json.loads((demo_folder / "training.json").read_text(encoding="utf-8"))

    pruned = out / "pruned-bundle"
    if not pruned.is_dir():
        save_modular_bundle(pruned, {code: SentenceTransformer(str(out / "pipeline" / code / "vocabulary-prune"),
                                                               device="cpu")
                                     for code in [PIVOT, *languages]})
    bundle = load_model(pipeline["bundle"])
    models = {
        "base": lambda: load_model(BASE),
        "base-pruned": lambda: load_model(str(pruned)).with_mode("mono"),
        **{name: (lambda stage=stage_run: load_model(stage["model_dir"])) for name, stage_run in singles.items()},
        "multi-m": lambda: bundle.with_mode("mono"),
        "multi-mc": lambda: bundle.with_mode("cross"),
    }
    if demo:
        models["demo-student"] = lambda: load_model(demo["model_dir"])
    tasks = _tasks(languages, max_pairs, max_rows)
    evaluations = load_json(out / "evaluations.json") or {}
    for name, make in models.items():
        if name in evaluations:
            continue
        print(f"== evaluating {ROWS[name]}")
        result = evaluate(make(), [get_task(task, **options) for task, options in tasks], show_progress=False)
        evaluations[name] = _scores(result)
        write_json(out / "evaluations.json", evaluations)

    stages = {code: row for code, row in pipeline["languages"].items()}
    payload = {
        "seed": seed,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch threads {_threads()}",
        "command": invocation(),
        "steps": steps, "batch_size": batch_size, "max_seq_length": max_seq_length,
        "languages": languages, "tasks": tasks,
        "base_parameters": pipeline["base_parameters"],
        "encoders": {code: {"parameters": row["encoder_parameters"],
                            "stages": {name: {**run_, "before": recorded_before(run_)}
                                       for name, run_ in row["stages"].items()}}
                     for code, row in stages.items()},
        "singles": {name: {key: run_.get(key) for key in ("wall_seconds", "peak_memory_mb", "steps", "model_dir",
                                                          "resumed")}
                    for name, run_ in singles.items()},
        "demo_student": {key: demo.get(key) for key in ("wall_seconds", "peak_memory_mb", "steps", "model_dir")},
        "scores": evaluations,
        "per_language": {name: _per_language(scores, languages) for name, scores in evaluations.items()},
        "routing_accuracy": _routing_accuracy(languages, max_rows),
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_json(OUT / f"seed-{seed}.json", payload)
    render()


def vocabulary(seed: int, language: str, vocabulary_size: int) -> None:
    """One language's encoder with a new tokenizer (FOCUS-initialised embeddings) through the same LA, SE and
    CLA stages and the same English pivot as the seed's pipeline (pruned vocabulary), then both evaluated."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task
    from polyembed.methods.modular.pipeline import ModularPipelineConfig, run_stage, vocabulary_text
    from polyembed.models.loading import load_model
    from polyembed.models.modular import save_modular_bundle
    from polyembed.models.parallel_adapter import load_parallel_adapters
    from polyembed.models.vocabulary_transfer import transfer_vocabulary

    seed_run = load_json(OUT / f"seed-{seed}.json")
    if seed_run is None or language not in seed_run["languages"]:
        raise SystemExit(f"run `{COMMAND} run --seed {seed}` with {language} first: this compares against it")
    pipeline = load_json(OUT / f"seed-{seed}" / "pipeline" / "pipeline.json")
    assert pipeline is not None
    stored = {"student" if key == "base" else key: value for key, value in pipeline["config"].items()}  # its old name
    config = ModularPipelineConfig(**{**stored, "languages": [language]})
    out = OUT / f"seed-{seed}" / f"vocabulary-new-{language}"
    folder = out / "vocabulary-new"
    started = time.perf_counter()
    if not (folder / "modules.json").is_file():
        text = vocabulary_text(config, language, [language])
        transfer_vocabulary(BASE, text, folder, vocab_size=vocabulary_size, seed=seed, overwrite=True)
    transfer_seconds = round(time.perf_counter() - started, 1)
    shared = {"batch_size": config.batch_size, "max_seq_length": config.max_seq_length, "seed": seed,
              "keep_checkpoints": False}
    stages = {"la": run_stage("modular-la", out / "la", True, student=str(folder), language=language,
                              max_steps=config.la_steps, **shared)}
    stages["se"] = run_stage("modular-se", out / "se", True, student=stages["la"]["model_dir"], language=language,
                             max_steps=config.se_steps, **shared)
    pivot = pipeline["languages"][PIVOT]["stages"]["se"]["model_dir"]
    stages["cla"] = run_stage("modular-cla", out / "cla", True, student=stages["se"]["model_dir"], pivot=pivot,
                              language=language, max_steps=config.cla_steps, **shared)
    from sentence_transformers import SentenceTransformer

    aligned = SentenceTransformer(stages["cla"]["model_dir"], device="cpu")
    load_parallel_adapters(aligned, stages["cla"]["model_dir"])
    bundle_dir = out / "bundle"
    if not bundle_dir.is_dir():
        save_modular_bundle(bundle_dir, {PIVOT: SentenceTransformer(pivot, device="cpu"), language: aligned})
    bundle = load_model(str(bundle_dir))
    tasks = [task for task in _tasks([language], 500, 500) if task[0] not in ("sts17", "stsb-multi-mt")]
    if language in STSB:
        tasks.append(("stsb-multi-mt", {"languages": ["en", language], "max_pairs": 500}))
    scores = {}
    for mode in ("mono", "cross"):
        result = evaluate(bundle.with_mode(mode), [get_task(t, **o) for t, o in tasks], show_progress=False)
        scores[mode] = _per_language(_scores(result), [language])[language]
    payload = {
        "seed": seed, "language": language, "vocabulary_size": vocabulary_size,
        "transfer_seconds": transfer_seconds,
        "new": {"parameters": sum(p.numel() for p in SentenceTransformer(str(folder), device="cpu").parameters()),
                "mono": scores["mono"]["mono"], "cross": scores["cross"]["cross"],
                "tatoeba": scores["cross"].get("tatoeba", math.nan),
                "stages": {name: {k: run_.get(k) for k in ("wall_seconds", "peak_memory_mb", "steps", "best")}
                           for name, run_ in stages.items()}},
        "prune": {"parameters": seed_run["encoders"][language]["parameters"],
                  "mono": seed_run["per_language"]["multi-m"][language]["mono"],
                  "cross": seed_run["per_language"]["multi-mc"][language]["cross"],
                  "tatoeba": seed_run["per_language"]["multi-mc"][language].get("tatoeba", math.nan)},
    }
    write_json(OUT / f"vocabulary-{language}-seed-{seed}.json", payload)
    render()


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def main() -> None:
    parser, commands = script_parser(__doc__)
    one = commands.add_parser("run", help="one seed: train everything, evaluate, render")
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--steps", type=int, default=100, help="optimizer steps of each stage")
    one.add_argument("--languages", nargs="+", default=["de", "ru", "kk"])
    one.add_argument("--batch-size", type=int, default=32)
    one.add_argument("--max-seq-length", type=int, default=64)
    one.add_argument("--max-pairs", type=int, default=500, help="STS pairs per evaluation subset")
    one.add_argument("--max-rows", type=int, default=500, help="Tatoeba rows per language")
    one.add_argument("--no-baselines", dest="baselines", action="store_false",
                     help="the pipeline only: no Single baselines, no demo student (a later full run adds them)")
    vocab = commands.add_parser("vocabulary", help="one language with a new vocabulary against the pruned one")
    vocab.add_argument("--seed", type=int, default=0)
    vocab.add_argument("--language", default="kk")
    vocab.add_argument("--vocabulary-size", type=int, default=50000)
    commands.add_parser("render", help="rewrite the docs section from the saved seeds")
    args = parser.parse_args()
    if args.command == "run":
        run(args.seed, args.steps, args.languages, args.batch_size, args.max_seq_length, args.max_pairs,
            args.max_rows, args.baselines)
    elif args.command == "vocabulary":
        vocabulary(args.seed, args.language, args.vocabulary_size)
    else:
        render()


if __name__ == "__main__":
    main()
