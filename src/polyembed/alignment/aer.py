"""Alignment error rate (Och & Ney 2003), summed over the corpus as the word-alignment literature reports it:
AER = 1 - (|A & S| + |A & P|) / (|A| + |S|), with P including S; precision against P, recall against S."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from polyembed.alignment.pharaoh import GoldAlignment, Link


@dataclass
class AlignmentScores:
    aer: float
    precision: float
    recall: float
    predicted_links: int
    sure_links: int


def alignment_error_rate(predicted: Sequence[set[Link]], gold: Sequence[GoldAlignment]) -> AlignmentScores:
    """Corpus AER, precision and recall of `predicted` links against `gold` (one entry per sentence pair)."""
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted alignments for {len(gold)} gold ones")
    hits_sure = hits_possible = size_predicted = size_sure = 0
    for links, reference in zip(predicted, gold, strict=True):
        possible = reference.possible | reference.sure
        hits_sure += len(links & reference.sure)
        hits_possible += len(links & possible)
        size_predicted += len(links)
        size_sure += len(reference.sure)
    total = size_predicted + size_sure
    return AlignmentScores(
        aer=1.0 - (hits_sure + hits_possible) / total if total else 0.0,
        precision=hits_possible / size_predicted if size_predicted else 0.0,
        recall=hits_sure / size_sure if size_sure else 0.0,
        predicted_links=size_predicted,
        sure_links=size_sure,
    )
