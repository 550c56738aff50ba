"""Measured numbers live in docs/benchmarks.md (and the user guide and method pages, which link to its sections):
`--help` texts, preset comments, the demo report's reasons and the source's docstrings and comments say what an
option does and point to the docs.
Why: numbers copied into code drift from the runs that produced them, and nothing re-renders them."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SOURCE = Path(__file__).resolve().parent.parent / "src" / "polyembed"
MEASURED = [
    re.compile(r"\d(?:\.\d+)?\s*(?:against|->|→)\s*[-+]?\d"),  # "70.8 against 72.1", "77 -> 31"
    re.compile(r"(?<![\w.=~\[,])[+-]\d+\.\d+"),  # a signed change: "+2.2", "-0.87"
    re.compile(r"\b\d+(?:\.\d+)?\s*(?:points?|pp)\b"),  # "1.2 points"
    re.compile(r"\b\d+(?:\.\d+)?\s*(?:seconds|minutes|min)\b"),  # a timing: "10 minutes"
]
CITATION = re.compile(r"paper|Table|Eq\.|et al")
"""A line that cites a paper's own numbers is not a measurement of ours."""


def measured(text: str) -> list[str]:
    return [match.group(0) for pattern in MEASURED for match in pattern.finditer(text)]


def _help_texts(command: Any, path: str) -> Iterator[tuple[str, str]]:
    yield path, command.help or ""
    for parameter in command.params:
        yield f"{path} {parameter.name}", getattr(parameter, "help", None) or ""
    if hasattr(command, "list_commands"):  # a group, asked as click asks it (`train` makes its commands then)
        context = command.context_class(command)
        for name in command.list_commands(context):
            yield from _help_texts(command.get_command(context, name), f"{path} {name}")


def test_the_detector_finds_scores_and_timings_and_leaves_defaults_alone() -> None:
    assert measured("longer runs plateau near 72 -> 73") and measured("(+2.2 over the untrained student)")
    assert measured("cost 1.2 points of STS") and measured("keeps the demo within 10 minutes")
    assert not measured("Keep pairs scoring at least this (ratio: ~1.06).")
    assert not measured("learning rate 3e-5, warm-up ratio 0.1, range [-1.0, 1.0]")


def test_help_texts_carry_no_measured_numbers() -> None:
    import typer

    from polyembed.cli import app

    texts = dict(_help_texts(typer.main.get_command(app), "polyembed"))
    assert len(texts) > 100  # every command and option, the generated `train` commands included
    assert "polyembed train distill teacher" in texts and "polyembed train modular pipeline preset" in texts
    found = {where: measured(text) for where, text in texts.items() if measured(text)}
    assert not found, f"measured numbers in --help: {found}"


@pytest.mark.parametrize("preset", sorted((SOURCE / "presets").glob("*.yaml")), ids=lambda p: p.name)
def test_preset_comments_carry_no_measured_numbers(preset: Path) -> None:
    found = [(number, line) for number, line in enumerate(preset.read_text(encoding="utf-8").splitlines(), 1)
             if "#" in line and measured(line.split("#", 1)[1])]
    assert not found, f"{preset}: {found}"


def test_the_demo_reports_reasons_carry_no_measured_numbers() -> None:
    from polyembed.demo_report import RECIPE_CHOICES

    found = {option: measured(reason) for option, (_, reason) in RECIPE_CHOICES.items() if measured(reason)}
    assert not found, found


def test_source_docstrings_and_comments_carry_no_measured_numbers() -> None:
    found = []
    for file in sorted(SOURCE.rglob("*.py")):
        for token in tokenize.generate_tokens(io.StringIO(file.read_text(encoding="utf-8")).readline):
            if token.type not in (tokenize.COMMENT, tokenize.STRING):
                continue
            for offset, line in enumerate(token.string.splitlines()):
                if not CITATION.search(line) and measured(line):
                    found.append(f"{file.relative_to(SOURCE)}:{token.start[0] + offset}: {line.strip()}")
    assert not found, "\n".join(found)
