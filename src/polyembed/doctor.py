"""`polyembed doctor`: what a bug report needs to know about this installation, in one paste.

Versions of polyembed and the packages it runs on (and where they disagree with polyembed's declared ranges
or with each other), the data root and the cache folder in use, and which built-in models are prepared.
Nothing here loads a model or touches the network.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass

from polyembed import environment

PACKAGES = ("torch", "transformers", "sentence-transformers", "peft", "faiss-cpu", "onnxruntime", "mteb",
            "datasets", "numpy")
"""The packages a bug report most often turns on."""


@dataclass(frozen=True)
class DoctorReport:
    """Rows of (label, value) and the problems found (empty when all is well)."""

    rows: list[tuple[str, str]]
    problems: list[str]

    def text(self) -> str:
        width = max(len(label) for label, _ in self.rows)
        lines = [f"{label:<{width}}  {value}" for label, value in self.rows]
        lines += [f"problem: {line}" for line in self.problems] or ["problems: none found"]
        return "\n".join(lines)


def _version_row(name: str) -> str:
    version = environment.installed_version(name)
    if version is None:
        return "not installed"
    locked = environment.locked_versions().get(name)
    return version if locked in (None, version) else f"{version} (lock: {locked})"


def doctor_report() -> DoctorReport:
    """Collect the report (fast: no model is loaded or converted)."""
    from polyembed.data.root import data_root
    from polyembed.errors import PolyembedError
    from polyembed.models.cache import cache_dir
    from polyembed.models.loading import BUILTIN_MODELS

    rows = [("polyembed", environment.polyembed_version()),
            ("python", f"{platform.python_version()} ({sys.executable})"),
            ("platform", platform.platform())]
    rows += [(name, _version_row(name)) for name in PACKAGES]
    try:
        root = str(data_root())
    except PolyembedError as err:
        root = f"not found ({err})"
    rows.append(("data root", root))
    rows.append(("cache", str(cache_dir())))
    for name, info in BUILTIN_MODELS.items():
        rows.append((f"model {name}", "prepared" if info.prepared() else
                     f"not prepared (polyembed models prepare {name})"))
    return DoctorReport(rows, environment.problems(PACKAGES))
