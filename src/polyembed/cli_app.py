"""The command line's shared objects: the root `app` and its groups, the error handling every command
shares. The command modules (`cli`, `cli_train`, `cli_tools`) register on them; none imports another."""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable
from functools import wraps
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from polyembed.errors import PolyembedError, on_command_line

RENAMED_FLAGS = {"--out": "--output"}
"""Flags renamed so that one setting has one name on every command; the old names still work (not shown in
the help) until the next version."""


def _renamed(args: list[str]) -> list[str]:
    """`args` with the old flag names (`RENAMED_FLAGS`, also as `--out=VALUE`) written as the new ones."""
    out = []
    for arg in args:
        flag, equals, value = arg.partition("=")
        out.append(RENAMED_FLAGS[flag] + equals + value if flag in RENAMED_FLAGS else arg)
    return out


class CleanErrorsGroup(TyperGroup):
    """The root command group: usage errors (unknown option, a flag value of the wrong type or out of
    range) end like polyembed's own errors, as one `error:` line on stderr and exit code 2. Old flag names
    (`RENAMED_FLAGS`) are read as their new ones."""

    def main(self, args: Any = None, *rest: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        args = _renamed(list(sys.argv[1:] if args is None else args))
        return self._main(args, *rest, standalone_mode=standalone_mode, **kwargs)

    def _main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            with on_command_line():
                return super().main(*args, standalone_mode=False, **kwargs)
        try:
            with on_command_line():
                code = super().main(*args, standalone_mode=False, **kwargs)
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


app = typer.Typer(
    cls=CleanErrorsGroup,
    help="polyembed: build multilingual sentence encoders and prove they work.",
    epilog="Examples: polyembed demo (the whole job on the built-in data) | polyembed train distill --languages sw "
    "--parallel-files sw=bitext.tsv --output-dir runs/sw | polyembed eval -m runs/sw/model | polyembed encode "
    "sentences.txt -o vectors.npy | polyembed serve -m runs/sw/model",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
models_app = typer.Typer(help="Built-in offline models: list, prepare, prune.", no_args_is_help=True)
data_app = typer.Typer(help="The dataset registry and the local data root.", no_args_is_help=True)
app.add_typer(models_app, name="models")
app.add_typer(data_app, name="data")
train_app = typer.Typer(help="Train multilingual sentence encoders.", no_args_is_help=True)
app.add_typer(train_app, name="train")

ModelOption = Annotated[str, typer.Option("--model", "-m", help="Built-in name, folder, or Hugging Face id.")]
PromptNameOption = Annotated[str | None, typer.Option(
    help="The model's prompt to prepend, by name (e5: query or passage), as sentence-transformers' prompt_name. "
         "Default: the model's default prompt.")]
DeviceOption = Annotated[str | None, typer.Option(
    help="cpu, cuda, cuda:N or mps. Default: the accelerator there is (cuda, then mps), else cpu.")]
"""The model a command encodes with; every command that takes one spells it the same way."""


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

    return wrapper


def _split(values: str | list[str] | None) -> list[str] | None:
    """A list option's values, given as commas, a repeated flag, or both ('a,b' and 'c' -> a, b, c)."""
    if not values:
        return None
    items = [item.strip() for value in ([values] if isinstance(values, str) else values) for item in value.split(",")]
    return [item for item in items if item] or None
