"""Typed run configs: a dataclass per method, loaded from YAML, overridden by CLI flags, errors with file:line.

Every field of a config dataclass is a YAML key and a CLI flag; a flag given on the command line wins
over the file. Unknown keys and wrongly typed values are reported with the file and line they came from,
and list items keep their own line numbers so later checks (an unknown language, a missing file) can
point at the exact line too.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from polyembed.data.errors import DataError, PolyembedError

ConfigT = TypeVar("ConfigT")


def option(default: Any, help: str) -> Any:  # noqa: A002 - the name users see in dataclass fields
    """A config field with a default (lists are copied per instance) and the help text its CLI flag shows."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"help": help})
    return field(default=default, metadata={"help": help})


@dataclass
class ConfigOrigin:
    """Where each value came from: the YAML file and line of a key or of a list item, or a CLI flag."""

    path: Path | None = None
    key_lines: dict[str, int] = field(default_factory=dict)
    item_lines: dict[str, list[int]] = field(default_factory=dict)
    from_cli: set[str] = field(default_factory=set)

    def where(self, key: str, index: int | None = None) -> str:
        """Human-readable origin: 'config.yaml:12' or 'flag --languages'."""
        if key in self.from_cli or self.path is None:
            return f"flag --{key.replace('_', '-')}"
        lines = self.item_lines.get(key, [])
        line = lines[index] if index is not None and index < len(lines) else self.key_lines.get(key)
        return f"{self.path}:{line}" if line else str(self.path)

    def error(self, key: str, message: str, index: int | None = None) -> PolyembedError:
        """A DataError at the key's (or item's) file and line; a plain error for CLI flags."""
        if key in self.from_cli or self.path is None:
            return PolyembedError(f"--{key.replace('_', '-')}: {message}")
        lines = self.item_lines.get(key, [])
        line = lines[index] if index is not None and index < len(lines) else self.key_lines.get(key)
        return DataError(self.path, line, f"{key}: {message}")


def read_yaml_mapping(path: str | Path) -> tuple[dict[str, Any], ConfigOrigin]:
    """A YAML mapping with the line of each key and list item; YAML errors name their line."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(path, None, "config file not found")
    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text)
        values = yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        raise DataError(path, mark.line + 1 if mark else None, f"invalid YAML: {err.problem}") from err
    origin = ConfigOrigin(path=path)
    if node is None:
        return {}, origin
    if not isinstance(node, yaml.MappingNode) or not isinstance(values, dict):
        raise DataError(path, node.start_mark.line + 1, "a config file must be a mapping of option: value")
    for key_node, value_node in node.value:
        key = str(key_node.value)
        origin.key_lines[key] = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.SequenceNode):
            origin.item_lines[key] = [item.start_mark.line + 1 for item in value_node.value]
    return values, origin


def _check_type(value: Any, annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_check_type(value, arg) for arg in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if origin is list:
        (item,) = typing.get_args(annotation) or (Any,)
        return isinstance(value, list) and all(_check_type(v, item) for v in value)
    if annotation is Any:
        return True
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, annotation)


def _float_from_text(value: Any, annotation: Any) -> Any:
    """'2e-5' as a float: PyYAML (YAML 1.1) reads exponent notation without a dot as text, and every
    Hugging Face user writes learning rates that way."""
    accepts_float = annotation is float or float in typing.get_args(annotation)
    if accepts_float and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return number if math.isfinite(number) else value
    return value


def build_config(
    cls: type[ConfigT], path: str | Path | None = None, overrides: dict[str, Any] | None = None
) -> tuple[ConfigT, ConfigOrigin]:
    """`cls` from an optional YAML file plus CLI overrides (None values mean 'not given'), type-checked."""
    values, origin = read_yaml_mapping(path) if path is not None else ({}, ConfigOrigin())
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    for key in values:
        if key not in hints:
            raise origin.error(key, f"unknown option (options: {', '.join(names)})")
    for key, value in (overrides or {}).items():
        if key not in hints:
            raise PolyembedError(f"unknown option '{key}' (options: {', '.join(names)})")
        if value is not None:
            values[key] = value
            origin.from_cli.add(key)
    for key, value in values.items():
        value = values[key] = _float_from_text(value, hints[key])
        if not _check_type(value, hints[key]):
            shown = hints[key] if isinstance(hints[key], str) else getattr(hints[key], "__name__", hints[key])
            raise origin.error(key, f"expected {shown}, got {value!r}")
    return cls(**values), origin


def dump_config(config: Any) -> str:
    """The resolved config as YAML (saved beside a run so it can be repeated exactly)."""
    return yaml.safe_dump(dataclasses.asdict(config), sort_keys=False, allow_unicode=True)
