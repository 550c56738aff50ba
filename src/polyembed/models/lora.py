"""LoRA adapters (peft) on a sentence-transformers model, and merging them back into its weights.

Why merge: the modular recipe stacks adapters (language adaptation, then sentence encoding). Two active peft
adapters both train, so the first is merged into the weights before the second is added, and a merged model
is a plain sentence-transformers folder any user can load. The transformers integration that
`SentenceTransformer.add_adapter` uses can add and save adapters but not merge them; `merge_lora` does that
with peft's own layer methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only annotations: the options (DEFAULT_TARGETS) are read without torch
    from torch import nn
    from transformers import PreTrainedModel

DEFAULT_TARGETS = ["query", "key", "value", "dense"]
"""BERT / XLM-R linear layers (attention projections, attention output and both feed-forward layers)."""


@dataclass(frozen=True)
class LoraSettings:
    """A LoRA adapter: rank, scaling (alpha / rank), dropout, the linear layers it adapts, and whether the
    word-embedding matrix trains as well (a full trainable copy, peft's `modules_to_save`)."""

    rank: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: list[str] = field(default_factory=lambda: list(DEFAULT_TARGETS))
    train_embeddings: bool = False


def add_lora(model: Any, settings: LoraSettings) -> int:
    """Add a LoRA adapter to the transformer of a SentenceTransformer (its other weights frozen); returns the
    number of trainable parameters."""
    from peft import LoraConfig

    transformer = model[0].auto_model
    config = LoraConfig(
        r=settings.rank, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
        modules_to_save=["word_embeddings"] if settings.train_embeddings else None,
    )
    transformer.add_adapter(config)
    return sum(p.numel() for p in transformer.parameters() if p.requires_grad)


def has_lora(model: Any) -> bool:
    from peft.tuners.lora import LoraLayer

    return any(isinstance(module, LoraLayer) for module in model[0].auto_model.modules())


def merge_lora(model: Any) -> Any:
    """Fold every LoRA adapter of `model`'s transformer into its weights and put the trained copy of each
    `modules_to_save` module in place of the original; the model is then a plain one (all weights trainable,
    no peft config), embedding exactly as with the adapter active."""
    from peft.tuners.lora import LoraLayer
    from peft.utils import ModulesToSaveWrapper

    transformer: PreTrainedModel = model[0].auto_model
    replacements: list[tuple[nn.Module, str, nn.Module]] = []
    for name, module in transformer.named_modules():
        if isinstance(module, LoraLayer):
            module.merge()
            replacements.append((transformer.get_submodule(name.rpartition(".")[0]), name.rpartition(".")[2],
                                 module.get_base_layer()))
        elif isinstance(module, ModulesToSaveWrapper):
            active = module.active_adapter
            active = active[0] if isinstance(active, list) else active
            replacements.append((transformer.get_submodule(name.rpartition(".")[0]), name.rpartition(".")[2],
                                 module.modules_to_save[active]))
    for parent, attribute, replacement in replacements:
        setattr(parent, attribute, replacement)
    if getattr(transformer, "_hf_peft_config_loaded", False):
        transformer._hf_peft_config_loaded = False
        transformer.__dict__.pop("peft_config", None)
    for parameter in transformer.parameters():
        parameter.requires_grad_(True)
    return model
