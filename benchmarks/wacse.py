"""WACSE's ablation in miniature (issue 15): results -> results/bench/wacse, docs/benchmarks.md.

  python benchmarks/wacse.py run --seeds 0 1 --steps 300    # TR, TR+AWP, TR+WTR, TR+AWP+WTR from me5-small
  python benchmarks/wacse.py run --seeds 0 --variants tr tr+awp+wtr   # a subset
  python benchmarks/wacse.py render                         # rewrite the docs section from the saved JSON

Every variant trains on the same Tatoeba-Challenge bitext of the low-resource languages that LASER Tatoeba
tests (its test pairs left out), for the same steps, then is scored on LASER Tatoeba (both directions, low- and
high-resource), STS2017's cross-lingual tracks, and a word-level score: the mean cosine between the words of
held-out pairs that the aligner links (under-alignment: low for words far from their translations). The last
variant adds the paper's language embeddings (Table 8); its Tatoeba and STS inputs carry their language, its
word-level score does not (token type 0).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path
from typing import Any

from docs_sections import missing_tables, replace_section

from polyembed.outputs import atomic_write

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "results" / "bench" / "wacse"
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- wacse:start -->", "<!-- wacse:end -->"
VARIANTS: dict[str, dict[str, Any]] = {
    "tr": {"objectives": ["tr"]},
    "tr+awp": {"objectives": ["tr", "awp"]},
    "tr+wtr": {"objectives": ["tr", "wtr"]},
    "tr+awp+wtr": {"objectives": ["tr", "awp", "wtr"]},
    "tr+awp+wtr+language-embeddings": {"objectives": ["tr", "awp", "wtr"], "language_embeddings": True},
}
LOW = {"kk": "kaz", "ug": "uig", "tt": "tat", "tk": "tuk", "uz": "uzb", "az": "aze", "sw": "swh"}
HIGH = ["deu", "fra", "rus", "cmn", "jpn", "tur"]


def aligned_word_cosine(model: Any, english: list[str], other: list[str], links: list[dict]) -> float:
    """Mean cosine, at the model's last layer, between the words the aligner links in held-out pairs."""
    import numpy as np

    from polyembed.alignment.similarity import WordVectorEncoder
    from polyembed.methods.wacse.alignments import split_words

    encoder = WordVectorEncoder(model, layer=model[0].auto_model.config.num_hidden_layers, max_length=64)
    source = encoder.word_vectors([[w for w, _, _ in split_words(t)] for t in english], 64)
    target = encoder.word_vectors([[w for w, _, _ in split_words(t)] for t in other], 64)
    cosines = []
    for s, t, row in zip(source, target, links, strict=True):
        for i, j in row:
            a, b = s[i], t[j]
            cosines.append(float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12)))
    return 100 * sum(cosines) / max(len(cosines), 1)


def run(seeds: list[int], steps: int, batch_size: int, variants: list[str]) -> None:
    from polyembed.eval.api import evaluate
    from polyembed.eval.base import get_task
    from polyembed.methods.base.bitext import prepare_bitext
    from polyembed.methods.modular.pipeline import run_stage
    from polyembed.methods.wacse.alignments import align_bitext
    from polyembed.methods.wacse.config import WacseConfig
    from polyembed.models.loading import as_sentence_transformer, load_model

    config = WacseConfig(seed=0)
    bitext = prepare_bitext(config)
    dev_english = [e for s in bitext.dev for e in s.english]
    dev_other = [o for s in bitext.dev for o in s.other]
    dev_links = [[link for link, score in row.items() if score >= config.alignment_threshold]
                 for row in align_bitext(dev_english, dev_other, config.aligner, config.aligner_model,
                                         config.aligner_layer)]
    tasks = [("tatoeba", {"languages": [*LOW.values(), *HIGH]}), ("sts17", {"languages": ["ar-en", "es-en", "tr-en"]})]
    results = _load() or {"runs": {}}
    for seed in seeds:
        models = {"me5-small": "me5-small"}
        for name in variants:
            folder = OUT / f"seed-{seed}" / name
            trained = run_stage("wacse", folder, True, **VARIANTS[name], max_steps=steps, batch_size=batch_size,
                                seed=seed, keep_checkpoints=False)
            models[name] = trained["model_dir"]
            results["runs"].setdefault(f"{name}/seed-{seed}", {}).update(
                {k: trained.get(k) for k in ("wall_seconds", "peak_memory_mb", "steps", "best")})
        for name, path in models.items():
            key = f"{name}/seed-{seed}" if name != "me5-small" else "me5-small"
            if "scores" in results["runs"].get(key, {}):
                continue
            encoder = load_model(path)
            result = evaluate(encoder, [get_task(t, **o) for t, o in tasks], show_progress=False)
            scores = {f"{s.task}/{s.subset}": round(float(s.value), 2) for s in result.scores if s.main}
            word = aligned_word_cosine(as_sentence_transformer(encoder)[0], dev_english, dev_other, dev_links)
            results["runs"].setdefault(key, {}).update({"scores": scores, "aligned_word_cosine": round(word, 2)})
            _save(results | {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "steps": steps,
                             "batch_size": batch_size})
    render()


def _save(payload: dict[str, Any]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with atomic_write(OUT / "ablation.json") as handle:
        handle.write(json.dumps(payload, indent=2) + "\n")


def _load() -> dict[str, Any] | None:
    path = OUT / "ablation.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def render() -> None:
    payload = _load()
    command = "python benchmarks/wacse.py run"
    if payload is None:
        if missing_tables(DOCS, START, END, {"ablation": command}, set()):
            print("no saved results here: the docs section is left alone")
        return
    runs = payload["runs"]
    names = ["me5-small", *VARIANTS]
    columns = [f"tatoeba/{code}" for code in LOW.values()]
    header = ["model", *[c.split("/")[1] for c in columns], "low mean", "high mean", "STS17 cross",
              "aligned-word cos", "wall s"]
    lines = [START, "## WACSE ablation (miniature)", "",
             f"`{command} --steps {payload.get('steps')}` ({payload.get('machine')}); cells: mean over seeds "
             "(each seed). Tatoeba: accuracy, mean of both directions.", "",
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
        walls = [r.get("wall_seconds") or 0.0 for r in rows]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {cell(low)} | {cell(high)} | {cell(sts)} | "
                     f"{cell([r['aligned_word_cosine'] for r in rows])} | {cell(walls)} |")
    lines += ["", END]
    replace_section(DOCS, START, END, "\n".join(lines))
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("run")
    one.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    one.add_argument("--steps", type=int, default=300)
    one.add_argument("--batch-size", type=int, default=32)
    one.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    commands.add_parser("render")
    args = parser.parse_args()
    if args.command == "run":
        run(args.seeds, args.steps, args.batch_size, args.variants)
    else:
        render()


if __name__ == "__main__":
    main()
