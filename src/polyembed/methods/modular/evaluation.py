"""Held-out masked-language-modelling loss and perplexity: the LA stage's dev measure (and its before/after
report). The same positions are masked at every evaluation (a fixed seed), so steps compare fairly."""

from __future__ import annotations

import math
from typing import Any

import torch
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

from polyembed.methods.modular.losses import MaskedLanguageModelingLoss


class HeldOutMLMEvaluator(SentenceEvaluator):
    """Metrics (with the trainer's `eval_` prefix and `name`): `mlm_loss` (mean cross-entropy per masked
    token, every held-out sentence) and `perplexity` (exp of it); lower is better."""

    def __init__(
        self, sentences: list[str], loss: MaskedLanguageModelingLoss, batch_size: int = 32, seed: int = 0,
        name: str = "heldout",
    ) -> None:
        super().__init__()
        if not sentences:
            raise ValueError("held-out MLM evaluation needs at least one sentence")
        self.sentences = sentences
        self.loss = loss
        self.batch_size = batch_size
        self.seed = seed
        self.name = name
        self.primary_metric = "mlm_loss"
        self.greater_is_better = False

    @torch.no_grad()
    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict:
        generator = torch.Generator().manual_seed(self.seed)
        was_training = model.training
        model.eval()
        total, weight = 0.0, 0
        try:
            for start in range(0, len(self.sentences), self.batch_size):
                features = model.preprocess(self.sentences[start : start + self.batch_size])
                features = {key: value.to(model.device) for key, value in features.items()
                            if isinstance(value, torch.Tensor)}
                batch_loss, masked = self.loss.masked_loss_sum(features, generator)
                total += float(batch_loss)
                weight += masked
        finally:
            model.train(was_training)
        mean = total / max(weight, 1)
        metrics = {"mlm_loss": mean, "perplexity": math.exp(min(mean, 50.0)), "masked_tokens": float(weight)}
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        if hasattr(model, "model_card_data"):
            self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics
