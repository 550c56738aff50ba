"""The small public Python API: load a model, encode (language-routed when asked), evaluate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from polyembed.errors import PolyembedError
from polyembed.eval.api import evaluate
from polyembed.languages import require_known_language
from polyembed.models.encoder import SentenceEncoder, encode_by_language, normalize_rows
from polyembed.models.langid import identify_languages
from polyembed.models.loading import load_model

if TYPE_CHECKING:
    from polyembed.methods.base import TrainConfig, TrainResult
    from polyembed.methods.distill.config import DistillConfig


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
    """Embed sentences with a model name or encoder; rows L2-normalised by default. A `language` must be
    a known ISO 639 code (a typo would silently pick a routed model's default)."""
    if batch_size < 1:
        raise PolyembedError(f"batch size {batch_size}: expected 1 or more")
    code = require_known_language(language) if language is not None else None
    encoder = _as_encoder(model)
    vectors = encoder.encode(sentences, language=code, batch_size=batch_size, show_progress_bar=show_progress_bar)
    return normalize_rows(vectors) if normalize and len(vectors) else vectors


def encode_lines(
    model: str | SentenceEncoder,
    sentences: Sequence[str],
    language: str | None = None,
    *,
    batch_size: int = 64,
    normalize: bool = True,
) -> tuple[np.ndarray, Counter[str]]:
    """Encode mixed-language input: without `language`, a language-routed model gets each line's detected
    language (langid); returns the matrix in input order and the per-language line counts."""
    encoder = _as_encoder(model)
    if language is not None or not getattr(encoder, "routes_by_language", False):
        # Not routed: one batch; the detected languages are only reported back to the caller.
        languages = [language] * len(sentences) if language else identify_languages(sentences)
        vectors = encode(
            encoder,
            sentences,
            language,
            batch_size=batch_size,
            normalize=normalize,
            show_progress_bar=len(sentences) > batch_size,
        )
        return vectors, Counter(languages)
    detected = identify_languages(sentences)
    vectors = encode_by_language(
        lambda group, code: encode(encoder, group, code, batch_size=batch_size, normalize=normalize),
        sentences,
        detected,
    )
    return vectors, Counter(detected)


def train(
    method: str,
    config: str | Path | TrainConfig | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
    show_progress: bool = True,
    **options: Any,
) -> TrainResult:
    """Run a registered training method (`polyembed train --help` lists them) from a YAML file or a config
    object, with keyword overrides; every option is checked before any model loads.

    Example: ``train("distill", languages=["de", "sw"], max_steps=200, output_dir="runs/de-sw")``.
    """
    from polyembed.methods.base.registry import train as run

    return run(method, config, resume=resume, overwrite=overwrite, show_progress=show_progress, **options)


def train_distill(
    config: str | Path | DistillConfig | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
    show_progress: bool = True,
    **options: Any,
) -> TrainResult:
    """Multilingual knowledge distillation: `train("distill", ...)`."""
    return train("distill", config, resume=resume, overwrite=overwrite, show_progress=show_progress, **options)


__all__ = ["encode", "encode_lines", "evaluate", "load_model", "train", "train_distill"]
