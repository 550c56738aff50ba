"""Bitext mining: margin-scored nearest neighbours between two embedding pools (BUCC / LASER protocol)."""

from polyembed.mining.margin import (
    MARGINS,
    MODES,
    MarginCandidates,
    MinedPair,
    ThresholdFit,
    fit_threshold,
    knn,
    margin_candidates,
    margin_function,
    margin_retrieve,
    mine,
    normalize_rows,
    prf,
    select_pairs,
)

__all__ = [
    "MARGINS",
    "MODES",
    "MarginCandidates",
    "MinedPair",
    "ThresholdFit",
    "fit_threshold",
    "knn",
    "margin_candidates",
    "margin_function",
    "margin_retrieve",
    "mine",
    "normalize_rows",
    "prf",
    "select_pairs",
]
