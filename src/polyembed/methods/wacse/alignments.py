"""Word alignments of the training bitext, and the per-row label WACSE's loss reads.

Words are `\\w+` runs and single punctuation marks (Tatoeba text is not pre-tokenised, and "Hello," should give
"Hello" its own link). Alignments are computed once per (aligner, sentence pair) and kept in an SQLite store
beside the embedding store (`$POLYEMBED_CACHE/alignments/<aligner>/store.sqlite`), so a rerun or a second
objective ablation aligns nothing again. eflomal learns from the whole corpus of a language (one model per
language), so its key includes a digest of that corpus; its scores are the two directions' agreement (1.0 both,
0.5 one), which `alignment_threshold` filters as it filters the embedding aligners' (cos + 1) / 2.

Label layout (int64, shape 3 x L x 2, -1 padded), one per row: [0] the English words' token spans
(start, end) in the tokenised English side, [1] the same for the other side, [2] the kept links (English word,
other word), best-scored first. The trainer appends [3], whose first slot holds the token types of the English
and the other side (language embeddings; 0 without). Token positions are those of the text exactly as the
trainer tokenises it (the model's prompt prepended, truncated at max_seq_length); words cut off by truncation
lose their links.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from polyembed.alignment import EmbeddingAligner, SentencePair, eflomal_align
from polyembed.alignment.similarity import Method
from polyembed.models.cache import cache_dir

WORD = re.compile(r"\w+|[^\w\s]")
Links = dict[tuple[int, int], float]


def split_words(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) character spans."""
    return [(m.group(), m.start(), m.end()) for m in WORD.finditer(text)]


class AlignmentStore:
    """Links with scores per (aligner, source text, target text), in SQLite (transactions: a killed run never
    leaves a half-written entry)."""

    def __init__(self, aligner_id: str, directory: Path | None = None) -> None:
        folder = directory or cache_dir() / "alignments" / re.sub(r"[^\w.-]+", "_", aligner_id)
        folder.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(folder / "store.sqlite", timeout=60)
        self.connection.execute("CREATE TABLE IF NOT EXISTS links (source TEXT, target TEXT, links TEXT, "
                                "PRIMARY KEY (source, target))")

    def get(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Links]:
        found: dict[tuple[str, str], Links] = {}
        for source, target in pairs:
            row = self.connection.execute("SELECT links FROM links WHERE source = ? AND target = ?",
                                          (source, target)).fetchone()
            if row is not None:
                found[(source, target)] = {(i, j): score for i, j, score in json.loads(row[0])}
        return found

    def put(self, entries: dict[tuple[str, str], Links]) -> None:
        with self.connection:
            self.connection.executemany(
                "INSERT OR REPLACE INTO links VALUES (?, ?, ?)",
                [(s, t, json.dumps([[i, j, round(score, 4)] for (i, j), score in links.items()]))
                 for (s, t), links in entries.items()],
            )


def align_bitext(english: Sequence[str], other: Sequence[str], aligner: str, model: str, layer: int,
                 show_progress: bool = True, languages: Sequence[str] | None = None,
                 extra: Mapping[str, tuple[Sequence[str], Sequence[str]]] | None = None) -> list[Links]:
    """Links with scores for every (English, other) pair, from the store where present. eflomal learns one
    model per language of `languages` (one per row; all rows one corpus when None) from all of its pairs, plus
    that language's `extra` (English, other) pairs, whose own links are not returned."""
    if aligner == "eflomal":
        groups: dict[str, list[int]] = {}
        for row, language in enumerate(languages or [""] * len(english)):
            groups.setdefault(language, []).append(row)
        found: list[Links] = [{} for _ in english]
        for language, rows in groups.items():
            more_english, more_other = (extra or {}).get(language, ((), ()))
            links = _align_with(aligner, [*(english[r] for r in rows), *more_english],
                                [*(other[r] for r in rows), *more_other], model, layer, show_progress)
            for row, row_links in zip(rows, links[:len(rows)], strict=True):
                found[row] = row_links
        return found
    return _align_with(aligner, english, other, model, layer, show_progress)


def _align_with(aligner: str, english: Sequence[str], other: Sequence[str], model: str, layer: int,
                show_progress: bool) -> list[Links]:
    pairs = list(zip(english, other, strict=True))
    if aligner == "eflomal":  # links depend on the whole corpus; v2: scores are the directions' agreement
        digest = hashlib.sha256("\n".join(f"{s}\t{t}" for s, t in pairs).encode()).hexdigest()[:16]
        store = AlignmentStore(f"eflomal-v2-{digest}")
    else:
        store = AlignmentStore(f"{aligner}-layer{layer}-{Path(model).name if '/' in model else model}")
    known = store.get(pairs)
    missing = list(dict.fromkeys(pair for pair in pairs if pair not in known))
    if missing:
        sentences = [SentencePair([w for w, _, _ in split_words(s)], [w for w, _, _ in split_words(t)])
                     for s, t in missing]
        if aligner == "eflomal":
            found = eflomal_align(sentences)
        else:
            found = EmbeddingAligner(model, layer=layer, method=cast(Method, aligner)).align(  # it checks the name
                sentences, show_progress=show_progress)
        new = {pair: alignment.scores for pair, alignment in zip(missing, found, strict=True)}
        store.put(new)
        known.update(new)
    return [known[pair] for pair in pairs]


def word_token_spans(tokenizer: Any, text: str, prompt: str, max_length: int) -> list[tuple[int, int] | None]:
    """Each word's (first token, last token + 1) in `prompt + text` as the trainer tokenises it; None for a
    word truncated away."""
    encoded = tokenizer(prompt + text, truncation=True, max_length=max_length, return_offsets_mapping=True)
    offsets = encoded["offset_mapping"]
    spans: list[tuple[int, int] | None] = []
    for _, start, end in split_words(text):
        start, end = start + len(prompt), end + len(prompt)
        tokens = [t for t, (s, e) in enumerate(offsets) if e > s and s < end and e > start]
        spans.append((tokens[0], tokens[-1] + 1) if tokens else None)
    return spans


def link_label(english_spans: Sequence[tuple[int, int] | None], other_spans: Sequence[tuple[int, int] | None],
               links: Links, threshold: float, max_links: int, size: int) -> np.ndarray:
    """The 3 x size x 2 label of one row (see the module docstring)."""
    label = np.full((3, size, 2), -1, dtype=np.int64)
    for side, spans in enumerate((english_spans, other_spans)):
        for index, span in enumerate(spans[:size]):
            if span is not None:
                label[side, index] = span
    kept = sorted(((score, link) for link, score in links.items() if score >= threshold), reverse=True)
    row = 0
    for _, (i, j) in kept:
        if row >= min(max_links, size):
            break
        if i < min(len(english_spans), size) and j < min(len(other_spans), size) and english_spans[i] is not None \
                and other_spans[j] is not None:
            label[2, row] = (i, j)
            row += 1
    return label
