"""Which versions of polyembed's dependencies are installed, and whether they work together.

Why: a user who installs polyembed outside the lock file can end up with a pair of packages that refuse each
other deep inside a run (transformers 5.24 refuses every peft older than 0.22, and none exists yet). A command
that needs such a piece checks it first and stops with one line saying which package to move to which
version. A neutral module (like `polyembed.errors`): every layer may import it; it imports no other layer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from polyembed.errors import PolyembedError

LOCK_FILE = "requirements-lock.txt"
_LOCK_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")

VersionLookup = Callable[[str], str | None]


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


def declared_requirements() -> dict[str, Requirement]:
    """polyembed's own dependency ranges (its installed metadata; extras left out), by canonical name."""
    try:
        lines = metadata.requires("polyembed") or []
    except metadata.PackageNotFoundError:
        return {}
    declared = {}
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is not None and "extra" in str(requirement.marker):
            continue
        declared[canonical(requirement.name)] = requirement
    return declared


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


def problems(names: Iterable[str], version_of: VersionLookup | None = None,
             pair_checks: dict[str, PairCheck] | None = None) -> list[str]:
    """One line per problem with the named packages: missing, refused by another installed package, or
    outside polyembed's declared range. `version_of` (default: what is installed) lets tests pose as
    another environment."""
    version_of = version_of or (lambda name: installed_version(name))
    declared = declared_requirements()
    checks = PAIR_CHECKS if pair_checks is None else pair_checks
    found = []
    for name in names:
        version = version_of(name)
        requirement = declared.get(canonical(name))
        if version is None:
            found.append(f"{name} is not installed: {_advice(name, requirement)}")
            continue
        pair = checks.get(canonical(name))
        message = pair(version_of) if pair is not None else None
        if message:
            found.append(message)
            continue
        try:
            outside = requirement is not None and not requirement.specifier.contains(Version(version),
                                                                                    prereleases=True)
        except InvalidVersion:
            outside = False
        if outside:
            found.append(f"{name} {version} is outside polyembed's supported range {requirement.specifier}: "
                         f"{_advice(name, requirement)}")
    return found


def require(names: Iterable[str], purpose: str, version_of: VersionLookup | None = None) -> None:
    """Stop with a clear error (exit 2 on the CLI) when the packages `purpose` needs cannot work here."""
    found = problems(names, version_of)
    if found:
        raise IncompatibleEnvironmentError(f"{purpose}: {'; '.join(found)}")
