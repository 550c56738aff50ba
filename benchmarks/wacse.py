"""WACSE's ablation in miniature (issue 15): results -> results/bench/wacse, docs/benchmarks.md.

  python benchmarks/wacse.py run --seeds 0 1 --steps 300    # TR, TR+AWP, TR+WTR, TR+AWP+WTR from me5-small
  python benchmarks/wacse.py run --seeds 0 --variants tr tr+awp+wtr   # a subset
  python benchmarks/wacse.py budget --seeds 0 1 --steps 100 200 300   # TR against TR+AWP+WTR per budget
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

import wacse_dev
from docs_sections import missing_tables, publish, shown_rows, shown_table
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
    "tr+wtr-scale-20": {"objectives": ["tr", "wtr"], "wtr_scale": 20.0},
    "tr+wtr-itermax": {"objectives": ["tr", "wtr"], "aligner": "itermax"},
    "tr+wtr-itermax-scale-20": {"objectives": ["tr", "wtr"], "aligner": "itermax", "wtr_scale": 20.0},
    "tr+wtr-eflomal-kardes-scale-20": {"objectives": ["tr", "wtr"], "aligner_datasets": ["kardes-xnli"],
                                       "wtr_scale": 20.0},
    "tr+awp+wtr": {"objectives": ["tr", "awp", "wtr"]},
    "tr-cls": {"objectives": ["tr"], "pooling": "cls"},
    "tr+wtr-cls": {"objectives": ["tr", "wtr"], "pooling": "cls"},
    "tr+awp+wtr+language-embeddings": {"objectives": ["tr", "awp", "wtr"], "language_embeddings": True},
}
DEV_HEADER = "| model | dev retrieval | Kardes STS dev en-X | Kardes STS dev monolingual | Kardes STS dev English |"
BUDGET_OPENING = "`python benchmarks/wacse.py budget`"
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
        drawn_from = {"model": name, "seed": seed,
                      "fingerprint": None if name == "me5-small" else _trained_fingerprint({}, Path(path).parent)}
        with atomic_write(target, "wb") as handle:  # the run it shows travels with the image (results/ does not)
            plot.savefig(handle, format="png", dpi=100, bbox_inches="tight",
                         metadata={"Description": json.dumps(drawn_from)})
        print(f"wrote {target.relative_to(REPO)} ({len(a)} linked word pairs, {min(points, len(a))} drawn)")
    render()


def _variant_options(name: str, steps: int, batch_size: int, seed: int) -> dict[str, Any]:
    return {**VARIANTS[name], "max_steps": steps, "batch_size": batch_size, "seed": seed}


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
        entry["dev_sts"] = wacse_dev.kardes_dev_sts(encoder)
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

    fingerprint = wacse_dev.run_fingerprint(options)
    if key in runs and runs[key].get("fingerprint") != fingerprint:
        config_file = folder / "config.yaml"
        if config_file.is_file() and wacse_dev.run_fingerprint(config_file=config_file) == fingerprint:
            runs[key]["fingerprint"] = fingerprint
        else:
            runs.pop(key)
    if key not in runs:
        wacse_dev.set_aside(folder, fingerprint)
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
                   _variant_options(name, steps, batch_size, seed), dev)
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
                key, options = f"{name}@{steps}/seed-{seed}", _variant_options(name, steps, batch_size, seed)
                same = results["runs"].get(f"{name}/seed-{seed}", {})
                trained = _trained_fingerprint(same, OUT / f"seed-{seed}" / name)  # as the table counts it
                if trained == wacse_dev.run_fingerprint(options) and "scores" in same:
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


def render() -> None:
    wacse_dev.render()
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
             "memory (resident set) per run, alone on the machine; a run resumed from a checkpoint "
             "leaves the time column (its clock counts only the steps after resuming).", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    shown, kept_rows = shown_rows(DOCS, START, END, lines[-2]), []
    for name in names:
        keys = ["me5-small"] if name == "me5-small" else _todays_keys(payload, name)  # today's options only
        rows = [runs[k] for k in keys if "scores" in runs.get(k, {})]
        if not rows:
            if name in shown and not _ran_here(payload, name):
                print(f"{name}: no run of it in {OUT}; its row keeps the text the docs show")
                lines.append(shown[name])
                kept_rows.append(name)
            continue
        cell = _cell
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
        timed = [r["wall_seconds"] for r in rows if "wall_seconds" in r and not r.get("resumed")]
        walls = cell(timed) if timed else "-"
        memory = cell([r["peak_memory_mb"] / 1024 for r in rows]) if all("peak_memory_mb" in r for r in rows) else "-"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {cell(low)} | {cell(high)} | {cell(sts)} | "
                     f"{cosine} | {word_retrieval} | {walls} | {memory} |")
    if kept_rows:  # their steps, machine and options are those of the run that made them
        lines += ["", "Rows kept from an earlier rendering (their runs are not in this checkout's results, so their "
                  "settings and machine may differ from the line above): " + ", ".join(kept_rows) + "."]
    drawn = [name for name in names if (FIGURES / f"wacse-words-{name}.png").is_file()]
    if drawn:
        lines += ["", "Word pairs the aligner links in held-out pairs (English and its low-resource translation), "
                  "as in the paper's Figure 1 (`python benchmarks/wacse.py figure`):", ""]
        lines += [f"![{name}](figures/wacse-words-{name}.png)" for name in drawn]
        other = [name for name in drawn if not _figure_is_todays(payload, name)]
        if other:
            lines += ["", "Drawn from runs other than this table's (options not recorded in the image, or trained "
                      "with other options than today's): " + ", ".join(other) + "."]
    lines += dev_columns(payload, names)
    lines += budget_table(payload, shown_table(DOCS, START, END, BUDGET_OPENING))
    lines += ["", END]
    publish(DOCS, START, END, lines)


def _figure_is_todays(payload: dict[str, Any], name: str) -> bool:
    """Whether the figure of `name` shows a run trained with today's options, as the image's own record of its run
    says (me5-small is not trained: any record will do; an image without one does not count)."""
    from PIL import Image

    with Image.open(FIGURES / f"wacse-words-{name}.png") as image:
        described = image.info.get("Description")
    if not described:
        return False
    drawn_from = json.loads(described)
    return name == "me5-small" or drawn_from.get("fingerprint") == wacse_dev.run_fingerprint(_variant_options(
        name, payload.get("steps", 300), payload.get("batch_size", 32), int(drawn_from["seed"])))


def _ran_here(payload: dict[str, Any], name: str) -> bool:
    """Whether the saved results hold any run of the variant (with today's options or not)."""
    return name == "me5-small" and "me5-small" in payload["runs"] or any(
        key.startswith(f"{name}/seed-") for key in payload["runs"])


def _todays_keys(payload: dict[str, Any], name: str) -> list[str]:
    """The variant's runs trained with today's options, by seed."""
    runs = payload["runs"]
    return sorted(k for k in runs if k.startswith(f"{name}/seed-") and _trained_fingerprint(
        runs[k], OUT / f"seed-{k.split('/seed-')[1]}" / name) == wacse_dev.run_fingerprint(
            _variant_options(name, payload["steps"], payload["batch_size"], int(k.split("/seed-")[1]))))


def _trained_fingerprint(entry: dict[str, Any], folder: Path) -> str | None:
    """The fingerprint of what a stored run trained with, taken afresh from its folder's config.yaml where it is
    here (an option added since, at the value that trains as before, then changes nothing), else as stored."""
    config_file = folder / "config.yaml"
    return wacse_dev.run_fingerprint(config_file=config_file) if config_file.is_file() else entry.get("fingerprint")


def dev_columns(payload: dict[str, Any], names: list[str]) -> list[str]:
    """The same runs on dev splits (empty until some run has them): dev retrieval of the kept checkpoint and
    Kardes STS dev, mean over seeds (each seed); a choice between variants rests on these, not on the test
    columns above."""
    runs = payload["runs"]
    rows = []
    shown = shown_rows(DOCS, START, END, DEV_HEADER)
    for name in names:
        keys = ["me5-small"] if name == "me5-small" else _todays_keys(payload, name)
        found = [wacse_dev.dev_measures(runs[k].get("best"), runs[k]["dev_sts"]) for k in keys
                 if "dev_sts" in runs.get(k, {})]
        if not found or len(found) < len(keys):
            if name in shown and not _ran_here(payload, name):
                rows.append(shown[name])
            continue
        cells = [_cell(values) if (values := [m[c] for m in found if m[c] is not None]) else "-"
                 for c in ("retrieval", "cross", "mono", "english")]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return ["", "The same runs on dev splits (what a choice between the variants rests on; the test columns above "
            "are not chosen on): translation retrieval of the kept checkpoint on the run's held-out pairs, and "
            f"Kardes STS dev en-X, monolingual ({', '.join(wacse_dev.DEV_STS_LANGUAGES)}) and English.", "",
            DEV_HEADER, "|---|---|---|---|---|", *rows]


def _cell(values: list[float]) -> str:
    mean = sum(values) / len(values)
    return f"{mean:.1f}" if len(values) == 1 else f"{mean:.1f} ({' / '.join(f'{v:.1f}' for v in values)})"


def budget_table(payload: dict[str, Any], shown: list[str] | None = None) -> list[str]:
    """The budget curve's table (empty without one): one row per number of steps and seed (the low-resource
    Tatoeba mean and STS17 cross of each variant, and each word-objective variant minus TR alone), then a mean row
    per number of steps over its seeds. Only runs trained with today's options count. `shown` is the table the
    docs show: its rows for a steps and seed not run here stay (results/ is not in git, and a curve grows a seed
    or a budget at a time), and the means use their one-decimal values."""
    curve = payload.get("budget", {})
    found: dict[tuple[int, str], dict[int, dict[str, Any]]] = {}
    for key, entry in curve.get("runs", {}).items():
        name, _, rest = key.partition("@")
        steps, seed = (int(part) for part in rest.split("/seed-"))
        options = _variant_options(name, steps, curve["batch_size"], seed)
        folder = (OUT / f"seed-{seed}" / name if "same_run_as" in entry
                  else OUT / "budget" / f"seed-{seed}" / f"{name}-{steps}")
        if "scores" in entry and _trained_fingerprint(entry, folder) == wacse_dev.run_fingerprint(options):
            found.setdefault((steps, name), {})[seed] = entry["scores"]
    kept = _shown_budget(shown or [])
    names = [name for name in VARIANTS if any(n == name for _, n in found)
             or any(column.startswith(f"{name}: ") for row in kept.values() for column in row)]
    if not names:
        return []
    words = [name for name in names if name != "tr"]
    columns = [f"{n}: {score}" for n in names for score in ("low mean", "STS17 cross")]
    columns += [f"{n} change: {score}" for n in words for score in ("low mean", "STS17 cross")]

    def low(scores: dict[str, float]) -> float:
        return sum(scores.get(f"tatoeba/{c}", 0.0) for c in LOW.values()) / len(LOW)

    def sts(scores: dict[str, float]) -> float:
        return scores.get("sts17/cross-avg", float("nan"))

    rows: dict[tuple[int, int], dict[str, float]] = {}
    for (steps, name), seeds in found.items():
        for seed, scores in seeds.items():
            rows.setdefault((steps, seed), {}).update({f"{name}: low mean": low(scores),
                                                       f"{name}: STS17 cross": sts(scores)})
    for (steps, seed), row in rows.items():
        base = found.get((steps, "tr"), {}).get(seed)
        for name in words:
            other = found.get((steps, name), {}).get(seed)
            if base is not None and other is not None:
                row.update({f"{name} change: low mean": low(other) - low(base),
                            f"{name} change: STS17 cross": sts(other) - sts(base)})
    kept_keys = sorted(set(kept) - set(rows))
    rows.update({key: kept[key] for key in kept_keys})

    def cells(row: dict[str, float]) -> str:
        return " | ".join(f"{row[c]:.1f}" if c in row else "-" for c in columns)

    lines = ["", "### Budget curve", "", f"`python benchmarks/wacse.py budget` (batch {curve.get('batch_size', 32)}):"
             " each variant trained for each number of steps (the learning-rate schedule scaled to it); per seed, "
             "the low-resource Tatoeba mean and STS17 cross, and 'change': each word-objective variant minus TR "
             "alone; then their mean over the seeds of that number of steps. A number of steps equal to the "
             "ablation's reuses its run of the same options and seed.", "",
             "| steps | seed | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for steps in sorted({s for s, _ in rows}):
        seeds = sorted(seed for s, seed in rows if s == steps)
        lines += [f"| {steps} | {seed} | {cells(rows[steps, seed])} |" for seed in seeds]
        if len(seeds) > 1:
            mean = {c: sum(v) / len(v) for c in columns
                    if (v := [rows[steps, seed][c] for seed in seeds if c in rows[steps, seed]])}
            lines.append(f"| {steps} | mean | {cells(mean)} |")
    if kept_keys:
        lines += ["", "Rows kept from an earlier rendering (their runs are not in this checkout's results): "
                  + ", ".join(f"{steps} steps seed {seed}" for steps, seed in kept_keys) + "."]
    return lines


def _shown_budget(shown: list[str]) -> dict[tuple[int, int], dict[str, float]]:
    """The per-seed rows of the budget table the docs show, by (steps, seed): their columns' values."""
    header = next((line for line in shown if line.startswith("| steps | seed |")), None)
    if header is None:
        return {}
    names = [cell.strip() for cell in header.strip("|").split("|")]
    rows: dict[tuple[int, int], dict[str, float]] = {}
    for line in shown[shown.index(header) + 2:]:
        values = [cell.strip() for cell in line.strip("|").split("|")]
        if len(values) != len(names) or not values[1].isdigit():
            continue  # a mean row: computed again
        rows[int(values[0]), int(values[1])] = {n: float(v) for n, v in zip(names[2:], values[2:], strict=True)
                                                 if v != "-"}
    return rows


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
    choose.add_argument("--choices", nargs="+", choices=list(wacse_dev.DEV_CHOICES),
                        default=list(wacse_dev.DEV_CHOICES))
    commands.add_parser("render")
    args = parser.parse_args()
    if args.command == "run":
        run(args.seeds, args.steps, args.batch_size, args.variants)
    elif args.command == "budget":
        budget(args.seeds, args.steps, args.batch_size, args.variants)
    elif args.command == "dev":
        wacse_dev.dev(args.seeds, args.steps, args.batch_size, args.choices)
    elif args.command == "figure":
        figure(args.seed, args.models, args.points)
    else:
        render()


if __name__ == "__main__":
    main()
