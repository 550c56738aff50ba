"""The modular sentence encoders' miniature of the paper (issue 14): results -> results/bench/modular, docs.

  python benchmarks/modular.py run --seed 0          # pipeline, Single baselines, demo student, evaluation
  python benchmarks/modular.py run --seed 1 --steps 100 --languages de ru kk
  python benchmarks/modular.py vocabulary --seed 0 --language kk   # new vocabulary (FOCUS) vs pruned, one language
  python benchmarks/modular.py render                # rewrite the docs section from the saved seeds

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
import sys
import time
from pathlib import Path
from typing import Any

from docs_sections import missing_tables, publish, replace_section
from result_files import load_json, write_json
from script_cli import script_parser
from tables import cell, mean

from polyembed.eval.tasks.retrieval import TatoebaRetrieval
from polyembed.languages import subsets_named

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "results" / "bench" / "modular"
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- modular:start -->", "<!-- modular:end -->"
VOCABULARY_START, VOCABULARY_END = "<!-- modular-vocabulary:start -->", "<!-- modular-vocabulary:end -->"
BASE = "me5-small"
PIVOT = "en"
LASER = {code: next(iter(subsets_named(code, TatoebaRetrieval.metadata.languages)), None)
         for code in ("de", "ru", "kk", "uz", "tr", "en")}
"""LASER Tatoeba's own code for each language ('de' -> 'deu'); None for English, the other side of every pair."""
STSB = ("de", "es", "fr", "it", "ja", "nl", "pl", "pt", "ru", "zh")
KARDES = ("az", "kk", "ky", "ug", "uz")
ROWS = {
    "base": "me5-small",
    "base-pruned": "me5-small, pruned vocabularies (no training)",
    "single-m": "Single_m",
    "single-c": "Single_c",
    "single-mc": "Single_mc",
    "multi-m": "Multi_m (bundle, mode mono)",
    "multi-mc": "Multi_mc (bundle, mode cross)",
    "demo-student": "demo student (distilled)",
}


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


def _routing_how(seed: dict[str, Any]) -> tuple[str, str]:
    """(identifier, rows) of a seed's routing measure; runs before 2026-11-26 stored langid.py's on the first
    Tatoeba rows."""
    routing = seed["routing_accuracy"]
    if "identifier" in routing:
        return routing["identifier"], routing["rows"]
    return "langid.py", "the first Tatoeba rows"


def _routing(seed: dict[str, Any]) -> dict[str, float]:
    routing = seed["routing_accuracy"]
    return routing["accuracy"] if "identifier" in routing else routing


def run(seed: int, steps: int, languages: list[str], batch_size: int, max_seq_length: int, max_pairs: int,
        max_rows: int, baselines: bool = True) -> None:
    from sentence_transformers import SentenceTransformer

    from polyembed.config import build_config
    from polyembed.demo import demo_config_path
    from polyembed.eval.api import evaluate
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
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "steps": steps, "batch_size": batch_size, "max_seq_length": max_seq_length,
        "languages": languages, "tasks": tasks,
        "base_parameters": pipeline["base_parameters"],
        "encoders": {code: {"parameters": row["encoder_parameters"],
                            "stages": {name: {**run_, "before": _recorded_before(run_)}
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
        raise SystemExit(f"run `modular.py run --seed {seed}` with {language} first: this compares against it")
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



# ------------------------------------------------------------------------------------------------- render


def _score_table(seeds: list[dict[str, Any]]) -> list[str]:
    languages = seeds[0]["languages"]
    columns = [(PIVOT, "mono")] + [(code, "mono") for code in languages] + [(code, "cross") for code in languages]
    columns += [(code, "tatoeba") for code in languages if LASER.get(code)]
    labels = {"mono": "mono {}", "cross": "en-{} STS", "tatoeba": "Tatoeba {}"}
    header = ["model", *[labels[kind].format(code) for code, kind in columns], "mono mean", "cross mean"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, label in ROWS.items():
        if not all(name in seed["per_language"] for seed in seeds):
            continue
        cells = [label]
        for code, kind in columns:
            cells.append(cell([seed["per_language"][name][code].get(kind, math.nan) for seed in seeds]))
        for kind in ("mono", "cross"):
            cells.append(cell([mean([seed["per_language"][name][code].get(kind, math.nan)
                                      for code in [PIVOT, *languages] if kind in seed["per_language"][name][code]])
                               for seed in seeds]))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


# Each stage's own dev measure, as its training.json records it: (key, factor to the shown unit, format).
STAGE_MEASURES = {"la": ("heldout_mlm_loss", 1.0, "{:.2f}"), "se": ("dev_mean_accuracy", 100.0, "{:.1f}"),
                  "cla": ("dev_mean_accuracy", 1.0, "{:.1f}")}


def _stage_change(stage: str, runs: list[dict[str, Any]]) -> str:
    """'before -> after' of the stage's dev measure (mean over seeds), read from each run's training.json."""
    key, factor, form = STAGE_MEASURES[stage]
    pairs = []
    for run_ in runs:
        before = (run_.get("before") or _recorded_before(run_)).get(key)
        after = (run_.get("best") or {}).get(f"eval_{key}")
        if before is not None and after is not None:
            pairs.append((factor * before, factor * after))
    if len(pairs) != len(runs):
        return "-"
    return f"{form.format(mean([b for b, _ in pairs]))} -> {form.format(mean([a for _, a in pairs]))}"


def _recorded_before(run_: dict[str, Any]) -> dict[str, Any]:
    """The stage's dev measures before training, from its training.json: the seed file stores them as `before`
    since 2026-11-25; older seed files only point at the run folder."""
    record = load_json(Path(run_["model_dir"]).parent / "training.json") or {}
    return record.get("details", {}).get("before", {})


def _cost_table(seeds: list[dict[str, Any]]) -> list[str]:
    lines = ["| encoder | parameters (base: {:,}) | stage | steps | dev measure before -> after | wall time (s) | "
             "peak memory (MB) |".format(seeds[0]["base_parameters"]), "|---|---|---|---|---|---|---|"]
    for code, encoder in seeds[0]["encoders"].items():
        share = encoder["parameters"] / seeds[0]["base_parameters"]
        for stage in encoder["stages"]:
            runs = [seed["encoders"][code]["stages"][stage] for seed in seeds]
            resumed = "*" if any(r.get("resumed") for r in runs) else ""
            lines.append(f"| {code} | {encoder['parameters']:,} ({share:.0%}) | {stage} | {runs[0]['steps']} | "
                         f"{_stage_change(stage, runs)} | {cell([r['wall_seconds'] for r in runs])}{resumed} | "
                         f"{cell([r['peak_memory_mb'] for r in runs])} |")
    for name in ("single-m", "single-c", "single-mc"):
        if not all(name in seed["singles"] for seed in seeds):
            continue
        runs = [seed["singles"][name] for seed in seeds]
        resumed = "*" if any(r.get("resumed") for r in runs) else ""
        lines.append(f"| {ROWS[name]} | {seeds[0]['base_parameters']:,} (100%) | full tuning | {runs[0]['steps']} "
                     f"| - | {cell([r['wall_seconds'] for r in runs])}{resumed} | "
                     f"{cell([r['peak_memory_mb'] for r in runs])} |")
    return lines


def render_vocabulary() -> None:
    """The vocabulary study's own section: its runs are separate from the seeds', so a seed rendered on a machine
    without them leaves this section as it was."""
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("vocabulary-*-seed-*.json"))]
    if not runs:
        if missing_tables(DOCS, VOCABULARY_START, VOCABULARY_END, {"runs": "modular.py vocabulary"}, set()):
            print("no saved vocabulary runs here: the vocabulary section is left alone")
        return
    lines = [VOCABULARY_START,
             "Vocabulary: a new tokenizer with FOCUS-initialised embeddings against the pruned base vocabulary, "
             "through the same stages (Multi_m mono, Multi_mc cross; `modular.py vocabulary --seed S --language L`):",
             "", "| language | seed | vocabulary | parameters | mono STS | en-X STS | Tatoeba |",
             "|---|---|---|---|---|---|---|"]
    for run_ in runs:
        for kind in ("prune", "new"):
            row = run_[kind]
            lines.append(f"| {run_['language']} | {run_['seed']} | {kind} | {row['parameters']:,} | "
                         f"{row['mono']:.1f} | {row['cross']:.1f} | {row['tatoeba']:.1f} |")
    lines.append(VOCABULARY_END)
    replace_section(DOCS, VOCABULARY_START, VOCABULARY_END, "\n".join(lines))
    print("\n".join(lines))


def render() -> None:
    render_vocabulary()
    seeds = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(OUT.glob("seed-*.json"))]
    command = "python benchmarks/modular.py run"
    if not seeds:
        if missing_tables(DOCS, START, END, {"seeds": command}, set()):
            print("no saved seeds here: the docs section is left alone")
        return
    first = seeds[0]
    languages = first["languages"]
    if all("single-m" in s["per_language"] for s in seeds):
        multi_m, single_m = ({code: mean([s["per_language"][name][code]["mono"] for s in seeds])
                              for code in [PIVOT, *languages]} for name in ("multi-m", "single-m"))
        winners = ", ".join(f"{code} {'Multi_m' if multi_m[code] > single_m[code] else 'Single_m'} "
                            f"({multi_m[code] - single_m[code]:+.1f})" for code in [PIVOT, *languages])
    else:
        winners = "not measured yet (the Single baselines have not run for every seed)"
    routing_lines = []
    for how in dict.fromkeys(_routing_how(s) for s in seeds):  # seeds measured alike share a line
        alike = [s for s in seeds if _routing_how(s) == how]
        values = {code: cell([_routing(s).get(code, math.nan) for s in alike]) for code in [PIVOT, *languages]}
        routing_lines.append(f"Language routing (`encode` without a language: {how[0]} restricted to the "
                             f"bundle's languages) on {how[1]}, seed {', '.join(str(s['seed']) for s in alike)}: "
                             + ", ".join(f"{code} {value} %" for code, value in values.items()) + ".")
    section = [
        START,
        "## Modular sentence encoders (Huang et al. 2024): a miniature on this machine",
        "",
        f"Seeds {', '.join(str(s['seed']) for s in seeds)} (cells: mean, then each seed); {first['machine']}. "
        f"Commands: `{command} --seed S --steps {first['steps']} --languages {' '.join(languages)}`, one per seed.",
        f"Base {BASE}; English pivot plus {', '.join(languages)}; every stage {first['steps']} optimizer steps of "
        f"{first['batch_size']} (max {first['max_seq_length']} tokens). Single_m trains as many steps as all SE "
        "stages together, Single_c and Single_mc's second part as many as all CLA stages, on the same pairs.",
        "Tasks (trimmed as in the demo): stsb-multi-mt and Kardes STS test (500 pairs; mono, and en-X built row by "
        "row), STS2017 en-en, LASER Tatoeba (500 rows, mean of both directions). English mono is the mean of "
        "STS-B (stsb-multi-mt en) and STS2017 en-en.",
        "",
        *_score_table(seeds),
        "",
        "Multi_mc's monolingual scores in mode mono are Multi_m's, bit for bit (the adapters are off; "
        "tests/methods/modular/test_smoke_preset.py checks it on me5-small); the Multi_mc row shows what mode cross "
        "does to them.",
        f"Multi_m against Single_m, monolingual STS per language (positive: Multi_m better): {winners}.",
        "",
        *routing_lines,
        "",
        "Cost of each stage (one process on this machine; peak memory is each run's own resident high-water mark; "
        "`*`: a stage resumed after an interruption, whose time covers the resumed part only; dev measure, mean "
        "of the seeds: LA held-out MLM loss (the head is new, tied to the input embeddings, so 'before' is an "
        "untrained head), SE paraphrase retrieval accuracy, CLA retrieval against the pivot, each at the kept "
        "checkpoint):",
        "",
        *_cost_table(seeds),
        "",
        END,
    ]
    publish(DOCS, START, END, section)


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
