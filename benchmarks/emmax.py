"""EMMA-X in miniature at the authors' defaults (docs/methods/emmax.md): results -> results/bench/emmax-authors,
docs/benchmarks.md ("EMMA-X at the authors' defaults"), docs/figures.

  python benchmarks/emmax.py classifier --seed 0     # the warm-up classifier's learning rate on held-out pairs
  python benchmarks/emmax.py run --seed 0            # warm-up, equal-compute continued warm-up, EM; evaluation
  python benchmarks/emmax.py ablation --seed 0       # N = 2 / 8, FCN, no dual supervision, monolingual phase 2
  python benchmarks/emmax.py budget --seed 0         # EM against continued phase 1 at 75 / 150 / 300 steps
  python benchmarks/emmax.py authors --seed 0        # the authors' three stages with their encoder loss and MLM
  python benchmarks/emmax.py render                  # rewrite the docs section from the saved JSON

From me5-small (word embeddings frozen: the 250k-row matrix dominates a CPU step): phase 1 on a small parallel
budget of de, ru, kk (Tatoeba-Challenge bitext, LASER Tatoeba's test pairs left out), then phase 2 on the
bitext of the same languages and of long-tail ones (tt, tk, ug, uz, az) that phase 1 never saw, as the
authors' code trains it (both sides of each pair in one batch). Equal compute on the same data: the phase-1
model continued on that same bitext for as many steps as phase 2 takes. Scored on LASER Tatoeba (both
directions), STS2017's cross-lingual tracks (ar-en, es-en 4a, tr-en), comparable mining in TICO-19 (no training
sentence comes from it) and the geometry of Kardes STS's 6-way parallel sentences (KL invariance,
Calinski-Harabasz, principal ratio); the classifier's held-out accuracy and s_r at every evaluation of both
phases. Every number comes from a run on this machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import sys
from pathlib import Path
from typing import Any

from docs_sections import missing_tables, replace_section
from result_files import load_json, write_json

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "results" / "bench" / "emmax-authors"
DOCS = REPO / "docs" / "benchmarks.md"
FIGURE = REPO / "docs" / "figures" / "emmax-authors-rank-shares.png"
START, END = "<!-- emmax-authors:start -->", "<!-- emmax-authors:end -->"
BASE = "me5-small"
WARMUP_LANGUAGES = ["de", "ru", "kk"]
LONG_TAIL = ["tt", "tk", "ug", "uz", "az"]
LASER = {"de": "deu", "ru": "rus", "kk": "kaz", "tt": "tat", "tk": "tuk", "ug": "uig", "uz": "uzb", "az": "aze"}
MINING = ["tico19:ru", "tico19:fr", "tico19:ar"]
STS_CROSS = ["ar-en", "es-en", "tr-en"]
ROWS = {"base": "me5-small", "warmup": "phase 1 (warm-up)", "warmup-continued": "phase 1 continued (equal compute)",
        "em": "phase 1 + phase 2 (EM)"}
TIMING_NOTES: dict[int, str] = {}
ABLATIONS = {"ranks-2": ("N = 2", {"ranks": 2}, {}), "ranks-8": ("N = 8", {"ranks": 8}, {}),
             "fcn": ("FCN classifier", {"classifier": "fcn"}, {}),
             "no-dual": ("no dual supervision", None, {"dual_supervision": False}),
             "monolingual": ("phase 2 on shuffled monolingual text, own key rank 1", None, {"parallel": False}),
             "queue-only": ("monolingual, queue only (the paper's text)", None, {"parallel": False,
                                                                                 "own_key": False})}



# --------------------------------------------------------------------------------------------- classifier


def classifier(seed: int, steps: int, rates: list[float], pairs: int) -> None:
    """Only the classifier trains (Eq. 4 on frozen me5-small embeddings of de/ru/kk bitext); its rank-1 and
    rank-N accuracy on 300 held-out pairs after `steps` steps of 32, per kind and learning rate."""
    import torch

    from polyembed.data.parallel_sources import load_parallel_sources
    from polyembed.data.root import data_root
    from polyembed.methods.emmax.classifier import build_classifier
    from polyembed.methods.emmax.losses import EmmaxWarmupLoss
    from polyembed.models.loading import as_sentence_transformer, load_model

    sources = load_parallel_sources(WARMUP_LANGUAGES, ["tatoeba-challenge"], data_root(None),
                                    max_pairs_per_source=pairs, seed=seed)
    model, _ = as_sentence_transformer(load_model(BASE))
    english, other = ([f"query: {text}" for source in sources for text in getattr(source, side)]
                      for side in ("english", "other"))
    english_vectors, other_vectors = (model.encode(texts, batch_size=64, convert_to_tensor=True,
                                                   normalize_embeddings=True, show_progress_bar=True)
                                      for texts in (english, other))
    rows = list(range(len(english)))
    random.Random(seed).shuffle(rows)
    dev, train = rows[:300], rows[300:]
    results = []
    for kind in ("gmm", "fcn"):
        for rate in rates:
            torch.manual_seed(seed)
            loss = EmmaxWarmupLoss(None, build_classifier(kind, english_vectors.shape[1], 4))
            optimizer = torch.optim.Adam(loss.classifier.parameters(), lr=rate)
            for step in range(steps):
                batch = random.Random(f"{seed}:{step}").sample(train, 32)
                value = loss.rank_likelihood(english_vectors[batch], other_vectors[batch])
                optimizer.zero_grad()
                value.backward()
                optimizer.step()
            with torch.no_grad():
                first, second = english_vectors[dev], other_vectors[dev]
                rank_1 = (loss.classifier.log_posterior(first - second).argmax(-1) == 0).float().mean().item()
                rank_n = (loss.classifier.log_posterior(first - second.roll(1, 0)).argmax(-1) == 3).float().mean()
            results.append({"classifier": kind, "learning_rate": rate, "rank_1_accuracy": round(100 * rank_1, 1),
                            "rank_n_accuracy": round(100 * float(rank_n), 1)})
            print(results[-1])
    write_json(OUT / f"classifier-seed-{seed}.json",
                {"seed": seed, "steps": steps, "pairs": len(english), "results": results})
    render()


# --------------------------------------------------------------------------------------------- run


def _tasks(full: bool) -> list[tuple[str, dict[str, Any]]]:
    tasks: list[tuple[str, dict[str, Any]]] = [
        ("tatoeba", {"languages": list(LASER.values()), "max_rows": 500}),
        ("sts17", {"languages": STS_CROSS}),
    ]
    if full:
        tasks += [("comparable-mining", {"languages": MINING}),
                  ("geometry-kardes", {"languages": ["en", "az", "kk", "ky", "ug", "uz"], "tsne": False})]
    return tasks


def _scores(result: Any) -> dict[str, float]:
    """'task/subset/metric' -> value for the metrics the tables show."""
    wanted = {"tatoeba": {"accuracy"}, "sts17": {"spearman"}, "comparable-mining": {"f1"},
              "geometry-kardes": {"kl_divergence", "calinski_harabasz", "principal_ratio"}}
    return {f"{s.task}/{s.subset}/{s.metric}": round(float(s.value), 4) for s in result.scores
            if s.metric in wanted.get(s.task, set()) and (s.task != "geometry-kardes" or s.subset == "all")}


def _evaluate(models: dict[str, str], full: bool, path: Path) -> dict[str, dict[str, float]]:
    from polyembed.eval.api import evaluate
    from polyembed.eval.base import get_task
    from polyembed.models.loading import load_model

    evaluations = load_json(path) or {}
    for name, folder in models.items():
        if name in evaluations:
            continue
        print(f"== evaluating {name}")
        result = evaluate(load_model(folder), [get_task(t, **o) for t, o in _tasks(full)], show_progress=False)
        evaluations[name] = _scores(result)
        write_json(path, evaluations)
    return evaluations


def _common(seed: int, batch_size: int) -> dict[str, Any]:
    """Every phase's settings besides the method's own defaults (the authors', docs/methods/emmax.md)."""
    return {"batch_size": batch_size, "max_seq_length": 64, "freeze_embeddings": True, "seed": seed,
            "datasets": ["tatoeba-challenge"], "dev_sts_pairs": 0}


def _phases(seed: int, out: Path, warmup_steps: int, em_steps: int, max_pairs: int, batch_size: int,
            warmup_options: dict[str, Any] | None, em_options: dict[str, Any], warmup_dir: str | None = None
            ) -> dict[str, dict[str, Any]]:
    """Phase 1 (unless `warmup_dir` is given) then phase 2 from it, each a resumable run folder."""
    from polyembed.methods.modular.pipeline import run_stage

    common = {**_common(seed, batch_size), "max_pairs_per_source": max_pairs}
    runs: dict[str, dict[str, Any]] = {}
    if warmup_dir is None:
        runs["warmup"] = run_stage("emmax-warmup", out / "warmup", True, student=BASE, languages=WARMUP_LANGUAGES,
                                   max_steps=warmup_steps, keep_checkpoints=False, **common, **(warmup_options or {}))
        warmup_dir = runs["warmup"]["model_dir"]
    runs["em"] = run_stage("emmax-em", out / "em", True, student=warmup_dir, languages=WARMUP_LANGUAGES + LONG_TAIL,
                           max_steps=em_steps, keep_checkpoints=False, **common, **em_options)
    return runs


def run(seed: int, warmup_steps: int, em_steps: int, max_pairs: int, batch_size: int) -> None:
    from polyembed.methods.modular.pipeline import run_stage

    out = OUT / f"seed-{seed}"
    runs = _phases(seed, out, warmup_steps, em_steps, max_pairs, batch_size, {}, {})
    runs["warmup-continued"] = run_stage(  # the same bitext as phase 2, for as many steps
        "emmax-warmup", out / "warmup-continued", True, student=runs["warmup"]["model_dir"],
        languages=WARMUP_LANGUAGES + LONG_TAIL, max_steps=em_steps, max_pairs_per_source=max_pairs,
        keep_checkpoints=False, **_common(seed, batch_size))
    models = {"base": BASE, **{name: runs[name]["model_dir"] for name in ("warmup", "warmup-continued", "em")}}
    evaluations = _evaluate(models, True, out / "evaluations.json")
    payload = {
        "seed": seed, "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "warmup_steps": warmup_steps, "em_steps": em_steps, "max_pairs": max_pairs, "batch_size": batch_size,
        "runs": {name: {key: r.get(key) for key in ("wall_seconds", "peak_memory_mb", "steps", "model_dir",
                                                    "history", "details", "resumed")}
                 for name, r in runs.items()},
        "scores": evaluations,
    }
    write_json(OUT / f"seed-{seed}.json", payload)
    render()


def ablation(seed: int) -> None:
    seed_run = load_json(OUT / f"seed-{seed}.json")
    if seed_run is None:
        raise SystemExit(f"run `python benchmarks/emmax.py run --seed {seed}` first: the ablation reuses its setup")
    results: dict[str, Any] = {"seed": seed, "variants": {}}
    for name, (_, warmup_options, em_options) in ABLATIONS.items():
        runs = _phases(seed, OUT / f"ablation-seed-{seed}" / name, seed_run["warmup_steps"], seed_run["em_steps"],
                       seed_run["max_pairs"], seed_run["batch_size"], warmup_options, em_options,
                       warmup_dir=None if warmup_options else seed_run["runs"]["warmup"]["model_dir"])
        results["variants"][name] = {"em_model": runs["em"]["model_dir"],
                                     "history": runs["em"].get("history", [])}
    models = {name: variant["em_model"] for name, variant in results["variants"].items()}
    results["scores"] = _evaluate(models, False, OUT / f"ablation-seed-{seed}" / "evaluations.json")
    write_json(OUT / f"ablation-seed-{seed}.json", results)
    render()


def budget(seed: int, steps: list[int]) -> None:
    """EM and continued phase 1 from the seed's warm-up, each a run of its own length (warm-up ratio and decay
    scale with it), on the same bitext: which way the gap moves with more steps."""
    from polyembed.methods.modular.pipeline import run_stage

    seed_run = load_json(OUT / f"seed-{seed}.json")
    if seed_run is None:
        raise SystemExit(f"run `python benchmarks/emmax.py run --seed {seed}` first: the curve starts from its warm-up")
    warmup_dir, max_pairs = seed_run["runs"]["warmup"]["model_dir"], seed_run["max_pairs"]
    common = {**_common(seed, seed_run["batch_size"]), "max_pairs_per_source": max_pairs,
              "languages": WARMUP_LANGUAGES + LONG_TAIL, "student": warmup_dir, "keep_checkpoints": False}
    out = OUT / f"budget-seed-{seed}"
    models: dict[str, str] = {}
    runs: dict[str, Any] = {}
    for count in steps:
        if count == seed_run["em_steps"]:  # the main run has this point, evaluated on the full task set
            continue
        for name, method in (("em", "emmax-em"), ("continued", "emmax-warmup")):
            run = run_stage(method, out / f"{name}-{count}", True, max_steps=count, **common)
            models[f"{name}-{count}"] = run["model_dir"]
            runs[f"{name}-{count}"] = {key: run.get(key) for key in ("wall_seconds", "steps", "history")}
    scores = _evaluate(models, False, out / "evaluations.json")
    if seed_run["em_steps"] in steps:
        scores[f"em-{seed_run['em_steps']}"] = seed_run["scores"]["em"]
        scores[f"continued-{seed_run['em_steps']}"] = seed_run["scores"]["warmup-continued"]
    write_json(OUT / f"budget-seed-{seed}.json", {"seed": seed, "steps": steps, "runs": runs, "scores": scores})
    render()


AUTHORS_STAGES = {"encoder_loss": "authors", "mlm_probability": 0.1}


def authors(seed: int) -> None:
    """The authors' pipeline at the run's budget: an encoder stage (their InfoNCE with key encoder and queue,
    joint MLM), a classifier stage on the frozen encoder (each anchor mixed with every key), EM with MLM; against
    the encoder stage continued for as many steps on phase 2's bitext."""
    from polyembed.methods.modular.pipeline import run_stage

    seed_run = load_json(OUT / f"seed-{seed}.json")
    if seed_run is None:
        raise SystemExit(f"run `python benchmarks/emmax.py run --seed {seed}` first: this reuses its budget")
    common = {**_common(seed, seed_run["batch_size"]), "max_pairs_per_source": seed_run["max_pairs"],
              "keep_checkpoints": False}
    out = OUT / f"authors-seed-{seed}"
    runs = {"encoder": run_stage("emmax-warmup", out / "encoder", True, student=BASE, languages=WARMUP_LANGUAGES,
                                 max_steps=seed_run["warmup_steps"], stage="encoder", **AUTHORS_STAGES, **common)}
    runs["classifier"] = run_stage("emmax-warmup", out / "classifier", True, student=runs["encoder"]["model_dir"],
                                   languages=WARMUP_LANGUAGES, max_steps=seed_run["warmup_steps"], stage="classifier",
                                   classifier_examples="authors", **common)
    runs["em"] = run_stage("emmax-em", out / "em", True, student=runs["classifier"]["model_dir"],
                           languages=WARMUP_LANGUAGES + LONG_TAIL, max_steps=seed_run["em_steps"],
                           mlm_probability=AUTHORS_STAGES["mlm_probability"], **common)
    runs["continued"] = run_stage("emmax-warmup", out / "continued", True, student=runs["encoder"]["model_dir"],
                                  languages=WARMUP_LANGUAGES + LONG_TAIL, max_steps=seed_run["em_steps"],
                                  stage="encoder", **AUTHORS_STAGES, **common)
    models = {"encoder": runs["encoder"]["model_dir"], "continued": runs["continued"]["model_dir"],
              "em": runs["em"]["model_dir"]}
    write_json(OUT / f"authors-seed-{seed}.json", {
        "seed": seed, "runs": {name: {key: r.get(key) for key in ("wall_seconds", "steps", "history", "details")}
                               for name, r in runs.items()},
        "scores": _evaluate(models, False, out / "evaluations.json")})
    render()


# --------------------------------------------------------------------------------------------- render


def _mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def _fmt(values: list[float], digits: int = 1) -> str:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "-"
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ({' / '.join(f'{v:.{digits}f}' for v in values)})"


def _summary(scores: dict[str, float]) -> dict[str, float]:
    """The table's columns from one model's scores."""
    def tatoeba(code: str) -> float:
        return scores.get(f"tatoeba/{LASER[code]}/accuracy", math.nan)

    row = {f"tatoeba {code}": tatoeba(code) for code in LASER}
    row["tatoeba head"] = _mean([tatoeba(code) for code in WARMUP_LANGUAGES])
    row["tatoeba long-tail"] = _mean([tatoeba(code) for code in LONG_TAIL])
    row["sts17 cross"] = _mean([scores.get(f"sts17/{track}/spearman", math.nan) for track in STS_CROSS])
    row["mining f1"] = scores.get("comparable-mining/avg/f1", math.nan)
    for metric in ("kl_divergence", "calinski_harabasz", "principal_ratio"):
        row[metric] = scores.get(f"geometry-kardes/all/{metric}", math.nan)
    return row


def _rank_figure(seeds: list[dict[str, Any]]) -> str | None:
    """Share of each rank among the EM phase's training pairs, per evaluation interval, per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(seeds), figsize=(5 * len(seeds), 3.2), squeeze=False)
    for axis, seed in zip(axes[0], seeds, strict=True):
        history = [entry for entry in seed["runs"]["em"]["history"] if "eval_dev_rank_1_share" in entry]
        ranks = sorted(int(k.split("_")[3]) for k in history[0] if k.endswith("_share")) if history else []
        for rank in ranks:
            axis.plot([e["step"] for e in history], [100 * e[f"eval_dev_rank_{rank}_share"] for e in history],
                      marker="o", label=f"rank {rank}")
        axis.set_title(f"EM phase, seed {seed['seed']}", fontsize=9)
        axis.set_xlabel("step")
        axis.set_ylabel("% of decided (anchor, key) pairs")
        axis.legend(fontsize=7)
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(FIGURE, dpi=110)
    plt.close(figure)
    return str(FIGURE.relative_to(REPO / "docs"))


def _classifier_table(seeds: list[dict[str, Any]]) -> list[str]:
    """The classifier's held-out rank-1 / rank-N accuracy, the held-out cosines and s_r at every evaluation."""
    lines = ["The classifier over training (held-out pairs of each phase's dev bitext; rank 1: translations, "
             "both orientations; rank N: mismatched pairs; cosines: mean over held-out translations / mismatched "
             "pairs; s_r: the rank similarities, 1 to N):", "",
             "| seed | phase | step | rank-1 acc. | rank-N acc. | translation cos | random cos | s_r |",
             "|---|---|---|---|---|---|---|---|"]
    for seed in seeds:
        for phase in ("warmup", "em"):
            run = seed["runs"].get(phase) or {}
            before = (run.get("details") or {}).get("before") or {}
            entries = ([{**{f"eval_{k}": v for k, v in before.items()}, "step": 0}] if before else []) + [
                entry for entry in run.get("history", []) if "eval_dev_classifier_rank1_accuracy" in entry]
            for entry in entries:
                shares = [entry.get(f"eval_dev_rank_{r}_similarity") for r in range(1, 9)]
                similarity = " / ".join(f"{v:.3f}" for v in shares if v is not None)
                lines.append(
                    f"| {seed['seed']} | {ROWS[phase]} | {entry.get('step')} | "
                    f"{100 * entry.get('eval_dev_classifier_rank1_accuracy', math.nan):.1f} | "
                    f"{100 * entry.get('eval_dev_classifier_rankN_accuracy', math.nan):.1f} | "
                    f"{entry.get('eval_dev_translation_cosine', math.nan):.3f} | "
                    f"{entry.get('eval_dev_random_cosine', math.nan):.3f} | {similarity} |")
    return [*lines, ""]


def _budget_tables(curves: list[dict[str, Any]]) -> list[str]:
    """EM against continued phase 1 at each step count, and the gap."""
    lines: list[str] = []
    columns = ["tatoeba long-tail", "tatoeba head", "sts17 cross"]
    for curve in curves:
        command = f"python benchmarks/emmax.py budget --seed {curve['seed']}"
        lines += [f"Budget curve, seed {curve['seed']} (`{command}`): EM and continued phase 1 from the same "
                  "warm-up on the same bitext, each a run of that many steps "
                  "(its warm-up and decay scaled to it); cells: EM / continued / EM minus continued.", "",
                  "| steps | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        for count in curve["steps"]:
            em, continued = (_summary(curve["scores"][f"{name}-{count}"]) for name in ("em", "continued"))
            lines.append(f"| {count} | " + " | ".join(
                f"{em[c]:.1f} / {continued[c]:.1f} / {em[c] - continued[c]:+.1f}" for c in columns) + " |")
        lines.append("")
    return lines


def _authors_tables(results: list[dict[str, Any]]) -> list[str]:
    """The authors' three stages: encoder stage, its continuation and EM, on the tables' columns."""
    lines: list[str] = []
    labels = {"encoder": "encoder stage (their InfoNCE, MLM 0.1)", "continued": "encoder stage continued (equal "
              "compute)", "em": "encoder stage + classifier stage + EM (MLM 0.1)"}
    columns = ["tatoeba head", "tatoeba long-tail", "sts17 cross", *[f"tatoeba {c}" for c in LONG_TAIL]]
    for result in results:
        lines += [f"The authors' three stages, seed {result['seed']} (`python benchmarks/emmax.py authors --seed "
                  f"{result['seed']}`; one seed: a hint):", "", "| model | " + " | ".join(columns) + " |",
                  "|---|" + "---|" * len(columns),
                  *[f"| {label} | " + " | ".join(_fmt([_summary(result["scores"][name])[c]]) for c in columns) + " |"
                    for name, label in labels.items() if name in result["scores"]], ""]
        classifier = [e for e in result["runs"]["classifier"]["history"] if "eval_dev_classifier_rank1_accuracy" in e]
        em = [e for e in result["runs"]["em"]["history"] if "eval_dev_classifier_rank1_accuracy" in e]
        if classifier and em:
            lines += ["Classifier held-out rank-1 / rank-N accuracy and random-pair cosine: after the classifier "
                      "stage " + _classifier_cell(classifier[-1]) + "; in EM " +
                      ", ".join(f"step {e['step']} " + _classifier_cell(e) for e in em) + ".", ""]
    return lines


def _classifier_cell(entry: dict[str, Any]) -> str:
    return (f"{100 * entry['eval_dev_classifier_rank1_accuracy']:.1f} / "
            f"{100 * entry['eval_dev_classifier_rankN_accuracy']:.1f} / {entry['eval_dev_random_cosine']:.2f}")


def render() -> None:
    seeds = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("seed-*.json"))]
    rates = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("classifier-seed-*.json"))]
    ablations = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("ablation-seed-*.json"))]
    command = "python benchmarks/emmax.py"
    curves = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("budget-seed-*.json"))]
    stages = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("authors-seed-*.json"))]
    present = {name for name, found in (("seeds", seeds), ("classifier", rates), ("ablation", ablations),
                                        ("budget", curves), ("authors", stages)) if found}
    commands = {"seeds": f"{command} run", "classifier": f"{command} classifier", "ablation": f"{command} ablation",
                "budget": f"{command} budget", "authors": f"{command} authors"}
    if missing_tables(DOCS, START, END, commands, present):
        print("a table the docs show has no JSON here: the docs section is left alone")
        return
    section = [START, "## EMMA-X at the authors' defaults", "",
               "The defaults of `docs/methods/emmax.md` (phase 2 on bitext with the translation as rank 1, s_r from "
               "the warm-up at 0.999 bias-corrected, the authors' temperatures, label smoothing and queue; the "
               "encoder at 4e-5 in phase 1 and 1e-5 in phase 2).", ""]
    if rates:
        first_rates = rates[0]
        cells = {}
        for result in rates:
            for row in result["results"]:
                cells.setdefault((row["classifier"], row["learning_rate"]), []).append(row)
        section += [f"Rank classifier learning rate (`{command} classifier --seed S`, seeds "
                    f"{', '.join(str(r['seed']) for r in rates)}; cells: mean, then each seed): only the classifier "
                    f"trains, {first_rates['steps']} Adam steps of 32 pairs of Eq. 4 on frozen me5-small embeddings "
                    f"of {first_rates['pairs']:,} de/ru/kk pairs; accuracy on 300 held-out pairs (rank 1: a "
                    "translation; rank N: another pair's translation).", "",
                    "| classifier | learning rate | rank-1 accuracy | rank-N accuracy | mean |",
                    "|---|---|---|---|---|",
                    *[f"| {kind} | {rate:g} | {_fmt([r['rank_1_accuracy'] for r in rows])} | "
                      f"{_fmt([r['rank_n_accuracy'] for r in rows])} | "
                      f"{_fmt([(r['rank_1_accuracy'] + r['rank_n_accuracy']) / 2 for r in rows])} |"
                      for (kind, rate), rows in cells.items()], ""]
    if seeds:
        first = seeds[0]
        summaries = {name: [_summary(s["scores"][name]) for s in seeds] for name in ROWS
                     if all(name in s["scores"] for s in seeds)}
        columns = ["tatoeba head", "tatoeba long-tail", "sts17 cross", "mining f1", "kl_divergence",
                   "calinski_harabasz", "principal_ratio"]
        section += [
            f"Seeds {', '.join(str(s['seed']) for s in seeds)} (cells: mean, then each seed); {first['machine']}. "
            f"`{command} run --seed S --warmup-steps {first['warmup_steps']} --em-steps {first['em_steps']}`. "
            f"Phase 1: {first['warmup_steps']} steps of {first['batch_size']} on at most {first['max_pairs']} pairs "
            f"per language (de, ru, kk); phase 2: {first['em_steps']} steps on the bitext of de, ru, kk and the "
            f"long-tail {', '.join(LONG_TAIL)} (at most {first['max_pairs']} pairs each); the equal-compute row "
            "continues phase 1 on that same bitext for as many steps.",
            "Tatoeba: LASER test, 500 rows, mean of both directions (head: de, ru, kk; long-tail: "
            f"{', '.join(LONG_TAIL)}). STS17 cross: mean Spearman of {', '.join(STS_CROSS)} (es-en is track 4a). "
            f"Mining: F1 of margin mining in TICO-19 pools ({', '.join(MINING)}). Geometry on Kardes STS 6-way "
            "parallel sentences (en az kk ky ug uz): KL invariance (lower: more language-invariant), "
            "Calinski-Harabasz (higher: translations cluster), principal ratio (higher: more isotropic).",
            "",
            "| model | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns),
            *[f"| {ROWS[name]} | " + " | ".join(_fmt([row[c] for row in rows], 2 if c in ("kl_divergence",
                                                                                          "principal_ratio") else 1)
                                                 for c in columns) + " |" for name, rows in summaries.items()],
            "",
            "Tatoeba per language (accuracy, mean of both directions):",
            "",
            "| model | " + " | ".join(LASER.values()) + " |", "|---|" + "---|" * len(LASER),
            *[f"| {ROWS[name]} | " + " | ".join(_fmt([row[f'tatoeba {code}'] for row in rows]) for code in LASER)
              + " |" for name, rows in summaries.items()],
            "",
            "Cost per phase (wall time of the run and its own peak resident memory; cells: "
            + " / ".join(f"seed {s['seed']}" for s in seeds) + "):",
            "",
            "| phase | steps | wall time (s) | peak memory (MB) |", "|---|---|---|---|",
            *[f"| {ROWS[name]} | {first['runs'][name]['steps']} | "
              + " / ".join(f"{s['runs'][name]['wall_seconds']:.1f}" for s in seeds) + " | "
              + " / ".join(f"{s['runs'][name]['peak_memory_mb']:.0f}" for s in seeds) + " |"
              for name in ("warmup", "warmup-continued", "em")],
            "",
            *[TIMING_NOTES[s["seed"]] for s in seeds if s["seed"] in TIMING_NOTES],
            "",
        ]
        section += _classifier_table(seeds)
        figure = _rank_figure(seeds)
        if figure:
            section += [f"![Rank shares in the EM phase]({figure})", "",
                        "The share of each rank among the (anchor, key) pairs whose rank the classifier decided "
                        "between "
                        "two dev evaluations of the EM phase.", ""]
    section += _budget_tables(curves) + _authors_tables(stages)
    for result in ablations:
        columns = ["tatoeba head", "tatoeba long-tail", "sts17 cross"]
        rows = {label: _summary(result["scores"][name]) for name, (label, _, _) in ABLATIONS.items()
                if name in result["scores"]}
        main = next((s for s in seeds if s["seed"] == result["seed"]), None)
        if main:
            rows = {"phase 1 continued, equal compute (the run above)": _summary(main["scores"]["warmup-continued"]),
                    "N = 4, GMM, dual supervision, bitext (the run above)": _summary(main["scores"]["em"]), **rows}
        section += [f"Ablations, seed {result['seed']} (`{command} ablation --seed {result['seed']}`; one seed: "
                    "hints, not claims):", "", "| variant | " + " | ".join(columns) + " |",
                    "|---|" + "---|" * len(columns),
                    *[f"| {label} | " + " | ".join(_fmt([row[c]]) for c in columns) + " |"
                      for label, row in rows.items()], ""]
    section.append(END)
    replace_section(DOCS, START, END, "\n".join(section))
    print("\n".join(section))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    lr = commands.add_parser("classifier", help="the rank classifier's learning rate on held-out pairs")
    lr.add_argument("--seed", type=int, default=0)
    lr.add_argument("--steps", type=int, default=200)
    lr.add_argument("--rates", type=float, nargs="+", default=[3e-2, 1e-2, 3e-3, 1e-3])
    lr.add_argument("--pairs", type=int, default=700, help="bitext pairs per language")
    one = commands.add_parser("run", help="one seed: both phases and the equal-compute baseline, evaluated")
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--warmup-steps", type=int, default=150)
    one.add_argument("--em-steps", type=int, default=150)
    one.add_argument("--max-pairs", type=int, default=1000, help="bitext pairs per language (both phases)")
    one.add_argument("--batch-size", type=int, default=32)
    ablate = commands.add_parser("ablation", help="N, classifier kind and dual supervision, one seed")
    ablate.add_argument("--seed", type=int, default=0)
    curve = commands.add_parser("budget", help="EM against continued phase 1 at several step counts, one seed")
    curve.add_argument("--seed", type=int, default=0)
    curve.add_argument("--steps", type=int, nargs="+", default=[75, 150, 300])
    stages = commands.add_parser("authors", help="the authors' three stages with their encoder loss and MLM")
    stages.add_argument("--seed", type=int, default=0)
    commands.add_parser("render", help="rewrite the docs section from the saved results")
    args = parser.parse_args()
    if args.command == "classifier":
        classifier(args.seed, args.steps, args.rates, args.pairs)
    elif args.command == "run":
        run(args.seed, args.warmup_steps, args.em_steps, args.max_pairs, args.batch_size)
    elif args.command == "ablation":
        ablation(args.seed)
    elif args.command == "budget":
        budget(args.seed, args.steps)
    elif args.command == "authors":
        authors(args.seed)
    else:
        render()


if __name__ == "__main__":
    main()
