"""What README.md and docs/ show is what the code does.

- The contributing how-tos show the example files as they are: every ```python block that starts with a
  `# tests/...` path line is that file, byte for byte (the tests next to each file run it).
- Every `polyembed ...` command in a ```bash block of README.md or docs/ (docs/benchmarks.md aside: the
  benchmark renderers write it) parses with the CLI as it is: the command exists, its options exist, their
  values have the right type and choice, and no required argument is missing. Nothing is run.
- The README opens with exactly the two commands `make demo` and `make test`.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LISTING = re.compile(r"```python\n# (tests/[\w/]+\.py)\n(.*?)```\n", re.DOTALL)
HOW_TOS = ("docs/contributing/training-method.md", "docs/contributing/evaluation-task.md",
           "docs/contributing/encoder-kind.md")
BASH_BLOCK = re.compile(r"^[ \t]*```(?:bash|sh)\n(.*?)^[ \t]*```", re.DOTALL | re.MULTILINE)
SEPARATORS = {"|", "&&", "||", ";", ">", ">>", "<"}
GENERATED = {"docs/benchmarks.md"}


def _documents() -> list[Path]:
    pages = sorted(path for path in (ROOT / "docs").rglob("*.md")
                   if path.relative_to(ROOT).as_posix() not in GENERATED)
    return [ROOT / "README.md", *pages]


def test_every_listing_in_the_how_tos_is_the_file_it_names() -> None:
    listings = [(page, name, text) for page in HOW_TOS
                for name, text in LISTING.findall((ROOT / page).read_text(encoding="utf-8"))]
    names = [name for _, name, _ in listings]
    assert {"tests/methods/toy/__init__.py", "tests/methods/toy/config.py", "tests/methods/toy/losses.py",
            "tests/eval/toy_task.py", "tests/models/toy_kind.py"} <= set(names)
    for page, name, text in listings:
        assert (ROOT / name).read_text(encoding="utf-8") == text, f"{page}'s listing of {name} is out of date"


def test_the_readme_opens_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = BASH_BLOCK.search(readme)
    assert first is not None and readme.index("```bash") < readme.index("\n## ")
    commands = [line.split("#", 1)[0].strip() for line in first.group(1).splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


def _polyembed_commands(block: str) -> list[list[str]]:
    """The argument lists given to `polyembed` (or `-m polyembed`) in a bash block, comments and line
    continuations resolved; `pip install polyembed` is no command."""
    found = []
    for line in block.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
        for index, token in enumerate(tokens):
            if Path(token).name != "polyembed" or (index and tokens[index - 1] in ("install", "download")):
                continue
            rest = tokens[index + 1:]
            end = next((i for i, part in enumerate(rest) if part in SEPARATORS), len(rest))
            found.append(rest[:end])
    return found


def _documented_commands() -> list[tuple[str, list[str]]]:
    commands = []
    for page in _documents():
        for block in BASH_BLOCK.findall(page.read_text(encoding="utf-8")):
            commands += [(page.relative_to(ROOT).as_posix(), args) for args in _polyembed_commands(block)]
    return commands


def _parse(args: list[str]) -> str:
    """Parse like the CLI does, without invoking anything; the full command name, or a click error."""
    import typer

    from polyembed.cli import app

    command = typer.main.get_command(app)
    parent, name = None, "polyembed"
    while True:
        context = command.make_context(name, list(args), parent=parent)
        if not hasattr(command, "resolve_command"):
            return context.command_path
        name, command, args = command.resolve_command(context, [*context._protected_args, *context.args])
        parent = context


def test_the_command_extractor_reads_continuations_comments_and_pipes() -> None:
    block = ("zcat corpus.gz | .venv/bin/polyembed encode - -o shards/ --shard-size 10  # streamed\n"
             "torchrun --nproc-per-node 2 -m polyembed train distill \\\n    --batch-size 32\n"
             "pip install polyembed\n# polyembed eval\n")
    assert _polyembed_commands(block) == [["encode", "-", "-o", "shards/", "--shard-size", "10"],
                                          ["train", "distill", "--batch-size", "32"]]


def test_the_parser_refuses_what_the_cli_refuses() -> None:
    assert _parse(["train", "wacse", "--objectives", "tr,wtr"]) == "polyembed train wacse"
    for wrong in (["train", "distill", "--no-such-option", "1"], ["encode", "x.txt"],
                  ["encode", "x.txt", "-o", "y.npy", "--dtype", "float8"], ["no-such-command"]):
        with pytest.raises(Exception):  # noqa: B017 - click's own error classes (typer vendors click)
            _parse(wrong)


def test_every_documented_command_parses() -> None:
    commands = _documented_commands()
    pages = {page for page, _ in commands}
    assert "README.md" in pages and "docs/guide/new-language.md" in pages and len(commands) > 60
    failures = []
    for page, args in commands:
        try:
            _parse(args)
        except Exception as error:  # noqa: BLE001 - every failure is reported, with its page
            if type(error).__name__ == "Exit" and getattr(error, "exit_code", 1) == 0:
                continue  # --help, --version: answered and done
            message = getattr(error, "format_message", lambda error=error: str(error))()
            failures.append(f"{page}: polyembed {shlex.join(args)}: {type(error).__name__}: {message}")
    assert not failures, "\n".join(failures)
