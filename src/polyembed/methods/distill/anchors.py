"""Anchor text: sentences with no teacher target that keep the student near where it started.

Why: distillation pulls the student towards the teacher only on the trained languages' bitext. Every other
language (and the trained ones' text the bitext does not cover) is free to drift, and a pre-trained
multilingual student does drift: untrained languages lose retrieval accuracy (`polyembed.eval.forgetting`).
The untrained student's own embedding of a sentence is a target that exists for any language at no cost.
An anchor row pulls the student's embedding of a sentence to the untrained student's (projection included),
with the same MSE as the distillation rows; each anchor language is one more source in the balanced batches,
so its weight is its share of each batch.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from polyembed.config import ConfigOrigin
from polyembed.data.io import read_lines
from polyembed.data.parallel_sources import check_language, load_parallel_sources
from polyembed.data.root import data_root
from polyembed.methods.distill.config import DistillConfig


@dataclass
class AnchorText:
    """The anchor sentences of one language and where they came from."""

    language: str
    sentences: list[str]
    origin: str

    def __len__(self) -> int:
        return len(self.sentences)


def load_anchor_text(config: DistillConfig, origin: ConfigOrigin) -> list[AnchorText]:
    """Anchor sentences per language from `anchor_languages` (the non-English side of `datasets`) and
    `anchor_files` (LANG=FILE), checked before any model loads, deduplicated and capped per language."""
    trained = {check_language(code) for code in config.languages}
    found: dict[str, tuple[list[str], list[str]]] = {}

    def language_of(code: str, key: str, index: int) -> str:
        normalized = check_language(code, origin.where(key, index))
        if normalized in trained:
            raise origin.error(
                key, f"'{code}' is also a trained language: its text already has teacher targets", index
            )
        return normalized

    codes = [language_of(code, "anchor_languages", i) for i, code in enumerate(config.anchor_languages)]
    if codes:
        sources = load_parallel_sources(
            codes,
            config.datasets,
            data_root(config.data_root),
            language_origin=lambda i: origin.where("anchor_languages", i),
        )
        for source in sources:
            sentences, origins = found.setdefault(source.language, ([], []))
            sentences.extend(source.other)
            origins.append(source.name)
    for index, spec in enumerate(config.anchor_files):
        code, sep, path = spec.partition("=")
        if not sep or not code.strip() or not path.strip():
            raise origin.error("anchor_files", f"'{spec}': expected LANG=FILE (one sentence per line)", index)
        language = language_of(code.strip(), "anchor_files", index)
        lines = [line.strip() for line in read_lines(Path(path), allow_empty=True) if line.strip()]
        if not lines:
            raise origin.error("anchor_files", f"{path}: no sentences", index)
        sentences, origins = found.setdefault(language, ([], []))
        sentences.extend(lines)
        origins.append(f"file:{path}")
    anchors = []
    for language, (sentences, origins) in found.items():
        unique = list(dict.fromkeys(sentences))
        if len(unique) > config.anchor_sentences_per_language:
            rows = random.Random(f"{config.seed}:anchor:{language}").sample(
                range(len(unique)), config.anchor_sentences_per_language
            )
            unique = [unique[i] for i in sorted(rows)]
        anchors.append(AnchorText(language, unique, ", ".join(origins)))
    return anchors
