"""Every command's --help, as a user's terminal shows it (Rich, 100 columns): each option says what it does, its
default, its choices and its range; every command and group shows examples, and each example is a command line
the CLI parses as it is today. The command tree is walked, not listed, so a new command or option is checked too.

Also here: the old flag names (`RENAMED_FLAGS`) and the note a command prints when -m is left out."""

from __future__ import annotations

import dataclasses
import logging
import re
import shlex
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import describe_number_range
from typer.testing import CliRunner

from polyembed.cli import app
from polyembed.cli_app import EXAMPLES_HEADING, RENAMED_FLAGS, _renamed
from polyembed.cli_train import shown_default
from polyembed.config import build_config, describe_range

WIDTH = 100
runner = CliRunner()


def _commands(command: Any = None, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, command) for the root, every group and every command under it (`train` makes its methods' commands
    when asked for its list, as click asks)."""
    command = command or typer.main.get_command(app)
    yield path, command
    if hasattr(command, "list_commands"):
        context = command.context_class(command)
        for name in command.list_commands(context):
            yield from _commands(command.get_command(context, name), (*path, name))


COMMANDS = dict(_commands())
LEAVES = {path: command for path, command in COMMANDS.items() if not hasattr(command, "list_commands")}


def _help(path: tuple[str, ...]) -> str:
    import typer.rich_utils

    # typer reads TERMINAL_WIDTH once, when its Rich module is first imported (another test may have set it):
    # the width is pinned here, so the help is the same whatever ran before
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.rich_utils, "MAX_WIDTH", WIDTH)
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH)})
    assert result.exit_code == 0, result.output
    return result.output


def _config_class(command: Any) -> type | None:
    """The config dataclass a `train` command's flags come from (`config_flags`), else None."""
    function = command.callback
    while function is not None:
        if hasattr(function, "config_class"):
            return function.config_class
        function = getattr(function, "__wrapped__", None)
    return None


def _squeezed(text: str) -> str:
    """Text without whitespace: a cell's words wrap (or fold) at any column, and what counts is that they are there."""
    return re.sub(r"\s+", "", text)


def _panel_rows(output: str) -> list[tuple[str, str, str]]:
    """(names, type cell, help cell) of each row of the Arguments and Options panels. The type column starts at
    the '<' of each row's first line and the help column after it, at the same position in every row of a panel."""
    rows: list[tuple[str, str, str]] = []
    lines = output.splitlines()
    index = 0
    while index < len(lines):
        if not re.match(r"╭─ (Arguments|Options) ", lines[index]):
            index += 1
            continue
        panel = []
        index += 1
        while not lines[index].startswith("╰"):
            panel.append(" " + lines[index].rstrip().removeprefix("│").removesuffix("│").rstrip().ljust(WIDTH))
            index += 1
        type_x = panel[0].index("<")
        starts = [number for number, line in enumerate(panel) if line[type_x] == "<"]
        help_xs = []
        for number in starts:  # the help cell starts after a gap of at least two spaces after the type cell
            gap = re.compile(r"\S\s{2,}(\S)").search(panel[number], type_x)
            if gap:
                help_xs.append(gap.start(1))
        help_x = min(help_xs)
        for first, end in zip(starts, [*starts[1:], len(panel)], strict=True):
            block = panel[first:end]
            rows.append((" ".join(line[:type_x] for line in block), " ".join(line[type_x:help_x] for line in block),
                         " ".join(line[help_x:] for line in block)))
    return rows


def _shown_params(command: Any, context: Any) -> list[Any]:
    return [param for param in command.get_params(context) if not getattr(param, "hidden", False)]


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda path: " ".join(path) or "polyembed")
def test_every_option_shows_its_help_default_choices_and_range(path: tuple[str, ...]) -> None:
    command = COMMANDS[path]
    output = _help(path)
    assert max(map(len, output.splitlines())) <= WIDTH
    assert not re.search(r"\[default:\s*\]|default:\s*\.", output), "an empty default"
    context = command.context_class(command)
    params = _shown_params(command, context)
    rows = _panel_rows(output)
    assert len(rows) == len(params), [row[0] for row in rows]
    config = _config_class(command)
    fields = {field.name: field for field in dataclasses.fields(config)} if config else {}
    for param, (names, type_cell, help_cell) in zip(params, rows, strict=True):
        where = f"{' '.join(path)} {param.name}"
        shown_name = (param.opts[0] if param.param_type_name == "option" else param.name).lower()
        first = names.replace("*", " ").split()[0].split(",")[0].lower()
        assert shown_name.startswith(first.removesuffix("…").removesuffix("...")), (where, names)
        assert param.help and param.help.strip(), f"{where}: no help text"
        help_text, type_text = _squeezed(help_cell), _squeezed(type_cell)
        assert _squeezed(param.help) in help_text, f"{where}: help not shown whole (a word wider than the column?)"
        if param.secondary_opts and isinstance(param.default, bool):  # a flag pair: the form that is on
            shown = (param.opts if param.default else param.secondary_opts)[0].lstrip("-")
            assert f"[default:{shown}]" in help_text, f"{where}: default not shown"
        elif param.default is not None and not getattr(param, "is_flag", False):  # a lone flag is off unless given
            assert f"[default:{_squeezed(str(param.default))}]" in help_text, f"{where}: default not shown"
        annotation = param.type_descriptor.annotation
        if typing.get_origin(annotation) is typing.Literal:
            for choice in typing.get_args(annotation):
                assert _squeezed(str(choice)) in type_text, f"{where}: choice {choice} not shown"
        if param.min is not None or param.max is not None:
            assert _squeezed(describe_number_range(param.min, param.max)) in type_text, f"{where}: range not shown"
        field = fields.get(param.name)
        if field is None:
            continue
        default = field.default_factory() if callable(field.default_factory) else field.default
        assert _squeezed(f"Config default: {shown_default(default)}.") in help_text, f"{where}: config default"
        hint = typing.get_type_hints(config)[param.name]
        literal = next((arg for arg in (hint, *typing.get_args(hint)) if typing.get_origin(arg) is typing.Literal),
                       None)
        if literal is not None:
            assert _squeezed(f"One of: {', '.join(typing.get_args(literal))}.") in help_text, f"{where}: choices"
        if field.metadata.get("bounds"):
            assert _squeezed(f"Range: {describe_range(field.metadata['bounds'])}.") in help_text, f"{where}: range"


def test_the_walk_reaches_every_command_and_the_train_options_are_checked_against_their_config() -> None:
    assert {("eval",), ("models", "transfer-vocabulary"), ("data", "translate"), ("train", "modular", "pipeline"),
            ("train", "emmax", "em"), ("push",), ("doctor",), ("tasks",), ("demo",)} <= set(LEAVES)
    assert all(_config_class(command) for path, command in LEAVES.items() if path[0] == "train")


def test_train_resume_and_overwrite_say_what_they_do() -> None:
    rows = {row[0].split()[0]: _squeezed(row[2]) for row in _panel_rows(_help(("train", "distill")))}
    assert _squeezed("Continue the run in --output-dir from its last checkpoint") in rows["--resume"]
    assert _squeezed("Replace an earlier run's own files in --output-dir") in rows["--overwrite"]
    assert "[default:no-overwrite]" in rows["--overwrite"]


# ------------------------------------------------------------------------------------------------- examples
def _examples(text: str | None) -> list[str]:
    """The command lines of an Examples: paragraph, one a line."""
    if not text or EXAMPLES_HEADING not in text:
        return []
    paragraph = text.split(EXAMPLES_HEADING, 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in paragraph.strip().splitlines() if line.strip()]


def _parse_only(line: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """Parse an example as the CLI would run it, without running it (click's make_context down the command path):
    unknown options, wrong types, values out of range and missing required arguments fail here. Returns the path of
    the command it names."""
    words = shlex.split(line, comments=True)
    while "=" in words[0] and words[0].split("=")[0].isupper():  # VAR=value before the command
        name, _, value = words.pop(0).partition("=")
        monkeypatch.setenv(name, value)
    assert words[0] == "polyembed", line
    assert _renamed(words[1:])[1] == [], f"{line}: uses an old flag name"
    command, name, args, parent, path = typer.main.get_command(app), "polyembed", words[1:], None, ()
    while True:
        context = command.make_context(name, list(args), parent=parent)
        if not hasattr(command, "list_commands"):
            return path
        # a group's own options are flags (-v, -q): the first other word names the subcommand
        position = next(index for index, word in enumerate(args) if not word.startswith("-"))
        name, args, parent = args[position], args[position + 1:], context
        command = command.get_command(context, name)
        assert command is not None, f"{line}: no command {name}"
        path = (*path, name)


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda path: " ".join(path) or "polyembed")
def test_every_command_shows_examples_that_parse(path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    command = COMMANDS[path]
    examples = _examples(command.help) + _examples(command.epilog)
    assert examples, f"{' '.join(path) or 'polyembed'}: no Examples: paragraph in the help"
    shown = _help(path)
    for line in examples:
        assert line in shown, f"{line!r} is not shown whole at {WIDTH} columns"
        parsed = _parse_only(line, monkeypatch)
        assert parsed[:len(path)] == path and parsed in LEAVES, (line, parsed)


def test_an_example_that_no_longer_parses_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    for line in ("polyembed eval --batch-size many", "polyembed encode in.txt", "polyembed mine a b -o x --bogus 1",
                 "polyembed train distill --max-steps x", "polyembed align p.txt --aligner best"):
        with pytest.raises(typer.TyperException):  # the usage errors (typer's click) the test above relies on
            _parse_only(line, monkeypatch)
    with pytest.raises(AssertionError, match="old flag name"):
        _parse_only("polyembed align p.txt --method itermax", monkeypatch)


# ---------------------------------------------------------------------------------------------- old names
def _options(path: tuple[str, ...]) -> set[str]:
    command = COMMANDS[path]
    return {name for param in command.get_params(command.context_class(command))
            for name in (*param.opts, *param.secondary_opts)}


@pytest.mark.parametrize("where", list(RENAMED_FLAGS), ids=lambda where: where or "every command")
def test_each_renamed_flag_has_its_new_name_and_not_its_old_one(where: str) -> None:
    """The new name is an option of the command; the old name is no option of it (so the rewrite never hides a
    real option), nor of any other command."""
    paths = [path for path in LEAVES if path[:len(where.split())] == tuple(where.split())]
    assert paths, where
    options = set().union(*(_options(path) for path in paths))
    for old, new in RENAMED_FLAGS[where].items():
        assert old not in options, old
        if where:
            assert all(new in _options(path) for path in paths), (where, new)
        else:
            assert any(new in _options(path) for path in LEAVES), new


def test_an_old_flag_name_works_warns_once_and_stays_out_of_the_help(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("the house ||| das haus\n", encoding="utf-8")
    result = runner.invoke(app, ["align", str(pairs), "-o", str(tmp_path / "a.txt"), "--threshold", "3",
                                 "--threshold=2", "--method", "itermax"])
    assert result.exit_code == 2
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: --threshold is deprecated: it is now --alignment-threshold (the old name stops "
                        "working in a later version)",
                        "warning: --method is deprecated: it is now --aligner (the old name stops working in a "
                        "later version)"]
    assert "'--alignment-threshold'" in result.stderr and not (tmp_path / "a.txt").exists()
    quiet = runner.invoke(app, ["-q", "models", "transfer-vocabulary", str(pairs), "-o", str(tmp_path / "m"),
                                "--vocab-size", "0"])
    assert "warning: --vocab-size is deprecated: it is now --vocabulary-size" in quiet.stderr
    for where, flags in RENAMED_FLAGS.items():
        for path in (path for path in LEAVES if path[:len(where.split())] == tuple(where.split())):
            shown = _help(path)
            assert not any(re.search(rf"(?<![\w-]){re.escape(old)}(?![\w-])", shown) for old in flags), path


def test_an_old_name_after_the_end_of_options_is_a_value() -> None:
    args, given = _renamed(["align", "pairs.txt", "--method", "itermax", "--", "--threshold"])
    assert args == ["align", "pairs.txt", "--aligner", "itermax", "--", "--threshold"]
    assert given == [("--method", "--aligner")]
    assert _renamed(["-v", "mine", "a", "b", "--threshold", "1"]) == (["-v", "mine", "a", "b", "--threshold", "1"], [])


def test_the_pipeline_reads_its_old_base_key_as_student(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from polyembed.methods.modular.pipeline import ModularPipelineConfig

    old = tmp_path / "old.yaml"
    old.write_text("languages: [kk]\nbase: minilm-en\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="polyembed"):
        config, _ = build_config(ModularPipelineConfig, old)
    assert config.student == "minilm-en"
    assert f"{old}:2: base is deprecated: it is now student" in caplog.text
    flag, _ = build_config(ModularPipelineConfig, old, {"student": "me5-small"})
    assert flag.student == "me5-small"  # a flag still wins over the file


# ------------------------------------------------------------------------------------------ default model
DEFAULT_MODEL_RUNS = {
    ("eval",): ["eval", "--device", "tpu"],
    ("encode",): ["encode", "{tmp}/in.txt", "-o", "{tmp}/v.npy", "--device", "tpu"],
    ("mine",): ["mine", "{tmp}/in.txt", "{tmp}/in.txt", "-o", "{tmp}/p.tsv", "--device", "tpu"],
    ("serve",): ["serve", "--device", "tpu"],
    ("align",): ["align", "{tmp}/in.txt", "-o", "{tmp}/a.txt", "--device", "tpu"],
    ("export",): ["export", "-o", "{tmp}/afile"],
    ("models", "prune"): ["models", "prune", "{tmp}/in.txt", "-o", "{tmp}/m", "--device", "tpu"],
    ("models", "transfer-vocabulary"): ["models", "transfer-vocabulary", "{tmp}/in.txt", "-o", "{tmp}/m", "--device",
                                        "tpu"],
}
"""A command line of each command with a default -m that fails at once, after the command has started."""
NOTE = "using the built-in default model me5-small (-m/--model chooses another)"


def test_every_command_with_a_default_model_is_in_the_table() -> None:
    with_default = {path for path, command in LEAVES.items() for param in command.params
                    if param.name == "model" and param.default is not None}
    assert with_default == set(DEFAULT_MODEL_RUNS)


@pytest.mark.parametrize("path", list(DEFAULT_MODEL_RUNS), ids=" ".join)
def test_a_command_says_once_that_it_uses_the_default_model(path: tuple[str, ...], tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("the house ||| das haus\n", encoding="utf-8")
    (tmp_path / "afile").write_text("mine\n")
    argv = [arg.format(tmp=tmp_path) for arg in DEFAULT_MODEL_RUNS[path]]
    left_out = runner.invoke(app, argv)
    assert left_out.exit_code == 2, left_out.output
    assert left_out.stderr.splitlines().count(NOTE) == 1, left_out.stderr
    assert left_out.stderr.splitlines()[0] == NOTE  # at the start, before anything else the command says
    given = runner.invoke(app, [*argv, "-m", "minilm-en"])
    assert given.exit_code == 2 and NOTE not in given.stderr and "built-in default" not in given.stderr
    quiet = runner.invoke(app, ["-q", *argv])
    assert NOTE not in quiet.stderr  # an INFO note: -q hides it


def test_serve_given_its_model_by_the_environment_prints_no_note() -> None:
    result = runner.invoke(app, ["serve", "--device", "tpu"], env={"POLYEMBED_MODEL": "minilm-en"})
    assert result.exit_code == 2 and NOTE not in result.stderr
