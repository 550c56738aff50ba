"""WACSE's ablation in miniature (issue 15): results -> results/bench/wacse, docs/benchmarks.md.

  python benchmarks/wacse.py run --seeds 0 1 --steps 300    # TR, TR+AWP, TR+WTR, TR+AWP+WTR from me5-small
  python benchmarks/wacse.py run --seeds 0 --variants tr tr+awp+wtr   # a subset
  python benchmarks/wacse.py figure --seed 0                # t-SNE of aligned word pairs (the paper's Figure 1)
  python benchmarks/wacse.py dev --seeds 0 --steps 300      # the open choices of issue 35, scored on dev splits
  python benchmarks/wacse.py render                         # rewrite the docs section from the saved JSON

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

from docs_sections import missing_tables, publish, replace_section
from result_files import write_json
from script_cli import script_parser

from polyembed.eval.tasks.retrieval import TatoebaRetrieval
from polyembed.outputs import atomic_write

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "results" / "bench" / "wacse"
DOCS = REPO / "docs" / "benchmarks.md"
FIGURES = REPO / "docs" / "figures"
START, END = "<!-- wacse:start -->", "<!-- wacse:end -->"
VARIANTS: dict[str, dict[str, Any]] = {
    "tr": {"objectives": ["tr"]},
    "tr+awp": {"objectives": ["tr", "awp"]},
    "tr+wtr": {"objectives": ["tr", "wtr"]},
    "tr+awp+wtr": {"objectives": ["tr", "awp", "wtr"]},
    "tr+awp+wtr+language-embeddings": {"objectives": ["tr", "awp", "wtr"], "language_embeddings": True},
}
DEV_CHOICES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "tr-only": {"objectives": ["tr"]},
    "head-warmup-50": {"awp_head_warmup_steps": 50},
    "frozen-embeddings": {"freeze_embeddings": True},
    "cls-pooling": {"pooling": "cls"},
    "itermax-links": {"aligner": "itermax"},
    "eflomal-all-links": {"alignment_threshold": 0.5},
    "wtr-scale-20": {"wtr_scale": 20.0},
    "awp-one-link": {"awp_links": "one"},
    "awp-links-together": {"awp_links": "together"},
}
"""Issue 35's open choices, each against the defaults (all three objectives): TR alone (what the word objectives
add or cost on dev), the AWP head's warm-up or frozen embeddings, CLS against mean pooling, the aligner and its
threshold, WTR's scale, AWP's links. Scored on dev splits only: the run's own held-out translation retrieval and
Kardes STS dev (en-X for the four trained Turkic languages it has, and monolingual)."""
DEV_STS_LANGUAGES = ["kk", "uz", "az", "ug"]
LOW = {code: TatoebaRetrieval.subset(code) for code in ("kk", "ug", "tt", "tk", "uz", "az", "sw")}
HIGH = ["deu", "fra", "rus", "cmn", "jpn", "tur"]


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
        with atomic_write(target, "wb") as handle:
            plot.savefig(handle, format="png", dpi=100, bbox_inches="tight")
        print(f"wrote {target.relative_to(REPO)} ({len(a)} linked word pairs, {min(points, len(a))} drawn)")
    render()


def run(seeds: list[int], steps: int, batch_size: int, variants: list[str]) -> None:
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task
    from polyembed.methods.modular.pipeline import run_stage
    from polyembed.models.loading import as_sentence_transformer, load_model

    tasks = [("tatoeba", {"languages": [*LOW.values(), *HIGH]}), ("sts17", {"languages": ["ar-en", "es-en", "tr-en"]})]
    results = _load() or {"runs": {}}
    results |= {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "steps": steps, "batch_size": batch_size}
    for stale in ("dev_pairs", "dev_links"):  # now per seed, in each entry's "words"
        results.pop(stale, None)

    def score(key: str, path: str, seed: int, dev: tuple[list[str], list[str], list[list[tuple[int, int]]]]) -> None:
        """Scores a model as soon as it exists (a killed series keeps them). Word scores are keyed by the seed
        whose held-out pairs they use: a trained model's own seed, me5-small's every seed."""
        entry = results["runs"].setdefault(key, {})
        words = entry.setdefault("words", {})
        if "scores" in entry and str(seed) in words:
            return
        encoder = load_model(path)
        if "scores" not in entry:
            result = evaluate(encoder, [get_task(t, **o) for t, o in tasks], show_progress=False)
            entry["scores"] = {f"{s.task}/{s.subset}": round(float(s.value), 2) for s in result.scores if s.main}
        english, other, links = dev
        vectors = aligned_words(as_sentence_transformer(encoder)[0], english, other, links)
        words[str(seed)] = {**under_alignment(vectors), "dev_pairs": len(english),
                            "dev_links": sum(len(row) for row in links)}
        for stale in ("aligned_word_cosine", "word_retrieval"):  # older files scored every seed on seed 0's split
            entry.pop(stale, None)
        _save(results)

    for seed in seeds:
        dev = _dev_links(seed)
        score("me5-small", "me5-small", seed, dev)
        for name in variants:
            trained = run_stage("wacse", OUT / f"seed-{seed}" / name, True, **VARIANTS[name], max_steps=steps,
                                batch_size=batch_size, seed=seed, keep_checkpoints=False)
            results["runs"].setdefault(f"{name}/seed-{seed}", {}).update(
                {k: trained.get(k) for k in ("wall_seconds", "peak_memory_mb", "steps", "best")})
            score(f"{name}/seed-{seed}", trained["model_dir"], seed, dev)
    render()


def dev_fingerprint(options: dict[str, Any] | None = None, config_file: Path | None = None) -> str:
    """A short hash of every option a WACSE run trains with (the choice's options over today's defaults, or a run
    folder's config.yaml), housekeeping and the output folder aside: rows trained before a default changed stop
    counting for that choice, and two choices that resolve to the same run share it."""
    import dataclasses
    import hashlib

    from polyembed.config import build_config
    from polyembed.methods.base.run import HOUSEKEEPING_OPTIONS
    from polyembed.methods.wacse.config import WacseConfig

    config, _ = build_config(WacseConfig, config_file, options or {})
    resolved = {key: value for key, value in dataclasses.asdict(config).items()
                if key not in HOUSEKEEPING_OPTIONS and key != "output_dir"}
    return hashlib.sha256(json.dumps(resolved, sort_keys=True).encode("utf-8")).hexdigest()[:12]


def _choice_options(name: str, steps: int, batch_size: int, seed: int) -> dict[str, Any]:
    return {**DEV_CHOICES[name], "max_steps": steps, "batch_size": batch_size, "seed": seed}


def _dev_fingerprints(saved: dict[str, Any]) -> dict[str, str]:
    """The fingerprint each saved run key ('choice/seed-S') would have today at the saved steps and batch size."""
    out = {}
    for key in saved["runs"]:
        name, _, seed = key.partition("/seed-")
        if name in DEV_CHOICES and seed.isdigit():
            out[key] = dev_fingerprint(_choice_options(name, saved["steps"], saved["batch_size"], int(seed)))
    return out


def _load_dev() -> dict[str, Any] | None:
    """dev.json, if stored; a run saved before fingerprints gets its folder's (config.yaml says what it trained)."""
    path = OUT / "dev.json"
    if not path.is_file():
        return None
    saved = json.loads(path.read_text(encoding="utf-8"))
    for key, run in saved["runs"].items():
        name, _, seed = key.partition("/seed-")
        config_file = OUT / "dev" / f"seed-{seed}" / name / "config.yaml"
        if "fingerprint" not in run and seed and config_file.is_file():
            run["fingerprint"] = dev_fingerprint(config_file=config_file)
    return saved


def dev(seeds: list[int], steps: int, batch_size: int, choices: list[str]) -> None:
    """Train each choice per seed and score it on dev splits (dev.json); prints the table. A choice whose options
    resolve to a run already scored for that seed (e.g. after a default changed) reuses that run's scores."""
    from polyembed.eval.api import evaluate
    from polyembed.eval.registry import get_task
    from polyembed.methods.modular.pipeline import run_stage
    from polyembed.models.loading import load_model

    path = OUT / "dev.json"
    saved = _load_dev() or {"runs": {}}
    saved |= {"steps": steps, "batch_size": batch_size, "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    task = get_task("kardes-sts", languages=["en", *DEV_STS_LANGUAGES], split="dev")

    def sts(model_path: str) -> dict[str, float]:
        result = evaluate(load_model(model_path), [task], show_progress=False)
        return {s.subset: round(float(s.value), 2) for s in result.scores if s.main}

    if "me5-small" not in saved["runs"]:
        saved["runs"]["me5-small"] = {"sts": sts("me5-small")}
    write_json(path, saved)
    for seed in seeds:
        for name in choices:
            key, options = f"{name}/seed-{seed}", _choice_options(name, steps, seed=seed, batch_size=batch_size)
            fingerprint = dev_fingerprint(options)
            if saved["runs"].get(key, {}).get("fingerprint") == fingerprint:
                continue  # a run at other options, steps or batch size is trained again, never mixed in
            same = [other for other, run in saved["runs"].items() if other.endswith(f"/seed-{seed}")
                    and run.get("fingerprint") == fingerprint and "sts" in run]
            if same:
                saved["runs"][key] = {**saved["runs"][same[0]], "options": DEV_CHOICES[name], "same_run_as": same[0]}
                write_json(path, saved)
                continue
            folder = OUT / "dev" / f"seed-{seed}" / name
            if (folder / "config.yaml").is_file() and dev_fingerprint(config_file=folder / "config.yaml") != \
                    fingerprint:  # trained before a default changed: set aside, not mixed in
                folder.rename(folder.with_name(f"{name}-{dev_fingerprint(config_file=folder / 'config.yaml')}"))
            trained = run_stage("wacse", folder, True, **options, keep_checkpoints=False)
            saved["runs"][key] = {"options": DEV_CHOICES[name], "steps": steps, "batch_size": batch_size,
                                  "fingerprint": fingerprint, "best": trained.get("best"),
                                  "wall_seconds": trained.get("wall_seconds"), "sts": sts(trained["model_dir"])}
            write_json(path, saved)
    render_dev()


DEV_START, DEV_END = "<!-- wacse-dev:start -->", "<!-- wacse-dev:end -->"


def render_dev() -> None:
    """The dev-choice table's docs section, from dev.json (left alone where no dev.json is stored)."""
    saved = _load_dev()
    if saved is None:
        if missing_tables(DOCS, DEV_START, DEV_END, {"dev": "python benchmarks/wacse.py dev"}, set()):
            print("no saved dev choices here: the docs section is left alone")
        return
    lines = [DEV_START, "### WACSE dev choices (issue 35)", "", *dev_table(saved, _dev_fingerprints(saved)),
             "", DEV_END]
    replace_section(DOCS, DEV_START, DEV_END, "\n".join(lines))
    print("\n".join(lines))


def dev_table(saved: dict[str, Any], fingerprints: dict[str, str]) -> list[str]:
    """One row per choice: dev retrieval (mean of both directions, the kept checkpoint's) and Kardes STS dev,
    each the mean over seeds; the change against the defaults in brackets. Only runs whose fingerprint is the
    choice's today (`fingerprints`, by run key) count: the saved budget and today's defaults."""
    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    rows: dict[str, dict[str, float | None]] = {}
    cross = [f"en-{code}" for code in DEV_STS_LANGUAGES]
    for name in DEV_CHOICES:
        runs = [run for key, run in saved["runs"].items() if key.split("/")[0] == name
                and run.get("fingerprint") is not None and run.get("fingerprint") == fingerprints.get(key)]
        if not runs:
            continue
        rows[name] = {
            "retrieval": mean([100 * run["best"]["eval_dev_mean_accuracy"] for run in runs
                               if run.get("best") and "eval_dev_mean_accuracy" in run["best"]]),
            "cross": mean([mean([run["sts"][c] for c in cross if c in run["sts"]]) for run in runs]),
            "mono": mean([mean([run["sts"][c] for c in DEV_STS_LANGUAGES if c in run["sts"]]) for run in runs]),
            "seeds": len(runs),
        }
    base = saved["runs"].get("me5-small", {}).get("sts", {})
    lines = [f"WACSE dev choices (`python benchmarks/wacse.py dev`, {saved.get('steps')} steps of "
             f"{saved.get('batch_size')} pairs; {saved.get('machine')}): dev retrieval of the kept checkpoint, "
             f"Kardes STS dev en-X and monolingual ({', '.join(DEV_STS_LANGUAGES)}), mean over seeds.", "",
             "| choice | options | seeds | dev retrieval | Kardes STS dev en-X | Kardes STS dev monolingual |",
             "|---|---|---|---|---|---|",
             f"| me5-small (untrained) | - | - | - | {mean([base[c] for c in cross if c in base]) or 0:.2f} | "
             f"{mean([base[c] for c in DEV_STS_LANGUAGES if c in base]) or 0:.2f} |"]
    reference = rows.get("defaults", {})
    for name, row in rows.items():
        cells = []
        for column in ("retrieval", "cross", "mono"):
            value, against = row[column], reference.get(column)
            cells.append("-" if value is None else f"{value:.2f}" + (
                f" ({value - against:+.2f})" if against is not None and name != "defaults" else ""))
        options = ", ".join(f"{k}={v}" for k, v in DEV_CHOICES[name].items()) or "the defaults"
        lines.append(f"| {name} | {options} | {row['seeds']} | " + " | ".join(cells) + " |")
    return lines


def _save(payload: dict[str, Any]) -> None:
    write_json(OUT / "ablation.json", payload)


def _load() -> dict[str, Any] | None:
    path = OUT / "ablation.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def render() -> None:
    render_dev()
    payload = _load()
    command = "python benchmarks/wacse.py run"
    if payload is None:
        if missing_tables(DOCS, START, END, {"ablation": command}, set()):
            print("no saved results here: the docs section is left alone")
        return
    runs = payload["runs"]
    held_out = "; ".join(f"seed {seed}: {words['dev_pairs']} pairs, {words['dev_links']} links"
                         for seed, words in sorted(runs.get("me5-small", {}).get("words", {}).items()))
    names = ["me5-small", *VARIANTS]
    columns = [f"tatoeba/{code}" for code in LOW.values()]
    header = ["model", *[c.split("/")[1] for c in columns], "low mean", "high mean", "STS17 cross",
              "aligned-word cos", "word retrieval", "train wall s", "peak GB"]
    lines = [START, "## WACSE ablation (miniature)", "",
             f"`{command} --steps {payload.get('steps')}` ({payload.get('machine')}); cells: mean over seeds "
             "(each seed). Tatoeba: accuracy, mean of both directions; low: "
             f"{', '.join(LOW.values())}; high: {', '.join(HIGH)}. STS17 cross: tracks ar-en, es-en (4a), tr-en. "
             "Aligned-word cos: mean cosine (x100, last layer) of the word pairs that me5-small's itermax aligner "
             f"links (score >= 0.8) in each seed's held-out pairs ({held_out}), which that seed's models never "
             "trained on; me5-small is scored on every seed's pairs. The links are chosen by me5-small itself, so "
             "the score favours it, but the models of a seed are measured on the same pairs. Word retrieval: each "
             "linked word against every linked word of the other language in those pairs, a hit when the nearest "
             "is its translation's word (mean of both directions); unlike the cosine it does not move when a whole "
             "space gets more or less anisotropic. Training wall time and peak "
             "memory (resident set) per run, alone on the machine.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in names:
        keys = ["me5-small"] if name == "me5-small" else sorted(k for k in runs if k.startswith(f"{name}/seed-"))
        rows = [runs[k] for k in keys if "scores" in runs.get(k, {})]
        if not rows:
            continue

        def cell(values: list[float]) -> str:
            mean = sum(values) / len(values)
            return f"{mean:.1f}" if len(values) == 1 else f"{mean:.1f} ({' / '.join(f'{v:.1f}' for v in values)})"

        cells = [cell([r["scores"].get(c, float("nan")) for r in rows]) for c in columns]
        low = [sum(r["scores"].get(c, 0.0) for c in columns) / len(columns) for r in rows]
        high = [sum(r["scores"].get(f"tatoeba/{c}", 0.0) for c in HIGH) / len(HIGH) for r in rows]
        sts = [r["scores"].get("sts17/cross-avg", float("nan")) for r in rows]
        if name == "me5-small":
            words = list(rows[0].get("words", {}).values())
        else:
            words = [runs[k].get("words", {}).get(k.split("/seed-")[1]) for k in keys if "scores" in runs[k]]
        scored = words and all(words)
        cosine = cell([w["aligned_word_cosine"] for w in words]) if scored else "-"
        word_retrieval = cell([w["word_retrieval"] for w in words]) if scored else "-"
        walls = cell([r["wall_seconds"] for r in rows]) if all("wall_seconds" in r for r in rows) else "-"
        memory = cell([r["peak_memory_mb"] / 1024 for r in rows]) if all("peak_memory_mb" in r for r in rows) else "-"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {cell(low)} | {cell(high)} | {cell(sts)} | "
                     f"{cosine} | {word_retrieval} | {walls} | {memory} |")
    drawn = [name for name in names if (FIGURES / f"wacse-words-{name}.png").is_file()]
    if drawn:
        lines += ["", "Word pairs the aligner links in held-out pairs (English and its low-resource translation), "
                  "as in the paper's Figure 1 (`python benchmarks/wacse.py figure`):", ""]
        lines += [f"![{name}](figures/wacse-words-{name}.png)" for name in drawn]
    lines += ["", END]
    publish(DOCS, START, END, lines)


def main() -> None:
    parser, commands = script_parser(__doc__)
    one = commands.add_parser("run")
    one.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    one.add_argument("--steps", type=int, default=300)
    one.add_argument("--batch-size", type=int, default=32)
    one.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    drawn = commands.add_parser("figure")
    drawn.add_argument("--seed", type=int, default=0)
    drawn.add_argument("--models", nargs="+", choices=["me5-small", *VARIANTS],
                       default=["me5-small", "tr", "tr+awp+wtr"])
    drawn.add_argument("--points", type=int, default=200, help="word pairs drawn per figure")
    choose = commands.add_parser("dev")
    choose.add_argument("--seeds", nargs="+", type=int, default=[0])
    choose.add_argument("--steps", type=int, default=300)
    choose.add_argument("--batch-size", type=int, default=32)
    choose.add_argument("--choices", nargs="+", choices=list(DEV_CHOICES), default=list(DEV_CHOICES))
    commands.add_parser("render")
    args = parser.parse_args()
    if args.command == "run":
        run(args.seeds, args.steps, args.batch_size, args.variants)
    elif args.command == "dev":
        dev(args.seeds, args.steps, args.batch_size, args.choices)
    elif args.command == "figure":
        figure(args.seed, args.models, args.points)
    else:
        render()


if __name__ == "__main__":
    main()
