"""The distillation loss is the paper's eq. 1: both terms, student(English) and student(translation), pulled
to teacher(English). Dropping either term makes this test fail."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from polyembed.methods.distill.evaluation import DistillationDevEvaluator
from polyembed.methods.distill.losses import distillation_loss
from tests.helpers import tiny_sentence_transformer

ENGLISH = ["the cat sees the house", "a dog likes my car", "my friend paints the sea"]
OTHER = ["die katze sieht das haus", "ein hund mag mein auto", "mein freund malt das meer"]


def test_loss_is_the_mean_of_both_terms(tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    student = SentenceTransformer(str(tiny_sentence_transformer(tmp_path / "student", seed=1)), device="cpu")
    student.eval()  # no dropout: the loss and the manual terms see the same embeddings
    targets = torch.randn(len(ENGLISH), student.get_embedding_dimension(), generator=torch.Generator().manual_seed(0))
    features = [student.tokenize(ENGLISH), student.tokenize(OTHER)]
    with torch.no_grad():
        loss = distillation_loss(student)(features, targets).item()
        english = student(student.tokenize(ENGLISH))["sentence_embedding"]
        other = student(student.tokenize(OTHER))["sentence_embedding"]
    english_term = ((english - targets) ** 2).mean().item()
    translation_term = ((other - targets) ** 2).mean().item()
    assert english_term > 0 and translation_term > 0 and abs(english_term - translation_term) > 1e-4
    assert np.isclose(loss, (english_term + translation_term) / 2, rtol=1e-5)


def test_the_ranking_term_adds_translation_ranking_both_ways(tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from polyembed.methods.wacse.losses import translation_ranking

    student = SentenceTransformer(str(tiny_sentence_transformer(tmp_path / "student", seed=1)), device="cpu")
    student.eval()
    targets = torch.randn(len(ENGLISH), student.get_embedding_dimension(), generator=torch.Generator().manual_seed(0))
    features = [student.tokenize(ENGLISH), student.tokenize(OTHER)]
    with torch.no_grad():
        mse = distillation_loss(student)(features, targets).item()
        combined = distillation_loss(student, ranking_weight=0.5, ranking_scale=10.0)(features, targets).item()
        english = student(student.tokenize(ENGLISH))["sentence_embedding"]
        other = student(student.tokenize(OTHER))["sentence_embedding"]
        ranking = (translation_ranking(english, other, 10.0) + translation_ranking(other, english, 10.0)).item() / 2
    assert ranking > 0 and np.isclose(combined, mse + 0.5 * ranking, rtol=1e-5)


class _Table:
    """A fixed 'model' and 'teacher': each sentence maps to a given vector."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def encode(self, texts: list[str], **kwargs: object) -> np.ndarray:
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)

    def embed(self, texts: list[str], show_progress_bar: bool = False) -> np.ndarray:
        return self.encode(texts)


def test_dev_measures_score_each_language_and_both_terms() -> None:
    from polyembed.data.parallel_sources import ParallelSource

    teacher = _Table({"a": [1, 0], "b": [0, 1], "c": [1, 1]})
    student = _Table({"a": [1, 0], "b": [0, 1], "c": [1, 1], "A": [1, 0], "B": [1, 0.1], "C": [1, 1],
                      "x": [0, 1], "y": [1, 0]})
    dev = [
        ParallelSource("s", "de", ["a", "b"], ["A", "B"], "t"),
        ParallelSource("s", "sw", ["a", "c"], ["x", "y"], "t"),
    ]
    metrics = DistillationDevEvaluator(dev, teacher, name="dev")(student)
    # de: English exact (0), translation B is off by (1, -0.9): mean over dims 0.905 / 2 pairs
    assert metrics["dev_de_mse_english"] == 0 and np.isclose(metrics["dev_de_mse_translation"], 100 * 0.905 / 2)
    assert metrics["dev_de_accuracy"] == 0.75  # a finds A, b finds B, A finds a; but B is nearer to a than to b
    assert metrics["dev_sw_accuracy"] == 0.0  # x and y are swapped
    assert np.isclose(metrics["dev_mean_accuracy"], 0.375)  # per language, then the mean: not pooled
    all_errors = [0, 0, 0, 0.905, 0, 0, 1, 0.5]  # both terms, every pair: the loss's own measure
    assert np.isclose(metrics["dev_negative_mse"], -100 * np.mean(all_errors))
