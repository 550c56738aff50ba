"""Strict text readers shared by every dataset reader (atomic writers live in `polyembed.outputs`)."""

from __future__ import annotations

import csv
import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from polyembed.errors import DataError


def _decode_lines(path: Path, raw: bytes, encoding: str = "utf-8") -> list[str]:
    """Decode bytes line by line so a bad byte is reported with its line number."""
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out: list[str] = []
    for number, line in enumerate(lines, start=1):
        try:
            text = line.decode(encoding)
        except UnicodeDecodeError as err:
            raise DataError(
                path, number, f"not valid UTF-8 (byte {err.start}: {line[err.start : err.start + 1]!r})"
            ) from err
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        out.append(text.rstrip("\r"))
    return out


def read_bytes(path: str | Path) -> bytes:
    """Read a file, transparently un-gzipping `.gz`; a missing file is a DataError naming it."""
    path = Path(path)
    try:  # is_dir()/is_file() raise OSError (not False) for a name too long for the file system
        if path.is_dir():
            raise DataError(path, None, "is a folder, expected a file")
        if not path.is_file():
            raise DataError(path, None, "file not found")
        data = path.read_bytes()
    except OSError as err:
        raise DataError(path, None, f"cannot read it ({err.strerror})") from None
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:  # zlib.error: a damaged deflate stream after a good header
            raise DataError(path, None, f"not a readable gzip file ({err})") from err
    return data


def read_lines(path: str | Path, *, allow_empty: bool = False) -> list[str]:
    """Read a UTF-8 text file (BOM stripped) into lines; empty lines are an error unless allowed."""
    path = Path(path)
    lines = _decode_lines(path, read_bytes(path))
    if not allow_empty:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise DataError(path, number, "empty line where a sentence is required")
    return lines


def read_text(path: str | Path) -> str:
    """Whole-file UTF-8 text with line-accurate decoding errors."""
    return "\n".join(_decode_lines(Path(path), read_bytes(path)))


def read_parallel(path_a: str | Path, path_b: str | Path) -> tuple[list[str], list[str]]:
    """Two line-aligned files; different line counts or empty lines are reported with file and line."""
    a, b = read_lines(path_a), read_lines(path_b)
    if len(a) != len(b):
        shorter, longer = (path_a, path_b) if len(a) < len(b) else (path_b, path_a)
        raise DataError(
            longer,
            min(len(a), len(b)) + 1,
            f"parallel files differ in length ({len(a)} lines in {path_a} vs {len(b)} in {path_b}); "
            f"{shorter} ends before this line",
        )
    return a, b


def iter_csv(
    path: str | Path, *, delimiter: str = ",", quoting: Literal[0, 1, 2, 3] = csv.QUOTE_MINIMAL  # a csv.QUOTE_*
) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number of the record's first line, fields) from a UTF-8 CSV/TSV (BOM tolerated).

    The reader is fed the decoded lines one by one, so a stray carriage return inside a line is an
    error at that line rather than a hidden line break that shifts later line numbers.
    """
    path = Path(path)
    lines = _decode_lines(path, read_bytes(path))
    reader = csv.reader((line + "\n" for line in lines), delimiter=delimiter, quoting=quoting)
    start = 1
    try:
        for row in reader:
            yield start, row
            start = reader.line_num + 1
    except csv.Error as err:
        raise DataError(path, reader.line_num, f"malformed CSV ({err})") from err


def parse_float(path: str | Path, line: int, value: str, *, what: str = "score") -> float:
    """Parse a number from data, or raise a DataError pointing at the line."""
    try:
        return float(value)
    except (TypeError, ValueError) as err:
        raise DataError(path, line, f"cannot parse {what} {value!r} as a number") from err
