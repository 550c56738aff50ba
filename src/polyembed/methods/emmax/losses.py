"""EMMA-X's objectives (Guo et al. 2023, sections 3.2-3.4, Appendix G) as sentence-transformers losses.

- `EmmaxWarmupLoss` (phase 1, parallel pairs): InfoNCE of the encoder over in-batch translations (Eq. 2),
  plus the classifier's maximum likelihood (Eq. 4) on rank 1 for each translation, rank N for an outlier (the
  translation of another pair of the batch) and mixup examples between the two (Eq. 3), in both orientations
  (x - y and y - x, as phase 2 will feed them). It also starts the rank similarities s_r (`RankSimilarity`)
  from the similarities of those labelled examples, as the authors' classifier stage does. Options give the
  authors' code instead: their encoder loss (`encoder_loss="authors"`: both sides of each pair as anchors
  against a momentum key encoder's keys of the batch and a queue, the own key left out), their classifier
  examples (`classifier_examples="authors"`: each anchor mixed with every key), their separate stages
  (`stage="encoder"` / `"classifier"`) and their joint MLM (`mlm`, `methods/emmax/mlm.py`).
- `EmmaxEmLoss` (phase 2): anchors against the keys of the batch (a momentum key encoder's embeddings) and a
  MoCo queue. E-step: the classifier's argmax rank c_G (Eq. 9) and the encoder's rank c_M, the nearest s_r
  (Eq. 10). M-step, in the same optimizer step as Algorithm 1: ranking InfoNCE of the encoder on c_G (Eq. 7 /
  Eq. 20) and the classifier's likelihood of c_M (Eq. 6); then s_r moves towards the mean similarity of the
  pairs the classifier put in rank r (Eq. 11) and the batch's keys replace the oldest of the queue. The key
  encoder takes its momentum step before the keys are computed (MoCo's order).

  With bitext (the default, as the authors' code trains phase 2: both sides of each pair in one batch), each
  anchor's translation is rank 1 for both modules and its own key, a copy of itself, is masked out of the
  encoder's loss (the authors' `logits_mask`) while the classifier still learns it as rank 1. With monolingual
  text (the paper's Algorithm 1) there is no translation; `own_key` then makes the own key the encoder's rank 1
  too, as MoCo's positive (off: the queue alone, the paper's text). With `mlm` (the authors' joint MLM) every
  sentence embedding comes from masked input and the masked tokens' cross-entropy joins the loss.

Each module trains on its own objective only: the classifier sees detached embeddings, and the ranks that
supervise the other side carry no gradient. Embeddings are L2-normalised before both (the paper's analysis
works on the unit sphere).
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn
from torch.nn import functional as F

from polyembed.methods.emmax.classifier import GaussianRankClassifier, RankClassifier
from polyembed.methods.emmax.mlm import JointMlm
from polyembed.methods.emmax.ranks import (
    RankSimilarity,
    mixup_rank,
    rank_nll,
    ranking_info_nce,
    translation_mask,
)

STAGES = ("joint", "encoder", "classifier")
FORMS = ("paper", "authors")


def _embed(model: Any, features: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.normalize(model(dict(features))["sentence_embedding"], dim=-1)


class KeyBank(nn.Module):
    """MoCo's keys: a momentum copy of the encoder (None where keys come from the encoder itself, e.g. a frozen
    one) and a first-in-first-out queue of earlier keys with its write position."""

    queue: torch.Tensor  # buffers (register_buffer)
    queue_position: torch.Tensor

    def __init__(self, queue: torch.Tensor, key_encoder: Any = None) -> None:
        super().__init__()
        self.key_encoder = key_encoder
        self.register_buffer("queue", F.normalize(queue, dim=-1))
        self.register_buffer("queue_position", torch.zeros((), dtype=torch.long))

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


def momentum_copy(model: Any) -> Any:
    """A frozen copy of `model` for a key encoder."""
    key_encoder = copy.deepcopy(model)
    key_encoder.eval()
    key_encoder.requires_grad_(False)
    return key_encoder


class EmmaxWarmupLoss(nn.Module):
    """Phase 1 of EMMA-X: InfoNCE for the encoder plus the rank classifier's likelihood (Eq. 2-4).

    Inputs: a dataset of two text columns (a sentence, its translation). Paper: Guo et al. 2023, EMMA-X
    (NeurIPS, arXiv:2306.10386), section 3.2. `stage` 'joint' trains both in one loop (the paper's Algorithm
    1), 'encoder' the encoder only and 'classifier' the classifier only on a frozen encoder (the authors' code
    runs these as two stages). `keys` (a `KeyBank`) is needed by the authors' encoder loss (with a key
    encoder) and classifier examples (a queue).

    Example::

        loss = EmmaxWarmupLoss(model, GaussianRankClassifier(384, 4), temperature=0.05, mixup_examples=1)
        Dataset.from_dict({"english": en, "other": de})
    """

    def __init__(self, model: Any, classifier: RankClassifier, temperature: float = 0.05, mixup_examples: int = 1,
                 label_smoothing: float = 0.0, mixup_rule: str = "uniform", both_orientations: bool = True,
                 rank_similarity_momentum: float = 0.999, stage: str = "joint", encoder_loss: str = "paper",
                 classifier_examples: str = "paper", keys: KeyBank | None = None, momentum: float = 0.999,
                 mlm: JointMlm | None = None) -> None:
        super().__init__()
        if stage not in STAGES or encoder_loss not in FORMS or classifier_examples not in FORMS:
            raise ValueError(f"stage {stage!r}, encoder_loss {encoder_loss!r}, classifier_examples "
                             f"{classifier_examples!r}: expected {STAGES}, {FORMS}, {FORMS}")
        trains_encoder = stage != "classifier"
        if keys is None and (classifier_examples == "authors" or (encoder_loss == "authors" and trains_encoder)):
            raise ValueError("the authors' encoder loss and classifier examples need a KeyBank (`keys`)")
        if keys is not None and encoder_loss == "authors" and trains_encoder and keys.key_encoder is None:
            raise ValueError("the authors' encoder loss needs a key encoder in its KeyBank")
        self.model = model
        parts: dict[str, nn.Module] = {"classifier": classifier, "rank_similarity": RankSimilarity(classifier.ranks)}
        parts |= {name: part for name, part in (("key_bank", keys), ("mlm", mlm)) if part is not None}
        self.head = nn.ModuleDict(parts)
        self.temperature, self.mixup_examples, self.label_smoothing = temperature, mixup_examples, label_smoothing
        self.mixup_rule, self.both_orientations = mixup_rule, both_orientations
        self.rank_similarity_momentum, self.momentum = rank_similarity_momentum, momentum
        self.stage, self.encoder_loss, self.classifier_examples = stage, encoder_loss, classifier_examples

    @property
    def classifier(self) -> RankClassifier:
        return self.head["classifier"]  # type: ignore[return-value]

    @property
    def rank_similarity(self) -> RankSimilarity:
        return self.head["rank_similarity"]  # type: ignore[return-value]

    @property
    def key_bank(self) -> KeyBank | None:
        return dict(self.head.items()).get("key_bank")  # type: ignore[return-value]

    @property
    def mlm(self) -> JointMlm | None:
        return dict(self.head.items()).get("mlm")  # type: ignore[return-value]

    def rank_similarities(self) -> torch.Tensor:
        """The current s_r (0 for a rank no example has had yet)."""
        return self.rank_similarity.values(self.rank_similarity_momentum)

    def forward(self, features: list[dict[str, torch.Tensor]], labels: Any = None) -> dict[str, torch.Tensor]:
        update = getattr(self.model, "training", False)  # a training step, not an evaluation: the state moves on
        trains_encoder = self.stage != "classifier"
        mlm = self.mlm if trains_encoder else None
        masked = [mlm.mask(f) for f in features] if mlm is not None else [(f, None) for f in features]
        inputs = [f for f, _ in masked]
        with contextlib.nullcontext() if trains_encoder else torch.no_grad():
            outputs = [self.model(dict(f)) for f in inputs]
        first, second = (F.normalize(output["sentence_embedding"], dim=-1) for output in outputs)
        keys, own_keys = self._keys(inputs, torch.cat([first, second]).detach(), update)
        losses: dict[str, torch.Tensor] = {}
        if trains_encoder:
            if self.encoder_loss == "authors":
                assert keys is not None  # __init__ refuses the authors' encoder loss without a KeyBank
                losses["info_nce"] = self.authors_info_nce(torch.cat([first, second]), keys)
            else:
                losses["info_nce"] = self.paper_info_nce(first, second)
            if mlm is not None:
                losses["mlm"] = mlm.loss(self.model, outputs, [label for _, label in masked if label is not None])
        if self.stage != "encoder":
            if self.classifier_examples == "authors":
                assert keys is not None  # __init__ refuses the authors' classifier examples without a KeyBank
                losses["rank_mle"] = self.keyed_rank_likelihood(torch.cat([first, second]).detach(), keys, update)
            else:
                losses["rank_mle"] = self.rank_likelihood(first.detach(), second.detach(), update)
        if update and own_keys is not None:
            cast(KeyBank, self.head["key_bank"]).enqueue(own_keys)
        return losses

    def _keys(self, inputs: list[dict[str, torch.Tensor]], anchors: torch.Tensor,
              update: bool) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(the batch's keys then the queue, the batch's keys) from the key bank; None without one. The key
        encoder takes its momentum step first (MoCo's order); without one the keys are the anchors."""
        bank = self.key_bank
        if bank is None:
            return None, None
        if bank.key_encoder is None or self.stage == "classifier":
            own_keys = anchors
        else:
            if update:
                bank.momentum_update(self.model, self.momentum)
            with torch.no_grad():
                own_keys = torch.cat([_embed(bank.key_encoder, f) for f in inputs])
        return torch.cat([own_keys, bank.queue.clone()]), own_keys

    def paper_info_nce(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        """Eq. 2: each first side against the batch's second sides, its translation the positive."""
        scores = first @ second.T / self.temperature
        return F.cross_entropy(scores, torch.arange(len(scores), device=scores.device))

    def authors_info_nce(self, anchors: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """The authors' warm-up encoder loss: every sentence of the batch (first sides, then second sides) against
        the batch's keys and the queue, its translation's key the positive, its own key left out."""
        size = len(anchors)
        scores = (anchors @ keys.T / self.temperature)
        own = torch.zeros_like(scores, dtype=torch.bool)
        own[torch.arange(size), torch.arange(size)] = True
        targets = (torch.arange(size, device=scores.device) + size // 2) % size
        return F.cross_entropy(scores.masked_fill(own, -math.inf), targets)

    def labelled_examples(self, first: torch.Tensor, second: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor,
                                                                                       torch.Tensor]:
        """(differences, similarities, 1-based ranks) of Eq. 4's examples: rank 1 for (x, y), rank N for (x, y')
        with y' another pair's translation, and `mixup_examples` virtual (x, (1 - lambda) y + lambda y') per pair
        at their rank (`mixup_rank`); with `both_orientations` also every example with its sides swapped."""
        ranks = self.classifier.ranks
        size = len(first)
        shift = int(torch.randint(1, size, ()).item()) if size > 1 else 0
        sides = [(first, second), (second, first)] if self.both_orientations else [(first, second)]
        anchors, others, targets = [], [], []
        for anchor, translation in sides:
            outlier = translation.roll(shift, dims=0)  # each pair meets a translation that is not its own
            anchors += [anchor, anchor]
            others += [translation, outlier]
            targets += [torch.ones(size, dtype=torch.long, device=first.device),
                        torch.full((size,), ranks, dtype=torch.long, device=first.device)]
            for _ in range(self.mixup_examples):
                lambdas = torch.rand(size, 1, device=first.device)
                anchors.append(anchor)
                others.append(F.normalize((1 - lambdas) * translation + lambdas * outlier, dim=-1))
                targets.append(mixup_rank(lambdas.squeeze(1), ranks, self.mixup_rule, self._prior()))
        anchor_rows, other_rows = torch.cat(anchors), torch.cat(others)
        return anchor_rows - other_rows, (anchor_rows * other_rows).sum(-1), torch.cat(targets)

    def rank_likelihood(self, first: torch.Tensor, second: torch.Tensor, update: bool = False) -> torch.Tensor:
        """Eq. 4 over `labelled_examples`; `update` also moves s_r towards each rank's mean similarity (as the
        authors' classifier stage does), so phase 2 starts from rank similarities of this encoder."""
        differences, similarities, targets = self.labelled_examples(first, second)
        if update:
            self.rank_similarity.update(similarities, targets, self.rank_similarity_momentum)
        return rank_nll(self.classifier.log_posterior(differences), targets, self.label_smoothing)

    def keyed_examples(self, anchors: torch.Tensor, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor,
                                                                                   torch.Tensor]:
        """The authors' classifier examples (anchors x keys, `interploted_feature` in their `model.py`): each
        anchor's translation t (the other side of its pair, from the same encoder) mixed with every key k,
        m = w t + (1 - w) k with w uniform; the example is the difference a - m, its similarity a.m, and the
        rank of the key's weight 1 - w (`mixup_rank`: near the translation is rank 1, near an unrelated key rank
        N). The own key and the translation's key are rank 1 whatever w. Anchors hold the first sides, then the
        second sides."""
        half = len(anchors) // 2
        translations = torch.cat([anchors[half:], anchors[:half]])
        weights = torch.rand(len(anchors), len(keys), device=anchors.device)  # the translation's share
        mixed = weights.unsqueeze(-1) * translations.unsqueeze(1) + (1 - weights).unsqueeze(-1) * keys.unsqueeze(0)
        differences = anchors.unsqueeze(1) - mixed
        similarities = weights * (anchors * translations).sum(-1, keepdim=True) + (1 - weights) * (anchors @ keys.T)
        targets = mixup_rank(1 - weights, self.classifier.ranks, self.mixup_rule, self._prior())
        known = translation_mask(half, len(keys), anchors.device)
        known[torch.arange(len(anchors)), torch.arange(len(anchors))] = True
        return differences, similarities, targets.masked_fill(known, 1)

    def _prior(self) -> torch.Tensor | None:
        """The classifier's rank priors for mixup_rule 'prior' (None for the other rules)."""
        if self.mixup_rule != "prior":
            return None
        # only the GMM has rank priors: training refuses mixup_rule 'prior' with another classifier
        return cast(GaussianRankClassifier, self.classifier).prior().detach()

    def keyed_rank_likelihood(self, anchors: torch.Tensor, keys: torch.Tensor, update: bool = False
                              ) -> torch.Tensor:
        """The classifier's likelihood over `keyed_examples`; `update` moves s_r by their ranks (the code's
        classifier stage)."""
        differences, similarities, targets = self.keyed_examples(anchors, keys)
        if update:
            self.rank_similarity.update(similarities, targets, self.rank_similarity_momentum)
        return rank_nll(self.classifier.log_posterior(differences), targets, self.label_smoothing)


class EmmaxState(KeyBank):
    """Everything phase 2 keeps besides the encoder, saved in every checkpoint so a resumed run continues
    exactly: the classifier, the momentum key encoder, the queue and its write position, the rank
    similarities s_r, the rank counts since the last dev evaluation and the joint MLM's head (if any)."""

    rank_counts: torch.Tensor  # a buffer (register_buffer)

    def __init__(self, classifier: RankClassifier, key_encoder: Any, queue: torch.Tensor,
                 mlm: JointMlm | None = None) -> None:
        super().__init__(queue, key_encoder)
        ranks = classifier.ranks
        self.classifier = classifier
        self.rank_similarity = RankSimilarity(ranks)
        self.register_buffer("rank_counts", torch.zeros(ranks))
        self.mlm = mlm


@dataclass
class EStep:
    """Phase 2's E-step over (anchors x keys): the classifier's own ranks c_G (`predicted`), the encoder's
    targets (c_G with the known pairs set), the classifier's targets (c_M with the known pairs set), the pairs
    whose rank is known rather than decided (`fixed`: own keys, translations) and the pairs left out of the
    encoder's loss (`exclude`: own keys with bitext)."""

    predicted: torch.Tensor
    encoder_targets: torch.Tensor
    classifier_targets: torch.Tensor
    fixed: torch.Tensor
    exclude: torch.Tensor | None


class EmmaxEmLoss(nn.Module):
    """Phase 2 of EMMA-X: EM with dual supervision between the encoder and the rank classifier (Eq. 6-11).

    Inputs: a dataset of two text columns (a sentence, its translation: the authors' phase 2) or of one
    (monolingual sentences: the paper's Algorithm 1). The queue starts filled with `initial_queue` (embeddings
    of random sentences); s_r start from `initial_rank_similarity` (the warm-up's values and update counts).
    Paper: Guo et al. 2023, EMMA-X, sections 3.3-3.4.

    Example::

        loss = EmmaxEmLoss(model, classifier, initial_queue, temperatures=[0.05, 0.075, 0.1, 0.125])
        Dataset.from_dict({"english": en, "other": de})
    """

    def __init__(self, model: Any, classifier: RankClassifier, initial_queue: torch.Tensor,
                 temperatures: Sequence[float], momentum: float = 0.999, rank_similarity_momentum: float = 0.999,
                 dual_supervision: bool = True, label_smoothing: float = 0.0, own_key: bool = True,
                 initial_rank_similarity: tuple[Sequence[float], Sequence[float]] | None = None,
                 mlm: JointMlm | None = None) -> None:
        super().__init__()
        if len(temperatures) != classifier.ranks:
            raise ValueError(f"{len(temperatures)} temperatures for {classifier.ranks} ranks")
        self.model = model
        self.head = EmmaxState(classifier, momentum_copy(model), initial_queue, mlm)
        if initial_rank_similarity is not None:
            self.head.rank_similarity.load_values(*initial_rank_similarity, momentum=rank_similarity_momentum)
        if not dual_supervision:
            classifier.requires_grad_(False)
        self.temperatures = list(temperatures)
        self.momentum, self.rank_similarity_momentum = momentum, rank_similarity_momentum
        self.dual_supervision, self.label_smoothing, self.own_key = dual_supervision, label_smoothing, own_key

    @property
    def classifier(self) -> RankClassifier:
        return self.head.classifier

    @property
    def rank_similarity(self) -> RankSimilarity:
        return self.head.rank_similarity

    def rank_similarities(self) -> torch.Tensor:
        """The current s_r; a rank never updated (no warm-up values) takes the paper's grid (N + 1 - r) / N,
        replaced by its batch mean at its first update."""
        ranks = self.classifier.ranks
        grid = (ranks + 1 - torch.arange(1, ranks + 1, device=self.rank_similarity.updates.device)).float() / ranks
        updated = self.rank_similarity.updates > 0
        return torch.where(updated, self.rank_similarity.values(self.rank_similarity_momentum), grid)

    def encoder_ranks(self, similarities: torch.Tensor) -> torch.Tensor:
        """c_M (Eq. 10): the rank whose moving-average similarity s_r is nearest, 1-based."""
        return (similarities.unsqueeze(-1) - self.rank_similarities()).abs().argmin(dim=-1) + 1

    def forward(self, features: list[dict[str, torch.Tensor]], labels: Any = None) -> dict[str, torch.Tensor]:
        state = self.head
        training = self.model.training  # a training step, not an evaluation: the state moves on
        if training:
            state.momentum_update(self.model, self.momentum)
        mlm = state.mlm
        masked = [mlm.mask(f) for f in features] if mlm is not None else [(f, None) for f in features]
        outputs = [self.model(dict(f)) for f, _ in masked]
        anchors = torch.cat([F.normalize(output["sentence_embedding"], dim=-1) for output in outputs])
        with torch.no_grad():  # the key encoder sees the same (masked) input, as in the authors' code
            own_keys = torch.cat([_embed(state.key_encoder, f) for f, _ in masked])
        parallel = len(features) == 2
        batch_keys = parallel or self.own_key
        compared = torch.cat([own_keys, state.queue.clone()]) if batch_keys else state.queue.clone()
        similarities = anchors @ compared.T
        differences = anchors.detach().unsqueeze(1) - compared.unsqueeze(0)
        step = self.e_step(similarities.detach(), differences, batch_keys, parallel)
        losses = {"ranking_info_nce": ranking_info_nce(similarities, step.encoder_targets, self.temperatures,
                                                       step.exclude)}
        if self.dual_supervision:
            losses["rank_mle"] = rank_nll(self.classifier.log_posterior(differences), step.classifier_targets,
                                          self.label_smoothing)
        if mlm is not None:
            losses["mlm"] = mlm.loss(self.model, outputs, [label for _, label in masked if label is not None])
        if training:
            self._after_step(similarities.detach(), step.predicted, step.fixed, own_keys)
        return losses

    @torch.no_grad()
    def e_step(self, similarities: torch.Tensor, differences: torch.Tensor, batch_keys: bool,
               parallel: bool) -> EStep:
        """Each module's rank for every (anchor, key) pair; the keys start with the batch's own (`batch_keys`),
        which with bitext (`parallel`) hold the first sides of the pairs, then the second sides."""
        predicted = self.classifier.log_posterior(differences).argmax(dim=-1) + 1  # c_G
        encoder_targets, classifier_targets = predicted.clone(), self.encoder_ranks(similarities)
        fixed = torch.zeros_like(predicted, dtype=torch.bool)
        exclude = None
        if batch_keys:
            anchors = len(similarities)
            own = torch.zeros_like(fixed)
            own[torch.arange(anchors), torch.arange(anchors)] = True
            fixed |= own
            if parallel:  # the authors' phase 2: the translation is rank 1, the own key out of the encoder's loss
                golden = translation_mask(anchors // 2, similarities.shape[1], similarities.device)
                fixed |= golden
                encoder_targets[golden] = 1
                exclude = own
            else:  # MoCo's positive: an anchor and its own key are rank 1 by construction
                encoder_targets[own] = 1
            classifier_targets[fixed] = 1
        return EStep(predicted, encoder_targets, classifier_targets, fixed, exclude)

    @torch.no_grad()
    def _after_step(self, similarities: torch.Tensor, predicted: torch.Tensor, fixed: torch.Tensor,
                    own_keys: torch.Tensor) -> None:
        """Eq. 11 over every pair by the classifier's own rank (the authors' `gmm_pred`), the counts of the
        classifier's decisions on the pairs whose rank is not known, and the batch's keys into the queue."""
        state = self.head
        self.rank_similarity.update(similarities, predicted, self.rank_similarity_momentum)
        for rank in range(1, self.classifier.ranks + 1):
            state.rank_counts[rank - 1] += ((predicted == rank) & ~fixed).sum()
        state.enqueue(own_keys)
