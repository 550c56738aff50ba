"""Forgetting: what training did to every language, not just the trained ones.

Why: a mean over the trained languages hides a language that got worse, and the languages a user did not train
are exactly the ones a multilingual student is supposed to keep. The report compares bitext retrieval (mean of
both directions) of a model before and after training, language by language, split into languages with teacher
targets (trained), languages whose text only anchored the student to its start (anchored, see
`methods/distill/anchors.py`) and languages the run never saw, and lists the worst losses. The last group is the
honest one: a recipe is judged on languages it had no text for.

Two tasks, because sentence length matters: LASER Tatoeba (112 languages, short sentences) and TICO-19 (10
languages, long COVID-domain sentences). A student trained on short pairs can keep the first and lose the
second.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from polyembed.eval.base import Score
from polyembed.languages import normalize_language

TASK = "tatoeba"
LONG_SENTENCE_TASK = "tico19-retrieval"
TASK_LABELS = {
    TASK: "LASER Tatoeba (short sentences)",
    LONG_SENTENCE_TASK: "TICO-19 (long sentences, COVID domain)",
}
METRIC = "accuracy"
PER_LANGUAGE_LIMIT = 20
"""Reports of at most this many languages list every language (grouped, worst first); longer ones the worst."""
MIN_TEST_SENTENCES = 500
"""Languages with fewer test pairs are listed but left out of the loss bound: at 104 pairs one sentence is
about a point."""
GROUP_LABELS = {
    "trained": "in the training data (teacher targets)",
    "anchored": "anchor text only",
    "not_trained": "not in the training data",
}


def forgetting_task_options(max_rows: int | None = None, task: str = TASK) -> dict[str, Any]:
    """Options of a forgetting task (`tatoeba` or `tico19-retrieval`): every language, optionally capped rows."""
    from polyembed.eval.registry import get_task

    if task not in TASK_LABELS:
        raise ValueError(f"no forgetting task '{task}' (tasks: {', '.join(TASK_LABELS)})")
    return {"languages": list(get_task(task).metadata.languages), "max_rows": max_rows}


@dataclass
class LanguageChange:
    """One language's retrieval accuracy before and after training."""

    language: str
    test_pairs: int
    trained: bool
    before: float
    after: float
    anchored: bool = False

    @property
    def group(self) -> str:
        """'trained' (teacher targets), 'anchored' (anchor text only) or 'not_trained' (no text at all)."""
        return "trained" if self.trained else "anchored" if self.anchored else "not_trained"

    @property
    def change(self) -> float:
        return self.after - self.before


@dataclass
class ForgettingReport:
    """Per-language changes, the two group means and the worst losses; `tolerance` is the allowed loss."""

    languages: list[LanguageChange]
    tolerance: float = 1.0
    min_test_sentences: int = MIN_TEST_SENTENCES
    worst_count: int = 10
    notes: list[str] = field(default_factory=list)
    task: str = TASK

    def group(self, name: str) -> list[LanguageChange]:
        """The rows of one group: 'trained', 'anchored' or 'not_trained'."""
        return [row for row in self.languages if row.group == name]

    def worst(self) -> list[LanguageChange]:
        """The largest losses first (gains excluded)."""
        losses = sorted((row for row in self.languages if row.change < 0), key=lambda row: row.change)
        return losses[: self.worst_count]

    def beyond_tolerance(self) -> list[LanguageChange]:
        """Languages with enough test pairs that lost more than `tolerance` points."""
        return [
            row
            for row in self.languages
            if row.test_pairs >= self.min_test_sentences and row.change < -self.tolerance
        ]

    def summary(self) -> dict[str, Any]:
        """Means before / after / change per group, and the counts the acceptance bound is about."""
        out: dict[str, Any] = {}
        beyond = {row.language for row in self.beyond_tolerance()}
        for name in GROUP_LABELS:
            rows = self.group(name)
            if rows:
                out[name] = {
                    "languages": len(rows),
                    "before": _mean(r.before for r in rows),
                    "after": _mean(r.after for r in rows),
                    "change": _mean(r.change for r in rows),
                    "lost_more_than_tolerance": sum(1 for r in rows if r.language in beyond),
                }
        worst = self.worst()
        out["worst"] = {"language": worst[0].language, "change": worst[0].change} if worst else None
        out["beyond_tolerance"] = sorted(beyond)
        return out

    def ordered(self) -> list[LanguageChange]:
        """Every language, grouped (trained, anchored, not trained), the largest loss first within a group."""
        order = list(GROUP_LABELS)
        return sorted(self.languages, key=lambda row: (order.index(row.group), row.change, row.language))

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "tolerance": self.tolerance,
            "min_test_sentences": self.min_test_sentences,
            "summary": self.summary(),
            "languages": [{**asdict(row), "group": row.group, "change": row.change} for row in self.languages],
            "notes": self.notes,
        }

    def markdown(self) -> str:
        """Group table plus the worst losses, for reports."""
        lines = [
            "| languages | count | before | after | change | lost > "
            f"{self.tolerance:g} point (>= {self.min_test_sentences} test pairs) |",
            "|---|---|---|---|---|---|",
        ]
        for name, block in self.summary().items():
            if name in ("worst", "beyond_tolerance") or block is None:
                continue
            lines.append(
                f"| {GROUP_LABELS[name]} | {block['languages']} | {block['before']:.2f} | {block['after']:.2f} | "
                f"{block['change']:+.2f} | {block['lost_more_than_tolerance']} |"
            )
        every = len(self.languages) <= PER_LANGUAGE_LIMIT
        shown = self.ordered() if every else self.worst()
        if shown:
            lines += ["", "Every language:" if every else "Largest losses:", "",
                      "| language | group | test pairs | before | after | change |", "|---|---|---|---|---|---|"]
            lines += [
                f"| {r.language} | {r.group.replace('_', ' ')} | {r.test_pairs} | {r.before:.2f} | "
                f"{r.after:.2f} | {r.change:+.2f} |"
                for r in shown
            ]
        lines += [f"\n{note}" for note in self.notes]
        return "\n".join(lines) + "\n"


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else float("nan")


def forgetting_report(
    before: Sequence[Score],
    after: Sequence[Score],
    trained_languages: Sequence[str],
    anchored_languages: Sequence[str] = (),
    *,
    tolerance: float = 1.0,
    min_test_sentences: int = MIN_TEST_SENTENCES,
    worst_count: int = 10,
    task: str = TASK,
) -> ForgettingReport:
    """Compare the accuracy rows of `task` (`tatoeba`, or `tico19-retrieval` for long sentences) of two
    evaluations (scores of any tasks; others are ignored).

    `trained_languages` are codes in any form (`de`, `deu`): a task language counts as trained when its
    normalised code is among them. Only languages scored in both evaluations appear; `test_pairs` is the
    number of rows the score used (after any `max_rows` cap). `anchored_languages` (same forms) had anchor text
    only: they get a group of their own so that 'not in the training data' means no text at all."""
    trained = {normalize_language(code) or code for code in trained_languages}
    anchored = {normalize_language(code) or code for code in anchored_languages}
    first, second = _accuracies(before, task), _accuracies(after, task)
    rows = [
        LanguageChange(
            language=language,
            test_pairs=first[language][1],
            trained=(normalize_language(language) or language) in trained,
            before=first[language][0],
            after=second[language][0],
            anchored=(normalize_language(language) or language) in anchored,
        )
        for language in sorted(first.keys() & second.keys())
    ]
    notes = []
    largest = max((n for _, n in [*first.values(), *second.values()]), default=0)
    if rows and largest < min_test_sentences:
        notes.append(
            f"Every language was scored on at most {largest} pairs (a row cap): none reaches {min_test_sentences} "
            "test pairs, so no language is checked against the loss bound."
        )
    return ForgettingReport(rows, tolerance, min_test_sentences, worst_count, notes, task)


def _accuracies(scores: Sequence[Score], task: str) -> dict[str, tuple[float, int]]:
    return {
        s.subset: (float(s.value), int(s.n or 0))
        for s in scores
        if s.task == task and s.metric == METRIC and s.subset != "avg"
    }
