"""`polyembed train ...`: one command per registered training method, its flags generated from the method's
config dataclass (every YAML key is also a flag)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

from polyembed.cli_app import EXAMPLES_HEADING, _split, clean_errors, train_app, with_examples


def commas_split(option: str) -> bool:
    """Whether a list option's flag also takes commas ('--languages de,sw'): lists of codes and names do; lists of
    files and folders ('--parallel-files de=a.en,a.de', '--encoders sw=folder') keep commas as part of a value."""
    return not option.endswith("_files") and option != "encoders"


def config_flags(config_class: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command one flag per field of `config_class` (help from the field), plus --config FILE.

    The command receives `config_file` and `overrides` (flags the user actually gave); fields stay in one
    place (the dataclass), so YAML keys and flags cannot drift apart.
    """
    import dataclasses
    import inspect
    import types
    import typing

    from polyembed.config import describe_range

    hints = typing.get_type_hints(config_class)

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        # the command's own options (--resume) with their typer.Option: under `from __future__ import annotations`
        # the signature holds them as text, and the Option (help, names) would be lost on the way to typer
        own_hints = typing.get_type_hints(command, include_extras=True)
        own = [p.replace(annotation=own_hints.get(p.name, p.annotation))
               for p in inspect.signature(command).parameters.values() if p.name not in ("config_file", "overrides")]
        fields = dataclasses.fields(config_class)

        @wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            config_file = kwargs.pop("config_file")
            overrides = {f.name: kwargs.pop(f.name) for f in fields}
            for key, value in overrides.items():  # a list flag given as '' empties the list (--datasets '')
                if isinstance(value, list):
                    overrides[key] = (_split(value) or []) if commas_split(key) else [item for item in value
                                                                                     if item != ""]
            return command(config_file=config_file, overrides=overrides, **kwargs)

        params = [
            inspect.Parameter(
                "config_file",
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[
                    Path | None, typer.Option("--config", "-c", help="YAML file of options; flags override it.")
                ],
            )
        ]
        for f in fields:
            kind = hints[f.name]
            optional = typing.get_origin(kind) in (typing.Union, types.UnionType)
            base = typing.get_args(kind)[0] if optional else kind
            choices = ""
            if typing.get_origin(base) is typing.Literal:  # checked by build_config, with the other rules
                choices = f" One of: {', '.join(typing.get_args(base))}."
                base = str
            flag = "--" + f.name.replace("_", "-")
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            bounds = f.metadata.get("bounds", {})
            limits = f" Range: {describe_range(bounds)}." if bounds else ""
            several = ""
            if typing.get_origin(base) is list:
                several = (" Commas or a repeated flag; '' for none." if commas_split(f.name) else
                           " Repeat the flag for several values; '' for none.")
            # plain text: typer's Rich help drops anything in square brackets as markup
            shown = f"{several}{choices}{limits} Config default: {shown_default(default)}."
            names = [f"{flag}/--no-{flag[2:]}"] if base is bool else [flag]
            if f.name == "output_dir":  # -o, as every command that writes has it
                names.append("-o")
            # a type built at run time, which mypy cannot follow (it reads `base` as a variable, not a type)
            annotation = Annotated[base | None, typer.Option(*names, help=f.metadata.get("help", "") + shown)]  # type: ignore[valid-type]
            params.append(
                inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
            )
        params += [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        wrapper.config_class = config_class  # type: ignore[attr-defined]  # the help test reads the flags' source
        return wrapper

    return decorate


def shown_default(default: Any) -> str:
    """A config default as the help shows it: a list as 'a, b' (the terminal may wrap it between items), an empty
    list or None as 'none' (never an empty 'Config default: .')."""
    if isinstance(default, list):
        return ", ".join(map(str, default)) or "none"
    return "none" if default is None or default == "" else str(default)


def method_examples(method: Any) -> list[str]:
    """The command lines a method's --help shows: its own (`TrainingMethod.examples`), else one that runs it into a
    run folder of its name (a method registered without examples still shows how it is called)."""
    path = " ".join(method.cli_path)
    return list(getattr(method, "examples", ())) or [f"polyembed train {path} --output-dir runs/{method.name}"]


def first_example(command: Any) -> str:
    """The first line of a command's Examples: paragraph (a group's help shows one example of each command)."""
    lines = (getattr(command, "__doc__", None) or "").split(EXAMPLES_HEADING, 1)[-1].strip().splitlines()
    return lines[0].strip() if lines else ""


def method_command(method: Any) -> Callable[..., Any]:
    """`polyembed train <method>`: one flag per config field (from the registry), --resume and --overwrite."""

    @config_flags(method.config_class)
    def command(
        config_file: Path | None,
        overrides: dict[str, Any],
        resume: Annotated[
            bool, typer.Option(help="Continue the run in --output-dir from its last checkpoint, with the same "
                                    "options (one that differs from the run's config.yaml is refused).")
        ] = False,
        overwrite: Annotated[
            bool, typer.Option(help="Replace an earlier run's own files in --output-dir (a folder that is not a "
                                    "polyembed run is refused; other files there are never touched).")
        ] = False,
    ) -> None:
        from polyembed.methods.base.registry import train

        result = train(method, config_file, resume=resume, overwrite=overwrite, **overrides)
        skip = ("eval_runtime", "eval_samples_per_second", "eval_steps_per_second")
        best = ", ".join(
            f"{key.removeprefix('eval_')}={value:.4f}"
            for key, value in result.best.items()
            if key.startswith("eval_") and key not in skip
        )
        typer.echo(f"best dev: {best or '-'}")
        typer.echo(f"model written to {result.model_dir} ({result.pairs_per_second:.1f} pairs/s)")

    command.__doc__ = with_examples(method.summary + (f" Paper: {method.paper}" if method.paper else ""),
                                    method_examples(method))
    return clean_errors(command)


_GROUP_COMMANDS: list[tuple[str, str, Callable[[], Callable[..., Any]]]] = []


def add_group_command(group: str, name: str, make: Callable[[], Callable[..., Any]]) -> None:
    """A command of a method group besides its methods (`train modular pipeline`): `make()` returns it when the
    group's methods are added, since its options' dataclass lives beside them."""
    _GROUP_COMMANDS.append((group, name, make))


def _train_groups() -> dict[str, typer.Typer]:
    """`polyembed train`'s command groups (a recipe's stages) by name."""
    return {group.name: group.typer_instance for group in train_app.registered_groups
            if group.name is not None and group.typer_instance is not None}


def add_train_commands() -> list[str]:
    """A `polyembed train <name>` command for every registered method not yet on the CLI (call it again
    after registering a method in-process), and the groups' own commands; returns the names added."""
    from polyembed.methods.base.registry import list_methods

    added = []
    for method in list_methods():
        parent = train_app
        if method.cli_group:
            groups = _train_groups()
            if method.cli_group not in groups:
                groups[method.cli_group] = typer.Typer(help=f"Stages of the {method.cli_group} recipe.",
                                                       no_args_is_help=True)
                train_app.add_typer(groups[method.cli_group], name=method.cli_group)
            parent = groups[method.cli_group]
        if method.cli_path[-1] not in {command.name for command in parent.registered_commands}:
            parent.command(method.cli_path[-1])(method_command(method))
            added.append(" ".join(method.cli_path))
    groups = _train_groups()
    for group, name, make in _GROUP_COMMANDS:
        if group in groups and name not in {command.name for command in groups[group].registered_commands}:
            groups[group].command(name)(make())
            added.append(f"{group} {name}")
    for group, instance in groups.items():  # after every method: a group's examples are its commands' first ones
        own = {name for known, name, _ in _GROUP_COMMANDS if known == group}
        examples = [first_example(command.callback) for command in instance.registered_commands if command.name in own]
        examples += [method_examples(method)[0] for method in list_methods() if method.cli_group == group]
        instance.info.help = with_examples(f"Stages of the {group} recipe.", examples)
    return added


class MethodsGroup(TyperGroup):
    """`polyembed train`: the methods' commands are made the first time the group is asked for one or for its
    list. Registering them imports every method, and with them torch, transformers and sentence-transformers
    (seconds), which `polyembed --help` and the other commands do not need."""

    methods_added = False

    def add_methods(self) -> None:
        if self.methods_added:
            return
        self.methods_added = True
        add_train_commands()
        for name, command in typer.main.get_group(train_app).commands.items():
            self.commands.setdefault(name, command)

    def list_commands(self, ctx: Any) -> list[str]:
        self.add_methods()
        return super().list_commands(ctx)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        self.add_methods()
        return super().get_command(ctx, cmd_name)


train_app.info.cls = MethodsGroup
