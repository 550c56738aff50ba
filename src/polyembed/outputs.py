"""Writing outputs safely: check paths before work starts, write atomically, never delete a user's files.

Three rules every command follows:
- `check_output_dir` / `check_output_file` run before any model loads, so an unwritable path (read-only
  filesystem, a path below a file, a folder where a file is expected) is a one-line error, not a traceback
  after minutes of work.
- `atomic_write` writes a temp file beside the target and renames it over: readers never see half a file.
  Files get the usual permissions (0666 less the umask), not the temp file's 0600.
- `publishing` stages a report in a hidden folder inside the output folder and then moves in only the files
  it wrote, replacing files of the same name and the files an earlier polyembed report listed in its
  manifest. Anything else in the folder (a user's notes, a training run) is never touched.
- `check_output_file(..., inputs=...)` / `check_not_an_input` refuse an output that is one of the command's
  inputs (the same file through any path or link).
- Only regular files are ever replaced: an output path that is a device, FIFO or socket is refused (renaming
  over `/dev/null` would replace the system's), a single-file output that is a symbolic link is refused, and a
  report never writes through a symbolic link inside its folder. An existing single-file output is replaced only
  with `overwrite` and only when polyembed wrote it: `write_output_file` keeps each file's checksum in the
  folder's `.polyembed-files.json`, and a file that is not there, or changed since, is the user's.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from polyembed.errors import PolyembedError, argument
from polyembed.integrity import ALGORITHM, file_digest, mismatched_files, read_record

logger = logging.getLogger(__name__)

MANIFEST_FILE = ".polyembed-outputs.json"
"""Files polyembed wrote into a report folder: only these are replaced or removed by the next report."""
FILES_RECORD = ".polyembed-files.json"
"""Single-file outputs (encode's .npy, mine's TSV, ...) polyembed wrote in a folder, with their checksums: what
`--overwrite` may replace."""
STAGING_PREFIX = ".polyembed-staging-"


def _kind(mode: int) -> str | None:
    """What a non-regular, non-folder file is, in words (None for a regular file or a folder)."""
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return None


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as err:  # a name too long, a component that is a file (ENOTDIR)
        if err.errno == errno.ENOTDIR:
            return None
        raise PolyembedError(f"{path}: cannot use it ({err.strerror})") from None


def _check_path_text(path: str | Path, option: str) -> None:
    if "\0" in str(path):
        raise PolyembedError(f"{option} {str(path)!r}: a path cannot hold a NUL character")


def refuse_special_file(path: Path, option: str) -> None:
    """Refuse a device, FIFO or socket at `path` (followed through symbolic links): an atomic rename over it
    would replace it with a regular file, and writing into it is not what an output means."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise PolyembedError(f"{option} {path}: is a loop of symbolic links") from None
        if err.errno == errno.ENOTDIR:
            return
        raise PolyembedError(f"{option} {path}: cannot use it ({err.strerror})") from None
    kind = _kind(info.st_mode)
    if kind is not None:
        raise PolyembedError(f"{option} {path}: is {kind}, not a regular file; polyembed writes regular files only")


def default_mode(directory: bool = False) -> int:
    """Permissions a plain `open()` / `mkdir()` would give: 0666 / 0777 less the process umask."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


def _existing_ancestor(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(path.anchor or ".")


def _check_can_create_in(folder: Path, option: str, target: Path) -> None:
    """A real probe (create and remove a temp file): permission bits say nothing on a read-only mount,
    and root passes every `os.access` check."""
    if not folder.is_dir():
        raise PolyembedError(f"{option} {target}: cannot create it below {folder}, which is a file")
    try:
        fd, probe = tempfile.mkstemp(prefix=".polyembed-probe-", dir=folder)
    except OSError as err:
        raise PolyembedError(f"{option} {target}: cannot write in {folder} ({err.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def check_output_dir(path: str | Path, option: str = "output folder") -> Path:
    """The absolute folder `path` if polyembed can create it or write in it; a clear error otherwise.

    Nothing is created: the nearest existing folder on the way is probed instead. A symbolic link to a folder
    is fine (results on another disk); one that points nowhere or loops is refused."""
    _check_path_text(path, option)
    target = Path(path).expanduser().absolute()
    refuse_special_file(target, option)
    if _lstat(target) is not None and not target.exists():
        raise PolyembedError(f"{option} {target}: is a symbolic link to nothing ({os.readlink(target)}); "
                             "remove it or give another folder")
    if target.exists() and not target.is_dir():
        raise PolyembedError(f"{option} {target}: exists and is a file, not a folder")
    _check_can_create_in(_existing_ancestor(target), option, target)
    return target


def check_output_file(path: str | Path, option: str = "output file",
                      inputs: Iterable[str | Path | None] = (), overwrite: bool | None = None) -> Path:
    """The absolute file `path` if it can be written (atomically, beside itself) and is none of the command's
    `inputs`; a clear error otherwise.

    `overwrite`: None lets an existing file be replaced (for callers that keep their own rules); False refuses
    one; True replaces it only when polyembed wrote it and it has not changed since (`FILES_RECORD`)."""
    _check_path_text(path, option)
    target = Path(path).expanduser().absolute()
    if target.name in ("", ".", ".."):
        raise PolyembedError(f"{option} {target}: not a file name")
    check_not_an_input(target, inputs, option)
    info = _lstat(target)
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise PolyembedError(f"{option} {target}: is a symbolic link (to {os.readlink(target)}); polyembed does not "
                             "write through links: give the file's own path or a new name")
    refuse_special_file(target, option)
    if target.is_dir():
        raise PolyembedError(f"{option} {target}: is a folder; give a file name")
    if info is not None and overwrite is not None:
        flag = argument("--overwrite")
        if not overwrite:
            raise PolyembedError(f"{option} {target}: exists; pass {flag} to replace it, or give a new name")
        if not written_by_polyembed(target):
            raise PolyembedError(
                f"{option} {target}: exists and polyembed did not write it (no record in {FILES_RECORD}, or it "
                f"changed since): refusing to replace it even with {flag}; delete it yourself or give a new name")
    _check_can_create_in(_existing_ancestor(target.parent), option, target)
    return target


def _read_files_record(folder: Path) -> dict[str, str]:
    try:
        files = json.loads((folder / FILES_RECORD).read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return {name: digest for name, digest in files.items() if isinstance(digest, str)} if isinstance(
        files, dict) else {}


def written_by_polyembed(path: Path) -> bool:
    """Whether `path` is a single-file output polyembed wrote (its checksum is in the folder's record) and
    nobody changed since."""
    digest = _read_files_record(path.parent).get(path.name)
    return digest is not None and path.is_file() and file_digest(path) == digest


@contextlib.contextmanager
def write_output_file(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """`atomic_write` for a command's single-file output, recording its checksum in the folder's
    `FILES_RECORD` so that a later `--overwrite` knows polyembed wrote it."""
    path = Path(path)
    with atomic_write(path, mode, encoding) as handle:
        yield handle
    files = _read_files_record(path.parent)
    files[path.name] = file_digest(path)
    try:
        with atomic_write(path.parent / FILES_RECORD) as record:
            record.write(json.dumps({"algorithm": ALGORITHM, "files": dict(sorted(files.items()))}, indent=1) + "\n")
    except (OSError, PolyembedError) as err:  # the output itself is written; only --overwrite will not know it
        logger.warning(f"{path}: written, but its record {FILES_RECORD} could not be ({err})")


def check_not_an_input(target: str | Path, inputs: Iterable[str | Path | None], option: str) -> None:
    """Refuse an output that is one of the command's inputs, through any path, symbolic or hard link: the
    output would replace the input the user still has only there. `None` and '-' (stdin) are skipped."""
    target = Path(target).expanduser()
    for source in inputs:
        if source is None or str(source) == "-":
            continue
        try:
            same = os.path.samefile(target, Path(source).expanduser())
        except OSError:  # one of them does not exist (yet): they cannot be the same file
            same = False
        if same:
            raise PolyembedError(f"{option} {target}: is also the input {source}; write the output elsewhere")


def make_dirs(path: Path) -> list[Path]:
    """`mkdir -p` that returns the folders it created (outermost first), so a failed run can remove them."""
    created = [p for p in (path, *path.parents) if not p.exists()][::-1]
    path.mkdir(parents=True, exist_ok=True)
    return created


def remove_created_dirs(created: list[Path]) -> None:
    """Remove folders `make_dirs` created, innermost first, as long as they are empty."""
    for folder in reversed(created):
        with contextlib.suppress(OSError):
            folder.rmdir()


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Write to a temp file in the same folder, then rename: readers never see half a file."""
    path = Path(path)
    refuse_special_file(path, "cannot write")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as handle:
            yield handle
        os.chmod(tmp, default_mode())
        refuse_special_file(path, "cannot write")  # it may have appeared while the file was written
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_dir(target: str | Path, keep_if_present: str | None = None) -> Iterator[Path]:
    """Yield a temp folder beside `target`; when the block succeeds the folder replaces `target` (an earlier
    one is removed only then), when it fails the temp folder goes: readers never see half a folder.

    `keep_if_present`: a file name; if another process completed `target` meanwhile (that file exists in
    it), the new folder is discarded instead (e.g. two first-time conversions of the same model)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = make_temp_dir(target.parent, f".{target.name}-")
    try:
        yield staging
        if keep_if_present is not None and (target / keep_if_present).is_file():
            shutil.rmtree(staging, ignore_errors=True)
            return
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def make_temp_dir(parent: Path, prefix: str) -> Path:
    """A fresh folder in `parent` with the usual permissions (mkdtemp alone gives 0700)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(folder, default_mode(directory=True))
    return folder


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_staging(out_dir: Path) -> list[Path]:
    """Remove staging folders left in `out_dir` by interrupted runs (their process is gone), and the
    `.NAME.partial-*` folders that reports before 2026-11-22 staged beside `out_dir`."""
    removed = []
    legacy = list(out_dir.parent.glob(f".{glob.escape(out_dir.name)}.partial-*")) if out_dir.name else []
    for folder in [*legacy, *(out_dir.glob(f"{STAGING_PREFIX}*") if out_dir.is_dir() else [])]:
        pid_text = folder.name.removeprefix(STAGING_PREFIX).split("-", 1)[0]
        alive = folder.name.startswith(STAGING_PREFIX) and (not pid_text.isdigit() or _pid_alive(int(pid_text)))
        if folder.is_dir() and not alive:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _read_manifest(out_dir: Path) -> list[str]:
    try:
        names = json.loads((out_dir / MANIFEST_FILE).read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [name for name in names if isinstance(name, str)]


def _refuse_links_and_special_files(out_dir: Path, names: Iterable[str]) -> None:
    """A file to write at `out_dir / name` must not pass through a symbolic link (it would land in whatever
    the link points at, outside the folder) nor be a device, FIFO or socket."""
    for name in names:
        for blocker in (out_dir / name, *(out_dir / name).parents):
            if blocker == out_dir:
                break
            info = _lstat(blocker)
            if info is not None and stat.S_ISLNK(info.st_mode):
                raise PolyembedError(f"cannot write {out_dir / name}: {blocker} is a symbolic link (to "
                                     f"{os.readlink(blocker)}); polyembed does not write through links in its "
                                     "output folder: remove the link")
            if info is not None and _kind(info.st_mode) is not None:
                raise PolyembedError(f"cannot write {out_dir / name}: {blocker} is {_kind(info.st_mode)}")


def _publish(staging: Path, out_dir: Path, produced_by: dict[str, Any] | None = None) -> list[str]:
    """Move every file of `staging` to the same place in `out_dir` (each rename atomic), then remove the
    files the previous manifest lists that this report did not write, then write the new manifest (with
    `produced_by`: also what made the files and each file's checksum, for readers to verify)."""
    written = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    checksums = {name: file_digest(staging / name) for name in written} if produced_by is not None else None
    _refuse_links_and_special_files(out_dir, written)  # every target before the first move
    for name in written:
        for blocker in (out_dir / name, *(out_dir / name).parents):
            if blocker == out_dir:
                break
            if blocker.exists() and (blocker.is_dir() if blocker == out_dir / name else not blocker.is_dir()):
                raise PolyembedError(f"cannot write {out_dir / name}: {blocker} is in the way")
    # results.json last: its arrival marks a finished report for anyone watching the folder.
    for name in sorted(written, key=lambda n: n == "results.json"):
        (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / name, out_dir / name)
    for name in set(_read_manifest(out_dir)) - set(written):
        stale = (out_dir / name).resolve()
        if stale.is_file() and out_dir.resolve() in stale.parents:
            stale.unlink()
            with contextlib.suppress(OSError):  # a plots/ folder the old report alone used
                if stale.parent != out_dir.resolve():
                    stale.parent.rmdir()
    manifest: dict[str, Any] = {"files": written}
    if produced_by is not None:
        manifest.update({"produced_by": produced_by, "checksums": checksums, "algorithm": ALGORITHM})
    with atomic_write(out_dir / MANIFEST_FILE) as handle:
        handle.write(json.dumps(manifest, indent=1) + "\n")
    return written


@contextlib.contextmanager
def publishing(out_dir: str | Path, option: str = "--output", produced_by: dict[str, Any] | None = None
               ) -> Iterator[Path]:
    """Yield a staging folder; when the block succeeds, its files are published into `out_dir`.

    Only files this report writes, and files an earlier polyembed report wrote (its manifest), are
    replaced or removed; other files in `out_dir` stay. When the block fails, the staging folder and any
    folder created for it are removed: nothing is left behind. Staging folders of interrupted runs are
    cleaned up first. `produced_by` (the model and options): the manifest also records it and a checksum of
    every file, which `verify_published` checks.
    """
    out = check_output_dir(out_dir, option)
    _refuse_links_and_special_files(out, _read_manifest(out))  # before the work: what the last report wrote
    created = make_dirs(out)
    remove_stale_staging(out)
    staging = make_temp_dir(out, f"{STAGING_PREFIX}{os.getpid()}-")
    try:
        yield staging
        _publish(staging, out, produced_by)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        remove_created_dirs(created)
        raise
    shutil.rmtree(staging, ignore_errors=True)


def verify_published(out_dir: str | Path, names: Iterable[str]) -> None:
    """Check `names` in a folder `publishing(..., produced_by=...)` wrote against the checksums of its
    manifest; a changed or missing file is an error naming it. A folder without checksums (written before
    them) passes: there is nothing to compare with."""
    out_dir = Path(out_dir)
    manifest = read_record(out_dir / MANIFEST_FILE) or {}
    checksums = manifest.get("checksums")
    if not isinstance(checksums, dict):
        return
    bad = mismatched_files(out_dir, {name: checksums[name] for name in names if name in checksums})
    if bad:
        raise PolyembedError(f"{out_dir / bad[0]}: checksum mismatch (the file changed after polyembed wrote it, "
                             f"or is missing); write {out_dir} again")
