"""Stand-ins for a model that keeps the server busy, shared by the serve tests."""

from __future__ import annotations

import time


class SlowEncoder:
    """The tiny encoder, `delay` seconds per encode (a request that keeps the server busy)."""

    dimension = 32

    def __init__(self, inner) -> None:
        self.inner, self.name, self.delay = inner, "slow", 0.0
        self.tokenizer = inner.model.tokenizer

    def encode(self, sentences, language=None, *, batch_size=64, show_progress_bar=False):
        time.sleep(self.delay)
        return self.inner.encode(sentences, batch_size=batch_size)


def record_calls(slow: SlowEncoder) -> list[list[str]]:
    """The sentences of each encode call `slow` gets from now on, in order."""
    calls: list[list[str]] = []
    inner_encode = slow.encode

    def recording(sentences, language=None, **kwargs):
        calls.append(list(sentences))
        return inner_encode(sentences, language, **kwargs)

    slow.encode = recording
    return calls
