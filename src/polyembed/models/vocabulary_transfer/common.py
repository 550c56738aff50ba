"""Names every part of the vocabulary transfer shares: options, the error, the report."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from polyembed.errors import PolyembedError

if TYPE_CHECKING:
    from scipy import sparse

REPORT_FILE = "polyembed_vocabulary_transfer.json"
UnseenRule = Literal["random", "decompose"]
UNSEEN_RULES: tuple[str, ...] = typing.get_args(UnseenRule)
"""How a new token without an auxiliary vector is initialised (see the module docstring, step 5)."""
WORD_START = "▁"
TokenizerKind = Literal["unigram", "wordpiece"]
AuxiliarySpace = Literal["ppmi-svd", "fasttext"]
AUXILIARY_SPACES: tuple[str, ...] = typing.get_args(AuxiliarySpace)
"""Which static token space FOCUS interpolates in (see the package doc, step 3)."""


class VocabularyTransferError(PolyembedError):
    """The vocabulary transfer cannot run: empty corpus, impossible vocabulary size, unsupported model..."""


@dataclass
class TransferReport:
    """What FOCUS did to each new token; its summary is printed and saved as REPORT_FILE.

    `weights` is a (new vocab x old vocab) scipy CSR matrix: a copied token's row is one-hot at its old id, an
    interpolated token's row holds its sparsemax weights over the anchors' old ids, a decomposed token's row
    holds 1/k for each of its k old pieces, a random token's row is empty. So ``new[i] == weights[i] @ old``
    for every token that is not random.
    """

    source_vocab_size: int
    target_vocab_size: int
    copied: int
    interpolated: int
    random: int
    anchors: int
    corpus_sentences: int
    corpus_tokens: int
    auxiliary: str
    examples: list[str] = field(default_factory=list)
    source: str = ""
    decomposed: int = 0
    unseen: str = "random"
    copied_ids: list[int] = field(default_factory=list, repr=False)
    interpolated_ids: list[int] = field(default_factory=list, repr=False)
    random_ids: list[int] = field(default_factory=list, repr=False)
    decomposed_ids: list[int] = field(default_factory=list, repr=False)
    weights: sparse.csr_matrix | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able summary (counts and examples; not the per-token ids or weights)."""
        out = asdict(self)
        for key in ("copied_ids", "interpolated_ids", "random_ids", "decomposed_ids", "weights"):
            out.pop(key)
        return out

    def summary(self) -> str:
        """A few human-readable lines: counts and example interpolations."""
        total = max(self.target_vocab_size, 1)
        lines = [
            f"FOCUS vocabulary transfer{f' of {self.source}' if self.source else ''}: "
            f"{self.source_vocab_size:,} -> {self.target_vocab_size:,} tokens",
            f"  copied (overlapping)  {self.copied:>7,} ({100 * self.copied / total:.1f}%)",
            f"  interpolated (FOCUS)  {self.interpolated:>7,} ({100 * self.interpolated / total:.1f}%)"
            f" from {self.anchors:,} anchors",
            *(
                [f"  decomposed (unseen)   {self.decomposed:>7,} ({100 * self.decomposed / total:.1f}%) old pieces"]
                if self.unseen == "decompose"
                else []
            ),
            f"  random (unseen)       {self.random:>7,} ({100 * self.random / total:.1f}%)",
            f"  auxiliary space: {self.auxiliary}; corpus {self.corpus_sentences:,} sentences, "
            f"{self.corpus_tokens:,} tokens",
        ]
        lines += [f"  e.g. {example}" for example in self.examples]
        return "\n".join(lines)


def corpus_texts(corpus: Iterable[str] | str | None, what: str = "corpus") -> list[str]:
    """The corpus as a list of non-blank strings; a non-string item or an empty corpus is an error."""
    if corpus is None:
        raise VocabularyTransferError(f"the {what} is missing (None): a new vocabulary needs target-language text")
    if isinstance(corpus, str | bytes):
        raise VocabularyTransferError(f"the {what} must be an iterable of sentences, not a single string")
    out: list[str] = []
    for number, text in enumerate(corpus, start=1):
        if not isinstance(text, str):
            raise VocabularyTransferError(f"{what} item {number} is {type(text).__name__}, not str")
        if text.strip():
            out.append(text)
    if not out:
        raise VocabularyTransferError(f"the {what} is empty: a new vocabulary needs target-language text")
    return out
