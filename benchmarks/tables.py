"""The one table formatter of the benchmark renderers: cells of a mean over seeds."""

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
