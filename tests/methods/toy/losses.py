"""Translation ranking: each English sentence must pick its own translation among the batch's translations.

Inputs: a dataset with text columns `english`, `other`. Loss: cross-entropy over cos(e_i, o_j) / temperature.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class TranslationRankingLoss(nn.Module):
    """In-batch softmax over cosine similarities (a real, if small, contrastive objective)."""

    def __init__(self, model: Any, temperature: float) -> None:
        super().__init__()
        self.model = model
        self.temperature = temperature

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor | None) -> torch.Tensor:
        english, other = (self.model(features)["sentence_embedding"] for features in sentence_features)
        scores = nn.functional.normalize(english, dim=-1) @ nn.functional.normalize(other, dim=-1).T
        targets = torch.arange(len(scores), device=scores.device)
        return nn.functional.cross_entropy(scores / self.temperature, targets)
