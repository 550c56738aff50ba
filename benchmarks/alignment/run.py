"""Word aligners on the gold sets (issue 15): AER, precision, recall and wall time per 1,000 sentence pairs.

  python -m benchmarks.alignment.run run                       # me5-small itermax (layer 8) and eflomal, every set
  python -m benchmarks.alignment.run run --methods argmax itermax match --layers 6 8
  python -m benchmarks.alignment.run render                    # rewrite the docs section from the saved JSON

eflomal learns from the corpus it aligns; on these gold sets alone (100-582 pairs) it sees far less text than
it is built for, which the table says. Every number comes from a run on this machine.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any

from benchmarks.alignment.render import render
from benchmarks.alignment.spec import EXTRA_LABEL, OUT, PUBLISHED, SETS, TRAINING_FILTER, TRAINING_THRESHOLD
from benchmarks.common.results import write_json
from benchmarks.common.script_cli import script_parser

os.environ.setdefault("HF_HUB_OFFLINE", "1")
EXTRA_BITEXT = {"en-fr": "fra", "de-en": "deu"}
"""Gold sets with more bitext of their pair in the data layer (Tatoeba-Challenge; its ron is missing, and ja/zh
gold is word-segmented where Tatoeba text is not): eflomal also aligns with it, as WACSE's does on its run's
bitext (a few thousand Tatoeba pairs per language)."""


def run(model: str, methods: list[str], layers: list[int]) -> None:
    from polyembed.alignment import EmbeddingAligner, SentencePair, alignment_error_rate, eflomal_align
    from polyembed.alignment.pharaoh import GoldAlignment
    from polyembed.data.readers.alignment import read_alignment_gold
    from polyembed.data.registry import get_dataset
    from polyembed.models.loading import load_model

    folder = get_dataset("word-alignment-gold").path()
    encoder = load_model(model)
    rows: list[dict[str, Any]] = []
    for name in SETS:
        examples = read_alignment_gold(folder, name)
        pairs = [SentencePair(list(e.source_tokens), list(e.target_tokens)) for e in examples]
        gold = [GoldAlignment(set(e.sure), set(e.possible)) for e in examples]
        runs: list[tuple[str, Any]] = [(f"{model} {m} layer {layer}", (m, layer)) for m in methods for layer in layers]
        runs.append(("eflomal (grow-diag-final-and)", None))
        if name in EXTRA_BITEXT:
            runs.append((EXTRA_LABEL, "extra"))
        for label, setting in runs:
            started = time.perf_counter()
            if setting is None:
                predicted = eflomal_align(pairs)
            elif setting == "extra":
                extra = extra_bitext(name)
                predicted = eflomal_align(pairs + extra)[: len(pairs)]
                label = f"{EXTRA_LABEL}"
            else:
                predicted = EmbeddingAligner(encoder, layer=setting[1], method=setting[0]).align(pairs)
            seconds = time.perf_counter() - started
            kept = {label: [a.links() for a in predicted],
                    f"{label}, {TRAINING_FILTER}": [{link for link, score in a.scores.items()
                                                     if score >= TRAINING_THRESHOLD} for a in predicted]}
            for shown, links in kept.items():
                scores = alignment_error_rate(links, gold)
                rows.append({"set": name, "aligner": shown, "pairs": len(pairs), "aer": round(100 * scores.aer, 1),
                             "precision": round(100 * scores.precision, 1), "recall": round(100 * scores.recall, 1),
                             "seconds_per_1000_pairs": round(1000 * seconds / len(pairs), 1) if shown == label
                             else None})
                if setting == "extra":
                    rows[-1]["extra_pairs"] = len(extra)
                print(rows[-1], flush=True)
    rows += published_rows(folder)
    payload = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "model": model, "rows": rows}
    write_json(OUT / "aligners.json", payload)
    render()


def extra_bitext(name: str) -> list[Any]:
    """The data layer's Tatoeba-Challenge pairs of the gold set's languages, in its direction, as `split_words`
    words (the tokenisation WACSE aligns with)."""
    from polyembed.alignment import SentencePair
    from polyembed.data.readers.parallel import read_tatoeba_challenge
    from polyembed.data.registry import get_dataset
    from polyembed.methods.wacse.alignments import split_words

    text = read_tatoeba_challenge(get_dataset("tatoeba-challenge").path(), EXTRA_BITEXT[name])
    english_first = name.startswith("en-")
    pairs = []
    for other, english in zip(text.source, text.target, strict=True):
        words = [w for w, _, _ in split_words(other)], [w for w, _, _ in split_words(english)]
        pairs.append(SentencePair(*(words[::-1] if english_first else words)))
    return pairs


def published_rows(folder: Path) -> list[dict[str, Any]]:
    """AER of the predictions awesome-align ships for its four sets (mBERT fine-tuned on parallel text): the
    reference point for the aligners above, scored against the same gold by the same code."""
    from polyembed.alignment import alignment_error_rate
    from polyembed.alignment.pharaoh import GoldAlignment, SentencePair, read_links
    from polyembed.data.readers.alignment import AWESOME_ALIGN_SETS, read_alignment_gold

    rows: list[dict[str, Any]] = []
    for name in SETS:
        if name not in AWESOME_ALIGN_SETS:
            continue
        examples = read_alignment_gold(folder, name)
        pairs = [SentencePair(list(e.source_tokens), list(e.target_tokens)) for e in examples]
        output = folder / "awesome-align-examples" / f"{AWESOME_ALIGN_SETS[name]}.awesome-align.out"
        predicted = [links.sure for links in read_links(output, pairs=pairs)]
        scores = alignment_error_rate(predicted, [GoldAlignment(set(e.sure), set(e.possible)) for e in examples])
        rows.append({"set": name, "aligner": PUBLISHED, "pairs": len(pairs), "aer": round(100 * scores.aer, 1),
                     "precision": round(100 * scores.precision, 1), "recall": round(100 * scores.recall, 1),
                     "seconds_per_1000_pairs": None})
    return rows


def main() -> None:
    parser, commands = script_parser(__doc__)
    one = commands.add_parser("run")
    one.add_argument("--model", default="me5-small")
    one.add_argument("--methods", nargs="+", default=["itermax"])
    one.add_argument("--layers", nargs="+", type=int, default=[8])
    commands.add_parser("render")
    args = parser.parse_args()
    if args.command == "run":
        run(args.model, args.methods, args.layers)
    else:
        render()


if __name__ == "__main__":
    main()
