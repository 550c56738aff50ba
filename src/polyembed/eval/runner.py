"""Run tasks on an encoder: one embedding cache per run so each unique sentence is encoded once."""

from __future__ import annotations

import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from polyembed.data.root import data_root as resolve_data_root
from polyembed.eval.base import EmbeddingProvider, Score, Task
from polyembed.eval.compare import Comparison
from polyembed.languages import normalize_language
from polyembed.messages import hide_progress
from polyembed.models.encoder import SentenceEncoder, normalize_rows
from polyembed.models.loading import as_encoder


class EmbeddingCache(EmbeddingProvider):
    """Embeddings keyed by (model, language if the model routes by language, text).

    Tasks call `embed` with their dataset's language codes; the encoder receives them normalised
    (`normalize_language`), and only sentences not seen before in this run reach it.
    """

    def __init__(
        self,
        encoder: SentenceEncoder,
        data_root: Path | None,
        figure_dir: Path | None = None,
        *,
        batch_size: int = 64,
        show_progress: bool = True,
    ) -> None:
        self.encoder = as_encoder(encoder)
        self.data_root = data_root
        self.figure_dir = figure_dir
        self.batch_size = batch_size
        self.show_progress = show_progress
        self._vectors: dict[tuple[str | None, str], np.ndarray] = {}
        self.encoded_count = 0
        self.requested_count = 0

    def embed(self, sentences: Sequence[str], language: str | None = None, *, normalize: bool = True) -> np.ndarray:
        """Rows for `sentences`; new unique sentences are encoded in one batched call."""
        language = normalize_language(language) if self.encoder.routes_by_language else None  # the key's part
        self.requested_count += len(sentences)
        missing: list[str] = []
        seen: set[str] = set()
        for text in sentences:
            if (language, text) not in self._vectors and text not in seen:
                seen.add(text)
                missing.append(text)
        if missing:
            vectors = self.encoder.encode(
                missing,
                language=language,
                batch_size=self.batch_size,
                show_progress_bar=self.show_progress and len(missing) > self.batch_size,
            )
            for text, vector in zip(missing, np.asarray(vectors, dtype=np.float32), strict=True):
                self._vectors[(language, text)] = vector
            self.encoded_count += len(missing)
        if not sentences:
            return np.zeros((0, 0), dtype=np.float32)
        matrix = np.stack([self._vectors[(language, text)] for text in sentences])
        return normalize_rows(matrix) if normalize else matrix


@dataclass
class TaskRun:
    """Scores of one task plus its wall time and encoding counts."""

    task: Task
    scores: list[Score]
    seconds: float
    sentences_encoded: int
    figures: list[Path] = field(default_factory=list)


@dataclass
class EvaluationResult:
    """Everything a report needs: model, per-task runs, environment."""

    model: str
    runs: list[TaskRun]
    seconds: float
    environment: dict[str, Any] = field(default_factory=dict)
    baseline: EvaluationResult | None = None
    """The same tasks on the model this one is compared with (`evaluate(..., baseline=...)`)."""
    comparison: Comparison | None = None

    @property
    def scores(self) -> list[Score]:
        """All score rows of all tasks."""
        return [score for run in self.runs for score in run.scores]


def environment_info() -> dict[str, Any]:
    """Versions and machine, recorded with every result so numbers can be traced."""
    import sentence_transformers
    import torch
    import transformers

    from polyembed.version import __version__

    return {
        "polyembed": __version__,
        "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {platform.system()}",
        "cpu_threads": torch.get_num_threads(),
    }


def data_root_for(tasks: Sequence[Task], data_root: str | Path | None = None) -> Path | None:
    """The data root, resolved only where it is given or a task reads a registry dataset: tasks on the user's
    own files (`parallel-retrieval` with `directory=`) run on a machine without one."""
    if data_root is None and not any(task.required_datasets() for task in tasks):
        return None
    return resolve_data_root(data_root)


def run_tasks(
    encoder: SentenceEncoder,
    tasks: Sequence[Task],
    *,
    data_root: str | Path | None = None,
    figure_dir: Path | None = None,
    batch_size: int = 64,
    show_progress: bool = True,
) -> EvaluationResult:
    """Evaluate `encoder` on `tasks` with one shared embedding cache; returns all scores and timings."""
    root = data_root_for(tasks, data_root)
    encoder = as_encoder(encoder)
    cache = EmbeddingCache(encoder, root, figure_dir, batch_size=batch_size, show_progress=show_progress)
    runs: list[TaskRun] = []
    start = time.perf_counter()
    progress = tqdm(tasks, desc=f"eval {encoder.name}", unit="task", disable=hide_progress(show_progress))
    for task in progress:
        progress.set_postfix_str(task.name)
        before, figures_before = cache.encoded_count, len(cache.saved_figures)
        task_start = time.perf_counter()
        scores = task.evaluate(cache)
        runs.append(
            TaskRun(
                task,
                scores,
                time.perf_counter() - task_start,
                cache.encoded_count - before,
                cache.saved_figures[figures_before:],
            )
        )
    return EvaluationResult(
        model=encoder.name, runs=runs, seconds=time.perf_counter() - start, environment=environment_info()
    )
