"""The loss of multilingual knowledge distillation (Reimers & Gurevych, 2020, eq. 1).

For a mini-batch B of parallel pairs (s_j, t_j), teacher M and student M^:

    1/|B| * sum_j [ (M(s_j) - M^(s_j))^2 + (M(s_j) - M^(t_j))^2 ]

sentence-transformers' `MSELoss` is exactly this objective (same authors): it embeds every text column
with the student, repeats the teacher embedding (the `label` column) once per column, and takes the mean
squared error. With columns (english, other) that is the student on the source and on the translation,
both pulled to the teacher's embedding of the source. (It averages over embedding dimensions too, a
constant factor that Adam's scale invariance absorbs.) We reuse it rather than re-implement it.

Inputs: a dataset with text columns `english`, `other` and a `label` column holding M(english).

Example::

    from sentence_transformers import SentenceTransformer
    student = SentenceTransformer("me5-small-folder")
    loss = distillation_loss(student)   # then SentenceTransformerTrainer(model=student, loss=loss, ...)

`DistillationRankingLoss` adds translation ranking (WACSE's TR, Miao et al. 2024: in-batch softmax of each
English sentence against the batch's translations, and back) to the same MSE, same inputs:
``DistillationRankingLoss(student, weight=1.0, scale=20.0)``.
"""

from __future__ import annotations

from typing import Any

import torch
from sentence_transformers.sentence_transformer.losses import MSELoss
from torch import nn

TEXT_COLUMNS = ("english", "other")
LABEL_COLUMN = "label"


def distillation_loss(student: Any, ranking_weight: float = 0.0, ranking_scale: float = 20.0) -> nn.Module:
    """The paper's MSE objective on both the English side and its translation, for `student`; with a
    `ranking_weight`, translation ranking added (`DistillationRankingLoss`)."""
    if ranking_weight > 0:
        return DistillationRankingLoss(student, ranking_weight, ranking_scale)
    return MSELoss(student)


class DistillationRankingLoss(nn.Module):
    """MSE to the targets on both columns (what `MSELoss` computes) plus `weight` x translation ranking between
    the columns, both directions averaged: the MSE keeps the space where the targets put it, the ranking term
    pulls each translation nearer its own English sentence than the batch's other sentences."""

    def __init__(self, model: Any, weight: float, scale: float) -> None:
        super().__init__()
        self.model, self.weight, self.scale = model, weight, scale

    def forward(self, sentence_features: Any, labels: torch.Tensor) -> torch.Tensor:
        from polyembed.methods.wacse.losses import translation_ranking

        english, other = (self.model(features)["sentence_embedding"] for features in sentence_features)
        mse = nn.functional.mse_loss(torch.cat([english, other]), labels.repeat(2, 1))
        ranking = (translation_ranking(english, other, self.scale) + translation_ranking(other, english, self.scale))
        return mse + self.weight * ranking / 2

    @property
    def citation(self) -> str:
        return "Reimers & Gurevych 2020 (arXiv:2004.09813); Miao et al. 2024 (arXiv:2404.02490)"
