"""Long inputs are clipped before tokenizing, keeping exactly the tokens the model keeps."""

from __future__ import annotations

import numpy as np

from polyembed.models.clipping import CHARS_PER_TOKEN_BEFORE_CLIPPING, clip_texts, clip_to_tokens


def test_a_long_text_keeps_the_tokens_the_model_keeps(minilm) -> None:
    tokenizer, limit = minilm.tokenizer, minilm.max_seq_length
    words = [f"word{i % 97}" if i % 5 else "Antidisestablishmentarianism," for i in range(40_000)]
    text = "  ".join(words)
    clipped = clip_to_tokens(text, tokenizer, limit)
    assert len(clipped) < len(text) // 10
    whole = tokenizer(text, truncation=True, max_length=limit)["input_ids"]
    assert tokenizer(clipped, truncation=True, max_length=limit)["input_ids"] == whole


def test_short_texts_and_models_without_a_tokenizer_are_untouched(minilm) -> None:
    short = "a sentence " * (CHARS_PER_TOKEN_BEFORE_CLIPPING * minilm.max_seq_length // 12)
    assert clip_to_tokens(short, minilm.tokenizer, minilm.max_seq_length) is short
    assert clip_texts(["x" * 10**6], None, 128) == ["x" * 10**6]
    assert clip_texts(["x" * 10**6], minilm.tokenizer, None) == ["x" * 10**6]


def test_encoding_a_huge_line_gives_the_vector_of_its_start(minilm) -> None:
    from polyembed.models.loading import load_model

    encoder = load_model("minilm-en")
    line = "the quick brown fox jumps over the lazy dog " * 250_000  # 11 MB on one line
    start = line[:20_000]  # far more than the model's tokens
    vectors = encoder.encode([line, start], language="en")
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
