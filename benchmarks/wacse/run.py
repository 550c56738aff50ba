"""WACSE's ablation in miniature (issue 15): results -> results/bench/wacse, docs/benchmarks.md.

  python -m benchmarks.wacse.run run --seeds 0 1 --steps 300    # TR, TR+AWP, TR+WTR, TR+AWP+WTR from me5-small
  python -m benchmarks.wacse.run run --seeds 0 --variants tr tr+awp+wtr   # a subset
  python -m benchmarks.wacse.run budget --seeds 0 1 --steps 100 200 300   # TR against TR+AWP+WTR per budget
  python -m benchmarks.wacse.run figure --seed 0                # t-SNE of aligned word pairs (the paper's Figure 1)
  python -m benchmarks.wacse.run dev --seeds 0 --steps 300      # the open choices of issue 35, scored on dev splits
  python -m benchmarks.wacse.run render                         # rewrite the docs section from the saved JSON

Every variant trains on the same Tatoeba-Challenge bitext of the low-resource languages that LASER Tatoeba
tests (its test pairs left out), for the same steps, then is scored on LASER Tatoeba (both directions, low- and
high-resource), STS2017's cross-lingual tracks, and a word-level score: the mean cosine between the words of
held-out pairs that the aligner links (under-alignment: low for words far from their translations). The last
variant adds the paper's language embeddings (Table 8); its Tatoeba and STS inputs carry their language, its
word-level score does not (token type 0).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any, NamedTuple

from benchmarks.common.results import FIGURES, REPO, write_json
from benchmarks.common.script_cli import script_parser
from benchmarks.wacse.render import render
from benchmarks.wacse.run_dev import dev, kardes_dev_sts, set_aside
from benchmarks.wacse.spec import (
    DEV_CHOICES,
    HIGH,
    LOW,
    OUT,
    VARIANTS,
    run_fingerprint,
    trained_fingerprint,
    variant_options,
)
from polyembed.outputs import atomic_write

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class AlignedWords(NamedTuple):
    """The word pairs the aligner links in held-out pairs: vectors (one row per pair) and lower-cased words."""

    english: Any
    other: Any
    english_words: list[str]
    other_words: list[str]


def aligned_words(model: Any, english: list[str], other: list[str], links: list[list[tuple[int, int]]]
                  ) -> AlignedWords:
    """Word vectors at the model's last layer (a word: the mean of its tokens) for every linked pair."""
    import numpy as np

    from polyembed.alignment.similarity import WordVectorEncoder
    from polyembed.methods.wacse.alignments import split_words

    encoder = WordVectorEncoder(model, layer=model[0].auto_model.config.num_hidden_layers, max_length=64)
    english_words = [[w for w, _, _ in split_words(t)] for t in english]
    other_words = [[w for w, _, _ in split_words(t)] for t in other]
    source, target = encoder.word_vectors(english_words, 64), encoder.word_vectors(other_words, 64)
    pairs = [(s[i], t[j], e[i].lower(), o[j].lower())
             for s, t, e, o, row in zip(source, target, english_words, other_words, links, strict=True)
             for i, j in row]
    return AlignedWords(np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs]),
                        [p[2] for p in pairs], [p[3] for p in pairs])


def under_alignment(words: AlignedWords) -> dict[str, float]:
    """Two word-level scores (x100): the mean cosine of linked pairs, and word translation retrieval: each linked
    word against every linked word of the other language in the held-out set, a hit when the nearest one is the
    same word as its translation (mean of both directions). Retrieval is blind to how anisotropic a space is,
    which shifts all cosines together."""
    import numpy as np

    a = words.english / np.maximum(np.linalg.norm(words.english, axis=1, keepdims=True), 1e-12)
    b = words.other / np.maximum(np.linalg.norm(words.other, axis=1, keepdims=True), 1e-12)
    similarity = a @ b.T
    forward = [words.other_words[j] == words.other_words[i] for i, j in enumerate(similarity.argmax(1))]
    backward = [words.english_words[i] == words.english_words[j] for j, i in enumerate(similarity.argmax(0))]
    return {"aligned_word_cosine": round(100 * float(np.diag(similarity).mean()), 2),
            "word_retrieval": round(50 * (float(np.mean(forward)) + float(np.mean(backward))), 2)}


def _dev_links(seed: int) -> tuple[list[str], list[str], list[list[tuple[int, int]]]]:
    """The held-out pairs (English, other) of this seed's split, which its models never trained on, and the
    links of me5-small's itermax aligner on them that pass its threshold (fixed, whatever aligner training
    used: the score compares models on the same word pairs; eflomal on a few hundred pairs is too sparse)."""
    from polyembed.methods.base.bitext import prepare_bitext
    from polyembed.methods.wacse.alignments import align_bitext
    from polyembed.methods.wacse.config import WacseConfig

    config = WacseConfig(seed=seed, aligner="itermax")
    bitext = prepare_bitext(config)
    english = [e for s in bitext.dev for e in s.english]
    other = [o for s in bitext.dev for o in s.other]
    links = [[link for link, score in row.items() if score >= config.alignment_threshold]
             for row in align_bitext(english, other, config.aligner, config.aligner_model, config.aligner_layer)]
    return english, other, links


def figure(seed: int, names: list[str], points: int) -> None:
    """The paper's Figure 1 for our models: PCA and t-SNE of aligned word pairs (English, low-resource) from the
    held-out pairs, one figure per model; words far from their translations show as two separate clouds."""
    from polyembed.eval.tasks.geometry import projection_figure
    from polyembed.models.loading import as_sentence_transformer, load_model

    english, other, links = _dev_links(seed)
    for name in names:
        path = "me5-small" if name == "me5-small" else str(OUT / f"seed-{seed}" / name / "model")
        model = as_sentence_transformer(load_model(path))[0]
        words = aligned_words(model, english, other, links)
        a, b = words.english, words.other
        title = name if name == "me5-small" else f"{name}, seed {seed}"  # its scores are in the table
        plot = projection_figure({"English words": a, "their low-resource translations": b}, title,
                                 max_ids=points, seed=seed)
        target = FIGURES / f"wacse-words-{name}.png"
        drawn_from = {"model": name, "seed": seed,
                      "fingerprint": None if name == "me5-small" else trained_fingerprint({}, Path(path).parent)}
        with atomic_write(target, "wb") as handle:  # the run it shows travels with the image (results/ does not)
            plot.savefig(handle, format="png", dpi=100, bbox_inches="tight",
                         metadata={"Description": json.dumps(drawn_from)})
        print(f"wrote {target.relative_to(REPO)} ({len(a)} linked word pairs, {min(points, len(a))} drawn)")
    render()


TASKS = [("tatoeba", {"languages": [*LOW.values(), *HIGH]}), ("sts17", {"languages": ["ar-en", "es-en", "tr-en"]})]


def _score(results: dict[str, Any], entry: dict[str, Any], path: str, seed: int,
           dev: tuple[list[str], list[str], list[list[tuple[int, int]]]]) -> None:
    """Score a model as soon as it exists (a killed series keeps them). Word scores are keyed by the seed whose
    held-out pairs they use: a trained model's own seed, me5-small's every seed."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task
    from polyembed.models.loading import as_sentence_transformer, load_model

    words = entry.setdefault("words", {})
    if "scores" in entry and "dev_sts" in entry and str(seed) in words:
        return
    encoder = load_model(path)
    if "scores" not in entry:
        result = evaluate(encoder, [get_task(t, **o) for t, o in TASKS], show_progress=False)
        entry["scores"] = {f"{s.task}/{s.subset}": round(float(s.value), 2) for s in result.scores if s.main}
    if "dev_sts" not in entry:  # what a choice between the variants may rest on (the test columns may not)
        entry["dev_sts"] = kardes_dev_sts(encoder)
        _save(results)
    if str(seed) in words:
        return
    english, other, links = dev
    vectors = aligned_words(as_sentence_transformer(encoder)[0], english, other, links)
    words[str(seed)] = {**under_alignment(vectors), "dev_pairs": len(english),
                        "dev_links": sum(len(row) for row in links)}
    _save(results)


def _train(results: dict[str, Any], runs: dict[str, Any], key: str, folder: Path, options: dict[str, Any],
           dev: tuple[list[str], list[str], list[list[tuple[int, int]]]]) -> None:
    """Train one run (unless done at these options) and score it; a run saved with other options (a default
    changed since) is trained and scored again, its old folder set aside. What counts is the folder's config.yaml:
    a row whose saved fingerprint differs only because an option was added since (its default trains as before)
    keeps its scores."""
    from polyembed.methods.modular.pipeline import run_stage

    fingerprint = run_fingerprint(options)
    if key in runs and runs[key].get("fingerprint") != fingerprint:
        config_file = folder / "config.yaml"
        if config_file.is_file() and run_fingerprint(config_file=config_file) == fingerprint:
            runs[key]["fingerprint"] = fingerprint
        else:
            runs.pop(key)
    if key not in runs:
        set_aside(folder, fingerprint)
    trained = run_stage("wacse", folder, True, **options, keep_checkpoints=False)
    runs.setdefault(key, {}).update({k: trained.get(k) for k in ("wall_seconds", "peak_memory_mb", "steps", "best")}
                                    | {"fingerprint": fingerprint, "resumed": bool(trained.get("resumed"))})
    _score(results, runs[key], trained["model_dir"], options["seed"], dev)


def run(seeds: list[int], steps: int, batch_size: int, variants: list[str]) -> None:
    """Train each variant per seed at today's defaults and score it (ablation.json)."""
    results = _load() or {"runs": {}}
    results |= {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "steps": steps, "batch_size": batch_size}
    for seed in seeds:
        dev = _dev_links(seed)
        _score(results, results["runs"].setdefault("me5-small", {}), "me5-small", seed, dev)
        for name in variants:
            _train(results, results["runs"], f"{name}/seed-{seed}", OUT / f"seed-{seed}" / name,
                   variant_options(name, steps, batch_size, seed), dev)
    render()


def budget(seeds: list[int], budgets: list[int], batch_size: int, variants: list[str]) -> None:
    """The budget curve: each variant trained for each number of steps (ablation.json "budget"); a budget equal
    to the ablation's reuses that run when its options match."""
    results = _load() or {"runs": {}}
    curve = results.setdefault("budget", {"batch_size": batch_size, "runs": {}})
    if curve.get("batch_size") != batch_size:
        curve.update({"batch_size": batch_size, "runs": {}})  # another batch size: a new curve
    for seed in seeds:
        dev = _dev_links(seed)
        for steps in budgets:
            for name in variants:
                key, options = f"{name}@{steps}/seed-{seed}", variant_options(name, steps, batch_size, seed)
                same = results["runs"].get(f"{name}/seed-{seed}", {})
                trained = trained_fingerprint(same, OUT / f"seed-{seed}" / name)  # as the table counts it
                if trained == run_fingerprint(options) and "scores" in same:
                    curve["runs"][key] = {**same, "same_run_as": f"{name}/seed-{seed}"}
                    _save(results)
                    continue
                _train(results, curve["runs"], key, OUT / "budget" / f"seed-{seed}" / f"{name}-{steps}", options, dev)
    render()


def _save(payload: dict[str, Any]) -> None:
    write_json(OUT / "ablation.json", payload)


def _load() -> dict[str, Any] | None:
    path = OUT / "ablation.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def main() -> None:
    parser, commands = script_parser(__doc__)
    one = commands.add_parser("run")
    one.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    one.add_argument("--steps", type=int, default=300)
    one.add_argument("--batch-size", type=int, default=32)
    one.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    curve = commands.add_parser("budget", help="TR against the word objectives at several numbers of steps")
    curve.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    curve.add_argument("--steps", nargs="+", type=int, default=[100, 200, 300])
    curve.add_argument("--batch-size", type=int, default=32)
    curve.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=["tr", "tr+awp+wtr"])
    drawn = commands.add_parser("figure")
    drawn.add_argument("--seed", type=int, default=0)
    drawn.add_argument("--models", nargs="+", choices=["me5-small", *VARIANTS],
                       default=["me5-small", "tr", "tr+awp+wtr"])
    drawn.add_argument("--points", type=int, default=200, help="word pairs drawn per figure")
    choose = commands.add_parser("dev")
    choose.add_argument("--seeds", nargs="+", type=int, default=[0])
    choose.add_argument("--steps", type=int, default=300)
    choose.add_argument("--batch-size", type=int, default=32)
    choose.add_argument("--choices", nargs="+", choices=list(DEV_CHOICES),
                        default=list(DEV_CHOICES))
    commands.add_parser("render")
    args = parser.parse_args()
    if args.command == "run":
        run(args.seeds, args.steps, args.batch_size, args.variants)
    elif args.command == "budget":
        budget(args.seeds, args.steps, args.batch_size, args.variants)
    elif args.command == "dev":
        dev(args.seeds, args.steps, args.batch_size, args.choices)
    elif args.command == "figure":
        figure(args.seed, args.models, args.points)
    else:
        render()


if __name__ == "__main__":
    main()
