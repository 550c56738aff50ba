"""Where the local copies of the datasets live: one setting, env var or CLI flag, never a copy in the repo."""

from __future__ import annotations

import os
from pathlib import Path

from polyembed.errors import PolyembedError

ENV_VAR = "POLYEMBED_DATA"
_override: Path | None = None


def _default_candidates() -> list[Path]:
    """`../shared/data` next to the working directory, then next to a source checkout."""
    here = Path(__file__).resolve()
    return [
        Path.cwd().parent / "shared" / "data",
        here.parents[4] / "shared" / "data" if len(here.parents) > 4 else Path(),
    ]


def set_data_root(path: str | Path | None) -> None:
    """Set the data root for this process (for embedding apps and notebooks); None clears it."""
    global _override
    _override = Path(path).expanduser().resolve() if path is not None else None
    if _override is not None and not _override.is_dir():
        bad = _override
        _override = None
        raise PolyembedError(f"data root {bad} is not a directory")


def data_root(path: str | Path | None = None) -> Path:
    """Resolve the data root: explicit argument > set_data_root > $POLYEMBED_DATA > ../shared/data."""
    if path is not None:
        root = Path(path).expanduser().resolve()
        source = "argument"
    elif _override is not None:
        return _override
    elif os.environ.get(ENV_VAR):
        root = Path(os.environ[ENV_VAR]).expanduser().resolve()
        source = f"${ENV_VAR}"
    else:
        for candidate in _default_candidates():
            if candidate.is_dir():
                return candidate.resolve()
        raise PolyembedError(
            f"no data root: set ${ENV_VAR} or pass --data-root (looked for ../shared/data from {Path.cwd()})"
        )
    if not root.is_dir():
        raise PolyembedError(f"data root {root} (from {source}) is not a directory")
    return root
