"""The small public Python API: load a model, encode (language-routed when asked), evaluate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from polyembed.eval.api import evaluate
from polyembed.languages import require_known_language
from polyembed.models.encoder import SentenceEncoder
from polyembed.models.langid import identify_languages
from polyembed.models.loading import as_encoder, load_model

if TYPE_CHECKING:
    from polyembed.methods.base import TrainConfig, TrainResult
    from polyembed.methods.distill.config import DistillConfig


def encode(
    model: str | SentenceEncoder,
    sentences: Sequence[str],
    language: str | Sequence[str | None] | None = None,
    *,
    batch_size: int = 64,
    normalize: bool = True,
    show_progress_bar: bool = False,
) -> np.ndarray:
    """Embed sentences with a model name or encoder; rows L2-normalised by default. `language`: one ISO 639
    code, one per sentence, or None (`SentenceEncoder.encode`)."""
    return as_encoder(model).encode(sentences, language, batch_size=batch_size, normalize=normalize,
                                    show_progress_bar=show_progress_bar)


def encode_lines(
    model: str | SentenceEncoder,
    sentences: Sequence[str],
    language: str | None = None,
    *,
    batch_size: int = 64,
    normalize: bool = True,
) -> tuple[np.ndarray, Counter[str]]:
    """Encode mixed-language input: without `language`, each line's language is detected (langid) and a
    language-routed model gets it; returns the matrix in input order and the per-language line counts."""
    encoder = as_encoder(model)
    code = require_known_language(language) if language is not None else None
    languages = [code] * len(sentences) if code else identify_languages(sentences)
    vectors = encoder.encode(sentences, languages, batch_size=batch_size, normalize=normalize,
                             show_progress_bar=len(sentences) > batch_size)
    return vectors, Counter(languages)


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
