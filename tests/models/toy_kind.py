"""A toy encoder kind: one class and its registration are all a new kind needs; `load_model`, language routing,
normalisation, the embedding store, the server and the MTEB wrapper come from `polyembed.models`.
docs/contributing/encoder-kind.md shows this file as it is."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from polyembed.models import SentenceEncoder, register_encoder_kind


@register_encoder_kind
class LetterCounts(SentenceEncoder):
    """Counts of chosen letters: a folder holding `letter-counts.txt` (the letters) is a model of this kind."""

    MARKER = "letter-counts.txt"

    def __init__(self, letters: str, name: str, path: str | None = None) -> None:
        self.letters, self.name, self.path = letters, name, path

    @classmethod
    def can_load(cls, path: Path) -> bool:
        return (path / cls.MARKER).is_file()

    @classmethod
    def load(cls, path: Path, *, name: str, device: str | None) -> LetterCounts:
        return cls((path / cls.MARKER).read_text(encoding="utf-8").strip(), name, str(path))

    @property
    def dimension(self) -> int:
        return len(self.letters)

    def _encode_group(
        self, sentences: list[str], language: str | None, batch_size: int, show_progress_bar: bool
    ) -> np.ndarray:
        return np.array([[text.lower().count(letter) for letter in self.letters] for text in sentences],
                        dtype=np.float32)
