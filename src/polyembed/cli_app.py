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


class CleanErrorsGroup(TyperGroup):
    """The root command group: usage errors (unknown option, a flag value of the wrong type or out of
    range) end like polyembed's own errors, as one `error:` line on stderr and exit code 2."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
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


def _split(values: str | None) -> list[str] | None:
    return [v.strip() for v in values.split(",") if v.strip()] if values else None
