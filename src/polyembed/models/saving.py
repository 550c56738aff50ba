"""Writing a model folder all-or-nothing: staged in a temp folder beside the target, then renamed over it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any


def save_model_atomically(model: Any, target: str | Path, extra_files: dict[str, str] | None = None) -> Path:
    """Save a SentenceTransformer (plus `extra_files`: name -> text, e.g. a report) to `target`, replacing
    what was there only once everything is written, so an interrupted save never leaves half a model."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        model.save(str(tmp), create_model_card=False)
        for name, text in (extra_files or {}).items():
            (tmp / name).write_text(text, encoding="utf-8")
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
