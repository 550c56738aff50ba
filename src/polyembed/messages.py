"""polyembed's progress notes and warnings on the console, for programs that want them there (the CLI, the
benchmark scripts). The library itself only logs (`logging.getLogger(__name__)`): a Python user decides where
its records go, as with any library."""

from __future__ import annotations

import logging
import os
import sys


class _PlainFormatter(logging.Formatter):
    """An INFO record as its message alone; a warning or error with its level in front ('warning: ...')."""

    def format(self, record: logging.LogRecord) -> str:
        message = super().format(record)
        return message if record.levelno <= logging.INFO else f"{record.levelname.lower()}: {message}"


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is at the time (a test runner swaps it per command)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:  # StreamHandler sets it; the property reads sys.stderr instead
        pass


def show_messages(level: int = logging.INFO) -> None:
    """Send the `polyembed` loggers' records at `level` and above to stderr, once per process."""
    logger = logging.getLogger("polyembed")
    if not any(isinstance(handler, _StderrHandler) for handler in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(_PlainFormatter("%(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)


def hide_progress(show: bool) -> bool:
    """tqdm's `disable` for a progress bar the caller wants when `show`: hidden too when the user asked for quiet
    (`polyembed -q` sets TQDM_DISABLE, which tqdm itself reads only where `disable` is not passed)."""
    return not show or os.environ.get("TQDM_DISABLE", "").lower() in {"1", "true", "yes", "on"}
