"""Which versions of polyembed's dependencies are installed, and whether they work together.

Why: a user who installs polyembed outside the lock file can end up with a pair of packages that refuse each
other deep inside a run (transformers 5.24 refuses every peft older than 0.22, and none exists yet). A command
that needs such a piece checks it first and stops with one line saying which package to move to which
version. A neutral module (like `polyembed.errors`): every layer may import it; it imports no other layer.

`pip install polyembed` brings the core (training, evaluation, mining, encoding); serving, export, Ray, MTEB,
eflomal and fastText come with extras (pyproject.toml's optional-dependencies). A command that needs a missing
extra stops with one line naming it: "polyembed serve needs the serve extra: pip install 'polyembed[serve]'
(not installed: fastapi, uvicorn)".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from polyembed.errors import PolyembedError

LOCK_FILE = "requirements-lock.txt"
_LOCK_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")

VersionLookup = Callable[[str], str | None]

GATHERING_EXTRAS = ("all", "dev", "docs")
"""Extras that gather others (`all`) or serve development (`dev`, and `docs`, which builds the documentation
site): never the extra a message names."""


class IncompatibleEnvironmentError(PolyembedError):
    """An installed package is missing, outside polyembed's supported range, or refused by another one."""


def canonical(name: str) -> str:
    """PEP 503 name: 'Sentence_Transformers' and 'sentence-transformers' are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_version(name: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def polyembed_version() -> str:
    """The installed polyembed's version (from its metadata: importing the package here would make every layer
    that checks versions import the whole API)."""
    return installed_version("polyembed") or "unknown (not installed)"


def _own_requirements() -> list[tuple[Requirement, str | None]]:
    """polyembed's requirements from its installed metadata, each with the extra that brings it (None: the
    core); an extra that names polyembed's own other extras (`all`) is left out, its packages come with those."""
    try:
        lines = metadata.requires("polyembed") or []
        extras = metadata.metadata("polyembed").get_all("Provides-Extra") or []
    except metadata.PackageNotFoundError:
        return []
    found = []
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if canonical(requirement.name) == "polyembed":
            continue
        extra = None
        if requirement.marker is not None and "extra" in str(requirement.marker):
            extra = next((name for name in extras if _marker_names_extra(requirement, name)), None)
            if extra is None:
                continue
        found.append((requirement, extra))
    return found


def _marker_names_extra(requirement: Requirement, extra: str) -> bool:
    """Whether the requirement's marker asks for `extra` (platform conditions aside: `uvloop; sys_platform !=
    'win32' and extra == 'serve'` belongs to serve on every platform)."""
    marker = str(requirement.marker).replace(" ", "").replace("'", '"')
    return f'extra=="{extra}"' in marker


def declared_requirements() -> dict[str, Requirement]:
    """polyembed's own dependency ranges (its installed metadata, the core and every extra), by canonical
    name: a package an extra brings must be in its range too when it is installed."""
    return {canonical(requirement.name): requirement for requirement, _ in _own_requirements()}


def declared_extras() -> dict[str, str]:
    """The extra that brings each optional package (`fastapi` -> `serve`), by canonical name; core packages
    and those only `dev` brings are not in it."""
    return {canonical(requirement.name): extra for requirement, extra in _own_requirements()
            if extra is not None and extra not in GATHERING_EXTRAS}


def install_extra(extra: str) -> str:
    """The command that installs one of polyembed's extras."""
    return f"pip install 'polyembed[{extra}]'"


def extra_packages() -> dict[str, list[str]]:
    """The packages each of polyembed's extras brings on this platform (uvloop: not on Windows)."""
    packages: dict[str, list[str]] = {}
    for requirement, extra in _own_requirements():
        if extra is None or extra in GATHERING_EXTRAS:
            continue
        if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
            packages.setdefault(extra, []).append(requirement.name)
    return packages


def read_lock(path: Path) -> dict[str, str]:
    """`name==version` lines of a pip/uv lock file, by canonical name (comments and options skipped)."""
    locked = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _LOCK_LINE.match(line.strip())
        if match:
            locked[canonical(match.group(1))] = match.group(2)
    return locked


@cache
def locked_versions() -> dict[str, str]:
    """The versions of the lock file the test suite passes with, when polyembed runs from a source checkout
    (an editable install); empty for an installed wheel, which ships no lock."""
    path = Path(__file__).resolve().parents[2] / LOCK_FILE
    return read_lock(path) if path.is_file() else {}


def _advice(name: str, declared: Requirement | None) -> str:
    """What to install: the locked version when there is a lock, else polyembed's declared range."""
    locked = locked_versions().get(canonical(name))
    if locked:
        return f"pip install '{name}=={locked}' (the version in polyembed's {LOCK_FILE})"
    if declared is not None and str(declared.specifier):
        return f"pip install '{name}{declared.specifier}'"
    return f"pip install {name}"


def transformers_min_peft() -> str | None:
    """The oldest peft the installed transformers accepts for adapters (its own constant), if it says."""
    try:
        from transformers.integrations import peft as integration
    except Exception:  # noqa: BLE001 - a broken transformers is reported by the range check instead
        return None
    value = getattr(integration, "MIN_PEFT_VERSION", None)
    return str(value) if value else None


PairCheck = Callable[[VersionLookup], str | None]


def _peft_transformers(version_of: VersionLookup) -> str | None:
    """transformers' PEFT integration refuses a peft older than its MIN_PEFT_VERSION."""
    transformers, peft = version_of("transformers"), version_of("peft")
    needed = transformers_min_peft() if transformers and peft else None
    if not needed or Version(peft) >= Version(needed):  # type: ignore[arg-type]
        return None
    fix = _advice("transformers", declared_requirements().get("transformers"))
    return (f"transformers {transformers} needs peft >= {needed}, but peft {peft} is installed: {fix}, "
            f"or install peft >= {needed}")


PAIR_CHECKS: dict[str, PairCheck] = {"peft": _peft_transformers}
"""Known refusals between two packages, checked when a command needs the first one."""


@dataclass(frozen=True)
class Problem:
    """One package that cannot work here: the line to show, and the extra to install when all that is wrong is
    that the package (which that extra brings) is missing."""

    package: str
    line: str
    missing_extra: str | None = None


def package_problems(names: Iterable[str], version_of: VersionLookup | None = None,
                     pair_checks: dict[str, PairCheck] | None = None, *, extra: str | None = None,
                     optional_missing: bool = True) -> list[Problem]:
    """`problems`, each with its package and, for a package of an extra that is not installed, that extra."""
    version_of = version_of or (lambda name: installed_version(name))
    declared = declared_requirements()
    extras = declared_extras()
    checks = PAIR_CHECKS if pair_checks is None else pair_checks
    found = []
    for name in names:
        version = version_of(name)
        requirement = declared.get(canonical(name))
        if version is None:
            its_extra = extra or extras.get(canonical(name))
            if its_extra is None:
                found.append(Problem(name, f"{name} is not installed: {_advice(name, requirement)}"))
            elif optional_missing:
                found.append(Problem(name, f"{name} is not installed (the {its_extra} extra): "
                                           f"{install_extra(its_extra)}", its_extra))
            continue
        pair = checks.get(canonical(name))
        message = pair(version_of) if pair is not None else None
        if message:
            found.append(Problem(name, message))
            continue
        try:
            outside = requirement is not None and not requirement.specifier.contains(Version(version),
                                                                                    prereleases=True)
        except InvalidVersion:
            outside = False
        if outside and requirement is not None:
            found.append(Problem(name, f"{name} {version} is outside polyembed's supported range "
                                       f"{requirement.specifier}: {_advice(name, requirement)}"))
    return found


def problems(names: Iterable[str], version_of: VersionLookup | None = None,
             pair_checks: dict[str, PairCheck] | None = None, *, extra: str | None = None,
             optional_missing: bool = True) -> list[str]:
    """One line per problem with the named packages: missing, refused by another installed package, or
    outside polyembed's declared range. A missing package of an extra (`extra`, else the one polyembed's
    metadata names) says which extra to install; with `optional_missing` False it is no problem (`doctor`:
    the core alone is a complete install). `version_of` (default: what is installed) lets tests pose as
    another environment."""
    return [problem.line for problem in package_problems(names, version_of, pair_checks, extra=extra,
                                                         optional_missing=optional_missing)]


def require(names: Iterable[str], purpose: str, version_of: VersionLookup | None = None, *,
            extra: str | None = None) -> None:
    """Stop with a clear error (exit 2 on the CLI) when the packages `purpose` needs cannot work here. `extra`:
    the extra of polyembed that brings them (default: the one its metadata names for each). When all that is
    wrong is one extra not installed, the line says so: "polyembed serve needs the serve extra: pip install
    'polyembed[serve]' (not installed: fastapi, uvicorn)"."""
    found = package_problems(names, version_of, extra=extra)
    if not found:
        return
    extras = {problem.missing_extra for problem in found}
    [its_extra] = extras if len(extras) == 1 else [None]
    if its_extra is not None:
        packages = ", ".join(problem.package for problem in found)
        raise IncompatibleEnvironmentError(f"{purpose} needs the {its_extra} extra: {install_extra(its_extra)} "
                                           f"(not installed: {packages})")
    raise IncompatibleEnvironmentError(f"{purpose}: {'; '.join(problem.line for problem in found)}")
