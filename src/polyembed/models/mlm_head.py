"""A masked-language-modelling head tied to an encoder's input embeddings, and BERT's masking: the offline base
models ship without a head, and the modular recipe's LA stage, WACSE's aligned word prediction and EMMA-X's
joint MLM predict tokens."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

IGNORE_INDEX = -100


def mask_tokens(
    input_ids: torch.Tensor, special: torch.Tensor, mask_id: int, vocabulary_size: int, probability: float,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking (as transformers' DataCollatorForLanguageModeling): `probability` of the non-special,
    non-padding tokens are chosen; 80 % of those become the mask token, 10 % a random token, 10 % stay.
    Returns (masked input ids, labels with IGNORE_INDEX outside the chosen positions)."""
    device = input_ids.device
    chosen = (torch.rand(input_ids.shape, generator=generator, device=device) < probability) & ~special
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    draw = torch.rand(input_ids.shape, generator=generator, device=device)
    masked = input_ids.clone()
    masked[chosen & (draw < 0.8)] = mask_id
    random_positions = chosen & (draw >= 0.8) & (draw < 0.9)
    masked[random_positions] = torch.randint(
        vocabulary_size, (int(random_positions.sum()),), generator=generator, device=device
    )
    return masked, labels


def special_token_mask(input_ids: torch.Tensor, tokenizer: Any) -> torch.Tensor:
    """True at special tokens (CLS, SEP, PAD, ...), which are never masked."""
    return torch.isin(input_ids, torch.tensor(sorted(set(tokenizer.all_special_ids)), device=input_ids.device))


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
