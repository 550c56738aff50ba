"""Which language adaptation keeps what the base model knew (issue 34): results -> results/bench/modular/la-study,
docs.

  python -m benchmarks.modular.run_la run --seed 0                     # de ru kk, every variant
  python -m benchmarks.modular.run_la run --seed 0 --languages kk --variants skip frozen-embeddings
  python -m benchmarks.modular.run_la render

Why: in the modular miniature the LA stage (continued MLM with LoRA and a trainable embedding matrix) loses
cross-lingual alignment before CLA starts. Each variant here runs LA (or none) and then the same SE stage from the
seed's pruned vocabulary, for the pipeline's step counts, and each encoder is measured on dev before LA, after LA
and after SE: the language's monolingual STS and en-X STS against the seed's English pivot (stsb-multi-mt dev,
Kardes STS dev), and retrieval of held-out bitext against the pivot (the CLA stage's own dev pairs). The variant
is chosen per language on dev (en-X STS after SE); Tatoeba and STS test numbers are shown beside it, never chosen
on. `python -m benchmarks.modular.run run --seed S` must have run first: its pruned vocabularies, LA and SE runs
and pivot are reused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.common.results import load_json, write_json
from benchmarks.common.script_cli import script_parser
from benchmarks.modular.render_la import render
from benchmarks.modular.scoring import sts_scores
from benchmarks.modular.spec import COMMAND, KARDES, LA_LABELS, LASER, OUT, PIVOT, STSB

VARIANTS: dict[str, dict[str, Any] | None] = {
    "pipeline": {},  # the seed's own pipeline LA (and SE) run: LoRA, trainable embeddings, its learning rate
    "frozen-embeddings": {"train_embeddings": False, "learning_rate": 2e-4},  # rates pinned: the stage's default
    "low-lr": {"learning_rate": 5e-5},                                         # changed (2e-4, then 5e-5)
    "skip": None,  # no LA: SE starts from the pruned vocabulary
}


def _bundle(folder: Path, pivot: str, language: str, model_dir: str) -> Path:
    """The pivot and one language encoder as a two-language bundle (mode mono), written once."""
    from sentence_transformers import SentenceTransformer

    from polyembed.models.modular import save_modular_bundle

    if not folder.is_dir():
        save_modular_bundle(folder, {PIVOT: SentenceTransformer(pivot, device="cpu"),
                                     language: SentenceTransformer(model_dir, device="cpu")})
    return folder


def _retrieval(model_dir: str, pivot: str, language: str, seed: int, dev_pairs: int) -> float:
    """Dev retrieval (both directions, percent) of the CLA stage's held-out pairs against the pivot."""
    from sentence_transformers import SentenceTransformer

    from polyembed.methods.modular.config import CrossLingualAlignmentConfig
    from polyembed.methods.modular.cross_lingual_alignment import PivotAlignmentEvaluator, prepare_alignment

    data = prepare_alignment(CrossLingualAlignmentConfig(language=language, seed=seed, student=model_dir,
                                                         pivot=pivot, dev_pairs=dev_pairs))
    english = SentenceTransformer(pivot, device="cpu").encode(data.dev[1], batch_size=64)
    metrics = PivotAlignmentEvaluator(data.dev[0], english, batch_size=64)(SentenceTransformer(model_dir,
                                                                                               device="cpu"))
    return round(float(metrics["dev_mean_accuracy"]), 2)


def _learning_rate(run_folder: Path) -> float:
    """The learning rate an LA run trained at, from its config.yaml (the stage's default changes over time)."""
    import yaml

    return float(yaml.safe_load((run_folder / "config.yaml").read_text(encoding="utf-8"))["learning_rate"])


def _test_scores(bundle: Any, language: str) -> dict[str, float]:
    """Test split: the language's mono and en-X STS (500 pairs) and LASER Tatoeba (500 rows), mode mono."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task

    scores = sts_scores(bundle, language, 500, split="test")
    if LASER.get(language):
        result = evaluate(bundle, [get_task("tatoeba", languages=[LASER[language]], max_rows=500)],
                          show_progress=False)
        scores["test_tatoeba"] = round(next(float(s.value) for s in result.scores if s.metric == "accuracy"), 2)
    return scores


def _measure(folder: Path, pivot: str, language: str, model_dir: str, config: dict[str, Any], test: bool
             ) -> dict[str, float]:
    from polyembed.models.loading import load_model

    bundle = load_model(str(_bundle(folder, pivot, language, model_dir))).with_mode("mono")
    retrieval = _retrieval(model_dir, pivot, language, config["seed"], config["dev_pairs"])
    scores = {**sts_scores(bundle, language, 1500), "retrieval": retrieval}
    return {**scores, **(_test_scores(bundle, language) if test else {})}


def run(seed: int, languages: list[str], variants: list[str]) -> None:
    from polyembed.methods.modular.pipeline import run_stage

    pipeline = load_json(OUT / f"seed-{seed}" / "pipeline" / "pipeline.json")
    if pipeline is None:
        raise SystemExit(f"run `{COMMAND} run --seed {seed}` first: its stages are the start")
    for code in languages:
        if code not in pipeline["languages"] or "la" not in pipeline["languages"][code]["stages"]:
            raise SystemExit(f"the seed-{seed} pipeline has no LA run for {code}")
        if code not in STSB and code not in KARDES:
            raise SystemExit(f"{code}: no STS dev split here (stsb-multi-mt or Kardes STS) to choose on")
    config = pipeline["config"]
    pivot = pipeline["languages"][PIVOT]["stages"]["se"]["model_dir"]
    out = OUT / "la-study" / f"seed-{seed}"
    results = load_json(out / "results.json") or {"seed": seed, "la_steps": config["la_steps"],
                                                  "se_steps": config["se_steps"], "languages": {}}
    shared = {"batch_size": config["batch_size"], "max_seq_length": config["max_seq_length"], "seed": seed,
              "adapter": config["adapter"], "keep_checkpoints": False}
    for code in languages:
        rows = results["languages"].setdefault(code, {})
        stages = pipeline["languages"][code]["stages"]
        vocabulary = str(Path(OUT / f"seed-{seed}" / "pipeline" / code / f"vocabulary-{config['vocabulary']}"))
        if "before" not in rows:
            print(f"== {code}: before LA")
            rows["before"] = _measure(out / code / "before" / "bundle", pivot, code, vocabulary, config, True)
            write_json(out / "results.json", results)
        for name in variants:
            if name == "pipeline" and name in rows and "learning_rate" not in rows[name]:
                rows[name]["learning_rate"] = _learning_rate(Path(stages["la"]["model_dir"]).parent)
                write_json(out / "results.json", results)
            if name in rows:
                continue
            options = VARIANTS[name]
            print(f"== {code}: {LA_LABELS[name]}")
            row: dict[str, Any] = {}
            if name == "pipeline":
                la_dir, se_dir = stages["la"]["model_dir"], stages["se"]["model_dir"]
                row["learning_rate"] = _learning_rate(Path(la_dir).parent)
            else:
                start = vocabulary
                la_dir = None
                if options is not None:
                    la = run_stage("modular-la", out / code / name / "la", True, student=vocabulary, language=code,
                                   max_steps=config["la_steps"], max_sentences=config["max_pairs"],
                                   heldout_sentences=config["dev_pairs"],
                                   **options, **shared)
                    la_dir = start = la["model_dir"]
                se = run_stage("modular-se", out / code / name / "se", True, student=start, language=code,
                               max_steps=config["se_steps"], max_pairs=config["max_pairs"],
                               dev_pairs=config["dev_pairs"], **shared)
                se_dir = se["model_dir"]
            if la_dir is not None:
                row["after_la"] = _measure(out / code / name / "la-bundle", pivot, code, la_dir, config, False)
            row["after_se"] = _measure(out / code / name / "se-bundle", pivot, code, se_dir, config, True)
            rows[name] = row
            write_json(out / "results.json", results)
    render()


def main() -> None:
    parser, commands = script_parser(__doc__)
    one = commands.add_parser("run", help="each LA variant, then SE, measured on dev (and test), one seed")
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--languages", nargs="+", default=["de", "ru", "kk"])
    one.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    commands.add_parser("render", help="rewrite the docs section from the saved results")
    args = parser.parse_args()
    if args.command == "run":
        run(args.seed, args.languages, args.variants)
    else:
        render()


if __name__ == "__main__":
    main()
