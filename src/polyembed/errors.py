"""Errors for bad input: every message names the file and the line so a user can fix the data. A neutral
module (like `polyembed.languages` and `polyembed.outputs`): data, models, methods and eval all import it."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_COMMAND_LINE: contextvars.ContextVar[bool] = contextvars.ContextVar("polyembed_command_line", default=False)


@contextmanager
def on_command_line() -> Iterator[None]:
    """While the CLI runs a command: `argument` names flags. The CLI's root group enters it for every command."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def argument(flag: str, name: str | None = None) -> str:
    """An input as the caller wrote it, for an error message: the flag ('--output') under the CLI, the Python
    argument ('out_dir'; by default the flag's own name, '--output' -> 'output') otherwise. Why: a user of the
    Python API has no flag to fix."""
    if _COMMAND_LINE.get():
        return flag
    return name or flag.lstrip("-").replace("-", "_")


class PolyembedError(Exception):
    """Base class: the CLI turns these into a one-line message and a non-zero exit."""


class DataError(PolyembedError):
    """A data file exists but its content is unusable; carries file and 1-based line."""

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class DatasetNotFoundError(PolyembedError):
    """A registered dataset is not under the data root: say where we looked and where to get it."""

    def __init__(self, name: str, tried: str | Path, source: str) -> None:
        self.name = name
        self.tried = str(tried)
        self.source = source
        super().__init__(
            f"dataset '{name}' not found at {self.tried}. Download it from {source} "
            f"and point POLYEMBED_DATA or --data-root at the folder that holds '{Path(self.tried).name}'."
        )


class UnknownLanguageError(PolyembedError):
    """A language code that a dataset or task does not have."""


class NoTrainingDataError(UnknownLanguageError):
    """A known language that none of the selected training datasets or files has."""
