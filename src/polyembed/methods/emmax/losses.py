"""EMMA-X's objectives (Guo et al. 2023, sections 3.2-3.4, Appendix G) as sentence-transformers losses.

- `EmmaxWarmupLoss` (phase 1, parallel pairs): InfoNCE of the encoder over in-batch translations (Eq. 2),
  plus the classifier's maximum likelihood (Eq. 4) on rank 1 for each translation, rank N for an outlier (the
  translation of another pair of the batch) and mixup examples between the two (Eq. 3) whose rank is
  ceil((1 - lambda) * 1 + lambda * N).
- `EmmaxEmLoss` (phase 2, non-parallel text): anchors against a MoCo queue of random sentences embedded by a
  momentum key encoder, and (`own_key`, the default) against the keys of the batch itself, as in MoCo: each
  anchor's own key is rank 1 by construction, the other anchors' keys are random sentences. E-step: the
  classifier's argmax rank c_G (Eq. 9) and the encoder's rank c_M, the nearest moving-average similarity s_r
  (Eq. 10). M-step, in the same optimizer step as Algorithm 1: ranking
  InfoNCE of the encoder on c_G (Eq. 7 / Eq. 20) and the classifier's likelihood of c_M (Eq. 6); then s_r
  moves towards the mean similarity of the pairs in rank r (Eq. 11) and the batch's keys replace the oldest of
  the queue. The key encoder takes its momentum step before the keys are computed (MoCo's order).

Why the own key: with the queue alone (the paper's text) a miniature has almost no translation among the random
keys, so the encoder's rank 1 fills with the nearest unrelated sentences and dual supervision teaches the
classifier that this is what rank 1 means: in the benchmark's queue-only run the classifier's dev accuracy fell
to chance and dev retrieval from 0.83 to 0.75 between steps 37 and 75 (docs/benchmarks.md, EMMA-X ablations).
The paper trains "with the same setting as MoCo", whose positive is the anchor's own key, and the authors' code
compares each anchor with its own key too.

Each module trains on its own objective only: the classifier sees detached embeddings, and the ranks that
supervise the other side carry no gradient. Embeddings are L2-normalised before both (the paper's analysis
works on the unit sphere).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from polyembed.methods.emmax.classifier import RankClassifier


def mixup_rank(lambdas: torch.Tensor, ranks: int) -> torch.Tensor:
    """The rank of a virtual example (1 - lambda) * translation + lambda * outlier (the rule after Eq. 3):
    ceil((1 - lambda) * 1 + lambda * N), so lambda = 0 is rank 1 and any lambda > 0 is at least rank 2."""
    return torch.ceil((1 - lambdas) * 1 + lambdas * ranks).long().clamp(1, ranks)


def rank_nll(log_posterior: torch.Tensor, ranks: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean negative log-likelihood of 1-based `ranks` under `log_posterior` (... x N), with optional label
    smoothing (a share of the target spread evenly over all ranks)."""
    log_posterior = log_posterior.reshape(-1, log_posterior.shape[-1])
    targets = ranks.reshape(-1) - 1
    nll = -log_posterior.gather(1, targets[:, None]).squeeze(1)
    if label_smoothing:
        nll = (1 - label_smoothing) * nll - label_smoothing * log_posterior.mean(dim=1)
    return nll.mean()


def ranking_info_nce(similarities: torch.Tensor, ranks: torch.Tensor, temperatures: Sequence[float]) -> torch.Tensor:
    """Ranking InfoNCE (Eq. 7 with the temperatures of Eq. 20; Hoffmann et al. 2022).

    `similarities` and `ranks` are (anchors x keys), ranks 1-based. For each anchor and each rank r < N that
    holds at least one key, the term is log(sum over keys of rank r of exp(s / tau_r)) minus log(sum over keys
    of rank >= r of exp(s / tau_r)); the loss is minus the sum of the terms, averaged over anchors."""
    total = similarities.sum() * 0.0  # keeps the graph when no anchor has a key below rank N
    for rank in range(1, len(temperatures)):
        logits = similarities / temperatures[rank - 1]
        positive = ranks == rank
        present = positive.any(dim=1)
        if not present.any():
            continue
        numerator = torch.logsumexp(logits.masked_fill(~positive, -math.inf), dim=1)
        denominator = torch.logsumexp(logits.masked_fill(ranks < rank, -math.inf), dim=1)
        total = total - (numerator - denominator)[present].sum()
    return total / len(similarities)


def _embed(model: Any, features: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.normalize(model(dict(features))["sentence_embedding"], dim=-1)


class EmmaxWarmupLoss(nn.Module):
    """Phase 1 of EMMA-X: InfoNCE for the encoder plus the rank classifier's likelihood (Eq. 2-4).

    Inputs: a dataset of two text columns (a sentence, its translation). Paper: Guo et al. 2023, EMMA-X
    (NeurIPS, arXiv:2306.10386), section 3.2.

    Example::

        loss = EmmaxWarmupLoss(model, GaussianRankClassifier(384, 4), temperature=0.05, mixup_examples=1)
        Dataset.from_dict({"english": en, "other": de})
    """

    def __init__(self, model: Any, classifier: RankClassifier, temperature: float = 0.05, mixup_examples: int = 1,
                 label_smoothing: float = 0.0) -> None:
        super().__init__()
        self.model = model
        self.head = nn.ModuleDict({"classifier": classifier})
        self.temperature, self.mixup_examples, self.label_smoothing = temperature, mixup_examples, label_smoothing

    @property
    def classifier(self) -> RankClassifier:
        return self.head["classifier"]  # type: ignore[return-value]

    def forward(self, features: list[dict[str, torch.Tensor]], labels: Any = None) -> dict[str, torch.Tensor]:
        first, second = (_embed(self.model, f) for f in features)
        scores = first @ second.T / self.temperature
        info_nce = F.cross_entropy(scores, torch.arange(len(scores), device=scores.device))
        return {"info_nce": info_nce, "rank_mle": self.rank_likelihood(first.detach(), second.detach())}

    def rank_likelihood(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        """Eq. 4: rank 1 for (x, y), rank N for (x, y') with y' another pair's translation, and `mixup_examples`
        virtual (x, (1 - lambda) y + lambda y') per pair at their ceil rank."""
        ranks = self.classifier.ranks
        size = len(first)
        shift = int(torch.randint(1, size, ()).item()) if size > 1 else 0
        outlier = second.roll(shift, dims=0)  # each pair meets a translation that is not its own
        differences = [first - second, first - outlier]
        targets = [torch.ones(size, dtype=torch.long, device=first.device),
                   torch.full((size,), ranks, dtype=torch.long, device=first.device)]
        for _ in range(self.mixup_examples):
            lambdas = torch.rand(size, 1, device=first.device)
            differences.append(first - F.normalize((1 - lambdas) * second + lambdas * outlier, dim=-1))
            targets.append(mixup_rank(lambdas.squeeze(1), ranks))
        log_posterior = self.classifier.log_posterior(torch.cat(differences))
        return rank_nll(log_posterior, torch.cat(targets), self.label_smoothing)


class EmmaxState(nn.Module):
    """Everything phase 2 keeps besides the encoder, saved in every checkpoint so a resumed run continues
    exactly: the classifier, the momentum key encoder, the queue and its write position, the rank
    similarities s_r and the rank counts since the last dev evaluation."""

    def __init__(self, classifier: RankClassifier, key_encoder: Any, queue: torch.Tensor) -> None:
        super().__init__()
        ranks = classifier.ranks
        self.classifier = classifier
        self.key_encoder = key_encoder
        self.register_buffer("queue", F.normalize(queue, dim=-1))
        self.register_buffer("queue_position", torch.zeros((), dtype=torch.long))
        # s_r = (N + 1 - r) / N: the paper's r / N with its rank 1 as the most similar (s_1 = 1, s_N = 1 / N).
        self.register_buffer("rank_similarity", (ranks + 1 - torch.arange(1, ranks + 1)).float() / ranks)
        self.register_buffer("rank_counts", torch.zeros(ranks))

    def enqueue(self, keys: torch.Tensor) -> None:
        """First in, first out: the keys overwrite the oldest entries, wrapping around the end."""
        size = len(self.queue)
        keys = keys[-size:]
        slots = (self.queue_position + torch.arange(len(keys), device=keys.device)) % size
        self.queue[slots] = keys
        self.queue_position.copy_((self.queue_position + len(keys)) % size)

    @torch.no_grad()
    def momentum_update(self, encoder: nn.Module, momentum: float) -> None:
        """key = momentum * key + (1 - momentum) * encoder, parameter by parameter (MoCo)."""
        for key, query in zip(self.key_encoder.parameters(), encoder.parameters(), strict=True):
            key.mul_(momentum).add_(query.detach(), alpha=1 - momentum)


class EmmaxEmLoss(nn.Module):
    """Phase 2 of EMMA-X: EM with dual supervision between the encoder and the rank classifier (Eq. 6-11).

    Inputs: a dataset of one text column (multilingual sentences, no pairs). The queue starts filled with
    `initial_queue` (embeddings of random sentences). Paper: Guo et al. 2023, EMMA-X, sections 3.3-3.4.

    Example::

        loss = EmmaxEmLoss(model, classifier, initial_queue, temperatures=[0.05, 0.067, 0.083, 0.1])
        Dataset.from_dict({"text": sentences})
    """

    def __init__(self, model: Any, classifier: RankClassifier, initial_queue: torch.Tensor,
                 temperatures: Sequence[float], momentum: float = 0.999, rank_similarity_momentum: float = 0.9,
                 dual_supervision: bool = True, label_smoothing: float = 0.0, own_key: bool = True) -> None:
        super().__init__()
        if len(temperatures) != classifier.ranks:
            raise ValueError(f"{len(temperatures)} temperatures for {classifier.ranks} ranks")
        self.model = model
        key_encoder = copy.deepcopy(model)
        key_encoder.eval()
        key_encoder.requires_grad_(False)
        self.head = EmmaxState(classifier, key_encoder, initial_queue)
        if not dual_supervision:
            classifier.requires_grad_(False)
        self.temperatures = list(temperatures)
        self.momentum, self.rank_similarity_momentum = momentum, rank_similarity_momentum
        self.dual_supervision, self.label_smoothing, self.own_key = dual_supervision, label_smoothing, own_key

    @property
    def classifier(self) -> RankClassifier:
        return self.head.classifier

    def encoder_ranks(self, similarities: torch.Tensor) -> torch.Tensor:
        """c_M (Eq. 10): the rank whose moving-average similarity s_r is nearest, 1-based."""
        return (similarities.unsqueeze(-1) - self.head.rank_similarity).abs().argmin(dim=-1) + 1

    def forward(self, features: list[dict[str, torch.Tensor]], labels: Any = None) -> dict[str, torch.Tensor]:
        state = self.head
        training = self.model.training  # a training step, not an evaluation: the state moves on
        if training:
            state.momentum_update(self.model, self.momentum)
        anchors = _embed(self.model, features[0])
        with torch.no_grad():
            own_keys = _embed(state.key_encoder, features[0])
        compared = torch.cat([own_keys, state.queue.clone()]) if self.own_key else state.queue.clone()
        similarities = anchors @ compared.T
        differences = anchors.detach().unsqueeze(1) - compared.unsqueeze(0)
        with torch.no_grad():  # E-step: each module's rank for every (anchor, key) pair
            classifier_ranks = self.classifier.log_posterior(differences).argmax(dim=-1) + 1
            encoder_ranks = self.encoder_ranks(similarities.detach())
            if self.own_key:  # MoCo's positive: an anchor and its own key are rank 1 by construction
                own = torch.arange(len(anchors), device=anchors.device)
                classifier_ranks[own, own] = 1
                encoder_ranks[own, own] = 1
        losses = {"ranking_info_nce": ranking_info_nce(similarities, classifier_ranks, self.temperatures)}
        if self.dual_supervision:
            losses["rank_mle"] = rank_nll(self.classifier.log_posterior(differences), encoder_ranks,
                                          self.label_smoothing)
        if training:
            self._after_step(similarities.detach(), classifier_ranks, own_keys)
        return losses

    @torch.no_grad()
    def _after_step(self, similarities: torch.Tensor, classifier_ranks: torch.Tensor, own_keys: torch.Tensor) -> None:
        """Eq. 11 for every rank in use, the counts of the classifier's own decisions (the own-key pairs are
        fixed, not decided) and the batch's keys into the queue."""
        state = self.head
        decided = torch.ones_like(classifier_ranks, dtype=torch.bool)
        if self.own_key:
            own = torch.arange(len(own_keys), device=own_keys.device)
            decided[own, own] = False
        for rank in range(1, self.classifier.ranks + 1):
            chosen = classifier_ranks == rank
            state.rank_counts[rank - 1] += (chosen & decided).sum()
            if chosen.any():
                mean = similarities[chosen].mean()
                state.rank_similarity[rank - 1] = (self.rank_similarity_momentum * state.rank_similarity[rank - 1]
                                                   + (1 - self.rank_similarity_momentum) * mean)
        state.enqueue(own_keys)
