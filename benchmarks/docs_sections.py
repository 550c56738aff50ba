"""The one way benchmark scripts write their section of docs/benchmarks.md (between two HTML comment markers)."""

from __future__ import annotations

import re
from pathlib import Path

from polyembed.outputs import atomic_write


def shown_section(docs: Path, start: str, end: str) -> str:
    """The section as the docs show it now ('' when absent)."""
    text = docs.read_text(encoding="utf-8") if docs.is_file() else ""
    return text[text.index(start) : text.index(end)] if start in text and end in text else ""


def missing_tables(docs: Path, start: str, end: str, commands: dict[str, str], present: set[str]) -> list[str]:
    """Names of tables the docs show (their command appears in the section) whose JSON is not here: results/ is
    not in git, so re-rendering on another machine would drop them."""
    shown = shown_section(docs, start, end)
    return [name for name, command in commands.items() if command in shown and name not in present]


def replace_section(docs: Path, start: str, end: str, section: str) -> None:
    """Put `section` (markers included) in place of the current one, or append it; written atomically. A
    section whose markers enclose another section's is refused (replacing it would delete the other)."""
    text = docs.read_text(encoding="utf-8") if docs.is_file() else "# Benchmarks\n"
    if start in text and end in text:
        inner = text[text.index(start) + len(start) : text.index(end)]
        nested = re.findall(r"<!-- [\w-]+:start -->", inner)
        if nested:
            raise SystemExit(f"{docs}: the section {start} encloses {', '.join(nested)}; move that section out of "
                             "it by hand, then render again")
        text = text[: text.index(start)] + section + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with atomic_write(docs) as handle:
        handle.write(text)


def publish(docs: Path, start: str, end: str, lines: list[str]) -> None:
    """Write a rendered section (its lines, markers included) into the docs and show it in the log."""
    replace_section(docs, start, end, "\n".join(lines))
    print("\n".join(lines))
