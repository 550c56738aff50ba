"""One side's vectors for mining, read a block at a time: an in-memory matrix, a `.npy` file or a shard folder
of `polyembed encode --shard-size`, the files memory-mapped.

Why: a news crawl's side does not fit in memory as float32 (1.5 GB per million 384-d rows, and mining holds an
index of the other side too). The search needs the rows in blocks (to fill an index, to query it) and a few
rows by number (to rescore candidates); `PoolVectors` hands out exactly those, L2-normalised float32 copies,
opening each file memory-mapped only for the read, so memory holds what is being worked on and the page cache
the rest. Every side is checked once, in blocks, before any search: a NaN, infinite or all-zero row is named.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from polyembed.errors import PolyembedError
from polyembed.models.encoder import normalize_rows

READ_BLOCK = 65_536
"""Rows read (and checked) at a time."""
TAKE_CHUNK = 32_768
"""Rows gathered by number per file mapping: the pages a mapping touched count in the process's memory (RSS)
until it is closed, so a gather over a whole file maps it once per chunk."""


def check_rows(vectors: np.ndarray, where: str, chunk: int = READ_BLOCK, first: int = 0) -> None:
    """Refuse a NaN / infinite or all-zero row, naming it (1-based, = the line of the text file; `first`: the
    row number of `vectors[0]` in its side): either has no direction, so every margin score involving it
    would be NaN. Checked in chunks: memory stays flat."""
    for start in range(0, len(vectors), chunk):
        block = vectors[start : start + chunk]
        with np.errstate(over="ignore", invalid="ignore"):  # a float64 value past float32's range: named below
            block = np.asarray(block, dtype=np.float32)
        for problem, bad in (("NaN or infinite values", ~np.isfinite(block).all(axis=1)),
                             ("all zeros", ~block.any(axis=1))):
            if bad.any():
                raise PolyembedError(f"{where}: row {first + start + int(bad.argmax()) + 1} has {problem} (an "
                                     "embedding without a direction cannot be scored)")


def _normalized(rows: np.ndarray) -> np.ndarray:
    """L2-normalised float32 copy (`normalize_rows`, as the in-memory mining normalises: the same values)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return normalize_rows(rows)


@dataclass
class PoolVectors:
    """One side's rows: `matrix` in memory, or `parts` (each a .npy file and its row count) read memory-mapped.

    `where` names the side in messages (the file or folder given); `identity` is what a resumed search compares
    to know the rows are the same (file identity and checksums, or a hash of the matrix)."""

    where: str
    dimension: int
    rows: int
    matrix: np.ndarray | None = None
    parts: list[tuple[Path, int]] = field(default_factory=list)
    identity: dict[str, Any] = field(default_factory=dict)

    def _spans(self, start: int, stop: int) -> Iterator[tuple[Path, int, int, int]]:
        """(file, first row in it, end row in it, row of the side where the span starts) covering start:stop."""
        offset = 0
        for path, count in self.parts:
            low, high = max(start, offset), min(stop, offset + count)
            if low < high:
                yield path, low - offset, high - offset, low
            offset += count

    def raw(self, start: int, stop: int) -> np.ndarray:
        """Rows start:stop as stored (float16/32/64), a copy: no file stays mapped."""
        if self.matrix is not None:
            return np.array(self.matrix[start:stop])
        pieces = [np.array(np.load(path, mmap_mode="r", allow_pickle=False)[low:high])
                  for path, low, high, _ in self._spans(start, stop)]
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def block(self, start: int, stop: int) -> np.ndarray:
        """Rows start:stop, L2-normalised float32."""
        return _normalized(self.raw(start, stop))

    def blocks(self, size: int = READ_BLOCK) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, L2-normalised float32 rows) for every block of `size` rows, in order."""
        for start in range(0, self.rows, size):
            yield start, self.block(start, min(start + size, self.rows))

    def take(self, ids: np.ndarray) -> np.ndarray:
        """Rows `ids` (any order, repeats allowed), L2-normalised float32: the candidates a search rescores."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.matrix is not None:
            return _normalized(self.matrix[ids])
        out = np.empty((len(ids), self.dimension), dtype=np.float32)
        for start in range(0, len(ids), TAKE_CHUNK):  # a file stays mapped for one chunk's rows only
            chunk = ids[start : start + TAKE_CHUNK]
            offset = 0
            for path, count in self.parts:
                mask = (chunk >= offset) & (chunk < offset + count)
                if mask.any():
                    with np.errstate(over="ignore", invalid="ignore"):
                        out[start : start + TAKE_CHUNK][mask] = np.load(path, mmap_mode="r", allow_pickle=False)[
                            chunk[mask] - offset]
                offset += count
        return _normalized(out)

    def check(self) -> None:
        """Every row has a direction (`check_rows`), read block by block."""
        for start in range(0, self.rows, READ_BLOCK):
            check_rows(self.raw(start, min(start + READ_BLOCK, self.rows)), self.where, first=start)


def in_memory(matrix: np.ndarray, where: str) -> PoolVectors:
    """A side encoded in this process; its identity (for a resumed search) is a hash of its bytes."""
    from polyembed.integrity import bytes_digest

    matrix = np.ascontiguousarray(matrix)
    return PoolVectors(where, int(matrix.shape[1]), int(matrix.shape[0]), matrix=matrix,
                       identity={"blake2b": bytes_digest(matrix.tobytes()), "shape": list(matrix.shape)})


def open_vectors(path: str | Path, sentences: int, text: str | Path) -> PoolVectors:
    """The rows of a `.npy` file or an `encode --shard-size` folder for the `sentences` lines of `text`, checked:
    one finite, non-zero row per line, a folder encoded from that text (its manifest's content hash), every
    shard of one dimension and with the checksum it was written with."""
    path = Path(path)
    try:
        if path.is_dir():
            vectors = _shard_folder(path, text)
        else:
            matrix = np.load(path, mmap_mode="r", allow_pickle=False)
            if matrix.ndim != 2:
                raise PolyembedError(f"{path}: {matrix.shape[0] if matrix.ndim else 0} rows of shape {matrix.shape} "
                                     f"for {sentences} sentences; the matrix needs one row per line of its text file")
            from polyembed.integrity import source_identity

            rows = int(matrix.shape[0])
            vectors = PoolVectors(str(path), int(matrix.shape[1]), rows, parts=[(path, rows)],
                                  identity=source_identity(path))
    except (OSError, ValueError, KeyError, EOFError) as err:
        raise PolyembedError(f"{path}: not a .npy embedding matrix or shard folder ({err or 'empty file'})") from None
    if vectors.rows != sentences:
        raise PolyembedError(
            f"{path}: {vectors.rows} rows of shape {(vectors.rows, vectors.dimension)} for {sentences} sentences; "
            "the matrix needs one row per line of its text file")
    vectors.check()
    return vectors


def _shard_folder(folder: Path, text: str | Path) -> PoolVectors:
    """A finished shard folder as parts, after the checks of `iter_shards` (checksums, row counts)."""
    from polyembed.integrity import file_digest
    from polyembed.streaming import MANIFEST_FILE, iter_shards, read_manifest

    _check_shards_belong_to(folder, read_manifest(folder), text)
    parts: list[tuple[Path, int]] = []
    dimension = None
    for name, rows in zip(read_manifest(folder)["shards"], iter_shards(folder), strict=True):
        file = folder / f"{name}.npy"
        if rows.ndim != 2:
            raise PolyembedError(f"{file}: rows of shape {rows.shape}, expected a matrix")
        if dimension is not None and rows.shape[1] != dimension:
            raise PolyembedError(f"{file}: {rows.shape[1]}-dimensional rows where {parts[0][0].name} has {dimension}; "
                                 "a shard folder holds one model's vectors: encode the text again into a new folder")
        dimension = int(rows.shape[1])
        parts.append((file, int(rows.shape[0])))
    if dimension is None:
        raise PolyembedError(f"{folder}: no shards in its manifest")
    return PoolVectors(str(folder), dimension, sum(count for _, count in parts), parts=parts,
                       identity={"path": str(folder.resolve()), "manifest": file_digest(folder / MANIFEST_FILE)})


def _check_shards_belong_to(folder: Path, manifest: dict[str, Any], text: str | Path) -> None:
    """A shard folder records the content hash of the input it was encoded from: refuse it for other text."""
    from polyembed.integrity import ALGORITHM, file_digest

    recorded = (manifest.get("input") or {}).get(ALGORITHM)
    if recorded is not None and Path(text).is_file() and file_digest(text) != recorded:
        raise PolyembedError(f"{folder}: encoded from other text than {text} (its manifest records another content "
                             f"hash); encode {text} into a new folder")


def check_same_dimension(source: PoolVectors, target: PoolVectors) -> None:
    """Both sides come from one model: the same dimension, else an error naming the files."""
    if source.dimension != target.dimension:
        raise PolyembedError(f"{target.where}: {target.dimension}-dimensional rows where {source.where} has "
                             f"{source.dimension}-dimensional ones; both sides need the same model's embeddings")
