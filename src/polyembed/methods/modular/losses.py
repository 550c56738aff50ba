"""Masked language modelling as a sentence-transformers loss: the language-adaptation (LA) stage of the modular
recipe (Huang et al. 2024, section 3.1: continued MLM on the language's text, masking probability 0.15).

Why a loss and not a second trainer: every polyembed stage trains through the shared
SentenceTransformerTrainer setup (run folder, checkpoints, resume). A loss receives the tokenised batch, so
it can mask tokens and predict them with its own head; the trainer's optimizer already includes a loss's
parameters (as for SoftmaxLoss's classifier).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from polyembed.models.mlm_head import (
    IGNORE_INDEX,
    MaskedLanguageModelingHead,
    mask_tokens,
    special_token_mask,
)

__all__ = ["IGNORE_INDEX", "CrossModelMultipleNegativesRankingLoss", "MaskedLanguageModelingHead",
           "MaskedLanguageModelingLoss", "PivotCosineLoss", "PivotMultipleNegativesRankingLoss", "mask_tokens",
           "special_token_mask"]


class MaskedLanguageModelingLoss(nn.Module):
    """Cross-entropy of predicting masked tokens from the model's transformer (BERT-style MLM).

    Inputs: a dataset with one text column (one sentence or passage per row); no label.
    Paper: Devlin et al. 2019 (the masking recipe); Huang et al. 2024 use it for language adaptation.

    Example::

        loss = MaskedLanguageModelingLoss(model, mlm_probability=0.15)
        trainer = SentenceTransformerTrainer(model=model, train_dataset=Dataset.from_dict({"text": lines}),
                                             loss=loss)
    """

    def __init__(self, model: Any, mlm_probability: float = 0.15) -> None:
        super().__init__()
        if not 0 < mlm_probability < 1:
            raise ValueError(f"mlm_probability must be in (0, 1), got {mlm_probability}")
        self.model = model
        self.mlm_probability = mlm_probability
        config = model[0].auto_model.config
        self.tokenizer = model.tokenizer
        if self.tokenizer.mask_token_id is None:
            raise ValueError("the model's tokenizer has no mask token: masked language modelling needs one")
        self.head = MaskedLanguageModelingHead(
            config.hidden_size, model[0].auto_model.get_input_embeddings().weight.shape[0],
            getattr(config, "layer_norm_eps", 1e-12),
        ).to(model.device)  # the held-out evaluation runs before the trainer moves the loss

    def masked_loss_sum(
        self, features: dict[str, torch.Tensor], generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, int]:
        """(summed cross-entropy over the masked positions, their count) of one tokenised batch. Masking draws
        from `generator`, by default torch's global generator, whose state the trainer checkpoints, so a
        resumed run masks exactly as an uninterrupted one."""
        transformer = self.model[0].auto_model
        input_ids = features["input_ids"]
        embeddings = transformer.get_input_embeddings().weight
        masked, labels = mask_tokens(
            input_ids.cpu(), special_token_mask(input_ids.cpu(), self.tokenizer), self.tokenizer.mask_token_id,
            embeddings.shape[0], self.mlm_probability, generator,
        )
        masked, labels = masked.to(input_ids.device), labels.to(input_ids.device)
        hidden = transformer(input_ids=masked, attention_mask=features["attention_mask"]).last_hidden_state
        chosen = labels != IGNORE_INDEX
        if not chosen.any():  # a batch of very short rows can draw no position: nothing to predict
            return hidden.sum() * 0.0, 0
        logits = self.head(hidden[chosen], embeddings)
        return F.cross_entropy(logits, labels[chosen], reduction="sum"), int(chosen.sum())

    def forward(
        self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Mean cross-entropy per masked token of the batch."""
        total, count = self.masked_loss_sum(sentence_features[0])
        return total / max(count, 1)

    @property
    def citation(self) -> str:
        return "Devlin et al. 2019, BERT (arXiv:1810.04805), section 3.1"


def _label_matrix(labels: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return F.normalize(labels.to(device=like.device, dtype=like.dtype), dim=-1)


class PivotMultipleNegativesRankingLoss(nn.Module):
    """MultipleNegativesRankingLoss against a frozen pivot encoder's embeddings: each sentence's embedding must
    be closer (cosine x scale, softmax over the batch) to the pivot's embedding of its own English paraphrase
    than to the other rows' (the CLA stage's cross-lingual paraphrase batches).

    Inputs: a dataset with one text column (the language's sentence) and a `label` column (the pivot's
    embedding of its English paraphrase, precomputed: the pivot is frozen, so this equals encoding it in the
    batch). Paper: Henderson et al. 2017 (in-batch negatives); Huang et al. 2024, section 3.2.

    Example::

        loss = PivotMultipleNegativesRankingLoss(language_encoder, scale=20.0)
        Dataset.from_dict({"sentence": german, "label": pivot.encode(english_paraphrases).tolist()})
    """

    def __init__(self, model: Any, scale: float = 20.0) -> None:
        super().__init__()
        self.model = model
        self.scale = scale

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        embeddings = F.normalize(self.model(sentence_features[0])["sentence_embedding"], dim=-1)
        scores = self.scale * embeddings @ _label_matrix(labels, embeddings).T
        return F.cross_entropy(scores, torch.arange(len(scores), device=scores.device))

    @property
    def citation(self) -> str:
        return "Henderson et al. 2017 (arXiv:1705.00652); Huang et al. 2024 (arXiv:2407.14878), section 3.2"


class CrossModelMultipleNegativesRankingLoss(nn.Module):
    """MultipleNegativesRankingLoss over a batch that mixes two encoders: for each pair a coin decides which side
    is the anchor, the language's sentence through the trained encoder or its English paraphrase through the
    frozen pivot, and the other side joins the candidates. Every row's candidates then hold both encoders'
    embeddings, so the trained encoder's own sentences must also stay apart from each other (X-X similarities
    enter the softmax), which a pivot-only batch leaves free: an offset shared by all of the language's
    embeddings costs nothing there.

    Inputs: a text column (the language's sentence) and a `label` column (the pivot's embedding of its English
    paraphrase, precomputed: the pivot is frozen and runs in eval mode, so this equals encoding it in the
    batch). The coins come from torch's global generator, which the trainer seeds and checkpoints, so a
    resumed run draws as an uninterrupted one. Paper: Huang et al. 2024 (arXiv:2407.14878), section 3.2; the
    authors' code draws the anchor side per pair the same way (`CrossModelMNRL` with cross-lingual batches).

    Example::

        loss = CrossModelMultipleNegativesRankingLoss(language_encoder, scale=20.0)
        Dataset.from_dict({"sentence": german, "label": pivot.encode(english_paraphrases).tolist()})
    """

    def __init__(self, model: Any, scale: float = 20.0, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.model = model
        self.scale = scale
        self.generator = generator

    def anchor_sides(self, rows: int) -> torch.Tensor:
        """True where the language's sentence is the anchor (its pivot embedding then a candidate)."""
        return torch.rand(rows, generator=self.generator) < 0.5

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        embeddings = F.normalize(self.model(sentence_features[0])["sentence_embedding"], dim=-1)
        pivot = _label_matrix(labels, embeddings)
        language_first = self.anchor_sides(len(embeddings)).to(embeddings.device)[:, None]
        anchors = torch.where(language_first, embeddings, pivot)
        candidates = torch.where(language_first, pivot, embeddings)
        scores = self.scale * anchors @ candidates.T
        return F.cross_entropy(scores, torch.arange(len(scores), device=scores.device))

    @property
    def citation(self) -> str:
        return "Henderson et al. 2017 (arXiv:1705.00652); Huang et al. 2024 (arXiv:2407.14878), section 3.2"


class PivotCosineLoss(nn.Module):
    """Distance between each sentence's embedding and the frozen pivot's embedding of its English translation
    (the CLA stage's parallel-sentence batches): (1 - cosine)^2, sentence-transformers' CosineSimilarityLoss
    against a label of 1 (`squared`, default), or 1 - cosine (`squared=False`), whose gradient does not fade
    as the pair gets close.

    Inputs: a text column and a `label` column (the pivot's embedding of the translation, precomputed).
    Paper: Huang et al. 2024, section 3.2 (the ACL 2025 version alternates these batches with paraphrase ones).

    Example::

        loss = PivotCosineLoss(language_encoder)
    """

    def __init__(self, model: Any, squared: bool = True) -> None:
        super().__init__()
        self.model = model
        self.squared = squared

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        embeddings = F.normalize(self.model(sentence_features[0])["sentence_embedding"], dim=-1)
        distance = 1 - (embeddings * _label_matrix(labels, embeddings)).sum(dim=-1)
        return (distance.square() if self.squared else distance).mean()
