"""A masked-language-modelling head tied to an encoder's input embeddings: the offline base models ship
without one, and both the modular recipe's LA stage and WACSE's aligned word prediction predict tokens."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class MaskedLanguageModelingHead(nn.Module):
    """BERT's MLM head: dense -> GELU -> LayerNorm -> decoder tied to the input embeddings (+ a bias).

    The offline base models ship without an MLM head, so it starts fresh; tying the decoder to the input
    embeddings means the only new weights are one hidden x hidden layer, a LayerNorm and a bias per token."""

    def __init__(self, hidden_size: int, vocabulary_size: int, layer_norm_eps: float = 1e-12) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.layer_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(vocabulary_size))

    def forward(self, hidden_states: torch.Tensor, embeddings: torch.Tensor) -> torch.Tensor:
        hidden = self.layer_norm(F.gelu(self.dense(hidden_states)))
        return F.linear(hidden, embeddings, self.bias)
