"""Proof that what polyembed keeps on disk between runs belongs to the input it claims.

Why: encode shards, the embedding store and export folders are reused by later runs; a shard of last week's
text, a vector blob overwritten in place or a second writer in the same folder would otherwise come back as
wrong vectors with exit code 0. Every such artefact records what produced it and a checksum of what was
written, and the reader checks both before using it:

- `new_hash` / `HashingWriter` / `file_digest`: BLAKE2b (hashlib) over the bytes as they are written, and the
  same over a file when it is read back; `line_digest` for the text a shard was made of, hashed while the
  lines are read anyway.
- `source_identity`: path, size and mtime of an input file (the content hash is added by the reader).
- `read_record`: a small JSON record, or None when it is missing or unreadable (an interrupted run).
- `folder_entries` / `changed_entries` / `checksums_of`: a record of every file of a folder (checksum, size,
  mtime), for a folder made once and read on every run (a converted model): size and mtime are compared on
  each load (a stat, no read), the checksums by a full check.
- `FolderLock`: one writer per output folder (`fcntl.flock` on a lock file), so two runs cannot interleave
  their shards; the second one is refused with the first one's process id.

A neutral module: it imports only `polyembed.errors`, the standard library and numpy.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import IO, Any

from polyembed.errors import PolyembedError

ALGORITHM = "blake2b"
"""The checksum named in every record (hashlib's BLAKE2b, 32-byte digests, hex)."""
LOCK_FILE = ".polyembed.lock"
_CHUNK = 1 << 20


def new_hash() -> Any:
    """A fresh BLAKE2b hasher (faster than sha256 in CPython, as strong for this purpose)."""
    return hashlib.blake2b(digest_size=32)


def bytes_digest(data: bytes) -> str:
    hasher = new_hash()
    hasher.update(data)
    return hasher.hexdigest()


def file_digest(path: str | Path) -> str:
    """BLAKE2b of a file's bytes, read in 1 MiB chunks (memory stays flat for any size)."""
    hasher = new_hash()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


class HashingWriter:
    """A binary file handle that hashes every byte written through it: the checksum of a file costs no
    second read. `np.save(HashingWriter(handle), rows)` works (numpy writes through `.write`)."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.hasher = new_hash()
        self.size = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self.hasher.update(data)
        self.size += len(data)
        return self.handle.write(data)

    def flush(self) -> None:
        self.handle.flush()

    def hexdigest(self) -> str:
        return self.hasher.hexdigest()


def source_identity(path: str | Path) -> dict[str, Any]:
    """Where an input came from and which version of it: resolved path, size and modification time (ns)."""
    resolved = Path(path).resolve()
    stat = resolved.stat()
    return {"path": str(resolved), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def read_record(path: str | Path) -> dict[str, Any] | None:
    """A JSON object written by polyembed, or None when it is missing, empty or not one (a killed run, a
    truncated file): the caller then treats what it describes as unfinished."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def mismatched_files(folder: str | Path, checksums: dict[str, str]) -> list[str]:
    """Names in `checksums` whose file in `folder` is missing or has other bytes than when it was written."""
    folder = Path(folder)
    bad = []
    for name, expected in checksums.items():
        try:
            if file_digest(folder / name) != expected:
                bad.append(name)
        except OSError:
            bad.append(name)
    return bad


def folder_entries(folder: str | Path, exclude: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Every file below `folder` (POSIX names relative to it, `exclude` left out) -> its checksum, size and
    mtime (ns): what `changed_entries` and `mismatched_files` compare against later."""
    folder = Path(folder)
    entries = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if path.is_file() and name not in exclude:
            stat = path.stat()
            entries[name] = {"checksum": file_digest(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    return entries


def checksums_of(entries: dict[str, Any]) -> dict[str, str] | None:
    """{name: checksum} of a `folder_entries` record read back, or None when it is not one (a hand-edited
    or older record): the caller treats the folder as unverifiable."""
    if not isinstance(entries, dict) or not entries:
        return None
    checksums = {}
    for name, entry in entries.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("checksum"), str)):
            return None
        checksums[name] = entry["checksum"]
    return checksums


def changed_entries(folder: str | Path, entries: dict[str, Any], exclude: tuple[str, ...] = ()) -> list[str]:
    """The cheap check, a stat per file: names of `entries` missing or of another size or mtime than recorded,
    and files in `folder` the record does not list (`exclude` left out). A bit flipped without a write (the
    mtime kept) passes: `mismatched_files` over `checksums_of(entries)` catches that."""
    folder = Path(folder)
    changed = []
    for name, entry in entries.items():
        try:
            stat = (folder / name).stat()
        except OSError:
            changed.append(name)
            continue
        if not isinstance(entry, dict) or (entry.get("size"), entry.get("mtime_ns")) != (stat.st_size,
                                                                                         stat.st_mtime_ns):
            changed.append(name)
    try:
        present = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    except OSError:
        present = []
    changed += sorted(name for name in present if name not in entries and name not in exclude)
    return changed


class FolderLock:
    """An exclusive, non-blocking lock on an output folder for the length of a run (`with FolderLock(...)`).

    The lock is `fcntl.flock` on `<folder>/.polyembed.lock`: the kernel releases it when the process dies,
    so a `kill -9` never leaves the folder locked. The file holds the owner's pid for the error message and
    is removed on release; a waiter that locked a file removed meanwhile notices (other inode) and retries.
    """

    def __init__(self, folder: str | Path, option: str = "output folder") -> None:
        self.folder = Path(folder)
        self.option = option
        self.path = self.folder / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
                os.close(fd)
                raise PolyembedError(
                    f"{self.option} {self.folder}: another polyembed run (pid {owner}) is writing there; wait for "
                    "it to finish or choose another folder"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the previous owner removed the file between our open and flock: lock the new one
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # while still holding the lock: a waiter sees the other inode and retries
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
