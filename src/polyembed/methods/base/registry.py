"""The method registry: `polyembed train <method>` and `polyembed.train(method, ...)` are generated from it.

Built-in methods live in `polyembed/methods/<name>/` and register themselves when imported. Your own method
can live anywhere: register it in its module and name the module in `$POLYEMBED_METHODS` (comma-separated
module names) so the CLI imports it, or expose it under the `polyembed.methods` entry-point group of your
package.

A method's `prepare` and `build` may be given as "module:function" strings, imported when a run needs them:
then registering a method costs only its config class, and `polyembed train <method> --help` does not import
torch, transformers and sentence-transformers (seconds) to show the options.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyembed.config import ConfigOrigin, build_config, validate_config
from polyembed.environment import require
from polyembed.errors import PolyembedError
from polyembed.methods.base.config import TrainConfig

if TYPE_CHECKING:
    from polyembed.methods.base.run import RunFolder
    from polyembed.methods.base.trainer import TrainingJob, TrainResult

logger = logging.getLogger(__name__)

BUILTIN_METHOD_MODULES = (
    "polyembed.methods.distill",
    "polyembed.methods.modular",
    "polyembed.methods.wacse",
    "polyembed.methods.emmax",
    "polyembed.methods.new_language",
)
PLUGIN_ENV_VAR = "POLYEMBED_METHODS"
ENTRY_POINT_GROUP = "polyembed.methods"


@dataclass(frozen=True)
class TrainingMethod:
    """A training method: its options, how it reads its input, and how it builds a training job.

    `prepare(config, origin)` reads and validates every input (errors name file:line or the flag) before
    any model is loaded and before the run folder exists; `build(config, prepared, run, show_progress)`
    loads models and returns the `TrainingJob`. `model_options` name the config fields that hold a model
    name or folder, checked in a second before the run starts."""

    name: str
    config_class: type[TrainConfig]
    prepare: Callable[[Any, ConfigOrigin], Any] | str
    build: Callable[[Any, Any, RunFolder, bool], TrainingJob] | str
    summary: str
    paper: str = ""
    model_options: tuple[str, ...] = ("student",)
    finish: Callable[[Any, Any, Any, bool], None] | str | None = None
    """Optional `finish(config, prepared, result, show_progress)`, run after the model and its card are saved
    (e.g. a recipe's before/after table); a failure there is reported, the trained model stays."""
    cli_group: str = ""
    """Methods that are stages of one recipe share a CLI group: name 'modular-la' in group 'modular' is
    `polyembed train modular la` (the API keeps the full name)."""
    examples: tuple[str, ...] = ()
    """Command lines the method's --help shows under Examples: (the CLI's tests parse each one); without them the
    help shows a plain run into runs/<name>."""

    def function(self, part: str) -> Callable[..., Any]:
        """`prepare` or `build` as a function (a "module:function" string is imported now)."""
        reference = getattr(self, part)
        if not isinstance(reference, str):
            return reference
        module, _, name = reference.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as err:
            raise PolyembedError(f"method {self.name}: cannot import its {part} '{reference}' ({err})") from err

    @property
    def cli_path(self) -> tuple[str, ...]:
        """The words after `polyembed train`."""
        if self.cli_group:
            return (self.cli_group, self.name.removeprefix(self.cli_group + "-"))
        return (self.name,)


def lazy_attributes(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for a method package: `names` (attribute -> module) import on first use, so that
    importing the package to register its method stays light (no torch or sentence-transformers)."""

    def get(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return get


_METHODS: dict[str, TrainingMethod] = {}
_discovered = False


def register_method(method: TrainingMethod) -> TrainingMethod:
    """Add a method (registering the same name again replaces it, so a module can be re-imported)."""
    if not dataclasses.is_dataclass(method.config_class) or not issubclass(method.config_class, TrainConfig):
        raise TypeError(f"method {method.name}: config_class must be a TrainConfig dataclass")
    _METHODS[method.name] = method
    return method


def _discover() -> None:
    """Import the built-in methods, the modules named in $POLYEMBED_METHODS and entry-point plugins."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    for module in BUILTIN_METHOD_MODULES:
        importlib.import_module(module)
    for module in filter(None, (name.strip() for name in os.environ.get(PLUGIN_ENV_VAR, "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise PolyembedError(f"${PLUGIN_ENV_VAR}: cannot import training method module '{module}': {err}") from err
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        entry.load()


def list_methods() -> list[TrainingMethod]:
    """Every registered method, in registration order."""
    _discover()
    return list(_METHODS.values())


def get_method(name: str) -> TrainingMethod:
    """A method by name, or an error listing the known ones."""
    _discover()
    if name not in _METHODS:
        raise PolyembedError(f"unknown training method '{name}'; known: {', '.join(sorted(_METHODS))}")
    return _METHODS[name]


def train(
    method: str | TrainingMethod,
    config: str | Path | TrainConfig | None = None,
    *,
    origin: ConfigOrigin | None = None,
    resume: bool = False,
    overwrite: bool = False,
    show_progress: bool = True,
    **options: Any,
) -> TrainResult:
    """Run a training method from a YAML file or a config object, with keyword overrides.

    Order of work, so that bad input fails in seconds: options (types, choices, ranges) -> the method's
    input (`prepare`) -> the run folder (`RunFolder.check`) -> model names -> only then the folder is created,
    models load and training starts. `resume=True` continues the run in `output_dir` exactly;
    `overwrite=True` replaces an earlier polyembed run there.

    Example: ``train("distill", languages=["de", "sw"], max_steps=200, output_dir="runs/de-sw")``.
    """
    from polyembed.methods.base.distributed import is_main_process, main_process_first
    from polyembed.methods.base.model_card import write_model_card
    from polyembed.methods.base.run import RunFolder
    from polyembed.methods.base.trainer import fit
    from polyembed.models.loading import check_model_reference

    spec = get_method(method) if isinstance(method, str) else method
    chosen: TrainConfig
    if isinstance(config, TrainConfig):
        if not isinstance(config, spec.config_class):
            raise PolyembedError(f"method {spec.name} needs a {spec.config_class.__name__}")
        chosen = config
        if options:
            chosen, origin = build_config(spec.config_class, None, {**dataclasses.asdict(config), **options})
    else:
        chosen, origin = build_config(spec.config_class, config, options)
    config = chosen
    origin = origin or ConfigOrigin()
    validate_config(config, origin)
    require(config.required_packages(), f"polyembed train {' '.join(spec.cli_path)}")
    prepared = spec.function("prepare")(config, origin)
    run = RunFolder(config.output_dir)
    run.check(config, resume, overwrite)
    show_progress = show_progress and is_main_process()
    for key in spec.model_options:
        name = getattr(config, key)
        if name != "teacher":
            check_model_reference(name, origin.where(key))
    with run.started(config, resume, overwrite):
        from transformers import set_seed

        from polyembed.methods.base.student import reset_peak_memory

        reset_peak_memory()  # training.json's peak memory is this run's, models loaded by `build` included
        set_seed(config.seed)  # new weights made in build (heads, adapters) are the same in every run
        with main_process_first():  # under torchrun: the others then find the teacher's embeddings stored
            job = spec.function("build")(config, prepared, run, show_progress)
        result = fit(spec.name, job, config, run, resume, show_progress)
    if is_main_process():  # after the run is complete: a failing card must not take the trained model along
        try:
            write_model_card(spec, config, result)
        except (OSError, ValueError, KeyError, TypeError) as err:
            logger.warning("no model card written in %s: %s", result.model_dir, err)
        if spec.finish is not None:
            try:
                spec.function("finish")(config, prepared, result, show_progress)
            except (PolyembedError, OSError, ValueError, RuntimeError) as err:  # the model is saved all the same
                logger.warning("%s: the step after training failed (%s); the model in %s is complete", spec.name,
                               err, result.model_dir)
    return result
