"""FOCUS auxiliary spaces compared: PPMI-SVD against fastText, one tokenizer per language (the modular recipe).

  python -m benchmarks.vocabulary_transfer.run auxiliary [--languages de ru ...] [--vocab-size 8000]
      [--seeds 0 1] [--unseen decompose]

For each language, `transfer_vocabulary_per_language` gives the base model (me5-small) a tokenizer trained on
that language's text only (the non-English side of the default training bitext) and FOCUS-initialised
embeddings, once per auxiliary space. Nothing is trained afterwards, so the scores measure the initialisation
alone, on LASER Tatoeba (held out from the training bitext):
- `tatoeba`: X <-> eng retrieval accuracy (mean of both directions), X encoded by the new language model and
  English by the base model: the new embeddings must land where the old ones did;
- `cos`: mean cosine between the base model's and the new model's embedding of the same X sentence.
Reference rows: the base model itself (upper bound of an initialisation) and `copy+random` (overlapping rows
copied, every other row random: what the interpolation adds). Results -> results/bench/vocabulary/.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from benchmarks.common.results import load_json, machine, write_json
from benchmarks.common.script_cli import script_parser
from benchmarks.vocabulary_transfer.render import render, table
from benchmarks.vocabulary_transfer.spec import OUT, SPACES
from polyembed.eval.tasks.retrieval import TatoebaRetrieval

os.environ.setdefault("HF_HUB_OFFLINE", "1")
BASE_MODEL = "me5-small"
TATOEBA_CODE = {code: TatoebaRetrieval.subset(code) for code in ("de", "ru", "tr", "ar", "ug", "tt")}
"""Languages with text in the default training bitext and a LASER Tatoeba test set, largest corpus first
(distinct texts, MUSE dictionary words included: de 123.9k, ru 63.6k, tr 71.0k, ar 36.8k, ug 2.6k, tt 1.1k)."""


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _scores(encoder: Any, base_x: np.ndarray, english: np.ndarray, sentences: list[str]) -> dict[str, float]:
    from polyembed.eval.tasks.retrieval import retrieval_accuracy

    x = _unit(encoder.encode(sentences, batch_size=64))
    both = (retrieval_accuracy(x, english) + retrieval_accuracy(english, x)) / 2
    return {"tatoeba": round(both, 2), "cos": round(float((x * base_x).sum(axis=1).mean()), 4)}


def _copy_random(model: Any, copied_ids: list[int], seed: int) -> Any:
    """The same model with every non-copied row drawn from N(mean, std) of the base rows (FOCUS's random)."""
    import copy

    import torch

    out = copy.deepcopy(model)
    weight = out[0].auto_model.get_input_embeddings().weight
    with torch.no_grad():
        keep = torch.zeros(weight.shape[0], dtype=torch.bool)
        keep[copied_ids] = True
        copied = weight[keep]
        noise = torch.randn(weight.shape, generator=torch.Generator().manual_seed(seed))
        weight[~keep] = (copied.mean(dim=0) + copied.std(dim=0) * noise)[~keep]
    return out


def auxiliary(languages: list[str], vocab_size: int, seeds: list[int], unseen: str) -> dict[str, Any]:
    from polyembed.data.parallel_sources import load_parallel_sources
    from polyembed.data.readers.parallel import read_tatoeba
    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root
    from polyembed.methods.base.config import DEFAULT_TRAINING_DATASETS
    from polyembed.models.encoder import SentenceTransformerEncoder
    from polyembed.models.loading import as_sentence_transformer, load_model
    from polyembed.models.vocabulary_transfer import transfer_vocabulary_per_language

    root = data_root(None)
    sources = load_parallel_sources(languages, DEFAULT_TRAINING_DATASETS, root, seed=0)
    corpora = {code: list(dict.fromkeys(s for src in sources if src.language == code for s in src.other))
               for code in languages}
    base = load_model(BASE_MODEL)
    base_st, _ = as_sentence_transformer(base)
    rows: dict[str, Any] = {}
    tests: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}
    for code in languages:
        test = read_tatoeba(get_dataset("tatoeba").path(root), TATOEBA_CODE[code])
        base_x = _unit(base.encode(test.source, batch_size=64))
        english = _unit(base.encode(test.target, batch_size=64))
        tests[code] = (test.source, base_x, english)
        base_score = _scores(base, base_x, english, test.source)
        rows[code] = {"corpus_sentences": len(corpora[code]), "test_pairs": len(test), "base": base_score}
        print(f"[{code}] {len(corpora[code]):,} sentences, base {base_score}", flush=True)
    for seed in seeds:
        for space in SPACES:
            started = time.perf_counter()
            folder, reports = transfer_vocabulary_per_language(
                base_st, corpora, OUT / f"{space}-{unseen}-seed{seed}", vocab_size=vocab_size,
                auxiliary_space=space, unseen=unseen, seed=seed, overwrite=True, verbose=False,
            )
            seconds = time.perf_counter() - started
            for code in languages:
                model, _ = as_sentence_transformer(load_model(str(folder / code)))
                sentences, base_x, english = tests[code]
                report = reports[code]
                entry = {
                    **_scores(SentenceTransformerEncoder(model, code), base_x, english, sentences),
                    "vocabulary": report.target_vocab_size,
                    "copied": report.copied,
                    "interpolated": report.interpolated,
                    "random": report.random,
                    "decomposed": report.decomposed,
                }
                if space == SPACES[0]:  # the copied rows do not depend on the space
                    random_model = _copy_random(model, report.copied_ids, seed)
                    rows[code].setdefault("copy+random", {})[str(seed)] = _scores(
                        SentenceTransformerEncoder(random_model, code), base_x, english, sentences
                    )
                rows[code].setdefault(space, {})[str(seed)] = entry
                print(f"[{code}] {space} seed {seed}: {entry}", flush=True)
            rows.setdefault("_seconds", {}).setdefault(space, {})[str(seed)] = round(seconds, 1)
    payload = {
        "base_model": BASE_MODEL,
        "vocab_size": vocab_size,
        "unseen": unseen,
        "seeds": seeds,
        "rows": rows,
        "machine": machine(),
    }
    write_json(OUT / f"auxiliary-{unseen}.json", payload)
    return payload


def main() -> None:
    parser, sub = script_parser(__doc__)
    p = sub.add_parser("auxiliary", help="PPMI-SVD against fastText, per-language tokenizers")
    p.add_argument("--languages", nargs="+", default=list(TATOEBA_CODE), choices=list(TATOEBA_CODE))
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--unseen", choices=["random", "decompose"], default="random", help="rule for rare new tokens")
    p = sub.add_parser("render", help="rewrite the docs section (the 'random' run); print the table of a run")
    p.add_argument("--unseen", choices=["random", "decompose"], default="random")
    args = parser.parse_args()
    if args.command == "auxiliary":
        payload = auxiliary(args.languages, args.vocab_size, args.seeds, args.unseen)
    else:
        payload = load_json(OUT / f"auxiliary-{args.unseen}.json")
        if payload is None:
            raise SystemExit(f"no auxiliary-{args.unseen}.json in {OUT}: run the auxiliary command first")
    print(table(payload))
    if args.unseen == "random":
        render()


if __name__ == "__main__":
    main()
