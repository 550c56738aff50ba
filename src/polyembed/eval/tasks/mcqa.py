"""Zero-shot multiple-choice tasks answered by embedding similarity alone (no training, no LM scoring).

- `belebele`: reading comprehension. Following Huang et al. 2024 (Modular Sentence Encoders, §4 and their
  eval_belebele.py), each answer is joined to its question as one "QA pair" text, `f"{question} {answer}"`
  (a single space), and the QA pair whose embedding is most cosine-similar to the passage wins.
  Cross-lingual subsets "P-Q" put the passage in language P and the question + answers in language Q.
- `xcopa` / `kardes-xcopa`: causal commonsense. The alternative whose embedding is most cosine-similar to
  the premise wins. Similarity is symmetric, so the cause/effect direction of the question cannot be used;
  neither paper describes a better similarity-only formulation (EMMA-X fine-tunes a classifier on XCOPA).
  Chance level is 50 %.

Accuracy is reported in percent (x100). Ties go to the first candidate (numpy argmax).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from polyembed.data.readers.mcqa import (
    BELEBELE_FILES,
    KARDES_XCOPA_LANGUAGES,
    XCOPA_LANGUAGES,
    BelebeleItem,
    read_belebele,
)
from polyembed.data.types import MultipleChoiceItem
from polyembed.errors import DataError, PolyembedError
from polyembed.eval.base import EmbeddingProvider, Score, Task, TaskMetadata, register_task

MODULAR_PAPER = "Huang et al. 2024, Modular Sentence Encoders (arXiv 2407.14878), Belebele zero-shot MCQA"


def qa_pair(question: str, answer: str) -> str:
    """The text embedded for one Belebele candidate: question and answer joined by one space (the paper)."""
    return f"{question} {answer}"


def choose_by_similarity(
    context_vectors: np.ndarray, candidate_vectors: np.ndarray, offsets: Sequence[int]
) -> np.ndarray:
    """Predicted candidate index per item: argmax of context . candidate over that item's candidates.

    `context_vectors[i]` belongs to item i, whose candidates are rows `offsets[i]:offsets[i+1]` of
    `candidate_vectors` (rows are L2-normalised, so the dot product is the cosine).
    """
    predictions = np.empty(len(offsets) - 1, dtype=np.int64)
    for item in range(len(offsets) - 1):
        block = candidate_vectors[offsets[item] : offsets[item + 1]]
        predictions[item] = int(np.argmax(block @ context_vectors[item]))
    return predictions


def _offsets(items: Sequence[MultipleChoiceItem]) -> list[int]:
    offsets = [0]
    for item in items:
        offsets.append(offsets[-1] + len(item.candidates))
    return offsets


@register_task
class BelebeleTask(Task):
    """Belebele (eng, deu) zero-shot MCQA: the QA pair most similar to the passage is the answer.

    Subsets: "eng", "deu" (monolingual) and "eng-deu" / "deu-eng" (passage language first, then the
    language of question + answers). The eng and deu files are aligned question by question; a
    misalignment is a DataError rather than a silently wrong cross-lingual score. `max_questions` keeps
    the first N questions (the same ones in every language) for quick suites; None uses all 900.
    """

    metadata = TaskMetadata(
        name="belebele",
        type="multiple-choice",
        description="Belebele reading comprehension, zero-shot: argmax cos(passage, question + ' ' + answer)",
        datasets=("belebele",),
        languages=("eng", "deu", "eng-deu", "deu-eng"),
        splits=("test",),
        main_score="accuracy",
        reference=MODULAR_PAPER,
    )

    def __init__(
        self,
        languages: Sequence[str] | str | None = None,
        split: str | None = None,
        *,
        max_questions: int | None = None,
    ) -> None:
        super().__init__(languages=languages, split=split)
        if max_questions is not None and max_questions < 1:
            raise PolyembedError(f"belebele: max_questions must be >= 1, got {max_questions}")
        self.max_questions = max_questions

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """Embed each language's passages and QA pairs once, then score every selected subset."""
        pairs = [tuple(subset.split("-")) if "-" in subset else (subset, subset) for subset in self.languages]
        needed = sorted({lang for pair in pairs for lang in pair}, key=list(BELEBELE_FILES).index)
        folder = self.folder(context)
        items = {lang: read_belebele(folder, lang) for lang in needed}
        if len(items) > 1:
            _check_aligned(folder, items)
        if self.max_questions is not None:
            items = {lang: questions[: self.max_questions] for lang, questions in items.items()}
        passages: dict[str, np.ndarray] = {}
        answers: dict[str, np.ndarray] = {}
        for lang, questions in items.items():
            unique_passages = list(dict.fromkeys(item.context for item in questions))
            texts = [qa_pair(item.question, answer) for item in questions for answer in item.candidates]
            vectors = context.embed(unique_passages + texts, language=lang)
            row = {text: index for index, text in enumerate(unique_passages)}
            passages[lang] = vectors[[row[item.context] for item in questions]]
            answers[lang] = vectors[len(unique_passages) :]
        scores: list[Score] = []
        for subset, (passage_lang, qa_lang) in zip(self.languages, pairs, strict=True):
            questions = items[qa_lang]
            predictions = choose_by_similarity(passages[passage_lang], answers[qa_lang], _offsets(questions))
            gold = np.array([item.label for item in questions])
            accuracy = 100.0 * float(np.mean(predictions == gold))
            scores.append(
                self.score(
                    subset,
                    "accuracy",
                    accuracy,
                    n=len(questions),
                    passage_language=passage_lang,
                    qa_language=qa_lang,
                )
            )
        return scores


def _check_aligned(folder: Path, items: dict[str, list[BelebeleItem]]) -> None:
    """Cross-lingual subsets pair question i of one file with question i of the other: verify that."""
    (first, reference), *others = items.items()
    for lang, questions in others:
        path = folder / BELEBELE_FILES[lang]
        if len(questions) != len(reference):
            raise DataError(path, None, f"{len(questions)} questions but {first} has {len(reference)}: not aligned")
        for mine, theirs in zip(questions, reference, strict=True):
            if (mine.line, mine.item_index, mine.label, len(mine.candidates)) != (
                theirs.line,
                theirs.item_index,
                theirs.label,
                len(theirs.candidates),
            ):
                raise DataError(
                    path,
                    mine.line,
                    f"question {mine.item_index + 1} is not aligned with {first} (line {theirs.line}, "
                    f"question {theirs.item_index + 1}, correct answer {theirs.label + 1} "
                    f"vs {mine.label + 1})",
                )


class _CopaTask(Task):
    """Shared logic of the COPA-style tasks: argmax cos(premise, alternative), plus an "avg" row."""

    def _items(self, context: EmbeddingProvider, language: str) -> list[MultipleChoiceItem]:
        """The items of one language in the task's split, by the declared dataset's reader; a task whose data
        is not one (language, split) file overrides this."""
        return self.read(context, language, self.split)

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """One accuracy row per language (premises and alternatives embedded in one call) and their mean."""
        scores: list[Score] = []
        accuracies: list[float] = []
        total = 0
        for lang in self.languages:
            items = self._items(context, lang)
            offsets = _offsets(items)
            texts = [item.context for item in items] + [text for item in items for text in item.candidates]
            vectors = context.embed(texts, language=lang)
            predictions = choose_by_similarity(vectors[: len(items)], vectors[len(items) :], offsets)
            gold = np.array([item.label for item in items])
            accuracy = 100.0 * float(np.mean(predictions == gold))
            accuracies.append(accuracy)
            total += len(items)
            scores.append(self.score(lang, "accuracy", accuracy, n=len(items)))
        if len(accuracies) > 1:
            scores.append(
                self.score("avg", "accuracy", float(np.mean(accuracies)), n=total, languages=list(self.languages))
            )
        return scores


@register_task
class XcopaTask(_CopaTask):
    """XCOPA (11 languages, human translations), zero-shot: the alternative closest to the premise wins."""

    metadata = TaskMetadata(
        name="xcopa",
        type="multiple-choice",
        description="XCOPA causal commonsense, zero-shot: argmax cos(premise, alternative); 'avg' = mean",
        datasets=("xcopa",),
        languages=XCOPA_LANGUAGES,
        splits=("val", "test"),
        main_score="accuracy",
        reference="Ponti et al. 2020, XCOPA",
    )


@register_task
class KardesXcopaTask(_CopaTask):
    """Kardes-NLU XCOPA (English source + 5 Turkic languages), zero-shot as `xcopa`.

    Uyghur is used in the Cyrillic script of the data (the modular-encoder paper converts it to Arabic).
    """

    metadata = TaskMetadata(
        name="kardes-xcopa",
        type="multiple-choice",
        description="Kardes-NLU XCOPA (en az kk ky ug uz), zero-shot: argmax cos(premise, alternative)",
        datasets=("kardes-xcopa",),
        languages=KARDES_XCOPA_LANGUAGES,
        splits=("dev", "test"),
        main_score="accuracy",
        reference="Senel et al. 2024, Kardes-NLU",
    )
