"""EMMA-X's joint masked-language modelling, as the authors' code trains it (`--do-mlm`, on by default there;
the paper does not describe it): a share of each sentence's tokens is masked (BERT's 80/10/10 recipe, 0.1 in
their code), the sentence embeddings that every other objective sees are computed on that masked input (query
and key encoder alike), and a cross-entropy of the masked tokens (label smoothing 0.1) is added to the loss.

The authors start from XLM-R, whose MLM head is pretrained; the offline base models ship none, so the head here
starts new (dense, LayerNorm, a bias per token; the decoder is tied to the input embeddings).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from polyembed.models.mlm_head import IGNORE_INDEX, MaskedLanguageModelingHead, mask_tokens, special_token_mask

MLM_HEAD_FILE = "emmax_mlm_head.safetensors"


class JointMlm(nn.Module):
    """Masks a batch for the sentence objectives and scores the masked tokens.

    Example::

        mlm = JointMlm(model, probability=0.1)
        masked, labels = mlm.mask(features)
        output = model(masked)                      # sentence_embedding and token_embeddings of the masked input
        loss = mlm.loss(model, output, labels)      # mean cross-entropy per masked token
    """

    def __init__(self, model: Any, probability: float, label_smoothing: float = 0.1) -> None:
        super().__init__()
        if not 0 < probability < 1:
            raise ValueError(f"mlm probability must be in (0, 1), got {probability}")
        self.tokenizer = model.tokenizer
        if self.tokenizer.mask_token_id is None:
            raise ValueError("the model's tokenizer has no mask token: joint MLM needs one")
        transformer = model[0].auto_model
        config = transformer.config
        self.probability, self.label_smoothing = probability, label_smoothing
        self.vocabulary_size = transformer.get_input_embeddings().weight.shape[0]
        self.head = MaskedLanguageModelingHead(config.hidden_size, self.vocabulary_size,
                                               getattr(config, "layer_norm_eps", 1e-12)).to(model.device)

    def mask(self, features: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """(the features with masked input ids, labels: the original id at masked positions, IGNORE_INDEX
        elsewhere). Draws from torch's global generator, which the trainer checkpoints."""
        input_ids = features["input_ids"]
        masked, labels = mask_tokens(input_ids.cpu(), special_token_mask(input_ids.cpu(), self.tokenizer),
                                     self.tokenizer.mask_token_id, self.vocabulary_size, self.probability)
        return {**features, "input_ids": masked.to(input_ids.device)}, labels.to(input_ids.device)

    def loss(self, model: Any, outputs: list[dict[str, torch.Tensor]], labels: list[torch.Tensor]) -> torch.Tensor:
        """Mean label-smoothed cross-entropy over the masked tokens of every output (`token_embeddings` of the
        masked input), predicted through the head tied to the model's input embeddings."""
        hidden = torch.cat([output["token_embeddings"][label != IGNORE_INDEX] for output, label
                            in zip(outputs, labels, strict=True)])
        targets = torch.cat([label[label != IGNORE_INDEX] for label in labels])
        if not len(targets):  # short rows can draw no position: nothing to predict
            return outputs[0]["token_embeddings"].sum() * 0.0
        logits = self.head(hidden, model[0].auto_model.get_input_embeddings().weight)
        return F.cross_entropy(logits.float(), targets, label_smoothing=self.label_smoothing)
