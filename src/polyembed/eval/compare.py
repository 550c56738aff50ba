"""Before and after: a trained model against the model it started from, task by task and language by language.

Why: a user who trained on their language wants to know how much it gained and what it cost elsewhere. A mean
over languages hides the language that got worse, so every subset is a row, each change carries a 95 % interval
(scores on a few hundred test rows move by a point or more by chance), and the retrieval tasks that cover many
languages (`tatoeba`, `tico19-retrieval`) get the forgetting summary of `eval/forgetting.py`.

Intervals: each score's 95 % interval on its `n` rows is a binomial one (normal approximation) for accuracies
and F1 in percent, and Fisher's z for correlations x100; a change's interval combines both models' as if they
were independent, which is wider than a paired interval on the same rows would be (a change outside it is a
real one; one inside may still be).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from polyembed.eval.base import Score
from polyembed.eval.forgetting import TASK_LABELS, ForgettingReport, forgetting_report

Z95 = 1.96
PROPORTIONS = ("accuracy", "f1", "precision", "recall")
CORRELATIONS = ("spearman", "pearson")


def score_half_width(metric: str, value: float, n: int | None) -> float | None:
    """95 % half-width of one score on `n` rows (None where the metric or the row count gives none)."""
    if not n or n < 4 or math.isnan(value):
        return None
    if metric.startswith(PROPORTIONS):
        p = min(max(value / 100, 0.0), 1.0)
        return 100 * Z95 * math.sqrt(p * (1 - p) / n)
    if metric.startswith(CORRELATIONS):
        r = min(max(value / 100, -0.999999), 0.999999)
        z, spread = math.atanh(r), Z95 / math.sqrt(n - 3)
        return 100 * max(math.tanh(z + spread) - r, r - math.tanh(z - spread))
    return None


@dataclass
class ScoreChange:
    """One task subset's main score in both models."""

    task: str
    subset: str
    metric: str
    n: int | None
    before: float
    after: float
    half_width: float | None
    """95 % half-width of the change (None: the metric has no interval here)."""

    @property
    def change(self) -> float:
        return self.after - self.before

    @property
    def clear(self) -> bool:
        """The change lies outside its interval."""
        return self.half_width is not None and abs(self.change) > self.half_width


@dataclass
class Comparison:
    """Every main score of two evaluations on the same tasks, plus forgetting per multi-language retrieval task."""

    model: str
    baseline: str
    rows: list[ScoreChange]
    forgetting: list[ForgettingReport] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "baseline": self.baseline,
                "rows": [{**asdict(row), "change": row.change, "clear": row.clear} for row in self.rows],
                "forgetting": [report.to_dict() for report in self.forgetting]}

    def markdown(self) -> str:
        """The per-subset table (changes outside their interval in bold), then each forgetting summary."""
        lines = [f"| task | subset | {self.baseline} | {self.model} | change (95 % interval) |",
                 "|---|---|---|---|---|"]
        for row in self.rows:
            change = f"{row.change:+.2f}" + (f" ± {row.half_width:.2f}" if row.half_width is not None else "")
            lines.append(f"| {row.task} | {row.subset} | {row.before:.2f} | {row.after:.2f} | "
                         f"{f'**{change}**' if row.clear else change} |")
        for report in self.forgetting:
            lines += ["", f"Forgetting, {TASK_LABELS[report.task]}:", "", report.markdown().rstrip("\n")]
        return "\n".join(lines) + "\n"


def _main_scores(scores: Sequence[Score]) -> dict[tuple[str, str], Score]:
    return {(s.task, s.subset): s for s in scores if s.main}


def compare_scores(before: Sequence[Score], after: Sequence[Score], model: str, baseline: str,
                   trained_languages: Sequence[str] = ()) -> Comparison:
    """The comparison of two evaluations' scores (subsets scored in both only, in the baseline's order).
    `trained_languages` (any code form) mark the rows of the forgetting summary that the model trained on."""
    first, second = _main_scores(before), _main_scores(after)
    rows = []
    for key, old in first.items():
        new = second.get(key)
        if new is None:
            continue
        n = old.n or new.n
        old_width, new_width = score_half_width(old.metric, old.value, n), score_half_width(new.metric, new.value, n)
        width = (math.sqrt(old_width * old_width + new_width * new_width)
                 if old_width is not None and new_width is not None else None)
        rows.append(ScoreChange(old.task, old.subset, old.metric, n, old.value, new.value, width))
    tasks = {s.task for s in before} & {s.task for s in after}
    forgetting = [forgetting_report(before, after, trained_languages, task=task) for task in TASK_LABELS
                  if task in tasks]
    return Comparison(model, baseline, rows, [report for report in forgetting if report.languages])
