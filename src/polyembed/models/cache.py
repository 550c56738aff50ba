"""Where converted/pruned models are stored once and reused."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "POLYEMBED_CACHE"


def cache_dir() -> Path:
    """$POLYEMBED_CACHE, else $XDG_CACHE_HOME/polyembed, else ~/.cache/polyembed."""
    if os.environ.get(ENV_VAR):
        path = Path(os.environ[ENV_VAR])
    else:
        path = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "polyembed"
    path.mkdir(parents=True, exist_ok=True)
    return path
