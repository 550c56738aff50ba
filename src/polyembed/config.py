"""Typed run configs: a dataclass per method, loaded from YAML, overridden by CLI flags, errors with file:line.

Every field of a config dataclass is a YAML key and a CLI flag; a flag given on the command line wins
over the file. Types, `Literal` choices and ranges (`option(..., minimum=1)`) are checked by pydantic in strict
mode; unknown keys, wrongly typed values, choices and out-of-range numbers are reported with the file and
line they came from (or the flag),
and list items keep their own line numbers so later checks (an unknown language, a missing file) can
point at the exact line too.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import logging
import math
import reprlib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from polyembed.data.io import read_text
from polyembed.errors import DataError, PolyembedError

ConfigT = TypeVar("ConfigT")
logger = logging.getLogger(__name__)



def option(
    default: Any,
    help: str,  # noqa: A002 - the name users see in dataclass fields
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    below: float | None = None,
) -> Any:
    """A config field with a default (lists are copied per instance), the help text its CLI flag shows, and
    an optional range (inclusive `minimum`/`maximum`, exclusive `above`/`below`) checked by `build_config`
    for YAML values and flags alike."""
    bounds = {"minimum": minimum, "maximum": maximum, "above": above, "below": below}
    metadata = {"help": help, "bounds": {k: v for k, v in bounds.items() if v is not None}}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def describe_range(bounds: dict[str, float]) -> str:
    """'>= 1', '> 0 and < 1', ...: the allowed range as users read it."""
    symbols = {"minimum": ">=", "above": ">", "maximum": "<=", "below": "<"}
    def shown(value: float) -> str:
        return str(int(value)) if float(value).is_integer() else f"{value:g}"

    return " and ".join(f"{symbols[key]} {shown(bounds[key])}" for key in symbols if key in bounds)


@dataclass
class ConfigOrigin:
    """Where each value came from: the YAML file and line of a key or of a list item, or a CLI flag."""

    path: Path | None = None
    key_lines: dict[str, int] = field(default_factory=dict)
    item_lines: dict[str, list[int]] = field(default_factory=dict)
    from_cli: set[str] = field(default_factory=set)

    def where(self, key: str, index: int | None = None) -> str:
        """Human-readable origin: 'config.yaml:12', 'flag --languages', or 'option languages' (Python)."""
        if key in self.from_cli:
            return f"flag --{key.replace('_', '-')}"
        if self.path is None:
            return f"option {key}"
        lines = self.item_lines.get(key, [])
        line = lines[index] if index is not None and index < len(lines) else self.key_lines.get(key)
        return f"{self.path}:{line}" if line else str(self.path)

    def term(self, key: str) -> str:
        """An option as the caller wrote it: '--language-column' for a flag, 'language_column' otherwise."""
        return f"--{key.replace('_', '-')}" if key in self.from_cli else key

    def error(self, key: str, message: str, index: int | None = None) -> PolyembedError:
        """A DataError at the key's (or item's) file and line; a plain error for CLI flags."""
        if key in self.from_cli:
            return PolyembedError(f"--{key.replace('_', '-')}: {message}")
        if self.path is None:  # a config built in Python
            return PolyembedError(f"{key}: {message}")
        lines = self.item_lines.get(key, [])
        line = lines[index] if index is not None and index < len(lines) else self.key_lines.get(key)
        return DataError(self.path, line, f"{key}: {message}")


_BUILDING: contextvars.ContextVar[ConfigOrigin | None] = contextvars.ContextVar("polyembed_origin", default=None)
"""The origin `build_config` is building an options object from, so its construction-time check names flags."""


class Options:
    """Base of the options objects other than method configs (streaming, serving): dataclass fields made with
    `option(...)`, checked when the object is built by the rules a method config follows, plus `check` for
    rules across fields. Why one style: an error names the option as the caller wrote it, the flag on the
    command line (`build_config` with CLI overrides), the argument name in Python."""

    def __post_init__(self) -> None:
        validate_config(self, _BUILDING.get())

    def check(self, origin: ConfigOrigin) -> None:
        """Rules across fields; raise `origin.error(key, message)`, naming other options with `origin.term`."""


def _yaml_error(path: Path, text: str, err: Exception) -> DataError:
    """A YAML error at its file and line: scanner/parser errors carry a mark, reader errors (a control
    character) a character position, value errors (a date like 2024-02-30) neither."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        return DataError(path, mark.line + 1 if mark else None, f"invalid YAML: {err.problem or err.context}")
    if isinstance(err, yaml.reader.ReaderError):
        line = text.count("\n", 0, max(0, err.position)) + 1
        char = f"U+{err.character:04X}" if isinstance(err.character, int) else repr(err.character)
        return DataError(path, line, f"invalid YAML: character {char} is not allowed ({err.reason})")
    return DataError(path, None, f"invalid YAML: {err}")


def _refuse_duplicate_keys(path: Path, node: yaml.MappingNode) -> None:
    """PyYAML keeps the last of two equal keys without a word: a second `output_dir:` further down would
    silently win. Refuse it at its line, naming the first."""
    first: dict[str, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        line = key_node.start_mark.line + 1
        if key_node.value in first:
            raise DataError(path, line, f"{key_node.value}: given twice (first at line {first[key_node.value]}); "
                                        "keep one")
        first[key_node.value] = line


def read_yaml_mapping(path: str | Path) -> tuple[dict[str, Any], ConfigOrigin]:
    """A YAML mapping with the line of each key and list item; decoding and YAML errors name their line."""
    path = Path(path).expanduser()
    try:
        is_dir = path.is_dir()
    except OSError as err:  # a name too long for the file system: is_dir() raises rather than says False
        raise DataError(path, None, f"cannot read it ({err.strerror})") from None
    if is_dir:
        raise DataError(path, None, "is a folder; a config is a YAML file")
    text = read_text(path)  # missing file, or not UTF-8: file:line
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        values = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, OverflowError, RecursionError) as err:
        raise _yaml_error(path, text, err) from None
    origin = ConfigOrigin(path=path)
    if node is None:
        return {}, origin
    if not isinstance(node, yaml.MappingNode) or not isinstance(values, dict):
        raise DataError(path, node.start_mark.line + 1, "a config file must be a mapping of option: value")
    # An integer no float can hold (a 400-digit number, 0x and 300 hex digits) would overflow range checks and
    # messages later, far from its line: refuse it here, at its line. Aliases share nodes, hence `seen`.
    constructor = yaml.constructor.SafeConstructor()
    stack, seen = [node], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, yaml.MappingNode):
            _refuse_duplicate_keys(path, item)
            stack.extend(child for pair in item.value for child in pair)
        elif isinstance(item, yaml.SequenceNode):
            stack.extend(item.value)
        elif item.tag == "tag:yaml.org,2002:int":
            try:
                float(constructor.construct_yaml_int(item))
            except OverflowError:
                raise DataError(path, item.start_mark.line + 1, "number too large (beyond the float range)") from None
    for key_node, value_node in node.value:
        key = str(key_node.value)
        origin.key_lines[key] = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.SequenceNode):
            origin.item_lines[key] = [item.start_mark.line + 1 for item in value_node.value]
    return {str(key): value for key, value in values.items()}, origin


def _accepts_float(annotation: Any) -> bool:
    """float, or a union with float (`float | None`); not a list of floats."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return annotation is float or (union and float in typing.get_args(annotation))


def _float_from_text(value: Any, annotation: Any) -> Any:
    """'2e-5' as a float: PyYAML (YAML 1.1) reads exponent notation without a dot as text, and every
    Hugging Face user writes learning rates that way (the items of a list of floats too)."""
    if typing.get_origin(annotation) is list and isinstance(value, list):
        return [_float_from_text(item, typing.get_args(annotation)[0]) for item in value]
    if _accepts_float(annotation) and isinstance(value, str):
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
    _read_renamed_keys(cls, values, origin)
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
        values[key] = _float_from_text(value, hints[key])
    token = _BUILDING.set(origin)
    try:
        config = cls(**values)
    finally:
        _BUILDING.reset(token)
    validate_config(config, origin)
    return config, origin


def _read_renamed_keys(cls: type, values: dict[str, Any], origin: ConfigOrigin) -> None:
    """A config file's old key names (`cls.RENAMED_OPTIONS`, old -> new) moved to their new ones, with a warning
    at the key's line: a config written before a rename still runs, and says what to change. Flags are renamed
    on the command line (`polyembed.cli_app.RENAMED_FLAGS`), so they still win over the file."""
    for old, new in getattr(cls, "RENAMED_OPTIONS", {}).items():
        if old not in values:
            continue
        if new in values:
            raise origin.error(old, f"the old name of {new}, which is given too: keep {new} only")
        logger.warning("%s: %s is deprecated: it is now %s (the old name stops working in a later version)",
                       origin.where(old), old, new)
        values[new] = values.pop(old)
        origin.key_lines[new] = origin.key_lines.pop(old, 0)
        if old in origin.item_lines:
            origin.item_lines[new] = origin.item_lines.pop(old)


_RANGE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"}


@functools.cache
def _field_validator(cls: type, name: str) -> tuple[TypeAdapter, dict[str, float]]:
    """A strict pydantic validator for one config field: its type (Literal choices included) and range.
    Strict: no '3' for 3, no true for 1, no NaN or infinity for a float."""
    hint = typing.get_type_hints(cls)[name]
    bounds = next(f for f in dataclasses.fields(cls) if f.name == name).metadata.get("bounds", {})
    constraints: dict[str, Any] = {
        "ge": bounds.get("minimum"),
        "gt": bounds.get("above"),
        "le": bounds.get("maximum"),
        "lt": bounds.get("below"),
    }
    if _accepts_float(hint):
        constraints["allow_inf_nan"] = False
    # a type built at run time, which mypy cannot follow (it reads `hint` as a variable, not a type)
    annotated = Annotated[hint, Field(**{k: v for k, v in constraints.items() if v is not None})]  # type: ignore[valid-type]
    return TypeAdapter(annotated, config=ConfigDict(strict=True)), bounds


def validate_config(config: Any, origin: ConfigOrigin | None = None) -> None:
    """Check every field's type, choices (`Literal`) and range with pydantic; the error names the YAML line
    or the flag.

    `build_config` calls it; training calls it again so a config built in Python gets the same rules."""
    origin = origin or ConfigOrigin()
    cls: type = type(config)
    hints = typing.get_type_hints(cls)
    for spec in dataclasses.fields(config):
        key, value = spec.name, getattr(config, spec.name)
        validator, bounds = _field_validator(cls, key)
        try:
            validator.validate_python(value)
        except ValidationError as err:
            if {error["type"] for error in err.errors()} <= _RANGE_ERRORS:
                expected = f"a value {describe_range(bounds)}" if bounds else "a finite number"
                raise origin.error(key, f"{reprlib.repr(value)} is out of range: expected {expected}") from None
            raise origin.error(key, f"expected {describe_type(hints[key])}, got {reprlib.repr(value)}") from None
        texts = value if isinstance(value, list | tuple) else [value]
        if any(isinstance(text, str) and "\0" in text for text in texts):  # no path or name can hold one
            raise origin.error(key, f"{reprlib.repr(value)} holds a NUL character")
    if isinstance(config, Options):
        config.check(origin)


def describe_type(annotation: Any) -> str:
    """'one of keep, transfer', 'int or null', 'list[str]': a type as a config user reads it."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(map(str, typing.get_args(annotation)))
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if arg is type(None) else describe_type(arg) for arg in typing.get_args(annotation))
    if origin is list:
        return f"a list of {describe_type((typing.get_args(annotation) or (Any,))[0])}"
    return getattr(annotation, "__name__", str(annotation))


def dump_config(config: Any) -> str:
    """The resolved config as YAML (saved beside a run so it can be repeated exactly)."""
    return yaml.safe_dump(dataclasses.asdict(config), sort_keys=False, allow_unicode=True)


def parse_option_value(text: str) -> Any:
    """A KEY=VALUE value: an int, a float ('2e-5' too), true/false, null, a comma list in [brackets], else the
    text itself. Deliberately not YAML 1.1, which reads 'no' (Norwegian) and 'on' as booleans."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [parse_option_value(part) for part in text[1:-1].split(",") if part.strip()]
    if text.lower() in {"true", "false"}:
        return text.lower() == "true"
    if text.lower() in {"null", "none", "~"}:
        return None
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        if kind is int or math.isfinite(value):
            return value
    return text


def parse_key_values(pairs: list[str], flag: str) -> dict[str, Any]:
    """Repeated KEY=VALUE options (`--task-arg`, a benchmark's `--set`) as a dict; dashes in keys become
    underscores; a malformed pair is an error naming the flag."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise PolyembedError(f"{flag} expects KEY=VALUE, got {pair!r}")
        out[key.strip().replace("-", "_")] = parse_option_value(value)
    return out
