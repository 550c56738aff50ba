"""The one way benchmark renderers write their section of docs/benchmarks.md (between two HTML comment markers),
and how they read what the docs show now (a table whose JSON is not on this machine is kept, not dropped).

A renderer recognises a table by the command that made it. Sections rendered before the benchmarks became a
package name the old scripts (`python benchmarks/distill.py acceptance`), so each command is also looked for in
that form (`command_forms`) until every section has been rendered again.
"""

from __future__ import annotations

import re
from pathlib import Path

from polyembed.outputs import atomic_write

LEGACY_SCRIPTS = {
    "benchmarks.alignment.run": "alignment.py",
    "benchmarks.distill.run": "distill.py",
    "benchmarks.emmax.run": "emmax.py",
    "benchmarks.eval_suites.run": "eval_suites.py",
    "benchmarks.hostile_inputs.run": "hostile_inputs.py",
    "benchmarks.language_id.run": "language_id.py",
    "benchmarks.modular.run": "modular.py",
    "benchmarks.modular.run_cla": "modular_cla_ablation.py",
    "benchmarks.modular.run_la": "modular_la.py",
    "benchmarks.new_language.render": "new_language_report.py",
    "benchmarks.new_language.run": "new_language.py",
    "benchmarks.precision.run": "precision.py",
    "benchmarks.render_all": "render_all.py",
    "benchmarks.scale.run": "scale.py",
    "benchmarks.serve.loadgen": "loadgen.py",
    "benchmarks.serve.run": "serve.py",
    "benchmarks.serve.run_hostile": "serve_hostile.py",
    "benchmarks.startup.run": "startup.py",
    "benchmarks.vocabulary_transfer.run": "vocabulary_transfer.py",
    "benchmarks.wacse.run": "wacse.py",
    "benchmarks.wacse.run_profile": "wacse_profile.py",
}
"""Each benchmark module run from the command line, and the script under benchmarks/ it was before."""


def command_forms(command: str) -> list[str]:
    """`command` as the renderers write it (`python -m benchmarks.distill.run acceptance`), then as sections rendered
    before wrote it (`python benchmarks/distill.py acceptance`; a bare module name becomes the bare script name,
    `benchmarks.modular.run vocabulary` -> `modular.py vocabulary`)."""
    legacy = command
    for module, script in LEGACY_SCRIPTS.items():
        legacy = re.sub(rf"-m {re.escape(module)}(?![\w.])", f"benchmarks/{script}", legacy)
        legacy = re.sub(rf"{re.escape(module)}(?![\w.])", script, legacy)
    return [command] if legacy == command else [command, legacy]


def shows(text: str, command: str) -> bool:
    """Whether `text` names `command` in either of its forms (`command_forms`)."""
    return any(form in text for form in command_forms(command))


def shown_section(docs: Path, start: str, end: str) -> str:
    """The section as the docs show it now ('' when absent)."""
    text = docs.read_text(encoding="utf-8") if docs.is_file() else ""
    return text[text.index(start) : text.index(end)] if start in text and end in text else ""


def missing_tables(docs: Path, start: str, end: str, commands: dict[str, str], present: set[str]) -> list[str]:
    """Names of tables the docs show (their command appears in the section) whose JSON is not here: results/ is
    not in git, so re-rendering on another machine would drop them."""
    shown = shown_section(docs, start, end)
    return [name for name, command in commands.items() if shows(shown, command) and name not in present]


def shown_table(docs: Path, start: str, end: str, opening: str) -> list[str]:
    """The docs' current text of one table of a section: the paragraph line that starts with `opening`, the blank
    line after it and the table's rows ([] when the docs do not show it so). A renderer whose JSON lacks that table
    keeps it this way, since results/ is not in git. `opening` may name a command in either of its forms."""
    lines = shown_section(docs, start, end).split("\n")
    openings = tuple(command_forms(opening))
    first = next((i for i, line in enumerate(lines) if line.startswith(openings)), None)
    if first is None or first + 2 >= len(lines) or lines[first + 1] != "" or not lines[first + 2].startswith("|"):
        return []
    block = lines[first:first + 2]
    for line in lines[first + 2:]:
        if not line.startswith("|"):
            break
        block.append(line)
    return block


def shown_rows(docs: Path, start: str, end: str, header: str) -> dict[str, str]:
    """The rows of the section's table whose header row is `header`, by their first cell ({} when the docs show no
    such table). A renderer keeps the row of a model whose results are not here (results/ is not in git)."""
    lines = shown_section(docs, start, end).split("\n")
    first = next((i for i, line in enumerate(lines) if line == header), None)
    rows: dict[str, str] = {}
    if first is None:
        return rows
    for line in lines[first + 2:]:
        if not line.startswith("|"):
            break
        rows[line.split("|")[1].strip()] = line
    return rows


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
