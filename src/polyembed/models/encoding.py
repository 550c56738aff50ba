"""Encoding by model reference: a name, folder or encoder in, float32 rows out. What `polyembed.encode`,
`polyembed.encode_lines` and `polyembed encode` call."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from polyembed.languages import require_known_language
from polyembed.models.encoder import SentenceEncoder, with_prompt
from polyembed.models.langid import identify_languages
from polyembed.models.loading import as_encoder


def encode(
    model: str | SentenceEncoder,
    sentences: Sequence[str],
    language: str | Sequence[str | None] | None = None,
    *,
    batch_size: int = 64,
    normalize: bool = True,
    show_progress_bar: bool = False,
    prompt_name: str | None = None,
) -> np.ndarray:
    """Embed sentences with a model name or encoder; rows L2-normalised by default. `language`: one ISO 639
    code, one per sentence, or None (`SentenceEncoder.encode`). `prompt_name`: one of the model's prompts
    (e5's 'query' or 'passage'), as in sentence-transformers; None: its default."""
    return with_prompt(as_encoder(model), prompt_name).encode(sentences, language, batch_size=batch_size,
                                                              normalize=normalize, show_progress_bar=show_progress_bar)


def encode_lines(
    model: str | SentenceEncoder,
    sentences: Sequence[str],
    language: str | None = None,
    *,
    batch_size: int = 64,
    normalize: bool = True,
    prompt_name: str | None = None,
) -> tuple[np.ndarray, Counter[str]]:
    """Encode mixed-language input: without `language`, each line's language is detected (langid) and a
    language-routed model gets it; returns the matrix in input order and the per-language line counts.
    `prompt_name`: as in `encode`."""
    encoder = with_prompt(as_encoder(model), prompt_name)
    code = require_known_language(language) if language is not None else None
    languages = [code] * len(sentences) if code else identify_languages(sentences)
    vectors = encoder.encode(sentences, languages, batch_size=batch_size, normalize=normalize,
                             show_progress_bar=len(sentences) > batch_size)
    return vectors, Counter(languages)
