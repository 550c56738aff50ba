"""Declarative evaluation tasks (in the spirit of MTEB): metadata + an `evaluate(context)` method.

A task never loads a model or writes a report: it asks the context for embeddings (each unique
sentence is encoded once per run) and returns `Score` rows. New task classes register themselves
with `@register_task` and are then available to suites, the CLI and `polyembed.evaluate`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from polyembed.data.registry import DatasetInfo, get_dataset
from polyembed.errors import PolyembedError
from polyembed.languages import match_subset


@dataclass(frozen=True)
class TaskMetadata:
    """What a task measures, on which data, in which languages, with which headline metric."""

    name: str
    type: str
    description: str
    datasets: tuple[str, ...]
    languages: tuple[str, ...]
    splits: tuple[str, ...]
    main_score: str
    reference: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass
class Score:
    """One number of one task: (task, split, subset, metric) -> value; subset is a language or pair."""

    task: str
    split: str
    subset: str
    metric: str
    value: float
    main: bool = False
    n: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = asdict(self)
        out["value"] = float(self.value)
        if not self.extra:
            out.pop("extra")
        return out


class EmbeddingProvider(ABC):
    """What a task may ask of a run: embeddings, a data root, a place for figures."""

    data_root: Path | None
    """None where no task of the run reads a registry dataset (`runner.data_root_for`)."""
    figure_dir: Path | None

    @abstractmethod
    def embed(self, sentences: Sequence[str], language: str | None = None, *, normalize: bool = True) -> np.ndarray:
        """Embeddings for sentences (rows in the same order), L2-normalised unless asked otherwise."""

    def token_model(self, language: str | None = None) -> Any:
        """The sentence-transformers model behind the run's encoder (for `language` when it routes), for tasks
        that need token embeddings; a PolyembedError when the encoder has none."""
        from polyembed.models.encoder import token_level_model

        return token_level_model(getattr(self, "encoder", None), language)

    def save_figure(self, figure: Any, name: str) -> Path | None:
        """Save a matplotlib figure atomically under the run's figure folder (None when figures are off)."""
        if self.figure_dir is None:
            return None
        from polyembed.outputs import atomic_write

        path = self.figure_dir / f"{name}.png"
        with atomic_write(path, "wb") as handle:
            figure.savefig(handle, format="png", dpi=110, bbox_inches="tight")
        self.saved_figures.append(path)
        return path

    @property
    def saved_figures(self) -> list[Path]:
        """Figures written so far in this run, in order."""
        if not hasattr(self, "_saved_figures"):
            self._saved_figures: list[Path] = []
        return self._saved_figures


class Task(ABC):
    """Base class of all evaluation tasks.

    Subclasses set `metadata` and implement `evaluate`. `languages` restricts the subsets evaluated
    (a subset is a language or a language pair, as listed in `metadata.languages`), in any spelling of the
    language ('de' picks Tatoeba's 'deu'; `polyembed.languages.match_subset`).
    """

    metadata: ClassVar[TaskMetadata]

    def __init__(self, languages: Sequence[str] | str | None = None, split: str | None = None) -> None:
        if isinstance(languages, str):  # "deu,amh" from a CLI option or config file
            languages = [code.strip() for code in languages.split(",") if code.strip()]
        self.languages = self._check_languages(languages)
        if split is not None and split not in self.metadata.splits:
            raise PolyembedError(
                f"task {self.metadata.name} has no split '{split}' (has {', '.join(self.metadata.splits)})"
            )
        self.split = split or self.metadata.splits[-1]

    def _check_languages(self, languages: Sequence[str] | None) -> tuple[str, ...]:
        if languages is None:
            return self.metadata.languages
        chosen = [self.subset(code) for code in languages]
        return tuple(dict.fromkeys(chosen))

    def dataset(self, name: str | None = None) -> DatasetInfo:
        """A dataset the metadata names (its only one when `name` is None): a task names each dataset once."""
        names = self.metadata.datasets
        if name is None and len(names) != 1:
            raise PolyembedError(f"task {self.metadata.name} reads {', '.join(names) or 'no dataset'}: name one")
        if name is not None and name not in names:
            raise PolyembedError(f"task {self.metadata.name} does not declare dataset '{name}' in its metadata")
        return get_dataset(name or names[0])

    def folder(self, context: EmbeddingProvider, dataset: str | None = None) -> Path:
        """The local folder of a declared dataset under the run's data root (a clear error when missing)."""
        return self.dataset(dataset).path(context.data_root)

    def read(self, context: EmbeddingProvider, *args: Any, dataset: str | None = None, **kwargs: Any) -> Any:
        """A declared dataset read by the reader the registry declares for it: reader(folder, *args, **kwargs)."""
        return self.dataset(dataset).load(*args, root=context.data_root, **kwargs)

    @classmethod
    def subset(cls, code: str) -> str:
        """The task's own subset for a language code in any spelling ('de' -> Tatoeba's 'deu')."""
        return match_subset(code, cls.metadata.languages, f"task {cls.metadata.name}")

    @property
    def name(self) -> str:
        """Registered task name."""
        return self.metadata.name

    def required_datasets(self) -> tuple[str, ...]:
        """Datasets this configured task will read (checked before any encoding starts)."""
        return self.metadata.datasets

    @abstractmethod
    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        """Run the task and return its scores (one main score per subset, plus details)."""

    def score(self, subset: str, metric: str, value: float, *, n: int | None = None, **extra: Any) -> Score:
        """Build a Score row for this task; `main` is set when metric is the task's main score."""
        return Score(
            task=self.name,
            split=self.split,
            subset=subset,
            metric=metric,
            value=float(value),
            main=metric == self.metadata.main_score,
            n=n,
            extra=extra,
        )


TASKS: dict[str, type[Task]] = {}


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator: make a task available by its metadata name."""
    name = cls.metadata.name
    if name in TASKS and TASKS[name] is not cls:
        raise ValueError(f"task name {name!r} registered twice")
    TASKS[name] = cls
    return cls
