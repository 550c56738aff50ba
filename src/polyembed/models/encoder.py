"""The one interface every evaluation and training step relies on: `encode(sentences, language=...)`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalised float32 copy, so inner product equals cosine (zero rows stay zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.ascontiguousarray(matrix / np.maximum(norms, 1e-12))


@runtime_checkable
class SentenceEncoder(Protocol):
    """Anything that maps sentences (optionally with their language) to vectors.

    Language-routed models use `language`; single multilingual models ignore it.
    `routes_by_language` tells caches whether the same text in two languages may embed differently.
    """

    name: str
    routes_by_language: bool

    def encode(
        self,
        sentences: Sequence[str],
        language: str | None = None,
        *,
        batch_size: int = 64,
        show_progress_bar: bool = False,
    ) -> np.ndarray: ...


class SentenceTransformerEncoder:
    """A sentence-transformers model behind the SentenceEncoder interface.

    The model's own metadata (`prompts` + `default_prompt_name` in config_sentence_transformers.json)
    supplies input prefixes such as e5's "query: ", so every caller encodes the way the model expects.
    """

    routes_by_language = False

    def __init__(self, model: object, name: str, path: str | Path | None = None) -> None:
        self.model = model
        self.name = name
        self.path = str(path) if path is not None else None

    @property
    def dimension(self) -> int:
        """Output dimension of the sentence embeddings."""
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def prompt(self) -> str:
        """The prefix the model prepends by default ('' when none)."""
        name = getattr(self.model, "default_prompt_name", None)
        return self.model.prompts.get(name, "") if name else ""

    def encode(
        self,
        sentences: Sequence[str],
        language: str | None = None,
        *,
        batch_size: int = 64,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """Embed sentences as float32 rows (not normalised: callers normalise where cosine is wanted)."""
        if len(sentences) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            list(sentences),
            batch_size=batch_size,
            show_progress_bar=show_progress_bar,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32)

    def save(self, path: str | Path) -> None:
        """Save as a standard sentence-transformers folder."""
        self.model.save(str(path))

    def __repr__(self) -> str:
        return f"SentenceTransformerEncoder(name={self.name!r}, path={self.path!r})"


def token_level_model(encoder: Any, language: str | None = None) -> Any:
    """The sentence-transformers model behind an encoder, for tasks that need token embeddings (word
    alignment): through embedding stores and wrappers, a bundle's encoder for `language` (with its adapters as
    the bundle's mode sets them). Encoders without one (an ONNX export) raise a PolyembedError."""
    from polyembed.errors import PolyembedError

    seen = encoder
    while True:
        if hasattr(seen, "language_encoder"):
            return seen.language_encoder(language)
        if isinstance(seen, SentenceTransformerEncoder):
            return seen.model
        if hasattr(seen, "encoder") and seen.encoder is not seen:
            seen = seen.encoder
            continue
        raise PolyembedError(f"{getattr(encoder, 'name', type(encoder).__name__)}: no token embeddings to align "
                             "words with (an ONNX export has sentence vectors only; use the model folder)")
