"""The CLA stage's losses against their closed forms, on fixed embeddings (no encoder needed)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from polyembed.methods.modular.losses import (
    CrossModelMultipleNegativesRankingLoss,
    PivotCosineLoss,
    PivotMultipleNegativesRankingLoss,
)


class Given(nn.Module):
    """An 'encoder' whose embeddings are the batch's own `x` tensor."""

    def forward(self, features: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {"sentence_embedding": features["x"]}


def _batch(rows: int = 6, dim: int = 5, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, dim, generator=generator), torch.randn(rows, dim, generator=generator)


def test_cross_model_loss_mixes_anchor_sides_by_its_coins() -> None:
    language, pivot = _batch()
    loss = CrossModelMultipleNegativesRankingLoss(Given(), scale=10.0, generator=torch.Generator().manual_seed(1))
    sides = CrossModelMultipleNegativesRankingLoss(Given(), generator=torch.Generator().manual_seed(1)).anchor_sides(6)
    assert 0 < int(sides.sum()) < 6  # this seed draws both sides, so the check below sees a mixed batch
    x, e = F.normalize(language, dim=-1), F.normalize(pivot, dim=-1)
    anchors = [x[i] if sides[i] else e[i] for i in range(6)]
    candidates = [e[i] if sides[i] else x[i] for i in range(6)]
    scores = 10.0 * torch.stack([torch.stack([a @ c for c in candidates]) for a in anchors])
    expected = F.cross_entropy(scores, torch.arange(6))
    assert torch.allclose(loss([{"x": language}], pivot), expected, atol=1e-6)


def test_cross_model_loss_with_every_anchor_in_the_language_is_the_pivot_loss() -> None:
    language, pivot = _batch(seed=1)

    class LanguageFirst(CrossModelMultipleNegativesRankingLoss):
        def anchor_sides(self, rows: int) -> torch.Tensor:
            return torch.ones(rows, dtype=torch.bool)

    mixed = LanguageFirst(Given(), scale=20.0)([{"x": language}], pivot)
    assert torch.allclose(mixed, PivotMultipleNegativesRankingLoss(Given(), scale=20.0)([{"x": language}], pivot))


def test_cross_model_loss_constrains_the_languages_own_similarities() -> None:
    """A pivot-only loss is a sum of one term per row, each seeing one language embedding, so it is additively
    separable in the rows: L(a0, a1) + L(b0, b1) = L(a0, b1) + L(b0, a1). With mixed sides one row's anchor
    (its language embedding) ranks another row's language embedding, so the identity breaks: X-X counts."""
    first, pivot = _batch(rows=2, seed=2)
    second, _ = _batch(rows=2, seed=3)

    class Alternate(CrossModelMultipleNegativesRankingLoss):
        def anchor_sides(self, rows: int) -> torch.Tensor:
            return torch.arange(rows) % 2 == 0  # row 0 anchors in the language, row 1 in English

    def gap(loss: nn.Module) -> float:
        def value(row0: torch.Tensor, row1: torch.Tensor) -> float:
            return float(loss([{"x": torch.stack([row0, row1])}], pivot))

        return value(first[0], first[1]) + value(second[0], second[1]) - value(first[0], second[1]) \
            - value(second[0], first[1])

    assert abs(gap(PivotMultipleNegativesRankingLoss(Given()))) < 1e-5
    assert abs(gap(Alternate(Given()))) > 1e-3


def test_pivot_cosine_loss_squared_and_linear() -> None:
    language, pivot = _batch(seed=4)
    cosine = F.cosine_similarity(language, pivot, dim=-1)
    squared = PivotCosineLoss(Given())([{"x": language}], pivot)
    linear = PivotCosineLoss(Given(), squared=False)([{"x": language}], pivot)
    assert torch.allclose(squared, ((1 - cosine) ** 2).mean(), atol=1e-6)
    assert torch.allclose(linear, (1 - cosine).mean(), atol=1e-6)
