"""The small public Python API: load a model, encode, evaluate."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from polyembed.models.encoder import SentenceEncoder
from polyembed.models.loading import load_model


def _as_encoder(model: str | SentenceEncoder) -> SentenceEncoder:
    return load_model(model) if isinstance(model, str) else model


def encode(
    model: str | SentenceEncoder,
    sentences: Sequence[str],
    language: str | None = None,
    *,
    batch_size: int = 64,
    normalize: bool = True,
    show_progress_bar: bool = False,
) -> np.ndarray:
    """Embed sentences with a model name or encoder; rows L2-normalised by default."""
    encoder = _as_encoder(model)
    vectors = encoder.encode(sentences, language=language, batch_size=batch_size, show_progress_bar=show_progress_bar)
    if normalize and len(vectors):
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors


def evaluate(*args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - replaced below once the runner lands
    """Evaluate a model on tasks or a suite (see polyembed.eval.api.evaluate)."""
    from polyembed.eval.api import evaluate as _evaluate

    return _evaluate(*args, **kwargs)


__all__ = ["encode", "evaluate", "load_model", "Path"]
