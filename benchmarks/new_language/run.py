"""Which method makes a new language better, and by how much: every method trained on the same languages, the
same bitext and the same minutes of this machine, scored on the same held-out data.

  python -m benchmarks.new_language.run calibrate --family african             # seconds per step, fixed cost
  python -m benchmarks.new_language.run run --family african --seeds 0 1 --minutes 8
  python -m benchmarks.new_language.run run --family african --seeds 0 --methods tr distill
  python -m benchmarks.new_language.run run --family african --seeds 0 --minutes 2 --curve --methods tr  # curve
  python -m benchmarks.new_language.run forgetting --family african --runs distill+tr/seed-0  # every language
  python -m benchmarks.new_language.render                                     # the docs section from the JSON

A method's budget is wall-clock minutes, turned into its own number of optimizer steps: `calibrate` trains each
method for a few steps and keeps its seconds per step and its fixed cost (loading, data, a teacher's embeddings,
word alignment, the dev evaluation at the end); `run` trains (budget - fixed) / (seconds per step) steps. Every
run's real wall time is stored beside its scores, so the table shows how equal the budgets came out. The modular
recipe is one pipeline of stages (LA and SE per language, SE for the English pivot, CLA per language): its steps
count per stage, its fixed cost is every stage's, and a budget its fixed cost fills runs at the probe's steps
(the calibration's own run, reused).

Scores: dev splits (what a choice between methods rests on), the trained languages' test splits, and what the
run may have cost elsewhere (other languages' retrieval, cross-lingual STS). Results: results/bench/new_language/
results.json; models under results/bench/new_language/<family>/seed-N/<method>/.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from benchmarks.common.results import REPO, machine, write_json
from benchmarks.common.script_cli import script_parser
from benchmarks.new_language.render import render
from benchmarks.new_language.spec import BASE, OUT, RESULTS

os.environ.setdefault("HF_HUB_OFFLINE", "1")
logger = logging.getLogger("new_language")
PROBE_STEPS = 8
BATCH_SIZE = 32
PAIRS_PER_LANGUAGE = 1000
"""Every method trains on the same (seeded) 1,000 pairs per language: about what the budget lets a method see
once, and what keeps a method's fixed cost (distillation embeds every English sentence with the teacher and
the untrained student before its first step) from eating the budget of a method that has none."""


class Family(NamedTuple):
    """Languages trained together (one run for all of them) and where each is scored."""

    languages: list[str]
    datasets: list[str]
    dev: list[tuple[str, dict[str, Any]]]
    test: list[tuple[str, dict[str, Any]]]
    elsewhere: list[tuple[str, dict[str, Any]]]
    described: dict[str, str]
    """What each part's scores are, stored with the results for the renderer (which never imports this file)."""


FAMILIES: dict[str, Family] = {
    # MAFAND-MT's train split (news); dev: its dev split (evenly spaced rows, a selection signal only); test: its
    # test split and TICO-19's Hausa (another domain); elsewhere: languages the run never trains.
    "african": Family(
        languages=["yo", "ig", "ha", "zu"],
        datasets=["mafand-mt"],
        dev=[("mafand-retrieval", {"split": "dev", "languages": ["yor", "ibo", "hau", "zul"], "max_rows": 500})],
        test=[("mafand-retrieval", {"split": "test", "languages": ["yor", "ibo", "hau", "zul"]}),
              ("tico19-retrieval", {"languages": ["ha"]})],
        elsewhere=[
            ("tico19-retrieval", {"languages": ["sw", "am", "rw", "fr", "zh"], "max_rows": 500}),
            ("tatoeba", {"languages": ["swh", "amh", "afr", "xho", "deu", "fra", "rus", "cmn", "ara", "tur", "hin",
                                       "jpn", "kaz", "uig"]}),
            ("sts17", {"languages": ["ar-en", "es-en", "tr-en"]}),
            ("stsb-multi-mt", {"languages": ["de", "zh", "ru"]}),
        ],
        described={
            "data": "MAFAND-MT's train split (news)",
            "dev": "MAFAND-MT dev retrieval accuracy, en<->X, both directions, evenly spaced rows",
            "test": "retrieval accuracy, en<->X; MAFAND-MT test, and TICO-19 for Hausa",
        },
    ),
    # Tatoeba-Challenge's X-eng pairs with the LASER Tatoeba test pairs removed (the reader does it); no Kyrgyz
    # bitext is stored, so Kyrgyz is scored (Kardes STS) without being trained. There is no Tatoeba-Challenge dev
    # split: dev is Kardes-NLU's STS dev split (en-X for the four trained languages it has); test is LASER
    # Tatoeba and Kardes STS test.
    "turkic": Family(
        languages=["tt", "tk", "ug", "uz", "kk", "az"],
        datasets=["tatoeba-challenge"],
        dev=[("kardes-sts", {"split": "dev", "languages": ["en", "az", "kk", "uz", "ug"]})],
        test=[("tatoeba", {"languages": ["tat", "tuk", "uig", "uzb", "kaz", "aze"]}),
              ("kardes-sts", {"split": "test", "languages": ["en", "az", "kk", "ky", "uz", "ug"]})],
        elsewhere=[
            ("tico19-retrieval", {"languages": ["sw", "am", "rw", "fr", "zh", "ha"], "max_rows": 500}),
            ("tatoeba", {"languages": ["tur", "deu", "fra", "rus", "cmn", "ara", "hin", "jpn", "swh", "amh",
                                       "afr", "pes", "kor", "ita"]}),
            ("sts17", {"languages": ["ar-en", "es-en", "tr-en"]}),
            ("stsb-multi-mt", {"languages": ["de", "zh", "ru"]}),
        ],
        described={
            "data": "Tatoeba-Challenge X-eng pairs, LASER Tatoeba test pairs removed",
            "dev": "Kardes-NLU STS dev, Spearman x100, English and the trained languages it has (az, kk, uz, ug)",
            "test": "LASER Tatoeba retrieval accuracy (en<->X) of the trained languages, and Kardes-NLU STS test "
                    "(Spearman x100; Kyrgyz is not trained: no bitext for it is stored)",
        },
    ),
}

# Each method at its own measured recipe; the family's languages, datasets, batch, steps and seed are set per run.
DISTILL_PRESET = REPO / "src" / "polyembed" / "presets" / "distill-demo.yaml"
MODULAR = "modular-pipeline"
"""Not one training method but the modular pipeline's stages (`polyembed train modular pipeline`)."""
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    # the demo's recipe (read from its preset below), distillation alone whatever the preset adds
    "distill": ("distill", {"ranking_weight": 0.0}),
    # the demo's recipe with translation ranking added to its MSE: the MSE keeps the space near where the
    # targets put it, the ranking term is what lifted retrieval in the tr rows
    "distill+tr": ("distill", {"ranking_weight": 0.1}),
    "tr": ("wacse", {"objectives": ["tr"]}),
    "tr+wtr": ("wacse", {"objectives": ["tr", "wtr"]}),
    # EMMA-X's phase 1 (contrastive warm-up with the rank classifier) at benchmarks.emmax.run's settings
    "emmax-phase-1": ("emmax-warmup", {"freeze_embeddings": True, "max_seq_length": 64, "dev_sts_pairs": 0}),
    # the modular recipe (LA + SE per language and for the English pivot, CLA per language, one routed bundle) at
    # the pipeline's defaults; languages outside the bundle are encoded by the English pivot. Its stages read
    # their own registry data (LA text, SE paraphrases, CLA paraphrases and bitext), capped at the same pairs per
    # language; `steps` counts each stage's steps.
    "modular": (MODULAR, {"unknown_language": "pivot"}),
}


def _distill_recipe() -> dict[str, Any]:
    """The demo preset's options, without what each run sets (languages, data, budget, seed, folder)."""
    options = yaml.safe_load(DISTILL_PRESET.read_text(encoding="utf-8"))
    for key in ("languages", "datasets", "max_steps", "eval_steps", "seed", "output_dir", "batch_size",
                "max_pairs_per_source"):
        options.pop(key, None)
    return options


def method_options(method: str, family: Family, steps: int, seed: int) -> dict[str, Any]:
    """Every option of one run: the method's recipe, then what all methods share."""
    kind, recipe = METHODS[method]
    if kind == MODULAR:
        return {**recipe, "languages": family.languages, "max_pairs": PAIRS_PER_LANGUAGE, "batch_size": BATCH_SIZE,
                "la_steps": steps, "se_steps": steps, "cla_steps": steps, "keep_checkpoints": False, "seed": seed,
                "student": BASE}
    if kind == "distill":
        recipe = {**_distill_recipe(), **recipe}
    return {**recipe, "languages": family.languages, "datasets": family.datasets,
            "max_pairs_per_source": PAIRS_PER_LANGUAGE, "batch_size": BATCH_SIZE, "max_steps": steps,
            "eval_steps": steps, "checkpoint": "final",
            "keep_checkpoints": False, "seed": seed, "student": BASE}


FORGETTING: list[tuple[str, dict[str, Any]]] = [
    ("tatoeba", {}),
    ("tico19-retrieval", {"max_rows": 1000}),
]
"""Every LASER Tatoeba language and every TICO-19 language (1,000 evenly spaced rows each): what a recipe may cost
the languages it never trains, scored for the base model and the runs named (`forgetting`), not for every run."""
PARTS = ("dev", "test", "elsewhere")
CURVE_PARTS = ("dev", "test")
"""A budget curve's extra points are scored on dev and test only: the curve asks how the trained languages grow
with minutes; what a run costs elsewhere is measured at the main budget."""


def _load() -> dict[str, Any]:
    return json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {}


def _train(method: str, family: Family, steps: int, seed: int, folder: Path) -> dict[str, Any]:
    """One run (resumed or reused when its folder holds it), its wall time included."""
    from polyembed.methods.modular.pipeline import run_stage

    kind, _ = METHODS[method]
    if kind == MODULAR:
        return _train_modular(folder, method_options(method, family, steps, seed))
    return run_stage(kind, folder, False, **method_options(method, family, steps, seed))


def _train_modular(folder: Path, options: dict[str, Any]) -> dict[str, Any]:
    """The modular pipeline in `folder` (finished stages reused), summed as one run: `steps` per stage, the
    stages' training seconds, the largest peak memory of a stage; wall time includes the vocabulary steps."""
    from polyembed.config import build_config
    from polyembed.methods.modular.pipeline import ModularPipelineConfig, run_pipeline

    summary = folder / "training.json"
    if summary.is_file():
        return json.loads(summary.read_text(encoding="utf-8"))
    config, _ = build_config(ModularPipelineConfig, None, {**options, "output_dir": str(folder)})
    started = time.perf_counter()
    pipeline = run_pipeline(config, show_progress=False)
    stages = [stage for language in pipeline["languages"].values() for stage in language["stages"].values()]
    out = {"model_dir": pipeline["bundle"], "steps": options["la_steps"], "stages": len(stages),
           "wall_seconds": round(time.perf_counter() - started, 1),
           "train_seconds": round(sum(json.loads((Path(stage["model_dir"]).parent / "training.json")
                                                 .read_text(encoding="utf-8"))["train_seconds"]
                                      for stage in stages), 1),
           "peak_memory_mb": max(stage["peak_memory_mb"] or 0 for stage in stages)}
    write_json(summary, out)
    return out


def calibrate(family_name: str, methods: list[str]) -> None:
    """Seconds per optimizer step and fixed seconds per run, from a short run of each method."""
    results = _load()
    family = FAMILIES[family_name]
    table = results.setdefault("calibration", {}).setdefault(family_name, {})
    for method in methods:
        # seed 0's run at the probe's steps: a budget that comes out at the probe's steps reuses it
        folder = OUT / family_name / "seed-0" / f"{method}-{PROBE_STEPS}"
        trained = _train(method, family, PROBE_STEPS, 0, folder)
        per_step = trained["train_seconds"] / trained["steps"]
        table[method] = {"seconds_per_step": round(per_step, 2),
                         "fixed_seconds": round(trained["wall_seconds"] - trained["train_seconds"], 1),
                         "probe_steps": trained["steps"], "machine": machine()}
        logger.info("%s: %.2f s per step, %.0f s fixed", method, per_step, table[method]["fixed_seconds"])
        write_json(RESULTS, results)


def budget_steps(calibration: dict[str, Any], minutes: float) -> int:
    """The optimizer steps that fill `minutes` of wall time after the method's fixed cost."""
    left = minutes * 60 - calibration["fixed_seconds"]
    return max(PROBE_STEPS, int(left / calibration["seconds_per_step"]))


def _scores(encoder: Any, tasks: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, float]]:
    """Main score and row count per task/subset."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task

    result = evaluate(encoder, [get_task(name, **options) for name, options in tasks], show_progress=False)
    return {f"{s.task}/{s.subset}": {"value": round(float(s.value), 2), "n": s.n} for s in result.scores if s.main}


def score(entry: dict[str, Any], model: str, family: Family, save: Any, parts: tuple[str, ...] = PARTS) -> None:
    """The chosen parts' scores of one model, each kept as soon as it exists (a killed run keeps them)."""
    from polyembed.models.loading import load_model

    missing = [part for part in parts if part not in entry]
    if not missing:
        return
    encoder = load_model(model)
    for part in missing:
        started = time.perf_counter()
        entry[part] = _scores(encoder, FORGETTING if part == "forgetting" else getattr(family, part))
        entry.setdefault("eval_seconds", {})[part] = round(time.perf_counter() - started, 1)
        save()


def run(family_name: str, seeds: list[int], minutes: float, methods: list[str], curve: bool = False) -> None:
    """Score the base model, then train and score each method per seed at `minutes` of wall time. With `curve`,
    the runs are extra points of the budget curve (kept apart from the main budget's runs, dev and test only)."""
    results = _load()
    family = FAMILIES[family_name]
    calibration = results.get("calibration", {}).get(family_name, {})
    uncalibrated = [m for m in methods if m not in calibration]
    if uncalibrated:
        raise SystemExit(f"no calibration for {', '.join(uncalibrated)}: run `calibrate --family {family_name}` "
                         "first")
    runs = results.setdefault("families", {}).setdefault(family_name, {"runs": {}})
    runs.update({"languages": family.languages, "datasets": family.datasets, "described": family.described})
    runs["runs"].setdefault(BASE, {})
    score(runs["runs"][BASE], BASE, family, lambda: write_json(RESULTS, results))
    for seed in seeds:
        for method in methods:
            steps = budget_steps(calibration[method], minutes)
            key = f"{method}/seed-{seed}" + (f"/{minutes:g}-minutes" if curve else "")
            entry = runs["runs"].setdefault(key, {})
            if entry.get("minutes") != minutes or entry.get("steps") != steps:
                entry.clear()  # another budget: a new run in a new folder
            folder = OUT / family_name / f"seed-{seed}" / f"{method}-{steps}"
            trained = _train(method, family, steps, seed, folder)
            entry.update({"method": method, "seed": seed, "minutes": minutes, "steps": steps, "curve": curve,
                          "model_dir": str(trained["model_dir"]),
                          "wall_seconds": trained["wall_seconds"], "train_seconds": trained["train_seconds"],
                          "peak_memory_mb": trained["peak_memory_mb"], "machine": machine(),
                          "options": method_options(method, family, steps, seed)})
            if "stages" in trained:  # the modular pipeline: `steps` per stage
                entry["stages"] = trained["stages"]
            write_json(RESULTS, results)
            score(entry, trained["model_dir"], family, lambda: write_json(RESULTS, results),
                  CURVE_PARTS if curve else PARTS)
            logger.info("%s seed %d: %d steps in %.0f s", method, seed, steps, trained["wall_seconds"])
    render()


def forgetting(family_name: str, keys: list[str]) -> None:
    """Score the base model and the named runs (`method/seed-N`, already trained) on every Tatoeba and TICO-19
    language (FORGETTING)."""
    results = _load()
    family = FAMILIES[family_name]
    runs = results.get("families", {}).get(family_name, {}).get("runs", {})
    unknown = [key for key in keys if key not in runs or "steps" not in runs[key]]
    if unknown:
        raise SystemExit(f"no trained run {', '.join(unknown)} in the {family_name} family: run `run` first")
    runs[BASE]["model_dir"] = BASE
    scored = [family["runs"][BASE]["forgetting"] for family in results["families"].values()
              if "forgetting" in family.get("runs", {}).get(BASE, {})]
    if scored and "forgetting" not in runs[BASE]:  # the same model on the same tasks: scored once for all families
        runs[BASE]["forgetting"] = scored[0]
    for key in [BASE, *keys]:
        entry = runs[key]
        model = entry.get("model_dir") or str(OUT / family_name / f"seed-{entry['seed']}" /
                                               f"{entry['method']}-{entry['steps']}" / "model")
        score(entry, model, family, lambda: write_json(RESULTS, results), ("forgetting",))
        logger.info("%s: forgetting scored", key)
    render()


def main() -> None:
    parser, commands = script_parser(__doc__)
    probe = commands.add_parser("calibrate", help="seconds per step and fixed cost of each method")
    probe.add_argument("--family", choices=sorted(FAMILIES), default="african")
    probe.add_argument("--methods", nargs="+", choices=sorted(METHODS), default=list(METHODS))
    train = commands.add_parser("run", help="train and score every method per seed at one budget")
    train.add_argument("--family", choices=sorted(FAMILIES), default="african")
    train.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    train.add_argument("--minutes", type=float, default=8.0, help="wall-clock budget per run")
    train.add_argument("--methods", nargs="+", choices=sorted(METHODS), default=["tr", "distill", "tr+wtr"])
    train.add_argument("--curve", action="store_true",
                       help="extra points of the budget curve: kept apart from the main runs, dev and test only")
    forget = commands.add_parser("forgetting", help="every Tatoeba and TICO-19 language: the base and named runs")
    forget.add_argument("--family", choices=sorted(FAMILIES), default="african")
    forget.add_argument("--runs", nargs="+", required=True, help="trained runs, e.g. distill+tr/seed-0")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.command == "calibrate":
        calibrate(args.family, args.methods)
    elif args.command == "forgetting":
        forgetting(args.family, args.runs)
    else:
        run(args.family, args.seeds, args.minutes, args.methods, args.curve)


if __name__ == "__main__":
    main()
