"""The command line's shared objects: the root `app` and its groups, the error handling every command
shares. The command modules (`cli`, `cli_train`, `cli_tools`) register on them; none imports another."""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import logging
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from polyembed.errors import PolyembedError, on_command_line

logger = logging.getLogger(__name__)

RENAMED_FLAGS: dict[str, dict[str, str]] = {
    "": {"--out": "--output"},
    "align": {"--method": "--aligner", "--layer": "--aligner-layer", "--threshold": "--alignment-threshold"},
    "models transfer-vocabulary": {"--vocab-size": "--vocabulary-size", "--auxiliary": "--vocabulary-auxiliary",
                                   "--unseen": "--vocabulary-unseen"},
    "train modular pipeline": {"--base": "--student"},
}
"""Flags renamed so that one setting has one name on every command (the name the training configs use), by the
command they belong to ('' for every command). The old names still work, with a warning and not shown in the
help, until the next version."""

_OLD_FLAGS_GIVEN: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar(
    "polyembed_old_flags_given", default=())


def _command_words(args: Sequence[str]) -> list[str]:
    """The words that name the command ('models', 'prune'), after the root's own flags (-v, -q) and before the
    command's options; positional arguments after them only make a longer list, which no command path matches."""
    words: list[str] = []
    for arg in args:
        if arg.startswith("-"):
            if words:
                break
            continue
        words.append(arg)
    return words


def _renamed(args: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """`args` with the old flag names of their command (`RENAMED_FLAGS`, also as `--out=VALUE`) written as the
    new ones, and the (old, new) names that were given, each once."""
    words = _command_words(args)
    table: dict[str, str] = {}
    for path, flags in RENAMED_FLAGS.items():
        if words[:len(path.split())] == path.split():
            table.update(flags)
    out, given = [], []
    for index, arg in enumerate(args):
        if arg == "--":  # the end of the options: what follows is values, whatever they look like
            out.extend(args[index:])
            break
        flag, equals, value = arg.partition("=")
        if flag in table:
            out.append(table[flag] + equals + value)
            if (flag, table[flag]) not in given:
                given.append((flag, table[flag]))
        else:
            out.append(arg)
    return out, given


def warn_about_renamed_flags() -> None:
    """One warning for each old flag name the command line used (the root callback calls it once logging is set
    up, so -q still shows it: a script that uses an old name should hear of it before the name goes)."""
    for old, new in _OLD_FLAGS_GIVEN.get():
        logger.warning("%s is deprecated: it is now %s (the old name stops working in a later version)", old, new)


class CleanErrorsGroup(TyperGroup):
    """The root command group: usage errors (unknown option, a flag value of the wrong type or out of
    range) end like polyembed's own errors, as one `error:` line on stderr and exit code 2. Old flag names
    (`RENAMED_FLAGS`) are read as their new ones, with a warning."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **kwargs: Any) -> Any:
        args, given = _renamed(list(sys.argv[1:] if args is None else args))
        _OLD_FLAGS_GIVEN.set(tuple(given))
        return self._main(args, prog_name, complete_var, standalone_mode, windows_expand_args, **kwargs)

    def _main(self, args: Sequence[str], prog_name: str | None, complete_var: str | None, standalone_mode: bool,
              windows_expand_args: bool, **kwargs: Any) -> Any:
        if not standalone_mode:
            with on_command_line():
                return super().main(args, prog_name, complete_var, False, windows_expand_args, **kwargs)
        try:
            with on_command_line():
                code = super().main(args, prog_name, complete_var, False, windows_expand_args, **kwargs)
        except typer.TyperException as err:  # typer's (vendored) click exceptions all derive from it
            if type(err).__name__ == "NoArgsIsHelpError":  # `polyembed` alone: the help text, not an error
                typer.echo(err.format_message())
                sys.exit(0)
            typer.secho(f"error: {err.format_message()}", fg=typer.colors.RED, err=True)
            context = getattr(err, "ctx", None)
            if context is not None:
                typer.echo(f"(see '{context.command_path} --help')", err=True)
            sys.exit(err.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


EXAMPLES_HEADING = "Examples:"


def with_examples(text: str, examples: Sequence[str]) -> str:
    """`text` and an Examples: paragraph, one command a line; tests parse every such line with the CLI itself,
    so an example cannot drift from the options it shows."""
    return f"{text}\n\n{EXAMPLES_HEADING}\n" + "\n".join(examples)


def help_paragraphs(text: str | None) -> str | None:
    """A docstring as the help shows it. Typer's Rich help keeps the line breaks of every paragraph after the
    first, so a paragraph wrapped in the source would be wrapped twice on the screen: each paragraph becomes one
    line (the terminal wraps it), except the Examples: paragraph, which keeps one command a line."""
    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(paragraph if paragraph.startswith(EXAMPLES_HEADING)
                        else " ".join(line.strip() for line in paragraph.splitlines()) for paragraph in paragraphs)


app = typer.Typer(
    cls=CleanErrorsGroup,
    help="polyembed: build multilingual sentence encoders and prove they work.",
    epilog=with_examples("", [
        "polyembed demo                    # the whole job on the built-in data",
        "polyembed train new-language --parallel-files yo=my.en,my.yo -o runs/yo",
        "polyembed eval -m runs/yo/model --baseline me5-small -o results/yo",
        "polyembed encode sentences.txt -m runs/yo/model -o vectors.npy",
        "polyembed serve -m runs/yo/model",
    ]).lstrip(),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
models_app = typer.Typer(
    help=with_examples("Built-in offline models, and smaller or new-vocabulary copies of a model: list, prepare, "
                       "prune, transfer-vocabulary.", [
                           "polyembed models list",
                           "polyembed models prepare me5-small",
                           "polyembed models prune corpus.kk.txt -m me5-small -o models/me5-kk",
                           "polyembed models transfer-vocabulary kk=corpus.kk.txt -m me5-small -o models/me5-kk-new",
                       ]),
    no_args_is_help=True)
data_app = typer.Typer(
    help=with_examples("The dataset registry and the local data root; machine translation of training text.", [
        "polyembed data list",
        "polyembed data list --data-root /data/polyembed",
        "polyembed data translate en.txt -o kk.tsv -m nllb/ --source-code eng_Latn --target-code kaz_Cyrl",
    ]),
    no_args_is_help=True)
app.add_typer(models_app, name="models")
app.add_typer(data_app, name="data")
train_app = typer.Typer(
    help=with_examples("Train multilingual sentence encoders: one command per method (its options are the keys of "
                       "its YAML config).", [
                           "polyembed train distill --languages sw --parallel-files sw=bitext.tsv --output-dir runs/sw",
                           "polyembed train distill --config my.yaml --max-steps 500",
                           "polyembed train modular pipeline --languages de,ru,kk --output-dir runs/modular",
                       ]),
    no_args_is_help=True)
app.add_typer(train_app, name="train")

BUILTIN_DEFAULT_MODEL = "me5-small"
"""The model a command uses when -m is not given (it says so at the start, see `note_default_model`)."""
ModelOption = Annotated[str, typer.Option("--model", "-m", help="Built-in name, folder, or Hugging Face id.")]
"""The model a command encodes with; every command that takes one spells it the same way."""
PromptNameOption = Annotated[str | None, typer.Option(
    help="The model's prompt to prepend, by name (e5: query or passage), as sentence-transformers' prompt_name. "
         "Default: the model's default prompt.")]
DataRootOption = Annotated[
    Path | None,
    typer.Option("--data-root", help="Folder with the datasets (default: $POLYEMBED_DATA, else ../shared/data)."),
]
DeviceOption = Annotated[str | None, typer.Option(
    help="cpu, cuda, cuda:N or mps (encode, mine and eval also take several, comma-separated: cuda:0,cuda:1, one "
         "process each). Default: the accelerator there is (cuda, then mps), else cpu.")]


def note_default_model(context: typer.Context, parameter: str = "model") -> None:
    """Say, once at the start of a command, that -m was left out and the built-in default model runs: a run on the
    wrong model is otherwise only noticed in its results. Silent when -m (or its environment variable) was given."""
    source = context.get_parameter_source(parameter)
    if source is not None and source.name == "DEFAULT":
        logger.info("using the built-in default model %s (-m/--model chooses another)", context.params[parameter])


def _end_progress_bars() -> None:
    """Close the progress bars an error interrupted: a live bar leaves the cursor after its last '\r' frame,
    and the error line would be glued to it. Closing a bar ends its line."""
    tqdm_module = sys.modules.get("tqdm")
    if tqdm_module is None:
        return
    for bar in list(getattr(tqdm_module.tqdm, "_instances", ())):
        with contextlib.suppress(Exception):
            bar.close()


def clean_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """Turn polyembed errors into one clear line on stderr and exit code 2 (no traceback), on a line of its
    own."""

    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:  # in a context of its own: what a command sets (its --device) ends with it
            return contextvars.copy_context().run(function, *args, **kwargs)
        except PolyembedError as err:
            _end_progress_bars()
            typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
            raise typer.Exit(2) from None
        except OSError as err:  # the machine, not the input: a full disk, a folder removed mid-run
            _end_progress_bars()
            where = f" ({err.filename})" if err.filename else ""
            typer.secho(f"error: {err.strerror or err}{where}", fg=typer.colors.RED, err=True)
            raise typer.Exit(1) from None

    wrapper.__doc__ = help_paragraphs(function.__doc__)
    return wrapper


def _split(values: str | list[str] | None) -> list[str] | None:
    """A list option's values, given as commas, a repeated flag, or both ('a,b' and 'c' -> a, b, c)."""
    if not values:
        return None
    items = [item.strip() for value in ([values] if isinstance(values, str) else values) for item in value.split(",")]
    return [item for item in items if item] or None
