"""serve.json, the one file every serving measurement adds to (`run`, `queue`, `calls`, `malformed`, `selftest`),
with the machine it was last measured on."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.common.results import cpu_description, write_json
from benchmarks.serve.spec import OUT


def load() -> dict[str, Any] | None:
    """serve.json as stored (None before the first measurement): each measurement adds its part to it."""
    path = OUT / "serve.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def save(payload: dict[str, Any]) -> None:
    """Store serve.json with this machine, atomically."""
    write_json(OUT / "serve.json", {**payload, "machine": cpu_description()})
