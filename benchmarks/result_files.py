"""The one way benchmark scripts store their results: JSON written atomically (a killed run leaves the old file or
the new one, never half of one), read back for rendering, with the machine each was measured on."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from polyembed.outputs import atomic_write


def write_json(path: Path, payload: dict[str, Any] | list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        handle.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def load_json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def machine() -> dict[str, Any]:
    """The machine a result was measured on, stored with it (the CPU model too: cloud machines of one kind
    differ from day to day, and runtimes such as onnxruntime and OpenVINO differ more between CPUs than torch)."""
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "cpu": cpu_description()}


def cpu_description() -> str:
    """CPU model, core count and Python version, as the docs name a machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"
