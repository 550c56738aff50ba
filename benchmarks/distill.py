"""Benchmarks of multilingual knowledge distillation (issue 3); results -> results/bench/distill, docs/benchmarks.md.

  python benchmarks/distill.py acceptance --seeds 0 1 --set max_steps=400   # demo config (+overrides) per seed
  python benchmarks/distill.py throughput --steps 40       # our trainer vs a make_multilingual-style loop
  python benchmarks/distill.py data-size                   # Table 6 of the paper: 1k/5k/10k/all, en-de and en-ar
  python benchmarks/distill.py vocabulary NAME --set K=V   # one student with vs without FOCUS vocabulary transfer
  python benchmarks/distill.py ablation NAME --set K=V     # one variant of the demo config (150 steps)
  python benchmarks/distill.py forgetting --seeds 0 1      # full LASER Tatoeba, untrained vs the acceptance seeds
  python benchmarks/distill.py forgetting --recipe NAME    # the same for a recipe's seed models
  python benchmarks/distill.py recipe NAME --seeds 0 1 --set teacher=mpnet-en   # a recipe against forgetting
  python benchmarks/distill.py recipe-dev [NAME ...]     # the recipes' models on dev splits (choose here)
  python benchmarks/distill.py recipe-figure               # the recipes' trade-off, docs/figures/
  python benchmarks/distill.py render                      # rewrite the docs section from saved JSON

Every number comes from a real run on this machine; nothing is copied in. Each subcommand saves its JSON,
then the docs section between the distill markers in docs/benchmarks.md is re-rendered from all saved JSON;
when a table the docs show has no JSON here (results/ is not in git) the docs are left alone and the section
is printed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from docs_sections import missing_tables, replace_section

from polyembed.config import parse_key_values
from polyembed.errors import PolyembedError
from polyembed.outputs import atomic_write

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "results" / "bench" / "distill"
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- distill:start -->", "<!-- distill:end -->"
SECTION_SOURCES = {name: name for name in ("acceptance", "forgetting", "throughput", "data-size", "vocabulary",
                                            "ablation")} | {"recipes": "recipe"}
"""JSON file -> the subcommand that writes it: the docs section is rendered from these files, and a table the
docs show is never dropped because its JSON is missing here."""


def _save(name: str, payload: dict[str, Any]) -> None:
    with atomic_write(OUT / f"{name}.json") as handle:
        handle.write(json.dumps(payload, indent=2, ensure_ascii=False))


def _load(name: str) -> dict[str, Any] | None:
    path = OUT / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _evaluate(model: Any, label: str, languages: list[str]) -> Any:
    from polyembed.demo import evaluate_on_demo_tasks

    return evaluate_on_demo_tasks(model, label, languages)


# ------------------------------------------------------------------------------------------ acceptance


BASELINE_KEYS = ("teacher", "student", "languages", "data_root")


def acceptance(
    seeds: list[int], overrides: dict[str, Any], reuse_baselines: bool = False, evaluate_only: bool = False
) -> None:
    """The demo config once per seed; teacher and untrained student evaluated once on the same tasks
    (`reuse_baselines`: take them from the previous run when teacher, student and languages match;
    `evaluate_only`: re-evaluate each seed's saved model, trained with this config, instead of training)."""
    from polyembed.config import build_config
    from polyembed.demo import demo_config_path, headline_metrics
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.models.loading import load_model

    base, _ = build_config(DistillConfig, demo_config_path(), overrides)
    previous = _load("acceptance") if reuse_baselines or evaluate_only else None
    previous_runs = {run["seed"]: run for run in (previous or {}).get("runs", [])}
    same_models = previous and all(previous["config"][k] == getattr(base, k) for k in BASELINE_KEYS)
    if reuse_baselines and previous and same_models and "baseline_scores" in previous:
        rows, scores = previous["baselines"], previous["baseline_scores"]
        print("baselines: reusing teacher and untrained-student scores from the previous acceptance.json")
    else:
        rows, scores = {}, {}
        for label, name in (("teacher", base.teacher), ("untrained student", base.student)):
            result = _evaluate(load_model(name), label, base.languages)
            rows[label], scores[label] = headline_metrics(result), _main_scores(result)
    runs = []
    for seed in seeds:
        config, origin = build_config(
            DistillConfig, demo_config_path(), {**overrides, "seed": seed, "output_dir": str(OUT / f"seed-{seed}")}
        )
        if evaluate_only:
            training, seconds = _trained_run(config, previous_runs.get(seed))
            result = _evaluate(load_model(training["model_dir"]), f"distilled seed {seed}", config.languages)
        else:
            trained, result, seconds = _train_and_evaluate(config, origin, f"distilled seed {seed}")
            training = trained.to_dict()
        runs.append(
            {
                "seed": seed,
                "headline": headline_metrics(result),
                "scores": _main_scores(result),
                "train_seconds_total": round(seconds, 1),
                **{key: training[key] for key in ("pairs_per_second", "steps", "peak_memory_mb")},
                **({"re_evaluated": True} if evaluate_only else {}),
            }
        )
        payload = {"config": base.__dict__, "overrides": overrides, "baselines": rows, "baseline_scores": scores}
        _save("acceptance", {**payload, "runs": runs, "machine": _machine()})  # after every seed: nothing lost


def forgetting(seeds: list[int], overrides: dict[str, Any], max_rows: int | None, recipe_name: str | None) -> None:
    """Tatoeba in all 112 languages (every row unless `max_rows`) for the untrained student and each saved
    seed model, compared language by language: the acceptance seeds (same overrides as the acceptance run,
    -> forgetting.json) or, with `recipe_name`, that recipe's seeds (its overrides, -> forgetting-NAME.json).
    The untrained student's scores are kept in the file and reused by any forgetting run with the same student
    and rows."""
    from polyembed.config import build_config
    from polyembed.demo import demo_config_path
    from polyembed.eval.base import Score
    from polyembed.eval.forgetting import forgetting_report
    from polyembed.methods.distill.config import DistillConfig

    file_name, folder_prefix = ("forgetting", "seed") if recipe_name is None else (
        f"forgetting-{recipe_name}", f"recipe-{recipe_name}-seed"
    )
    if recipe_name is not None and not overrides:
        overrides = ((_load("recipes") or {}).get("rows", {}).get(recipe_name) or {}).get("overrides", {})
    base, _ = build_config(DistillConfig, demo_config_path(), overrides)
    previous = _load(file_name) or {}
    earlier = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(OUT.glob("forgetting*.json"))]
    same = [
        e for e in earlier if e.get("student") == base.student and e.get("max_rows") == max_rows and e.get("untrained")
    ]
    if same:
        untrained = [Score(**score) for score in same[0]["untrained"]]
        print(f"untrained {base.student}: reusing its Tatoeba scores from an earlier forgetting*.json")
    else:
        untrained = _tatoeba_everywhere(base.student, max_rows)
    reports = dict(previous.get("seeds", {})) if previous.get("overrides") == overrides else {}
    for seed in seeds:
        config, _ = build_config(
            DistillConfig,
            demo_config_path(),
            {**overrides, "seed": seed, "output_dir": str(OUT / f"{folder_prefix}-{seed}")},
        )
        training, _ = _trained_run(config, None)
        report = forgetting_report(
            untrained,
            _tatoeba_everywhere(training["model_dir"], max_rows),
            config.languages,
            config.anchor_codes(),
        )
        reports[str(seed)] = report.to_dict()
        print(f"seed {seed}\n{report.markdown()}")
        _save(
            file_name,
            {
                "recipe": recipe_name,
                "student": base.student,
                "max_rows": max_rows,
                "overrides": overrides,
                "untrained": [score.to_dict() for score in untrained],
                "seeds": reports,
                "machine": _machine(),
            },
        )


def _tatoeba_everywhere(model_name: str, max_rows: int | None) -> list[Any]:
    """LASER Tatoeba scores in all 112 languages (the forgetting report's input)."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.base import get_task
    from polyembed.eval.forgetting import forgetting_task_options
    from polyembed.models.loading import load_model

    return evaluate(load_model(model_name), [get_task("tatoeba", **forgetting_task_options(max_rows))]).scores


def recipe(name: str, seeds: list[int], overrides: dict[str, Any], max_rows: int | None) -> None:
    """One named recipe (the demo config + `overrides`) per seed: the demo tasks and the forgetting report
    against the untrained student. The untrained student and each teacher are evaluated once and kept in
    recipes.json (`baselines`), so recipes run one call at a time. The given seeds are (re)trained; other seeds
    of the same recipe with the same overrides stay (`--seeds 1` adds a seed)."""
    from polyembed.config import build_config
    from polyembed.demo import demo_config_path, headline_metrics
    from polyembed.eval.base import Score
    from polyembed.eval.forgetting import forgetting_report
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.models.loading import load_model

    saved = _load("recipes") or {}
    if saved.get("max_rows", max_rows) != max_rows:
        raise SystemExit(f"recipes.json was scored with --max-rows {saved['max_rows']}; use the same or start anew")
    baselines, rows = saved.get("baselines", {}), saved.get("rows", {})
    base, _ = build_config(DistillConfig, demo_config_path(), overrides)

    def baseline(model_name: str, with_tatoeba: bool) -> dict[str, Any]:
        entry = baselines.get(model_name, {})
        if "headline" not in entry:
            entry["headline"] = headline_metrics(_evaluate(load_model(model_name), model_name, base.languages))
        if with_tatoeba and "tatoeba" not in entry:
            entry["tatoeba"] = [score.to_dict() for score in _tatoeba_everywhere(model_name, max_rows)]
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
        training, result, seconds = _train_and_evaluate(config, origin, f"recipe {name} seed {seed}")
        report = forgetting_report(
            before, _tatoeba_everywhere(training.model_dir, max_rows), config.languages, config.anchor_codes()
        )
        runs[str(seed)] = {
            "headline": headline_metrics(result),
            "scores": _main_scores(result),
            "forgetting": report.to_dict(),
            "pairs_per_second": training.pairs_per_second,
            "train_seconds_total": round(seconds, 1),
            "peak_memory_mb": training.peak_memory_mb,
        }
        print(f"recipe {name} seed {seed}\n{report.markdown()}")
        rows[name] = {"overrides": overrides, "teacher": config.teacher, "runs": runs}
        _save("recipes", {"max_rows": max_rows, "baselines": baselines, "rows": rows, "machine": _machine()})


DEV_STS_PAIRS = 500
"""Evenly spaced pairs per dev subset (stsb-multi-mt dev has 1,500, Kardes dev ~1,500 per language)."""


def _dev_tasks() -> list[Any]:
    """Dev splits only (a recipe is chosen here, then reported on the test tasks): stsb-multi-mt in all its
    languages, Kardes STS in English + 5 Turkic languages, SemRel 2024 in its 8 (5 African) languages. Five of
    the stsb, four of the Kardes and four of the SemRel languages are in the data of no recipe without
    anchor text."""
    from polyembed.eval.base import get_task

    return [
        get_task("stsb-multi-mt", split="dev", max_pairs=DEV_STS_PAIRS),
        get_task("kardes-sts", split="dev", max_pairs=DEV_STS_PAIRS),
        get_task("semrel", split="dev"),
    ]


def _dev_scores(model_name: str) -> dict[str, float]:
    from polyembed.eval.api import evaluate
    from polyembed.models.loading import load_model

    return _main_scores(evaluate(load_model(model_name), _dev_tasks()))


def recipe_dev(names: list[str] | None) -> None:
    """Score the untrained student and every saved seed model of the named recipes (default: all in
    recipes.json) on the dev splits; -> recipes-dev.json, and the dev table is printed. Models already scored
    (same weights file time) are kept."""
    saved = _load("recipes") or {}
    rows = saved.get("rows", {})
    unknown = sorted(set(names or []) - set(rows))
    if unknown:
        raise SystemExit(f"no recipe {', '.join(unknown)} in recipes.json; known: {', '.join(rows)}")
    dev = _load("recipes-dev") or {"models": {}}
    student = next(iter(saved.get("baselines", {"me5-small": None})))
    if student not in dev["models"]:
        dev["models"][student] = {"scores": _dev_scores(student)}
        _save("recipes-dev", dev)
    for name in names or list(rows):
        for seed in rows[name]["runs"]:
            folder = OUT / f"recipe-{name}-seed-{seed}"
            training = json.loads((folder / "training.json").read_text(encoding="utf-8"))
            key = f"{name}/{seed}"
            weights = Path(training["model_dir"]) / "model.safetensors"
            trained_at = weights.stat().st_mtime if weights.is_file() else None
            if trained_at is not None and dev["models"].get(key, {}).get("trained_at") == trained_at:
                continue
            print(f"dev splits: recipe {name} seed {seed}")
            dev["models"][key] = {
                "recipe": name,
                "seed": int(seed),
                "trained_at": trained_at,
                "scores": _dev_scores(training["model_dir"]),
            }
            _save("recipes-dev", {**dev, "machine": _machine()})
    print("\n".join(recipe_dev_table(_load("recipes-dev"), student)))


DEV_GROUPS = {
    "cross (trained)": [f"stsb-multi-mt/en-{c}" for c in ("de", "fr", "es", "ru", "zh")] + ["kardes-sts/en-kk"],
    "cross (never-seen)": [f"stsb-multi-mt/en-{c}" for c in ("it", "ja", "nl", "pl", "pt")]
    + [f"kardes-sts/en-{c}" for c in ("az", "ky", "ug", "uz")],
    "English": ["stsb-multi-mt/en"],
    "student languages": [f"stsb-multi-mt/{c}" for c in ("de", "fr", "es", "ru", "zh")]
    + ["kardes-sts/kk", "semrel/hau"],
    "never-seen languages": [f"stsb-multi-mt/{c}" for c in ("it", "ja", "nl", "pl", "pt")]
    + [f"kardes-sts/{c}" for c in ("az", "ky", "ug", "uz")]
    + [f"semrel/{c}" for c in ("amh", "kin", "mar", "tel")],
}
"""Dev subsets behind each column: trained = in the demo's 10 languages; never-seen = in the data of no recipe
without anchors (cross-lingual en-X, and monolingual STS / relatedness, where forgetting shows without a
translation to lean on)."""


def recipe_dev_table(dev: dict[str, Any] | None, student: str) -> list[str]:
    """Dev-split means per recipe (over its seeds), and the monolingual dev subsets (English, student and
    never-seen languages) that lost more than a point against the untrained student, worst first: the numbers
    a recipe is chosen by (the no-forgetting bound applied per language, on dev)."""
    if not dev or student not in dev.get("models", {}):
        return []
    base = dev["models"][student]["scores"]

    def group_mean(scores: dict[str, float], keys: list[str]) -> float:
        return sum(scores[k] for k in keys) / len(keys)

    by_recipe: dict[str, list[dict[str, float]]] = {}
    for key, entry in dev["models"].items():
        if key != student:
            by_recipe.setdefault(entry["recipe"], []).append(entry["scores"])
    lines = [
        f"Dev splits (`python benchmarks/distill.py recipe-dev`; stsb-multi-mt and Kardes STS dev, "
        f"{DEV_STS_PAIRS} evenly spaced pairs per subset, SemRel 2024 dev; Spearman x100, mean over seeds; "
        "change against the untrained student in brackets):",
        "",
        "| model | seeds | " + " | ".join(DEV_GROUPS) + " | languages losing > 1 (monolingual) | worst |",
        "|---|---|" + "---|" * (len(DEV_GROUPS) + 2),
        f"| {student} (untrained) | - | "
        + " | ".join(f"{group_mean(base, keys):.2f}" for keys in DEV_GROUPS.values())
        + " | | |",
    ]
    monolingual = [key for name, keys in DEV_GROUPS.items() if not name.startswith("cross") for key in keys]
    for name, runs in by_recipe.items():
        cells = []
        for keys in DEV_GROUPS.values():
            after = sum(group_mean(run, keys) for run in runs) / len(runs)
            cells.append(f"{after:.2f} ({after - group_mean(base, keys):+.2f})")
        changes = {k: sum(run[k] for run in runs) / len(runs) - base[k] for k in monolingual}
        losing = sorted((k for k, change in changes.items() if change < -1), key=lambda k: changes[k])
        worst = min(changes, key=lambda k: changes[k])
        lines.append(
            f"| {name} | {len(runs)} | " + " | ".join(cells) + f" | {len(losing)} / {len(monolingual)}: "
            + ", ".join(k.split("/")[1] for k in losing) + f" | {worst.split('/')[1]} {changes[worst]:+.2f} |"
        )
    return lines


def _trained_run(config: Any, previous_run: dict[str, Any] | None) -> tuple[dict[str, Any], float]:
    """(training.json, recorded train seconds) of the saved run in config.output_dir, after checking that it was
    trained with `config`: every saved option equal, options added since then at their defaults."""
    from dataclasses import fields

    from polyembed.methods.distill.train import CONFIG_FILE

    folder = Path(config.output_dir)
    saved_path, training_path = folder / CONFIG_FILE, folder / "training.json"
    if not saved_path.is_file() or not training_path.is_file():
        raise SystemExit(f"--evaluate-only: no finished run in {folder}; train it first (drop --evaluate-only)")
    saved = yaml.safe_load(saved_path.read_text(encoding="utf-8"))
    default_config = type(config)()
    defaults = {f.name: getattr(default_config, f.name) for f in fields(config)}
    for key, value in config.__dict__.items():
        if saved.get(key, defaults[key]) != value:
            raise SystemExit(f"--evaluate-only: {saved_path} has {key}={saved.get(key)!r}, this config {value!r}")
    training = json.loads(training_path.read_text(encoding="utf-8"))
    seconds = previous_run["train_seconds_total"] if previous_run else training["train_seconds"]
    return training, seconds


def _train_and_evaluate(config: Any, origin: Any, label: str) -> tuple[Any, Any, float]:
    """Train one distillation run (replacing its output folder) and evaluate its model on the demo tasks;
    also returns the training's wall seconds (teacher labels and setup included, evaluation not)."""
    from polyembed.methods.distill.train import train_distill
    from polyembed.models.loading import load_model

    started = time.perf_counter()
    training = train_distill(config, origin=origin, overwrite=True)
    seconds = time.perf_counter() - started
    return training, _evaluate(load_model(training.model_dir), label, config.languages), seconds


def _main_scores(result: Any) -> dict[str, float]:
    """Every task's main score per subset, e.g. {'sts17/ar-en': 67.1}, kept for later comparisons."""
    return {f"{s.task}/{s.subset}": s.value for s in result.scores if s.main}


# ------------------------------------------------------------------------------------------ throughput

WORKER_DOC = "one training measurement in a fresh process (so peak memory is its own)"


def _worker(mode: str, steps: int, batch_size: int, pairs: int) -> dict[str, Any]:
    """`ours`: polyembed's trainer glue. `st`: sentence-transformers' make_multilingual example pattern
    (dataset.map with teacher.encode for labels, MSELoss, default shuffled batches, fp32)."""
    import torch

    torch.set_num_threads(2)
    from polyembed.config import build_config
    from polyembed.demo import demo_config_path
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.methods.distill.train import prepare_data

    config, origin = build_config(
        DistillConfig,
        demo_config_path(),
        {
            "max_steps": steps,
            "batch_size": batch_size,
            "eval_steps": steps,
            "output_dir": str(OUT / f"tp-{mode}"),
            "max_pairs_per_source": pairs,
        },
    )
    started = time.perf_counter()
    if mode == "ours":
        from polyembed.methods.distill.train import train_distill

        result = train_distill(config, origin=origin, overwrite=True)
        return {
            "pairs_per_second": result.pairs_per_second,
            "train_seconds": result.train_seconds,
            "wall_seconds": round(time.perf_counter() - started, 1),
            "peak_memory_mb": _peak_mb(),
        }
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
        losses,
    )
    from transformers import TrainerCallback

    from polyembed.models.loading import resolve_model_path

    data = prepare_data(config, origin)
    teacher = SentenceTransformer(resolve_model_path(config.teacher)[0], device="cpu")
    student = SentenceTransformer(resolve_model_path(config.student)[0], device="cpu")
    student.max_seq_length = config.max_seq_length
    english = [s for source in data.train for s in source.english]
    other = [s for source in data.train for s in source.other]
    dataset = Dataset.from_dict({"english": english, "non_english": other})
    dataset = dataset.map(
        lambda batch: {"label": teacher.encode(batch["english"], batch_size=128)}, batched=True, batch_size=5000
    )

    class Timer(TrainerCallback):
        seconds, steps, start = 0.0, 0, 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds += time.perf_counter() - self.start
            self.steps += 1

    timer = Timer()
    args = SentenceTransformerTrainingArguments(
        output_dir=str(OUT / "tp-st"),
        per_device_train_batch_size=batch_size,
        max_steps=steps,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_ratio,
        save_strategy="no",
        report_to="none",
        prompts=student.prompts.get(student.default_prompt_name or "", None),
        use_cpu=True,
        seed=0,
    )
    student[0].auto_model.get_input_embeddings().weight.requires_grad_(not config.freeze_embeddings)
    SentenceTransformerTrainer(
        model=student, args=args, train_dataset=dataset, loss=losses.MSELoss(student), callbacks=[timer]
    ).train()
    pairs = timer.steps * batch_size
    return {
        "pairs_per_second": round(pairs / timer.seconds, 2),
        "train_seconds": round(timer.seconds, 2),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "peak_memory_mb": _peak_mb(),
    }


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def throughput(steps: int, batch_size: int, pairs: int) -> None:
    """Both loops on the demo's models, languages and batch size, each in its own process."""
    out: dict[str, Any] = {
        "steps": steps,
        "batch_size": batch_size,
        "max_pairs_per_source": pairs,
        "machine": _machine(),
    }
    for mode in ("st", "ours"):
        command = [sys.executable, __file__, "_worker", mode, str(steps), str(batch_size), str(pairs)]
        completed = subprocess.run(command, check=True, capture_output=True, text=True)
        out[mode] = json.loads(completed.stdout.strip().splitlines()[-1])
        print(mode, out[mode], flush=True)
    out["ratio"] = round(out["ours"]["pairs_per_second"] / out["st"]["pairs_per_second"], 2)
    _save("throughput", out)


# ------------------------------------------------------------------------------------------ data size


PAIR_SCORE = {
    "de": ("stsb-multi-mt", "en-de"),
    "ar": ("sts17", "ar-en"),
    "es": ("sts17", "es-en"),
    "tr": ("sts17", "tr-en"),
    "fr": ("stsb-multi-mt", "en-fr"),
    "zh": ("stsb-multi-mt", "en-zh"),
}


def _pair_score(result: Any, language: str) -> float:
    """The en-X cross-lingual STS of one language: stsb-multi-mt en-de (the paper's STS2017 en-de is not in
    the shared data), STS2017 ar-en as in Table 6."""
    task, subset = PAIR_SCORE[language]
    values = [s.value for s in result.scores if s.task == task and s.subset == subset and s.metric == "spearman"]
    return values[0] if values else float("nan")


def data_size(sizes: list[str], languages: list[str], min_steps: int) -> None:
    """Bilingual en-X runs on k seeded-sampled Tatoeba-Challenge pairs (LASER test removed), as Table 6.
    Each run trains max(min_steps, one epoch) steps of 32 pairs: small sets are repeated, not under-trained."""
    from polyembed.config import build_config
    from polyembed.demo import headline_metrics
    from polyembed.methods.distill.config import DistillConfig

    rows = (_load("data-size") or {}).get("rows", [])
    for language in languages:
        for size in sizes:
            cap = None if size == "all" else int(size)
            config, origin = build_config(
                DistillConfig,
                None,
                {
                    "languages": [language],
                    "datasets": ["tatoeba-challenge"],
                    "max_pairs_per_source": cap,
                    "batch_size": 32,
                    "learning_rate": 1e-4,
                    "freeze_embeddings": True,
                    "dev_pairs_per_source": 50,
                    "dev_sts_pairs": 100,
                    "max_steps": max(min_steps, math.ceil((cap or 20000) / 32)),
                    "output_dir": str(OUT / f"size-{language}-{size}"),
                },
            )
            training, result, _ = _train_and_evaluate(config, origin, f"{language}-{size}")
            rows = [r for r in rows if not (r["language"] == language and r["size"] == size)]
            rows.append(
                {
                    "language": language,
                    "size": size,
                    "pairs": sum(s["train_pairs"] for s in training.details["sources"]),
                    "steps": training.steps,
                    "pair_sts": _pair_score(result, language),
                    "headline": headline_metrics(result),
                }
            )
            _save("data-size", {"rows": rows, "machine": _machine()})


# ------------------------------------------------------------------------------------------ vocabulary


VOCABULARY_MODES = {
    "keep-untrained": "kept, untrained",
    "keep": "kept",
    "transfer-untrained": "FOCUS, untrained",
    "transfer": "FOCUS",
}
"""Rows of one vocabulary comparison: each student before training (its own space, no projection) and after."""


def vocabulary(
    name: str,
    steps: int,
    overrides: dict[str, Any],
    untrained_only: bool = False,
    modes: tuple[str, ...] = ("keep", "transfer"),
) -> None:
    """One named comparison: the same student, data, steps and seed trained once with its own tokenizer
    ('keep') and once with a FOCUS-transferred one ('transfer'); both starting points are evaluated too, so the
    table shows what FOCUS itself preserves. `modes` trains only some (e.g. a transfer variant whose 'keep'
    run another comparison already has); `untrained_only` re-evaluates only the starting points of an
    existing comparison. Rows accumulate in vocabulary.json."""
    from polyembed.config import build_config
    from polyembed.demo import demo_config_path, headline_metrics
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.models.loading import load_model

    rows = (_load("vocabulary") or {}).get("rows", {})
    if untrained_only:
        if name not in rows:
            raise SystemExit(f"--untrained-only: no finished comparison '{name}' in vocabulary.json; run it first")
        row, options = rows[name], rows[name]["options"]
    else:
        options = {"max_steps": steps, "eval_steps": steps, **overrides}
        row = {"options": options}
    for mode in modes:
        config, origin = build_config(
            DistillConfig,
            demo_config_path(),
            {**options, "student_vocabulary": mode, "output_dir": str(OUT / f"vocab-{name}-{mode}")},
        )
        if not untrained_only:
            training, result, seconds = _train_and_evaluate(config, origin, f"vocabulary {name} {mode}")
            row[mode] = {
                "headline": headline_metrics(result),
                "scores": _main_scores(result),
                "vocabulary_transfer": training.details["vocabulary_transfer"],
                "pairs_per_second": training.pairs_per_second,
                "train_seconds_total": round(seconds, 1),
            }
            rows[name] = row
            _save("vocabulary", {"rows": rows, "machine": _machine()})  # after each mode: nothing lost
    starts = {
        "keep-untrained": config.teacher if config.student == "teacher" else config.student,
        "transfer-untrained": str(OUT / f"vocab-{name}-transfer" / "student-init"),
    }
    for mode, model_name in starts.items():
        if mode.removesuffix("-untrained") not in row:
            continue
        result = _evaluate(load_model(model_name), f"vocabulary {name} {mode}", config.languages)
        row[mode] = {
            "headline": headline_metrics(result),
            "scores": _main_scores(result),
            "vocabulary_transfer": row["transfer"]["vocabulary_transfer"] if mode.startswith("transfer") else None,
        }
        rows[name] = row
        _save("vocabulary", {"rows": rows, "machine": _machine()})


# ------------------------------------------------------------------------------------------ ablation


ABLATION_BASE = {"max_pairs_per_source": 1000, "seed": 0}
"""What every ablation row changes in the demo config; the table lists only options that differ from it."""


def ablation(name: str, steps: int, seed: int, overrides: dict[str, Any]) -> None:
    """One named variant of the demo config at `max_pairs_per_source` 1000 and `steps` steps; rows accumulate
    in ablation.json so variants run one call at a time (each ~7 minutes at 150 steps)."""
    from polyembed.config import build_config
    from polyembed.demo import demo_config_path, headline_metrics
    from polyembed.methods.distill.config import DistillConfig

    options = {**ABLATION_BASE, "max_steps": steps, "eval_steps": steps, "seed": seed, **overrides}
    config, origin = build_config(
        DistillConfig, demo_config_path(), {**options, "output_dir": str(OUT / f"ablation-{name}")}
    )
    training, result, _ = _train_and_evaluate(config, origin, f"ablation {name}")
    rows = (_load("ablation") or {}).get("rows", {})
    rows[name] = {
        "options": options,
        "headline": headline_metrics(result),
        "scores": _main_scores(result),
        "dev_negative_mse": training.best.get("eval_dev_negative_mse"),
        "pairs_per_second": training.pairs_per_second,
    }
    _save("ablation", {"rows": rows, "machine": _machine()})


# ------------------------------------------------------------------------------------------ render


FORGETTING_GROUPS = ("trained", "anchored", "not_trained")
RECIPE_HEADLINES = ("cross_sts", "english_sts", "mono_sts", "kardes_cross_sts", "language_bias_gap")


def _recipe_table(saved: dict[str, Any] | None) -> list[str]:
    """Recipes against forgetting, mean over seeds: STS, Tatoeba after training per group, worst loss."""
    if not saved or not saved.get("rows"):
        return []
    rows_note = "every row" if saved["max_rows"] is None else f"{saved['max_rows']} rows per language"
    lines = [
        "",
        f"Recipes against forgetting (`python benchmarks/distill.py recipe NAME --seeds ... --set ...`; demo config "
        f"plus the options shown, mean over seeds; Tatoeba: all 112 LASER languages, {rows_note}, mean of both "
        "directions, after training (change against the untrained student); 'anchored': languages whose text "
        "only anchored the student (no teacher target), 'other': languages the run had no text for; 'lost > 1': "
        "languages with >= 500 test pairs that lost more than 1 point; bias gap: the mean of the seeds' gaps and of "
        "their 95% interval bounds):",
        "",
        "| recipe | options | seeds | cross STS | English STS | student-language STS | Kardes en-kk | bias gap "
        "| Tatoeba trained | Tatoeba anchored | Tatoeba other | lost > 1 (trained / anchored / other) "
        "| worst loss | pairs/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for model_name, entry in saved["baselines"].items():
        h = entry["headline"]
        lines.append(
            f"| {model_name} (untrained) | - | - | {_f(h['cross_sts'])} | {_f(h['english_sts'])} | "
            f"{_f(h.get('mono_sts', math.nan))} | {_f(h['kardes_cross_sts'])} | {_f(h['language_bias_gap'])} "
            f"[{_f(h.get('language_bias_ci95_low', math.nan))}, {_f(h.get('language_bias_ci95_high', math.nan))}] "
            "| | | | | | |"
        )
    for name, row in saved["rows"].items():
        runs = list(row["runs"].values())

        def mean(get: Any, runs: list[dict[str, Any]] = runs) -> float:
            return sum(get(run) for run in runs) / len(runs)

        def group(run: dict[str, Any], key: str, field: str) -> float:
            return run["forgetting"]["summary"].get(key, {}).get(field, math.nan)

        present = [g for g in FORGETTING_GROUPS if any(g in run["forgetting"]["summary"] for run in runs)]
        tatoeba_cells = [
            f"{_f(mean(lambda r, g=g: group(r, g, 'after')))} ({mean(lambda r, g=g: group(r, g, 'change')):+.2f})"
            if g in present else "-"
            for g in FORGETTING_GROUPS
        ]
        lost = " / ".join(
            f"{mean(lambda r, g=g: group(r, g, 'lost_more_than_tolerance')):.1f}" if g in present else "-"
            for g in FORGETTING_GROUPS
        )
        worst = min(
            (lang for run in runs for lang in run["forgetting"]["languages"]), key=lambda lang: lang["change"]
        )
        cells = [
            name,
            ", ".join(f"{k}={v}" for k, v in row["overrides"].items()) or "-",
            str(len(runs)),
            *(_f(mean(lambda r, k=k: r["headline"][k])) for k in RECIPE_HEADLINES[:-1]),
            f"{_f(mean(lambda r: r['headline']['language_bias_gap']))} "
            f"[{_f(mean(lambda r: r['headline'].get('language_bias_ci95_low', math.nan)))}, "
            f"{_f(mean(lambda r: r['headline'].get('language_bias_ci95_high', math.nan)))}]",
            *tatoeba_cells,
            lost,
            f"{worst['language']} {worst['change']:+.1f}",
            f"{mean(lambda r: r['pairs_per_second']):.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines



def recipe_summary(saved: dict[str, Any] | None) -> list[str]:
    """Per recipe and seed: languages (of all scored) losing more than 1 point / 3 points or more, and the mean
    change of the languages no recipe had any text for (not trained, not anchored in any recipe)."""
    if not saved or not saved.get("rows"):
        return []
    seen: set[str] = set()
    for row in saved["rows"].values():
        for run in row["runs"].values():
            seen |= {lang["language"] for lang in run["forgetting"]["languages"]
                     if lang.get("trained") or lang.get("anchored")}
    lines = ["| recipe | seed | losing > 1 | losing >= 3 | never-seen languages | their mean change |",
             "|---|---|---|---|---|---|"]
    for name, row in saved["rows"].items():
        for seed, run in row["runs"].items():
            languages = run["forgetting"]["languages"]
            never = [lang["change"] for lang in languages if lang["language"] not in seen]
            lines.append(
                f"| {name} | {seed} | {sum(1 for lang in languages if lang['change'] < -1)} | "
                f"{sum(1 for lang in languages if lang['change'] <= -3)} | {len(never)} | "
                f"{sum(never) / len(never):+.2f} |"
            )
    return lines


def full_row_forgetting_table() -> list[str]:
    """Every forgetting-NAME.json (`forgetting --recipe NAME`, every Tatoeba row): per recipe and seed the group
    means and the languages with >= 500 test pairs that lost more than a point (the issue's bound)."""
    lines = [
        "| recipe | seed | trained: mean change | not trained: mean change | languages (>= 500 pairs) losing > 1 "
        "| worst of them |",
        "|---|---|---|---|---|---|",
    ]
    for path in sorted(OUT.glob("forgetting-*.json")):
        saved = json.loads(path.read_text(encoding="utf-8"))
        for seed, report in saved["seeds"].items():
            summary = report["summary"]
            beyond = {row["language"]: row["change"] for row in report["languages"]
                      if row["language"] in summary["beyond_tolerance"]}
            worst = min(beyond, key=lambda language: beyond[language]) if beyond else None
            lines.append(
                f"| {saved['recipe']} | {seed} | {summary['trained']['change']:+.2f} | "
                f"{summary['not_trained']['change']:+.2f} | {len(beyond)}: {', '.join(sorted(beyond))} | "
                + (f"{worst} {beyond[worst]:+.2f} |" if worst else "- |")
            )
    return lines


def recipe_figure(saved: dict[str, Any] | None) -> Path:
    """The recipes' trade-off in one picture: cross-lingual STS against the student's own-language STS and against
    the Tatoeba languages that lost more than 1 point; one point per seed, the mean as a labelled marker, the
    untrained student and the issue's bound (1 point of own-language STS) for reference."""
    from matplotlib.figure import Figure

    if not saved or not saved.get("rows"):
        raise SystemExit("no recipes.json here: run `python benchmarks/distill.py recipe NAME` first")
    untrained = next(iter(saved["baselines"].values()))["headline"]
    figure = Figure(figsize=(11, 4.8))
    panels = [("student-language STS (mean)", lambda run: run["headline"]["mono_sts"], untrained["mono_sts"]),
              (f"Tatoeba languages losing > 1 point ({saved['max_rows'] or 'all'} rows each)", lambda run: sum(
                  1 for lang in run["forgetting"]["languages"] if lang["change"] < -1), 0)]
    for position, (label, x_of, untrained_x) in enumerate(panels, start=1):
        axes = figure.add_subplot(1, 2, position)
        for index, (name, row) in enumerate(saved["rows"].items()):
            runs = list(row["runs"].values())
            xs, ys = [x_of(run) for run in runs], [run["headline"]["cross_sts"] for run in runs]
            colour = f"C{index % 10}"
            axes.scatter(xs, ys, s=12, alpha=0.5, color=colour)
            axes.scatter([sum(xs) / len(xs)], [sum(ys) / len(ys)], s=40, color=colour, label=name)
        axes.scatter([untrained_x], [untrained["cross_sts"]], s=60, marker="x", color="black", label="untrained")
        if position == 1:
            axes.axvline(untrained["mono_sts"] - 1, linestyle="--", color="grey", linewidth=1)
            axes.text(untrained["mono_sts"] - 1, untrained["cross_sts"], " bound", color="grey", fontsize=8)
        axes.set_xlabel(label)
        axes.set_ylabel("cross-lingual STS")
    figure.axes[0].legend(fontsize=7)
    figure.suptitle("Distillation recipes: cross-lingual gain against forgetting (each seed, and the mean)",
                    fontsize=10)
    target = REPO / "docs" / "figures" / "distill-recipes-tradeoff.png"
    with atomic_write(target, "wb") as handle:
        figure.savefig(handle, format="png", dpi=100, bbox_inches="tight")
    return target


def _machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}


def _f(value: float, pct: bool = False) -> str:
    return "n/a" if value != value else (f"{100 * value:.1f}%" if pct else f"{value:.2f}")


def render() -> str:
    """The docs section from every saved JSON."""
    from polyembed.demo import format_headline, with_teacher_ratio

    lines = [START, "## Multilingual knowledge distillation (issue 3)", ""]
    acc = _load("acceptance")
    if acc:
        base = acc["baselines"]
        lines += [
            "`python benchmarks/distill.py acceptance --seeds "
            + " ".join(str(r["seed"]) for r in acc["runs"])
            + "".join(f" --set {k}={v}" for k, v in acc.get("overrides", {}).items())
            + "`"
            f" — demo config ({acc['config']['max_steps']} steps x {acc['config']['batch_size']} pairs, "
            f"{', '.join(acc['config']['languages'])})"
            + (
                "; the seed models were re-evaluated from their saved folders (`--evaluate-only`)."
                if any(r.get("re_evaluated") for r in acc["runs"])
                else "."
            ),
            "",
            "| model | cross-lingual STS | English STS | cross / teacher English | bias gap [95% CI] | Tatoeba "
            "| Kardes cross |",
            "|---|---|---|---|---|---|---|",
        ]
        entries = with_teacher_ratio({**base, **{f"distilled, seed {r['seed']}": r["headline"] for r in acc["runs"]}})
        for name, h in entries.items():
            lines.append(
                f"| {name} | {_f(h['cross_sts'])} | {_f(h['english_sts'])} "
                f"| {_f(h['cross_over_teacher_english'], True)} | {format_headline('language_bias_gap', h)} "
                f"| {_f(h['tatoeba_accuracy'])} | {_f(h['kardes_cross_sts'])} |"
            )
        lines.append("")
    tp = _load("throughput")
    if tp:
        lines += [
            f"Training throughput, demo models and languages, batch {tp['batch_size']}, {tp['steps']} steps "
            "(`python benchmarks/distill.py throughput`):",
            "",
            "| loop | pairs/s (optimizer steps only) | wall s (incl. teacher labels, setup) | peak RSS MB |",
            "|---|---|---|---|",
            f"| sentence-transformers make_multilingual-style | {tp['st']['pairs_per_second']} | "
            f"{tp['st']['wall_seconds']} | {tp['st']['peak_memory_mb']} |",
            f"| polyembed train distill | {tp['ours']['pairs_per_second']} | {tp['ours']['wall_seconds']} | "
            f"{tp['ours']['peak_memory_mb']} |",
            f"| ratio | {tp['ratio']} | | |",
            "",
        ]
    size = _load("data-size")
    if size:
        lines += [
            "Data-size curve as the paper's Table 6 (`python benchmarks/distill.py data-size`): bilingual runs on "
            "k Tatoeba-Challenge pairs; en-de is stsb-multi-mt en-de, en-ar is STS2017 ar-en.",
            "",
            "| language | training pairs | steps x 32 | en-X STS | Tatoeba |",
            "|---|---|---|---|---|",
        ]
        for r in size["rows"]:
            h = r["headline"]
            lines.append(
                f"| {r['language']} | {r['pairs']} | {r['steps']} | {_f(r.get('pair_sts', float('nan')))} | "
                f"{_f(h['tatoeba_accuracy'])} |"
            )
        lines.append("")
    lost = _load("forgetting")
    if lost:
        rows_note = "every row" if lost["max_rows"] is None else f"{lost['max_rows']} rows per language"
        lines += [
            "",
            f"Forgetting (`python benchmarks/distill.py forgetting`, same overrides): LASER Tatoeba in all 112 "
            f"languages, {rows_note}, untrained student -> acceptance seed model, mean of both directions.",
            "",
            "| seed | trained languages: change (lost > 1) | other languages: change (lost > 1) | worst losses |",
            "|---|---|---|---|",
        ]
        for seed, report in lost["seeds"].items():
            summary = report["summary"]
            worst = sorted((r for r in report["languages"] if r["change"] < 0), key=lambda r: r["change"])[:5]
            cells = [
                f"{summary[group]['change']:+.2f} ({summary[group]['lost_more_than_tolerance']})"
                if group in summary else "-"
                for group in ("trained", "not_trained")
            ]
            worst_text = ", ".join(f"{r['language']} {r['change']:+.1f}" for r in worst) or "none"
            lines.append(f"| {seed} | {cells[0]} | {cells[1]} | {worst_text} |")
    lines += _recipe_table(_load("recipes"))
    vocab = _load("vocabulary")
    if vocab and "rows" in vocab:
        lines += [
            "Vocabulary transfer: each comparison trains the same student on the same data, steps and seed with "
            "its own tokenizer and with a new one (FOCUS-initialised embeddings); 'untrained' rows are the two "
            "starting points in the student's own space (no projection), "
            "`python benchmarks/distill.py vocabulary NAME --steps N --set KEY=VALUE ...`:",
            "",
            "| comparison | options beside the demo config | vocabulary "
            "| new tokens copied / interpolated / decomposed / random "
            "| cross STS | English STS | bias gap [95% CI] | Tatoeba | pairs/s | train s |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, row in vocab["rows"].items():
            options = ", ".join(f"{k}={v}" for k, v in row["options"].items() if k != "eval_steps")
            for mode, mode_label in VOCABULARY_MODES.items():
                if mode not in row:
                    continue
                entry = row[mode]
                h, report = entry["headline"], entry["vocabulary_transfer"]
                if report:
                    total = report["target_vocab_size"]
                    parts = ("copied", "interpolated", "decomposed", "random")
                    counts = " / ".join(f"{100 * report.get(k, 0) / total:.1f}%" for k in parts)
                    vocabulary_label = f"{mode_label} {report['source_vocab_size']:,} -> {total:,}"
                else:
                    counts, vocabulary_label = "-", mode_label
                lines.append(
                    f"| {name} | {options} | {vocabulary_label} | {counts} | {_f(h['cross_sts'])} | "
                    f"{_f(h['english_sts'])} | {format_headline('language_bias_gap', h)} | "
                    f"{_f(h['tatoeba_accuracy'])} | {entry.get('pairs_per_second', '-')} | "
                    f"{entry.get('train_seconds_total', '-')} |"
                )
        lines.append("")
    ablations = _load("ablation")
    if ablations:
        lines += [
            "Ablations of the demo config at 1000 pairs per source, seed 0, one run each "
            "(`python benchmarks/distill.py ablation NAME --steps N --set KEY=VALUE ...`; dev MSE x100 on the "
            "held-out pairs, as in the paper; rows trained before 2026-11-22 (fdbb8bb) count the translation term "
            "only, later rows both terms of the loss):",
            "",
            "| variant | changed options | steps | cross STS | English STS | bias gap | Tatoeba | dev MSE | pairs/s |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, row in ablations["rows"].items():
            h = row["headline"]
            options = row["options"]
            base = {**ABLATION_BASE, "max_steps": options["max_steps"], "eval_steps": options["max_steps"]}
            changed = ", ".join(f"{k}={v}" for k, v in options.items() if base.get(k, object()) != v) or "-"
            mse = -row["dev_negative_mse"] if row.get("dev_negative_mse") is not None else float("nan")
            lines.append(
                f"| {name} | {changed} | {options['max_steps']} | {_f(h['cross_sts'])} | "
                f"{_f(h['english_sts'])} | {_f(h['language_bias_gap'])} | {_f(h['tatoeba_accuracy'])} | "
                f"{mse:.4f} | {row['pairs_per_second']:.1f} |"
            )
        lines.append("")
    lines.append(END)
    section = "\n".join(lines)
    present = {name for name in SECTION_SOURCES if _load(name) is not None}
    commands = {name: f"benchmarks/distill.py {command}" for name, command in SECTION_SOURCES.items()}
    missing = missing_tables(DOCS, START, END, commands, present)
    if missing:
        # results/ is not in git: on another machine a re-render would drop every table whose JSON is absent
        print(f"docs/benchmarks.md left as it is: no {', '.join(m + '.json' for m in missing)} in {OUT}; "
              "copy the tables you re-measured from the section below by hand")
        return section
    replace_section(DOCS, START, END, section)
    return section


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        mode, steps, batch, pairs = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        print(json.dumps(_worker(mode, steps, batch, pairs)))
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
        print("\n".join(recipe_summary(_load("recipes"))))
        return
    if args.command == "full-row-forgetting":
        print("\n".join(full_row_forgetting_table()))
        return
    if args.command == "recipe-dev":
        recipe_dev(args.names or None)
        return
    if args.command == "recipe-figure":
        print(f"wrote {recipe_figure(_load('recipes')).relative_to(REPO)}")
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
