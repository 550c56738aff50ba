"""Benchmarks of multilingual knowledge distillation (issue 3); results -> results/bench/distill, docs/benchmarks.md.

  python -m benchmarks.distill.run acceptance --seeds 0 1 --set max_steps=400   # demo config (+overrides) per seed
  python -m benchmarks.distill.run throughput --steps 40       # our trainer vs a make_multilingual-style loop
  python -m benchmarks.distill.run data-size                   # Table 6 of the paper: 1k/5k/10k/all, en-de and en-ar
  python -m benchmarks.distill.run vocabulary NAME --set K=V   # one student with vs without FOCUS vocabulary transfer
  python -m benchmarks.distill.run ablation NAME --set K=V     # one variant of the demo config (150 steps)
  python -m benchmarks.distill.run forgetting --seeds 0 1      # full LASER Tatoeba, untrained vs the acceptance seeds
  python -m benchmarks.distill.run forgetting --recipe NAME    # the same for a recipe's seed models
  python -m benchmarks.distill.run recipe NAME --seeds 0 1 --set teacher=mpnet-en   # a recipe against forgetting
  python -m benchmarks.distill.run recipe-dev [NAME ...]     # the recipes' models on dev splits (choose here)
  python -m benchmarks.distill.run recipe-figure               # the recipes' trade-off, docs/figures/
  python -m benchmarks.distill.run render                      # rewrite the docs section from saved JSON

Every number comes from a real run on this machine; nothing is copied in. Each subcommand saves its JSON,
then the docs section between the distill markers in docs/benchmarks.md is re-rendered from all saved JSON;
when a table the docs show has no JSON here (results/ is not in git) the docs are left alone and the section
is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common.results import REPO, machine
from benchmarks.distill.render import full_row_forgetting_table, recipe_figure, recipe_summary, render
from benchmarks.distill.render_long import recipe_dev_table
from benchmarks.distill.spec import DEV_STS_PAIRS, OUT
from benchmarks.distill.studies import ablation, data_size, throughput, vocabulary, worker
from benchmarks.distill.training import evaluate, load, main_scores, save, train_and_evaluate
from polyembed.config import parse_key_values
from polyembed.errors import PolyembedError

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# ------------------------------------------------------------------------------------------ acceptance


BASELINE_KEYS = ("teacher", "student", "languages", "data_root")


def acceptance(
    seeds: list[int], overrides: dict[str, Any], reuse_baselines: bool = False, evaluate_only: bool = False
) -> None:
    """The demo config once per seed; teacher and untrained student evaluated once on the same tasks
    (`reuse_baselines`: take them from the previous run when teacher, student and languages match;
    `evaluate_only`: re-evaluate each seed's saved model, trained with this config, instead of training)."""
    from polyembed.config import build_config
    from polyembed.eval.headline import demo_config_path, headline_metrics
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.models.loading import load_model

    base, _ = build_config(DistillConfig, demo_config_path(), overrides)
    previous = load("acceptance") if reuse_baselines or evaluate_only else None
    previous_runs = {run["seed"]: run for run in (previous or {}).get("runs", [])}
    same_models = previous and all(previous["config"][k] == getattr(base, k) for k in BASELINE_KEYS)
    if reuse_baselines and previous and same_models and "baseline_scores" in previous:
        rows, scores = previous["baselines"], previous["baseline_scores"]
        print("baselines: reusing teacher and untrained-student scores from the previous acceptance.json")
    else:
        rows, scores = {}, {}
        for label, name in (("teacher", base.teacher), ("untrained student", base.student)):
            result = evaluate(load_model(name), label, base.languages)
            rows[label], scores[label] = headline_metrics(result), main_scores(result)
    runs = []
    for seed in seeds:
        config, origin = build_config(
            DistillConfig, demo_config_path(), {**overrides, "seed": seed, "output_dir": str(OUT / f"seed-{seed}")}
        )
        if evaluate_only:
            training, seconds = _trained_run(config, previous_runs.get(seed))
            result = evaluate(load_model(training["model_dir"]), f"distilled seed {seed}", config.languages)
        else:
            trained, result, seconds = train_and_evaluate(config, origin, f"distilled seed {seed}")
            training = trained.to_dict()
        runs.append(
            {
                "seed": seed,
                "headline": headline_metrics(result),
                "scores": main_scores(result),
                "train_seconds_total": round(seconds, 1),
                **{key: training[key] for key in ("pairs_per_second", "steps", "peak_memory_mb")},
                **({"re_evaluated": True} if evaluate_only else {}),
            }
        )
        payload = {"config": base.__dict__, "overrides": overrides, "baselines": rows, "baseline_scores": scores}
        save("acceptance", {**payload, "runs": runs, "machine": machine()})  # after every seed: nothing lost


def forgetting(seeds: list[int], overrides: dict[str, Any], max_rows: int | None, recipe_name: str | None) -> None:
    """Tatoeba in all 112 languages (every row unless `max_rows`) for the untrained student and each saved
    seed model, compared language by language: the acceptance seeds (same overrides as the acceptance run,
    -> forgetting.json) or, with `recipe_name`, that recipe's seeds (its overrides, -> forgetting-NAME.json).
    The untrained student's scores are kept in the file and reused by any forgetting run with the same student
    and rows."""
    from polyembed.config import build_config
    from polyembed.eval.base import Score
    from polyembed.eval.forgetting import LONG_SENTENCE_TASK, TASK
    from polyembed.eval.headline import demo_config_path
    from polyembed.methods.distill.config import DistillConfig

    file_name, folder_prefix = ("forgetting", "seed") if recipe_name is None else (
        f"forgetting-{recipe_name}", f"recipe-{recipe_name}-seed"
    )
    if recipe_name is not None and not overrides:
        overrides = ((load("recipes") or {}).get("rows", {}).get(recipe_name) or {}).get("overrides", {})
    base, _ = build_config(DistillConfig, demo_config_path(), overrides)
    previous = load(file_name) or {}
    earlier = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(OUT.glob("forgetting*.json"))]
    same = [
        e for e in earlier if e.get("student") == base.student and e.get("max_rows") == max_rows and e.get("untrained")
    ]
    earlier_scores = [Score(**score) for score in same[0]["untrained"]] if same else None
    if same:
        print(f"untrained {base.student}: reusing its scores from an earlier forgetting*.json")
    untrained = _forgetting_scores(base.student, max_rows, earlier_scores)
    same_overrides = previous.get("overrides") == overrides
    reports = dict(previous.get("seeds", {})) if same_overrides else {}
    long_reports = dict(previous.get("long_sentence_seeds", {})) if same_overrides else {}
    for seed in seeds:
        config, _ = build_config(
            DistillConfig,
            demo_config_path(),
            {**overrides, "seed": seed, "output_dir": str(OUT / f"{folder_prefix}-{seed}")},
        )
        training, _ = _trained_run(config, None)
        reports_of_seed = _forgetting_reports(untrained, _forgetting_scores(training["model_dir"], max_rows), config)
        reports[str(seed)] = reports_of_seed[TASK].to_dict()
        long_reports[str(seed)] = reports_of_seed[LONG_SENTENCE_TASK].to_dict()
        for report in reports_of_seed.values():
            print(f"seed {seed}, {report.task}\n{report.markdown()}")
        save(
            file_name,
            {
                "recipe": recipe_name,
                "student": base.student,
                "max_rows": max_rows,
                "overrides": overrides,
                "untrained": [score.to_dict() for score in untrained],
                "seeds": reports,
                "long_sentence_seeds": long_reports,
                "machine": machine(),
            },
        )


def _forgetting_scores(model_name: str, max_rows: int | None, earlier: list[Any] | None = None) -> list[Any]:
    """The forgetting reports' input: LASER Tatoeba in all 112 languages (`max_rows` per language, default all)
    and TICO-19 in all 10 (every row). `earlier` scores of the same model are kept; only the tasks they lack
    are evaluated (a file written before the long-sentence report has Tatoeba only)."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.forgetting import TASK_LABELS, forgetting_task_options
    from polyembed.eval.registry import get_task
    from polyembed.models.loading import load_model

    kept = list(earlier or [])
    missing = [task for task in TASK_LABELS if not any(score.task == task for score in kept)]
    if not missing:
        return kept
    caps = {task: max_rows if task == "tatoeba" else None for task in missing}
    tasks = [get_task(task, **forgetting_task_options(cap, task)) for task, cap in caps.items()]
    return kept + evaluate(load_model(model_name), tasks).scores


def _forgetting_reports(before: list[Any], after: list[Any], config: Any) -> dict[str, Any]:
    """One report per forgetting task (Tatoeba, TICO-19), keyed by task name."""
    from polyembed.eval.forgetting import TASK_LABELS, forgetting_report

    return {task: forgetting_report(before, after, config.languages, config.anchor_codes(), task=task)
            for task in TASK_LABELS}


def recipe(name: str, seeds: list[int], overrides: dict[str, Any], max_rows: int | None) -> None:
    """One named recipe (the demo config + `overrides`) per seed: the demo tasks and the forgetting report
    against the untrained student. The untrained student and each teacher are evaluated once and kept in
    recipes.json (`baselines`), so recipes run one call at a time. The given seeds are (re)trained; other seeds
    of the same recipe with the same overrides stay (`--seeds 1` adds a seed)."""
    from polyembed.config import build_config
    from polyembed.eval.base import Score
    from polyembed.eval.forgetting import LONG_SENTENCE_TASK, TASK
    from polyembed.eval.headline import demo_config_path, headline_metrics
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.models.loading import load_model

    saved = load("recipes") or {}
    if saved.get("max_rows", max_rows) != max_rows:
        raise SystemExit(f"recipes.json was scored with --max-rows {saved['max_rows']}; use the same or start anew")
    baselines, rows = saved.get("baselines", {}), saved.get("rows", {})
    base, _ = build_config(DistillConfig, demo_config_path(), overrides)

    def baseline(model_name: str, with_tatoeba: bool) -> dict[str, Any]:
        entry = baselines.get(model_name, {})
        if "headline" not in entry:
            entry["headline"] = headline_metrics(evaluate(load_model(model_name), model_name, base.languages))
        if with_tatoeba:  # Tatoeba and TICO-19 (an entry from before the long-sentence report: TICO-19 added)
            earlier = [Score(**score) for score in entry.get("tatoeba", [])]
            entry["tatoeba"] = [score.to_dict() for score in _forgetting_scores(model_name, max_rows, earlier)]
        baselines[model_name] = entry
        return entry

    untrained = baseline(base.student, with_tatoeba=True)
    baseline(base.teacher, with_tatoeba=False)
    before = [Score(**score) for score in untrained["tatoeba"]]
    earlier = rows.get(name, {})
    runs = dict(earlier.get("runs", {})) if earlier.get("overrides") == overrides else {}
    for seed in seeds:
        config, origin = build_config(
            DistillConfig,
            demo_config_path(),
            {**overrides, "seed": seed, "output_dir": str(OUT / f"recipe-{name}-seed-{seed}")},
        )
        training, result, seconds = train_and_evaluate(config, origin, f"recipe {name} seed {seed}")
        reports = _forgetting_reports(before, _forgetting_scores(training.model_dir, max_rows), config)
        runs[str(seed)] = {
            "headline": headline_metrics(result),
            "scores": main_scores(result),
            "forgetting": reports[TASK].to_dict(),
            "long_sentence_forgetting": reports[LONG_SENTENCE_TASK].to_dict(),
            "max_seq_length": training.max_seq_length,
            "pairs_per_second": training.pairs_per_second,
            "train_seconds_total": round(seconds, 1),
            "peak_memory_mb": training.peak_memory_mb,
        }
        for report in reports.values():
            print(f"recipe {name} seed {seed}, {report.task}\n{report.markdown()}")
        rows[name] = {"overrides": overrides, "teacher": config.teacher, "runs": runs}
        save("recipes", {"max_rows": max_rows, "baselines": baselines, "rows": rows, "machine": machine()})


def _dev_tasks() -> list[Any]:
    """Dev splits only (a recipe is chosen here, then reported on the test tasks): stsb-multi-mt in all its
    languages, Kardes STS in English + 5 Turkic languages, SemRel 2024 in its 8 (5 African) languages. Five of
    the stsb, four of the Kardes and four of the SemRel languages are in the data of no recipe without
    anchor text."""
    from polyembed.eval.registry import get_task

    return [
        get_task("stsb-multi-mt", split="dev", max_pairs=DEV_STS_PAIRS),
        get_task("kardes-sts", split="dev", max_pairs=DEV_STS_PAIRS),
        get_task("semrel", split="dev"),
        get_task("mafand-retrieval", split="dev"),
    ]


def _dev_scores(model_name: str, earlier: dict[str, float] | None = None) -> dict[str, float]:
    """Main scores on `_dev_tasks()`; `earlier` scores of the same model are kept and only the tasks they lack
    are evaluated (a model scored before MAFAND dev was a dev task gets that task alone)."""
    from polyembed.eval.api import evaluate
    from polyembed.models.loading import load_model

    kept = dict(earlier or {})
    tasks = [task for task in _dev_tasks() if not any(key.startswith(f"{task.name}/") for key in kept)]
    return {**kept, **main_scores(evaluate(load_model(model_name), tasks))} if tasks else kept


def recipe_dev(names: list[str] | None) -> None:
    """Score the untrained student and every saved seed model of the named recipes (default: all in
    recipes.json) on the dev splits; -> recipes-dev.json, and the dev table is printed. Models already scored
    (same weights file time) are kept; a task they lack is scored alone."""
    saved = load("recipes") or {}
    rows = saved.get("rows", {})
    unknown = sorted(set(names or []) - set(rows))
    if unknown:
        raise SystemExit(f"no recipe {', '.join(unknown)} in recipes.json; known: {', '.join(rows)}")
    dev = load("recipes-dev") or {"models": {}}
    student = next(iter(saved.get("baselines", {"me5-small": None})))
    before = dev["models"].get(student, {}).get("scores")
    dev["models"][student] = {"scores": _dev_scores(student, before)}
    if dev["models"][student]["scores"] != before:
        save("recipes-dev", dev)
    for name in names or list(rows):
        for seed in rows[name]["runs"]:
            folder = OUT / f"recipe-{name}-seed-{seed}"
            training = json.loads((folder / "training.json").read_text(encoding="utf-8"))
            key = f"{name}/{seed}"
            weights = Path(training["model_dir"]) / "model.safetensors"
            trained_at = weights.stat().st_mtime if weights.is_file() else None
            entry = dev["models"].get(key, {})
            earlier = entry.get("scores") if trained_at is not None and entry.get("trained_at") == trained_at else None
            scores = _dev_scores(training["model_dir"], earlier)
            if scores == earlier:
                continue
            print(f"dev splits: recipe {name} seed {seed}")
            dev["models"][key] = {"recipe": name, "seed": int(seed), "trained_at": trained_at, "scores": scores}
            save("recipes-dev", {**dev, "machine": machine()})
    print("\n".join(recipe_dev_table(load("recipes-dev"), student)))


def _trained_run(config: Any, previous_run: dict[str, Any] | None) -> tuple[dict[str, Any], float]:
    """(training.json, recorded train seconds) of the saved run in config.output_dir, after checking that it was
    trained with `config`: every saved option equal, options added since then at their defaults."""
    from dataclasses import fields

    from polyembed.methods.base.run import HOUSEKEEPING_OPTIONS
    from polyembed.methods.distill.train import CONFIG_FILE

    folder = Path(config.output_dir)
    saved_path, training_path = folder / CONFIG_FILE, folder / "training.json"
    if not saved_path.is_file() or not training_path.is_file():
        raise SystemExit(f"--evaluate-only: no finished run in {folder}; train it first (drop --evaluate-only)")
    saved = yaml.safe_load(saved_path.read_text(encoding="utf-8"))
    default_config = type(config)()
    defaults = {f.name: getattr(default_config, f.name) for f in fields(config)}
    for key, value in config.__dict__.items():
        if key not in HOUSEKEEPING_OPTIONS and saved.get(key, defaults[key]) != value:
            raise SystemExit(f"--evaluate-only: {saved_path} has {key}={saved.get(key)!r}, this config {value!r}")
    training = json.loads(training_path.read_text(encoding="utf-8"))
    seconds = previous_run["train_seconds_total"] if previous_run else training["train_seconds"]
    return training, seconds


def main() -> None:
    from polyembed.messages import show_messages

    show_messages()  # the library's progress notes in the benchmark's log
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        mode, steps, batch, pairs = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        print(json.dumps(worker(mode, steps, batch, pairs)))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("acceptance")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="config overrides")
    p.add_argument("--reuse-baselines", action="store_true", help="teacher/untrained scores from the last run")
    p.add_argument("--evaluate-only", action="store_true", help="re-evaluate the saved seed models, no training")
    p = sub.add_parser("throughput")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--pairs", type=int, default=400)
    p = sub.add_parser("data-size")
    p.add_argument("--sizes", nargs="+", default=["1000", "5000", "10000", "all"])
    p.add_argument("--languages", nargs="+", default=["de", "ar"])
    p.add_argument("--min-steps", type=int, default=300)
    p = sub.add_parser("vocabulary")
    p.add_argument("name", help="row name in vocabulary.json (a rerun replaces it)")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--untrained-only", action="store_true", help="evaluate only the starting points of NAME")
    p.add_argument("--modes", nargs="+", choices=["keep", "transfer"], default=["keep", "transfer"])
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="config overrides")
    p = sub.add_parser("ablation")
    p.add_argument("name", help="row name in ablation.json (a rerun replaces it)")
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="config overrides")
    p = sub.add_parser("recipe")
    p.add_argument("name", help="row name in recipes.json (a rerun replaces it)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--max-rows", type=int, default=None, help="Tatoeba rows per language (default: all)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="config overrides")
    p = sub.add_parser("forgetting")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--max-rows", type=int, default=None, help="rows per language (default: all)")
    p.add_argument("--recipe", default=None, help="score this recipe's seed models (its overrides unless --set)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="config overrides")
    sub.add_parser("render")
    p = sub.add_parser("recipe-dev", help="score the recipes' saved models on dev splits (recipes-dev.json)")
    p.add_argument("names", nargs="*", help="recipes to score (default: every recipe in recipes.json)")
    sub.add_parser("full-row-forgetting", help="print the full-row forgetting of every forgetting-NAME.json")
    sub.add_parser("recipe-summary", help="print the per-seed forgetting counts of recipes.json")
    sub.add_parser("recipe-figure", help="draw the recipes' trade-off (docs/figures/distill-recipes-tradeoff.png)")
    args = parser.parse_args()
    try:
        overrides = parse_key_values(getattr(args, "set", []), "--set")
    except PolyembedError as err:
        parser.error(str(err))
    unset = [key for key, value in overrides.items() if value is None]
    if unset:  # build_config reads None as "not given", so the demo config's value would silently stay
        parser.error(f"--set {unset[0]}=null cannot unset an option; give a value (max_pairs_per_source=0: no cap)")
    if args.command == "recipe-summary":
        print("\n".join(recipe_summary(load("recipes"))))
        return
    if args.command == "full-row-forgetting":
        print("\n".join(full_row_forgetting_table()))
        return
    if args.command == "recipe-dev":
        recipe_dev(args.names or None)
        return
    if args.command == "recipe-figure":
        print(f"wrote {recipe_figure(load('recipes')).relative_to(REPO)}")
        return
    if args.command == "acceptance":
        acceptance(args.seeds, overrides, args.reuse_baselines, args.evaluate_only)
    elif args.command == "recipe":
        recipe(args.name, args.seeds, overrides, args.max_rows)
    elif args.command == "forgetting":
        forgetting(args.seeds, overrides, args.max_rows, args.recipe)
    elif args.command == "ablation":
        ablation(args.name, args.steps, args.seed, overrides)
    elif args.command == "throughput":
        throughput(args.steps, args.batch_size, args.pairs)
    elif args.command == "data-size":
        data_size(args.sizes, args.languages, args.min_steps)
    elif args.command == "vocabulary":
        vocabulary(args.name, args.steps, overrides, args.untrained_only, tuple(args.modes))
    print(render())


if __name__ == "__main__":
    main()
