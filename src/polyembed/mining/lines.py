"""The sentences of one side of a mining run: counted and checked in one pass, read back by line number.

Why: the pairs written at the end need the text of a few of a side's lines, in score order; holding every
line of a news crawl as a Python string costs more memory than the vectors. A plain text file is read once,
keeping only each line's byte offset (8 bytes a line), and each pair's lines are read back with a seek. The
rules are those of `polyembed.data.io.read_lines` (UTF-8, a BOM dropped, '\\r\\n' endings, no empty line), with
the same messages. A gzipped file, or a side whose sentences are in memory anyway (encoded here), keeps its
lines as strings.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from polyembed.errors import DataError, PolyembedError


@dataclass
class SideLines:
    """The lines of one text file: `lines` (in memory) or `offsets` (the byte offset of each line's start)."""

    path: Path
    count: int
    lines: list[str] | None = None
    offsets: np.ndarray | None = None
    stamp: tuple[int, int] | None = None

    def reader(self) -> LineReader:
        """A reader of lines by number (open it with `with`)."""
        return LineReader(self)


class LineReader:
    """Reads lines of a `SideLines` by number; refuses a file that changed since it was counted."""

    def __init__(self, side: SideLines) -> None:
        self.side = side
        self.handle: BinaryIO | None = None

    def __enter__(self) -> LineReader:
        if self.side.lines is None:
            stat = self.side.path.stat()
            if (stat.st_size, stat.st_mtime_ns) != self.side.stamp:
                raise PolyembedError(f"{self.side.path}: changed while it was being mined; run the command again")
            self.handle = self.side.path.open("rb")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            self.handle.close()

    def __getitem__(self, number: int) -> str:
        if self.side.lines is not None:
            return self.side.lines[number]
        assert self.handle is not None and self.side.offsets is not None, "read inside `with`"
        self.handle.seek(int(self.side.offsets[number]))
        text = self.handle.readline().decode("utf-8").rstrip("\n").rstrip("\r")
        return text.removeprefix("\ufeff") if number == 0 else text


def count_lines(path: str | Path) -> SideLines:
    """Count and check the lines of `path` (see the module docstring), keeping their offsets."""
    from polyembed.data.io import read_lines

    path = Path(path)
    if path.suffix == ".gz":
        lines = read_lines(path)
        return SideLines(path, len(lines), lines=lines)
    try:
        if path.is_dir():
            raise DataError(path, None, "is a folder, expected a file")
        if not path.is_file():
            raise DataError(path, None, "file not found")
        stat = path.stat()
        handle = path.open("rb")
    except OSError as err:
        raise DataError(path, None, f"cannot read it ({err.strerror})") from None
    starts = array("q")  # 8 bytes a line (a list of ints would take about 36)
    offset = 0
    with handle:
        for number, raw in enumerate(handle, start=1):
            starts.append(offset)
            offset += len(raw)
            line = raw[:-1] if raw.endswith(b"\n") else raw
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataError(path, number, f"not valid UTF-8 (byte {err.start}: "
                                              f"{line[err.start : err.start + 1]!r})") from err
            if number == 1:
                text = text.removeprefix("\ufeff")
            if not text.rstrip("\r").strip():
                raise DataError(path, number, "empty line where a sentence is required")
    return SideLines(path, len(starts), offsets=np.frombuffer(starts, dtype=np.int64),
                     stamp=(stat.st_size, stat.st_mtime_ns))


def in_memory(path: str | Path, lines: list[str]) -> SideLines:
    """A side whose lines were read whole (to be encoded here)."""
    return SideLines(Path(path), len(lines), lines=lines)
