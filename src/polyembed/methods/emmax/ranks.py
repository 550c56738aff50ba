"""EMMA-X's semantic ranks (Guo et al. 2023, sections 3.2-3.4): which rank a mixup example gets, the
classifier's rank likelihood, ranking InfoNCE over ranks, the rank similarities s_r and the translation mask of
a bitext batch. Shared by both phases' losses (`methods/emmax/losses.py`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

MIXUP_RULES = ("uniform", "ceil", "prior")


def mixup_rank(lambdas: torch.Tensor, ranks: int, rule: str = "uniform",
               prior: torch.Tensor | None = None) -> torch.Tensor:
    """The rank of a virtual example (1 - lambda) * translation + lambda * outlier.

    'uniform': lambda in [(r - 1) / N, r / N) is rank r, so every rank gets a share 1 / N. 'prior' (the
    authors' code, `covert_scores_to_ranks`): the bins are the classifier's priors, rank r taking a share
    prior_r of lambda's range in rank order; with equal priors this is 'uniform'. 'ceil' (the rule after the
    paper's Eq. 3): ceil((1 - lambda) * 1 + lambda * N), so lambda = 0 is rank 1 and any lambda > 0 at least
    rank 2."""
    if rule == "ceil":
        return torch.ceil((1 - lambdas) * 1 + lambdas * ranks).long().clamp(1, ranks)
    if rule == "prior":
        if prior is None or len(prior) != ranks:
            raise ValueError(f"mixup rule 'prior' needs the classifier's {ranks} rank priors")
        edges = torch.cumsum(prior.to(lambdas), dim=0)[:-1]
        return (torch.bucketize(lambdas, edges, right=True) + 1).clamp(1, ranks)
    if rule != "uniform":
        raise ValueError(f"mixup rule '{rule}' is not one of {', '.join(MIXUP_RULES)}")
    return (torch.floor(lambdas * ranks).long() + 1).clamp(1, ranks)


def rank_nll(log_posterior: torch.Tensor, ranks: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean negative log-likelihood of 1-based `ranks` under `log_posterior` (... x N). Label smoothing eps as
    the authors' code smooths the classifier (`--rank-confidence`): target 1 - eps on the true rank and
    eps / (N - 1) on each other rank."""
    log_posterior = log_posterior.reshape(-1, log_posterior.shape[-1])
    targets = ranks.reshape(-1) - 1
    nll = -log_posterior.gather(1, targets[:, None]).squeeze(1)
    if label_smoothing:
        others = -(log_posterior.sum(dim=1) + nll) / (log_posterior.shape[1] - 1)  # mean NLL of the other ranks
        nll = (1 - label_smoothing) * nll + label_smoothing * others
    return nll.mean()


def ranking_info_nce(similarities: torch.Tensor, ranks: torch.Tensor, temperatures: Sequence[float],
                     exclude: torch.Tensor | None = None) -> torch.Tensor:
    """Ranking InfoNCE (Eq. 7 with the temperatures of Eq. 20; Hoffmann et al. 2022).

    `similarities` and `ranks` are (anchors x keys), ranks 1-based; `exclude` (bool, same shape) removes pairs
    from every numerator and denominator (an anchor's own key in phase 2 with bitext). For each anchor and each
    rank r < N that holds at least one key, the term is log(sum over keys of rank r of exp(s / tau_r)) minus
    log(sum over keys of rank >= r of exp(s / tau_r)); the loss is minus the sum of the terms, averaged over
    anchors."""
    total = similarities.sum() * 0.0  # keeps the graph when no anchor has a key below rank N
    kept = ~exclude if exclude is not None else torch.ones_like(ranks, dtype=torch.bool)
    for rank in range(1, len(temperatures)):
        logits = similarities / temperatures[rank - 1]
        positive = (ranks == rank) & kept
        present = positive.any(dim=1)
        if not present.any():
            continue
        numerator = torch.logsumexp(logits.masked_fill(~positive, -math.inf), dim=1)
        denominator = torch.logsumexp(logits.masked_fill((ranks < rank) | ~kept, -math.inf), dim=1)
        total = total - (numerator - denominator)[present].sum()
    return total / len(similarities)


class RankSimilarity(nn.Module):
    """s_r, each rank's moving-average similarity (Eq. 11): s_r <- eps * s_r + (1 - eps) * (mean similarity of
    the batch's pairs in rank r), for the ranks present in the batch.

    The authors start s_r at zero with eps = 0.999 and run millions of steps, after which the start no longer
    matters. A miniature's few hundred steps would leave s_r near zero (0.999^150 = 0.86 of the start), so the
    average is bias-corrected as Adam's moments are: divided by 1 - eps^t, t the rank's number of updates.
    The weights on the batches are the authors'; only the pull towards the zero start is gone."""

    average: torch.Tensor  # buffers (register_buffer)
    updates: torch.Tensor

    def __init__(self, ranks: int) -> None:
        super().__init__()
        self.register_buffer("average", torch.zeros(ranks))
        self.register_buffer("updates", torch.zeros(ranks))

    def values(self, momentum: float) -> torch.Tensor:
        """The bias-corrected s_r (0 for a rank never updated)."""
        correction = 1 - torch.pow(torch.full_like(self.updates, momentum), self.updates)
        return torch.where(self.updates > 0, self.average / correction.clamp_min(1e-12), torch.zeros_like(self.average))

    @torch.no_grad()
    def update(self, similarities: torch.Tensor, ranks: torch.Tensor, momentum: float) -> None:
        """One step of Eq. 11 from `similarities` and their 1-based `ranks` (same shape)."""
        for rank in range(1, len(self.average) + 1):
            chosen = ranks == rank
            if chosen.any():
                mean = similarities[chosen].mean()
                self.average[rank - 1] = momentum * self.average[rank - 1] + (1 - momentum) * mean
                self.updates[rank - 1] += 1

    def load_values(self, values: Sequence[float], updates: Sequence[float], momentum: float) -> None:
        """Continue from saved bias-corrected values (the warm-up's) and their update counts."""
        counts = torch.tensor(list(updates), dtype=self.updates.dtype)
        correction = 1 - torch.pow(torch.full_like(counts, momentum), counts)
        self.updates.copy_(counts)
        self.average.copy_(torch.tensor(list(values), dtype=self.average.dtype) * correction)


def translation_mask(pairs: int, keys: int, device: Any = None) -> torch.Tensor:
    """(2 * pairs) x keys, True where key j is anchor i's translation: the batch holds the first sides of
    `pairs` pairs, then their second sides, so row i and row (i + pairs) mod 2 * pairs are translations."""
    rows = torch.arange(2 * pairs, device=device)
    mask = torch.zeros(2 * pairs, keys, dtype=torch.bool, device=device)
    mask[rows, (rows + pairs) % (2 * pairs)] = True
    return mask
