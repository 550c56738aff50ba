"""The one way benchmark scripts write and read their result JSON (atomically: a killed run leaves the old file
or the new one, never half of one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from polyembed.outputs import atomic_write


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        handle.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def load_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
