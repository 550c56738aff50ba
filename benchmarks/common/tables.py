"""The table cells the benchmark renderers share: a mean over seeds, and a score with two decimals."""

from __future__ import annotations

import math


def mean(values: list[float]) -> float:
    """The mean of the values that are numbers (NaN: not measured); NaN when none is."""
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def cell(values: list[float], digits: int = 1) -> str:
    """A table cell: the mean over seeds, then each seed's value when there are several; '-' when none."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "-"
    average = sum(values) / len(values)
    if len(values) == 1:
        return f"{average:.{digits}f}"
    return f"{average:.{digits}f} ({' / '.join(f'{v:.{digits}f}' for v in values)})"


def score_cell(value: float, pct: bool = False) -> str:
    """A score with two decimals, or a ratio as a percentage with one ('n/a' for NaN: not measured)."""
    return "n/a" if value != value else (f"{100 * value:.1f}%" if pct else f"{value:.2f}")
