"""The results store every benchmark writes to and renders from: where things live (REPO, RESULTS, DOCS, FIGURES),
JSON written atomically (a killed run leaves the old file or the new one, never half of one) and read back for
rendering, and the machine each result was measured on.

Why one module: the studies used to define these paths each for itself; now each study only names its own
folder under RESULTS (its spec module's `OUT`), and nothing else decides where results and docs go.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from polyembed.outputs import atomic_write

REPO = Path(__file__).resolve().parents[2]
"""The repository root (benchmarks/common/results.py is two folders below it)."""
RESULTS = REPO / "results" / "bench"
"""Every study's results folder is one folder below this (not in git: results/ is measured per machine)."""
DOCS = REPO / "docs" / "benchmarks.md"
"""The page every renderer writes its sections of."""
FIGURES = REPO / "docs" / "figures"


def study_command(module: str, *args: str) -> list[str]:
    """The command that runs a benchmark module in a fresh process (`python -m benchmarks.<study>.<module>`); run
    it with `cwd=REPO`, where the `benchmarks` package is importable."""
    return [sys.executable, "-m", module, *args]


def write_json(path: Path, payload: dict[str, Any] | list[Any]) -> None:
    """Store `payload` at `path` (folders made as needed), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        handle.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def load_json(path: Path) -> dict[str, Any] | None:
    """The JSON stored at `path`; None when there is none (results/ is not in git: a renderer then keeps what
    the docs show)."""
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
