"""`polyembed doctor`: what a bug report needs to know about this installation, in one paste.

Versions of polyembed and the packages it runs on (and where they disagree with polyembed's declared ranges
or with each other), the data root and the cache folder in use, and which built-in models are prepared (and
whether a prepared copy still matches its checksums). Nothing here loads a model or touches the network.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from polyembed import environment

if TYPE_CHECKING:
    from polyembed.models.loading import BuiltinModel

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
        extra = environment.declared_extras().get(environment.canonical(name))
        return f"not installed (extra {extra})" if extra else "not installed"
    locked = environment.locked_versions().get(name)
    return version if locked in (None, version) else f"{version} (lock: {locked})"


def doctor_report() -> DoctorReport:
    """Collect the report (no model is loaded or converted; a converted model's files are checksummed, which
    reads them once). A cache folder that cannot be used is a row and a problem, not an error: the report is
    what a user needs most then."""
    from polyembed.data.root import data_root
    from polyembed.errors import PolyembedError
    from polyembed.models.cache import CacheDirError, cache_dir, cache_location
    from polyembed.models.loading import BUILTIN_MODELS

    rows = [("polyembed", environment.polyembed_version()),
            ("python", f"{platform.python_version()} ({sys.executable})"),
            ("platform", platform.platform())]
    rows += [(name, _version_row(name)) for name in PACKAGES]
    rows.append(("extras", _extras_row()))
    problems = environment.problems(PACKAGES, optional_missing=False)  # the core alone is a complete install
    try:
        root = str(data_root())
    except PolyembedError as err:
        root = f"not found ({err})"
    rows.append(("data root", root))
    try:
        rows.append(("cache", str(cache_dir())))
    except CacheDirError as err:
        rows.append(("cache", f"{cache_location()[0]} (not usable: see the problem below)"))
        problems.append(str(err))
    for name, info in BUILTIN_MODELS.items():
        rows.append((f"model {name}", _model_row(name, info, problems)))
    return DoctorReport(rows, problems)


def _extras_row() -> str:
    """Which of polyembed's extras are installed: a missing one is no problem, only a command that needs it
    stops (and says which extra to install)."""
    extras = environment.extra_packages()
    if not extras:
        return "unknown (polyembed's metadata not found)"
    there, absent, partly = [], [], []
    for extra, packages in sorted(extras.items()):
        missing = [name for name in packages if environment.installed_version(name) is None]
        if not missing:
            there.append(extra)
        elif len(missing) == len(packages):
            absent.append(extra)
        else:
            partly.append(f"{extra} (not {', '.join(missing)})")
    parts = [f"{label}: {', '.join(names)}" for label, names in (("installed", there), ("not installed", absent),
                                                                  ("partly installed", partly)) if names]
    return "; ".join(parts) + (f" ({environment.install_extra('EXTRA')})" if absent or partly else "")


def _model_row(name: str, info: BuiltinModel, problems: list[str]) -> str:
    """'prepared', 'not prepared (...)' or what is wrong with the prepared copy (also added to `problems`)."""
    from polyembed.errors import PolyembedError
    from polyembed.models.cache import CacheDirError

    repair = f"polyembed models prepare {name}"
    try:
        if not info.prepared():
            return f"not prepared ({repair})"
        damage = info.check() if info.check is not None else None
    except CacheDirError:
        return "unknown (the cache folder is not usable)"
    except (PolyembedError, OSError) as err:
        damage = str(err)
    if damage is None:
        return "prepared"
    problems.append(f"model {name}: {damage}; run `{repair}` to convert it again")
    return f"damaged ({repair})"
