"""EMMA-X in miniature at the authors' defaults (docs/methods/emmax.md): results -> results/bench/emmax-authors,
docs/benchmarks.md ("EMMA-X at the authors' defaults"), docs/figures.

  python -m benchmarks.emmax.run classifier --seed 0     # the warm-up classifier's learning rate on held-out pairs
  python -m benchmarks.emmax.run run --seed 0            # warm-up, equal-compute continued warm-up, EM; evaluation
  python -m benchmarks.emmax.run ablation --seed 0       # N = 2 / 8, FCN, no dual supervision, monolingual phase 2
  python -m benchmarks.emmax.run budget --seed 0         # EM against continued phase 1 at 75 / 150 / 300 steps
  python -m benchmarks.emmax.run authors --seed 0        # the authors' three stages with their encoder loss and MLM
  python -m benchmarks.emmax.run control --seed 0        # phase 1 continued at EM's learning rate (1e-5)
  python -m benchmarks.emmax.run render                  # rewrite the docs section from the saved JSON

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

import os
import platform
import random
from pathlib import Path
from typing import Any

from benchmarks.common.results import load_json, write_json
from benchmarks.common.script_cli import invocation, script_parser
from benchmarks.emmax.render import render
from benchmarks.emmax.spec import (
    ABLATIONS,
    BASE,
    COMMAND,
    LASER,
    LONG_TAIL,
    MINING,
    OUT,
    STS_CROSS,
    WARMUP_LANGUAGES,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


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
    from polyembed.eval.registry import get_task
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
        "command": invocation(),
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
        raise SystemExit(f"run `{COMMAND} run --seed {seed}` first: the ablation reuses its setup")
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
        raise SystemExit(f"run `{COMMAND} run --seed {seed}` first: the curve starts from its warm-up")
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


def control(seed: int, learning_rate: float) -> None:
    """Phase 1 continued at another learning rate (by default EM's): the equal-compute baseline trains at the
    warm-up's rate, EM at a lower one, so this tells whether the baseline wins by moving the encoder faster."""
    from polyembed.methods.modular.pipeline import run_stage

    seed_run = load_json(OUT / f"seed-{seed}.json")
    if seed_run is None:
        raise SystemExit(f"run `{COMMAND} run --seed {seed}` first: the control reuses its warm-up")
    out, name = OUT / f"control-seed-{seed}", f"continued-lr{learning_rate:g}"
    run = run_stage("emmax-warmup", out / name, True, student=seed_run["runs"]["warmup"]["model_dir"],
                    languages=WARMUP_LANGUAGES + LONG_TAIL, max_steps=seed_run["em_steps"],
                    max_pairs_per_source=seed_run["max_pairs"], keep_checkpoints=False, learning_rate=learning_rate,
                    **_common(seed, seed_run["batch_size"]))
    scores = _evaluate({name: run["model_dir"]}, True, out / "evaluations.json")
    results = load_json(OUT / f"control-seed-{seed}.json") or {"seed": seed, "runs": {}}
    results["runs"][name] = {"learning_rate": learning_rate, "steps": run.get("steps"),
                             "wall_seconds": run.get("wall_seconds"), "scores": scores[name]}
    write_json(OUT / f"control-seed-{seed}.json", results)
    render()


AUTHORS_STAGES = {"encoder_loss": "authors", "mlm_probability": 0.1}


def authors(seed: int) -> None:
    """The authors' pipeline at the run's budget: an encoder stage (their InfoNCE with key encoder and queue,
    joint MLM), a classifier stage on the frozen encoder (each anchor mixed with every key), EM with MLM; against
    the encoder stage continued for as many steps on phase 2's bitext."""
    from polyembed.methods.modular.pipeline import run_stage

    seed_run = load_json(OUT / f"seed-{seed}.json")
    if seed_run is None:
        raise SystemExit(f"run `{COMMAND} run --seed {seed}` first: this reuses its budget")
    common = {**_common(seed, seed_run["batch_size"]), "max_pairs_per_source": seed_run["max_pairs"],
              "keep_checkpoints": False}
    out = OUT / f"authors-seed-{seed}"
    runs = {"encoder": run_stage("emmax-warmup", out / "encoder", True, student=BASE, languages=WARMUP_LANGUAGES,
                                 max_steps=seed_run["warmup_steps"], stage="encoder", **AUTHORS_STAGES, **common)}
    runs["classifier"] = run_stage("emmax-warmup", out / "classifier", True, student=runs["encoder"]["model_dir"],
                                   languages=WARMUP_LANGUAGES, max_steps=seed_run["warmup_steps"], stage="classifier",
                                   classifier_examples="authors", mixup_rule="prior", **common)
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


def main() -> None:
    parser, commands = script_parser(__doc__)
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
    slower = commands.add_parser("control", help="phase 1 continued at EM's learning rate, one seed")
    slower.add_argument("--seed", type=int, default=0)
    slower.add_argument("--learning-rate", type=float, default=1e-5)
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
    elif args.command == "control":
        control(args.seed, args.learning_rate)
    elif args.command == "authors":
        authors(args.seed)
    else:
        render()


if __name__ == "__main__":
    main()
