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


def vector_extensions(flags: set[str]) -> str | None:
    """The widest vector instructions among /proc/cpuinfo's `flags`, and whether they include VNNI (integer dot
    products in one instruction): int8 inference speeds differ most between CPUs by these."""
    if "avx512f" in flags:
        return "AVX-512 with VNNI" if "avx512_vnni" in flags else "AVX-512 without VNNI"
    if "avx2" in flags:
        return "AVX2 with AVX-VNNI" if "avx_vnni" in flags else "AVX2 without VNNI"
    return None


def cpu_description() -> str:
    """CPU model, its vector extensions, core count and Python version, as the docs name a machine."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():  # the first core's lines are every core's
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    cpu = fields.get("model name") or platform.processor() or platform.machine()
    extensions = vector_extensions(set(fields.get("flags", "").split()))
    if extensions:
        cpu += f" ({extensions})"
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"
