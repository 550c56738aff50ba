"""EMMA-X's dev measure: translation retrieval on held-out bitext (which picks the checkpoint), the rank
classifier's accuracy on the same pairs, and in phase 2 how the classifier spread the training pairs over the
ranks since the previous evaluation, with each rank's moving-average similarity s_r."""

from __future__ import annotations

from typing import Any

import torch
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator
from torch.nn import functional as F


class EmmaxEvaluator(SentenceEvaluator):
    """Metrics (with the trainer's `eval_` prefix and `name`):

    - `src2trg_accuracy`, `trg2src_accuracy`, `mean_accuracy`: nearest-neighbour retrieval of the translation
      (English -> other, other -> English), as sentence-transformers' TranslationEvaluator;
    - `classifier_rank1_accuracy`: the share of held-out translations the classifier puts in rank 1, and
      `classifier_rankN_accuracy` the share of mismatched pairs (each English with the next pair's other side)
      in rank N, both orientations (English minus other and the reverse) counted; `classifier_accuracy` their
      mean;
    - `translation_cosine`, `random_cosine`: mean cosine of the held-out translations and of the mismatched
      pairs (the geometry the ranks are cut from);
    - `rank_R_similarity` (s_R) and, in phase 2, `rank_R_share` (share of the training pairs whose rank the
      classifier decided that it put in rank R since the last evaluation; the counts restart after each)."""

    def __init__(self, english: list[str], other: list[str], loss: Any, batch_size: int = 32,
                 name: str = "dev") -> None:
        super().__init__()
        if len(english) != len(other) or len(english) < 2:
            raise ValueError("EMMA-X dev evaluation needs at least two aligned pairs")
        self.english, self.other, self.loss = english, other, loss
        self.batch_size, self.name = batch_size, name
        self.primary_metric = "mean_accuracy"

    @torch.no_grad()
    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict:
        english, other = (F.normalize(model.encode(texts, batch_size=self.batch_size, convert_to_tensor=True,
                                                   show_progress_bar=False).float(), dim=-1)
                          for texts in (self.english, self.other))
        similarities = english @ other.T
        target = torch.arange(len(english), device=similarities.device)
        src2trg = (similarities.argmax(dim=1) == target).float().mean().item()
        trg2src = (similarities.argmax(dim=0) == target).float().mean().item()
        classifier = self.loss.classifier
        device = next(classifier.parameters()).device
        other, english = other.to(device), english.to(device)
        mismatched = other.roll(1, dims=0)
        rank1 = torch.cat([classifier.log_posterior(a - b).argmax(dim=-1) == 0
                           for a, b in ((english, other), (other, english))]).float().mean().item()
        rank_n = torch.cat([classifier.log_posterior(a - b).argmax(dim=-1) == classifier.ranks - 1
                            for a, b in ((english, mismatched), (mismatched, english))]).float().mean().item()
        metrics = {"src2trg_accuracy": src2trg, "trg2src_accuracy": trg2src, "mean_accuracy": (src2trg + trg2src) / 2,
                   "classifier_rank1_accuracy": rank1, "classifier_rankN_accuracy": rank_n,
                   "classifier_accuracy": (rank1 + rank_n) / 2,
                   "translation_cosine": (english * other).sum(-1).mean().item(),
                   "random_cosine": (english * mismatched).sum(-1).mean().item()}
        for rank, value in enumerate(self.loss.rank_similarities().tolist(), start=1):
            metrics[f"rank_{rank}_similarity"] = float(value)
        counts = getattr(self.loss.head, "rank_counts", None)
        if counts is not None:
            total = float(counts.sum())
            for rank in range(classifier.ranks):
                metrics[f"rank_{rank + 1}_share"] = float(counts[rank]) / total if total else 0.0
            counts.zero_()
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        if hasattr(model, "model_card_data"):
            self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
