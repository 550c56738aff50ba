"""Options of the modular recipe's stages (Huang et al. 2024): YAML keys and CLI flags.

Each stage trains one language's encoder on the shared `TrainConfig` schedule; `student` is the encoder the
stage starts from (the base model, or the previous stage's `model/` folder).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from polyembed.config import option
from polyembed.methods.base.config import TrainConfig
from polyembed.models.lora import DEFAULT_TARGETS

LANGUAGE_TEXT_DATASETS = ["tatoeba-challenge", "mafand-mt", "multi30k", "stsb-multi-mt"]
"""Registry bitext with whole sentences (MUSE dictionaries hold single words: no MLM text)."""


@dataclass
class LoraOptions:
    """How a stage's LoRA adapter is shaped (ignored with adapter 'full')."""

    adapter: Literal["lora", "full"] = option(
        "lora", "'lora' (the ACL 2025 variant: a LoRA adapter, merged into the weights after training) or "
        "'full' (the arXiv variant: every weight trains)."
    )
    lora_rank: int = option(8, "LoRA rank.", minimum=1)
    lora_alpha: int = option(16, "LoRA alpha (the update is scaled by alpha / rank).", minimum=1)
    lora_dropout: float = option(0.0, "Dropout on the LoRA input.", minimum=0, below=1)
    lora_targets: list[str] = option(DEFAULT_TARGETS, "Names of the linear layers LoRA adapts.")


@dataclass
class LanguageAdaptationConfig(LoraOptions, TrainConfig):
    """The LA stage: continued masked language modelling on one language's text."""

    language: str = option("", "The language to adapt to (ISO 639-1 or 639-3 code); required.")
    text_files: list[str] = option([], "Text of the language of your own: files with one sentence per line.")
    datasets: list[str] = option(
        ["tatoeba-challenge"],
        f"Registry bitext whose non-English side is the language's text ({', '.join(LANGUAGE_TEXT_DATASETS)}); "
        "[] for text_files only.",
    )
    max_sentences: int | None = option(
        None, "Cap on the training sentences (a seeded sample); unset keeps all.", minimum=1
    )
    heldout_sentences: int = option(
        500, "Sentences held out for the MLM loss / perplexity before and after (at most a fifth).", minimum=1
    )
    mlm_probability: float = option(0.15, "Share of tokens masked (paper: 0.15).", above=0, below=1)
    train_embeddings: bool = option(
        True, "LoRA: the word-embedding matrix trains as well (the paper's language-specific embedding layer)."
    )
    learning_rate: float = option(
        2e-4, "Peak learning rate (LoRA default; the arXiv variant's full MLM used 5e-5).", above=0
    )
    batch_size: int = option(32, "Sentences per mini-batch (paper: 128).", minimum=1)
    output_dir: str = option("runs/modular-la", "Run folder: config.yaml, checkpoints/, model/, training.json.")
