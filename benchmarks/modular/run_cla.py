"""Choosing the CLA stage's learning rate, adapter scaling, loss and schedule on dev data (issues 14, 34):
results -> results/bench/modular/cla-ablation, docs.

  python -m benchmarks.modular.run_cla run --seed 0                      # de ru kk, the default grid
  python -m benchmarks.modular.run_cla run --seed 0 --settings 1e-4:4 1e-5:4 --languages ru
  python -m benchmarks.modular.run_cla run --seed 0 --settings 1e-5:4:400 3e-5:4:400   # more CLA steps
  python -m benchmarks.modular.run_cla run --seed 1 --settings 1e-5:4 --batch-mixing proportional --with-test
  python -m benchmarks.modular.run_cla run --seed 0 --settings 1e-5:4 --batches 1:0 --with-test  # paraphrases only
  python -m benchmarks.modular.run_cla run --seed 0 --settings 1e-5:4 --schedule linear-best --dev-measure sts
  python -m benchmarks.modular.run_cla run --seed 0 --settings 1e-4:4 --paraphrase-loss pivot   # today's loss
  python -m benchmarks.modular.run_cla run --seed 0 --settings 1e-4:4:50 1e-4:4:100 1e-4:4:200 --with-test
  python -m benchmarks.modular.run_cla genres --seed 1 --language ru   # en-ru STS per STS-B genre
  python -m benchmarks.modular.run_cla render

Why: retrieval against the pivot, the CLA stage's own dev measure, only needs each translation to be the
nearest pivot embedding; en-X STS needs graded similarities to survive the alignment, and a setting can keep
the one while losing the other. So settings are chosen here on the STS *dev* splits (stsb-multi-mt dev for
de/ru, Kardes STS dev for kk), never on the test sets the modular benchmark reports. Defaults of every flag are
the CLA stage's own (the authors' cross-model loss, constant learning rate, final model); a row names what it
changes.

Every setting trains the CLA stage from the same SE encoders and English pivot of
`python -m benchmarks.modular.run run --seed S` (which must have run first), then the two-language bundle it
writes is scored in mode cross (en-X STS and the language's monolingual STS through the adapter) and in mode mono
(the SE encoders: no CLA at all).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.common.results import load_json, write_json
from benchmarks.common.script_cli import script_parser
from benchmarks.modular.render_cla import render
from benchmarks.modular.scoring import sts_scores
from benchmarks.modular.spec import (
    COMMAND,
    DEFAULT_BATCHES,
    DEFAULT_LOSS,
    DEFAULT_MIXING,
    DEFAULT_SCHEDULE,
    KARDES,
    OUT,
    PIVOT,
    SCHEDULES,
    STSB,
    batches_label,
    parse_batches,
)

DEFAULT_SETTINGS = ["1e-4:4", "1e-4:1", "3e-5:4", "1e-5:4"]


def _parse_setting(text: str, default_steps: int) -> tuple[float, float, int]:
    """'learning-rate:adapter-scaling[:steps]' -> the numbers (steps: the pipeline's CLA steps when left out)."""
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3):
            raise ValueError(text)
        rate, scaling = float(parts[0]), float(parts[1])
        steps = int(parts[2]) if len(parts) == 3 else default_steps
    except ValueError:
        raise SystemExit(f"--settings: {text!r} is not learning-rate:adapter-scaling[:steps], e.g. 1e-5:4 or "
                         "1e-5:4:400") from None
    if steps < 1:
        raise SystemExit(f"--settings: {text!r} asks for {steps} steps; give at least 1")
    return rate, scaling, steps


def _name(rate: float, scaling: float, steps: int, default_steps: int, mixing: str = DEFAULT_MIXING,
          batches: str = DEFAULT_BATCHES, dev_measure: str = "retrieval", loss: str = DEFAULT_LOSS,
          schedule: str = DEFAULT_SCHEDULE) -> str:
    """A run's folder and key; the pipeline's own step count and the stage's defaults leave those out."""
    return (f"lr{rate:g}-scale{scaling:g}" + ("" if steps == default_steps else f"-steps{steps}")
            + ("" if mixing == DEFAULT_MIXING else f"-{mixing}")
            + ("" if batches == DEFAULT_BATCHES else f"-batches{batches.replace(':', 'to')}")
            + ("" if dev_measure == "retrieval" else f"-dev{dev_measure}")
            + ("" if loss == DEFAULT_LOSS else f"-{loss}loss")
            + ("" if schedule == DEFAULT_SCHEDULE else f"-{schedule}"))


def _bundle(run_folder: Path, pivot: str, language: str) -> Path:
    """The pivot and the aligned encoder (CLA adapters loaded) as a two-language bundle, written once."""
    from sentence_transformers import SentenceTransformer

    from polyembed.models.modular import save_modular_bundle
    from polyembed.models.parallel_adapter import load_parallel_adapters

    folder = run_folder / "bundle"
    if not folder.is_dir():
        aligned = SentenceTransformer(str(run_folder / "model"), device="cpu")
        load_parallel_adapters(aligned, str(run_folder / "model"))
        save_modular_bundle(folder, {PIVOT: SentenceTransformer(pivot, device="cpu"), language: aligned})
    return folder


def _pipeline_fingerprint(seed: int) -> str:
    """Which run of `benchmarks.modular.run run --seed S` the rows start from (a hash of its pipeline.json, which a
    rerun rewrites): rows and the 'no-cla' row are only compared within one pipeline."""
    import hashlib

    return hashlib.sha256((OUT / f"seed-{seed}" / "pipeline" / "pipeline.json").read_bytes()).hexdigest()[:12]


def _results_of_pipeline(seed: int, steps: int) -> dict[str, Any]:
    """The seed's stored rows if they start from its current pipeline; rows of another pipeline (or of an
    unknown one) are moved aside to results-<fingerprint>.json and the rows start afresh."""
    out = OUT / "cla-ablation" / f"seed-{seed}"
    fingerprint = _pipeline_fingerprint(seed)
    results = load_json(out / "results.json")
    if results is not None and results.get("pipeline") != fingerprint:
        stale = out / f"results-{results.get('pipeline', 'unknown')}.json"
        (out / "results.json").rename(stale)
        print(f"{out / 'results.json'} was measured on another seed-{seed} pipeline: moved to {stale.name}")
        results = None
    return results or {"seed": seed, "steps": steps, "pipeline": fingerprint, "languages": {}}


def run(seed: int, languages: list[str], settings: list[str], max_pairs: int, mixing: str = DEFAULT_MIXING,
        with_test: bool = False, batches: str = DEFAULT_BATCHES, dev_measure: str = "retrieval",
        loss: str = DEFAULT_LOSS, schedule: str = DEFAULT_SCHEDULE) -> None:
    """Train and score every setting not yet in the seed's results (`with_test`: also score the test split of
    runs and of 'no-cla' that lack it, as a check of whether dev predicts test)."""
    from polyembed.methods.modular.pipeline import run_stage
    from polyembed.models.loading import load_model

    pipeline = load_json(OUT / f"seed-{seed}" / "pipeline" / "pipeline.json")
    if pipeline is None:
        raise SystemExit(f"run `{COMMAND} run --seed {seed}` first: its SE encoders are the start")
    missing = [code for code in languages if code not in pipeline["languages"]]
    if missing:
        raise SystemExit(f"the seed-{seed} pipeline has no encoder for {', '.join(missing)}")
    for code in languages:
        if code not in STSB and code not in KARDES:
            raise SystemExit(f"{code}: no STS dev split here (stsb-multi-mt or Kardes STS) to choose on")
    config = pipeline["config"]
    pivot = pipeline["languages"][PIVOT]["stages"]["se"]["model_dir"]
    out = OUT / "cla-ablation" / f"seed-{seed}"
    results = _results_of_pipeline(seed, config["cla_steps"])
    for code in languages:
        student = pipeline["languages"][code]["stages"]["se"]["model_dir"]
        rows = results["languages"].setdefault(code, {})
        for text in settings:
            rate, scaling, steps = _parse_setting(text, config["cla_steps"])
            name = _name(rate, scaling, steps, config["cla_steps"], mixing, batches, dev_measure, loss, schedule)
            paraphrase_batches, parallel_batches = parse_batches(batches)
            if name not in rows:
                print(f"== {code}: CLA with learning rate {rate:g}, adapter scaling {scaling:g}, {steps} steps, "
                      f"{mixing} batches, {batches_label(batches)}, {loss} paraphrase loss, {schedule}, dev "
                      f"measure {dev_measure}")
                started = time.perf_counter()
                stage = run_stage("modular-cla", out / code / name, True, student=student, pivot=pivot,
                                  language=code, learning_rate=rate, adapter_scaling=scaling, max_steps=steps,
                                  batch_mixing=mixing, paraphrase_batches=paraphrase_batches,
                                  parallel_batches=parallel_batches, dev_measure=dev_measure,
                                  paraphrase_loss=loss, **SCHEDULES[schedule],
                                  batch_size=config["batch_size"],
                                  max_seq_length=config["max_seq_length"], seed=seed, keep_checkpoints=False)
                bundle = load_model(str(_bundle(out / code / name, pivot, code)))
                rows[name] = {"learning_rate": rate, "adapter_scaling": scaling, "steps": steps,
                              "batch_mixing": mixing, "batches": batches, "dev_measure": dev_measure,
                              "paraphrase_loss": loss, "schedule": schedule,
                              "dev_retrieval": stage.get("best", {}).get("eval_dev_mean_accuracy"),
                              **sts_scores(bundle.with_mode("cross"), code, max_pairs),
                              "seconds": round(time.perf_counter() - started, 1)}
                if "no-cla" not in rows:
                    rows["no-cla"] = sts_scores(bundle.with_mode("mono"), code, max_pairs)
                write_json(out / "results.json", results)
            if with_test:
                bundle = load_model(str(_bundle(out / code / name, pivot, code)))
                for key, mode in ((name, "cross"), ("no-cla", "mono")):
                    if "test_cross" not in rows[key]:
                        rows[key].update(sts_scores(bundle.with_mode(mode), code, max_pairs, split="test"))
                        write_json(out / "results.json", results)
    render()


def _genres(split: str) -> list[str]:
    """Each STS-B row's genre (captions / forums / news) from the English STS Benchmark files, whose rows
    stsb-multi-mt translates in the same order (checked on the English sentences)."""
    from polyembed.data.readers.sts import read_stsb_multi_mt
    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root

    root = data_root(None)
    path = get_dataset("stsbenchmark").path(root) / f"sts-{split}.csv"
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    english = read_stsb_multi_mt(get_dataset("stsb-multi-mt").path(root), "en", split)
    if len(rows) != len(english):
        raise SystemExit(f"{path}: {len(rows)} rows, stsb-multi-mt en {split} has {len(english)}: not aligned")
    same = sum(row[5].strip() == first.strip() for row, first in zip(rows, english.sentences1, strict=True))
    if same < 0.9 * len(rows):
        raise SystemExit(f"{path}: only {same} of {len(rows)} first sentences match stsb-multi-mt en {split}")
    return [row[0].removeprefix("main-") for row in rows]


def genres(seed: int, language: str) -> list[str]:
    """en-X and X STS of the seed's pipeline bundle per STS-B genre, dev and test, without CLA (mode mono)
    and with it (mode cross): where on the two splits does CLA gain or lose? -> genres-<language>.json."""
    import numpy as np

    from polyembed.data.readers.sts import read_stsb_multi_mt
    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root
    from polyembed.eval.tasks.sts import spearman
    from polyembed.models.loading import load_model

    if language not in STSB:
        raise SystemExit(f"{language}: stsb-multi-mt (with STS-B genres) has no {language}")
    bundle_dir = OUT / f"seed-{seed}" / "pipeline" / "bundle"
    if not bundle_dir.is_dir():
        raise SystemExit(f"no {bundle_dir}: run `{COMMAND} run --seed {seed}` first")
    bundle = load_model(str(bundle_dir))
    folder = get_dataset("stsb-multi-mt").path(data_root(None))
    table: dict[str, Any] = {"seed": seed, "language": language, "splits": {}}
    for split in ("dev", "test"):
        labels = np.array(_genres(split))
        english, other = read_stsb_multi_mt(folder, "en", split), read_stsb_multi_mt(folder, language, split)
        gold = np.array(english.scores)
        scores: dict[str, dict[str, dict[str, float]]] = {}
        for mode in ("mono", "cross"):
            en1, en2, x1, x2 = (bundle.encode(texts, language=code, mode=mode) for texts, code in (
                (english.sentences1, "en"), (english.sentences2, "en"),
                (other.sentences1, language), (other.sentences2, language)))

            def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
                return np.einsum("ij,ij->i", a, b) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)

            mono, forward, backward = cosine(x1, x2), cosine(en1, x2), cosine(x1, en2)
            for genre in ["all", *sorted(set(labels))]:
                rows = np.ones(len(gold), bool) if genre == "all" else labels == genre
                scores.setdefault(genre, {})[mode] = {
                    "pairs": int(rows.sum()),
                    "mono": round(spearman(mono[rows], gold[rows]), 2),
                    "cross": round((spearman(forward[rows], gold[rows]) + spearman(backward[rows], gold[rows])) / 2, 2),
                    "cross_mean_cosine": round(float((forward[rows] + backward[rows]).mean() / 2), 4),
                }
        table["splits"][split] = scores
    write_json(OUT / "cla-ablation" / f"seed-{seed}" / f"genres-{language}.json", table)
    lines = [
        f"en-{language} and {language} STS per STS-B genre, seed {seed}'s pipeline bundle without CLA (mode mono) "
        "and with it (mode cross); Spearman x100:",
        "",
        f"| split | genre | pairs | en-{language} no CLA | en-{language} CLA | change | {language} no CLA | "
        f"{language} CLA | mean en-{language} cosine no CLA / CLA |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for split, by_genre in table["splits"].items():
        for genre, modes in by_genre.items():
            before, after = modes["mono"], modes["cross"]
            lines.append(
                f"| {split} | {genre} | {before['pairs']} | {before['cross']:.1f} | {after['cross']:.1f} | "
                f"{after['cross'] - before['cross']:+.1f} | {before['mono']:.1f} | {after['mono']:.1f} | "
                f"{before['cross_mean_cosine']:.3f} / {after['cross_mean_cosine']:.3f} |"
            )
    print("\n".join(lines))
    return lines


def main() -> None:
    parser, commands = script_parser(__doc__)
    one = commands.add_parser("run", help="train and score each CLA setting for each language, then render")
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--languages", nargs="+", default=["de", "ru", "kk"])
    one.add_argument("--settings", nargs="+", default=DEFAULT_SETTINGS,
                     help="learning-rate:adapter-scaling[:steps]")
    one.add_argument("--max-pairs", type=int, default=1000, help="dev STS pairs per subset")
    one.add_argument("--batch-mixing", choices=["round-robin", "proportional"], default=DEFAULT_MIXING,
                     help="how the CLA stage alternates paraphrase and parallel batches")
    one.add_argument("--batches", default=DEFAULT_BATCHES,
                     help="paraphrase:parallel batches per cycle (1:0 paraphrases only, the arXiv paper's CLA)")
    one.add_argument("--dev-measure", choices=["retrieval", "sts"], default="retrieval",
                     help="the CLA stage's dev measure (it picks the kept checkpoint with --schedule linear-best)")
    one.add_argument("--paraphrase-loss", choices=["cross-model", "pivot"], default=DEFAULT_LOSS,
                     help="paraphrase batches: the authors' cross-model MNRL or pivot-only candidates")
    one.add_argument("--schedule", choices=list(SCHEDULES), default=DEFAULT_SCHEDULE,
                     help="constant learning rate and the final model (the authors'), or warm-up, linear decay and "
                          "the best checkpoint by the dev measure")
    one.add_argument("--with-test", action="store_true",
                     help="also score the test split (a column beside dev: does dev predict test?)")
    by_genre = commands.add_parser("genres", help="en-X STS per STS-B genre with and without CLA, dev and test")
    by_genre.add_argument("--seed", type=int, default=0)
    by_genre.add_argument("--language", default="ru")
    commands.add_parser("render", help="rewrite the docs section from the saved results")
    args = parser.parse_args()
    if args.command == "run":
        parse_batches(args.batches)
        run(args.seed, args.languages, args.settings, args.max_pairs, args.batch_mixing, args.with_test, args.batches,
            args.dev_measure, args.paraphrase_loss, args.schedule)
    elif args.command == "genres":
        genres(args.seed, args.language)
    else:
        render()


if __name__ == "__main__":
    main()
