"""Distillation's dev measures as in the paper (Reimers & Gurevych 2020, §4): per language, the MSE of both
loss terms (student(English) and student(translation) against teacher(English)) and translation accuracy
(is the nearest translation the right one, in both directions); pooled MSE and the mean accuracy over
languages pick the kept checkpoint. A mean can hide a language that got worse, so every language is logged.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

from polyembed.data.parallel_sources import ParallelSource
from polyembed.models.encoder import normalize_rows


def _accuracy(first: np.ndarray, second: np.ndarray) -> float:
    """Mean of both directions: row i of `first` finds row i of `second` by cosine, and back."""
    scores = normalize_rows(first) @ normalize_rows(second).T
    gold = np.arange(len(scores))
    return float(((scores.argmax(axis=1) == gold).mean() + (scores.argmax(axis=0) == gold).mean()) / 2)


class DistillationDevEvaluator(SentenceEvaluator):
    """Metrics (with the trainer's `eval_` prefix and `name`): `negative_mse` (-100 x MSE over both terms and
    every dev pair, the loss's own measure), `mse_english`, `mse_translation`, `mean_accuracy` (mean over
    languages) and per language `<lang>_mse_english`, `<lang>_mse_translation`, `<lang>_accuracy`.

    `teacher` is anything with `embed(sentences, show_progress_bar=False) -> array` (the run's
    EmbeddingStore), so teacher targets are never recomputed."""

    def __init__(self, dev: list[ParallelSource], teacher: Any, batch_size: int = 64, name: str = "dev") -> None:
        super().__init__()
        pairs: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
        for source in dev:
            pairs[source.language][0].extend(source.english)
            pairs[source.language][1].extend(source.other)
        self.pairs = dict(pairs)
        self.teacher = teacher
        self.batch_size = batch_size
        self.name = name
        self.primary_metric = "negative_mse"
        self.greater_is_better = True

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict:
        metrics: dict[str, float] = {}
        squared: dict[str, list[np.ndarray]] = {"english": [], "translation": []}
        accuracies = []
        for language, (english, other) in self.pairs.items():
            targets = np.asarray(self.teacher.embed(english, show_progress_bar=False), dtype=np.float32)
            student_english, student_other = (
                model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
                for texts in (english, other)
            )
            for term, embedded in (("english", student_english), ("translation", student_other)):
                errors = ((embedded - targets) ** 2).mean(axis=1)
                squared[term].append(errors)
                metrics[f"{language}_mse_{term}"] = float(100 * errors.mean())
            metrics[f"{language}_accuracy"] = _accuracy(student_english, student_other)
            accuracies.append(metrics[f"{language}_accuracy"])
        pooled = {term: np.concatenate(parts) for term, parts in squared.items()}
        metrics["mse_english"] = float(100 * pooled["english"].mean())
        metrics["mse_translation"] = float(100 * pooled["translation"].mean())
        metrics["negative_mse"] = -float(100 * np.concatenate(list(pooled.values())).mean())
        metrics["mean_accuracy"] = float(np.mean(accuracies))
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        if hasattr(model, "model_card_data"):  # a SentenceTransformer (not a bare encoder)
            self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
