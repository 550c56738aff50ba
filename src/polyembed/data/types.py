"""Plain records that readers return and tasks consume; nothing here knows about files."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ScoredPairs:
    """Sentence pairs with gold similarity/relatedness scores (STS, STR)."""

    sentences1: list[str]
    sentences2: list[str]
    scores: list[float]
    language1: str
    language2: str

    def __post_init__(self) -> None:
        if not (len(self.sentences1) == len(self.sentences2) == len(self.scores)):
            raise ValueError("sentences1, sentences2 and scores must have the same length")

    def __len__(self) -> int:
        return len(self.scores)


@dataclass
class ParallelText:
    """Line-aligned translations: source[i] translates target[i]."""

    source: list[str]
    target: list[str]
    source_language: str
    target_language: str

    def __post_init__(self) -> None:
        if len(self.source) != len(self.target):
            raise ValueError("source and target must have the same length")

    def __len__(self) -> int:
        return len(self.source)


@dataclass
class MultipleChoiceItem:
    """One multiple-choice question answered by similarity: context vs each candidate."""

    context: str
    candidates: list[str]
    label: int
    context_language: str = ""
    candidate_language: str = ""
    meta: dict[str, str] = field(default_factory=dict)


@dataclass
class MultiwayText:
    """N-way parallel text: texts[lang][i] are translations of each other for every language."""

    texts: dict[str, list[str]]

    def __post_init__(self) -> None:
        lengths = {lang: len(lines) for lang, lines in self.texts.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"languages differ in length: {lengths}")

    @property
    def languages(self) -> list[str]:
        """Language codes in insertion order."""
        return list(self.texts)

    def __len__(self) -> int:
        return len(next(iter(self.texts.values()))) if self.texts else 0

    def pair(self, source: str, target: str) -> ParallelText:
        """The two-language view of this text."""
        return ParallelText(self.texts[source], self.texts[target], source, target)
