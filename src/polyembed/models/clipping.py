"""Clip very long inputs before they reach the tokenizer: the model keeps only its first `max_seq_length`
tokens anyway, but a fast tokenizer first tokenizes the whole text (with offsets) and a single 50 MB line takes
gigabytes. A clipped text keeps exactly the tokens the model would have kept.

Why it is exact: the text is cut at a whitespace boundary, which every tokenizer family in use (WordPiece,
SentencePiece, byte-level BPE) treats as a pre-token boundary, so the tokens of the cut text are the first
tokens of the whole text; the cut is made once the cut text has more tokens than the model keeps. Only a
single "word" longer than the clipping window (no whitespace at all) is cut inside itself, where the last
tokens of the window may differ from the whole word's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

CHARS_PER_TOKEN_BEFORE_CLIPPING = 16
"""Texts with more characters than this times the model's token limit are clipped; shorter ones (every normal
sentence and paragraph) pass untouched, without tokenizing twice."""
_LAST_WHITESPACE = re.compile(r"\s+\S*\Z")


def clip_to_tokens(text: str, tokenizer: Any, max_tokens: int) -> str:
    """`text`, or its start up to a whitespace boundary holding more than `max_tokens` tokens."""
    if len(text) <= CHARS_PER_TOKEN_BEFORE_CLIPPING * max_tokens:
        return text
    size = 4 * max_tokens
    while size < len(text):
        prefix = text[:size]
        boundary = _LAST_WHITESPACE.search(prefix)
        candidate = prefix[:boundary.start()] if boundary and boundary.start() > 0 else prefix
        ids = tokenizer(candidate, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        if len(ids) > max_tokens:
            return candidate
        size *= 2
    return text


def clip_texts(texts: Sequence[str], tokenizer: Any, max_tokens: int | None) -> list[str]:
    """Each of `texts` clipped (see the module docstring); unchanged where the model has no tokenizer or limit."""
    if tokenizer is None or not max_tokens:
        return list(texts)
    return [clip_to_tokens(text, tokenizer, max_tokens) if isinstance(text, str) else text for text in texts]
