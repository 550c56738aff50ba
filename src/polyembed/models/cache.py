"""Where converted/pruned models are stored once and reused."""

from __future__ import annotations

import os
from pathlib import Path

from polyembed.errors import PolyembedError

ENV_VAR = "POLYEMBED_CACHE"


class CacheDirError(PolyembedError):
    """The cache folder cannot be created or used (a file in its place, no permission): one line naming it and
    where it came from ($POLYEMBED_CACHE or the default), instead of an OSError from deep inside a command."""


def cache_location() -> tuple[Path, str]:
    """(the cache folder, where that choice came from), without creating or checking anything: for reports."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]), f"{ENV_VAR}={os.environ[ENV_VAR]}"
    base = os.environ.get("XDG_CACHE_HOME")
    if base:
        return Path(base) / "polyembed", f"XDG_CACHE_HOME={base}"
    return Path.home() / ".cache" / "polyembed", "the default cache folder"


def cache_dir() -> Path:
    """$POLYEMBED_CACHE, else $XDG_CACHE_HOME/polyembed, else ~/.cache/polyembed; created when missing."""
    path, origin = cache_location()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
        why = err.strerror if blocker is None else "it is a file, not a folder" if blocker == path else (
            f"{blocker} is a file")
        raise CacheDirError(f"cache folder {path} ({origin}): cannot use it ({why}); point {ENV_VAR} at a folder "
                            "polyembed can create or write in") from None
    return path
