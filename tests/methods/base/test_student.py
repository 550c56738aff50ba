"""Peak memory per run: the modular pipeline trains several stages in one process, so each run's peak must not
carry an earlier run's."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from polyembed.methods.base.student import peak_memory_mb, reset_peak_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the high-water mark resets on Linux only")
def test_reset_peak_memory_forgets_an_earlier_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the resident-memory reading, on a GPU too
    block = np.ones(400 * 2**20 // 8)  # 400 MB resident
    block[::512] += 1
    del block
    before = peak_memory_mb()
    reset_peak_memory()
    after = peak_memory_mb()
    assert after < before - 300, (before, after)
