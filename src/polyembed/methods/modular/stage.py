"""What the LoRA-capable stages (LA, SE) share: giving the encoder the stage's adapter, checking where a stage
starts."""

from __future__ import annotations

from typing import Any

from polyembed.methods.modular.config import LoraOptions


def add_stage_adapter(model: Any, config: LoraOptions, train_embeddings: bool = False) -> tuple[int, int]:
    """A LoRA adapter as the config shapes it (nothing for adapter 'full'); (trainable, total) parameters."""
    from polyembed.models.lora import LoraSettings, add_lora

    total = sum(p.numel() for p in model.parameters())
    if config.adapter != "lora":
        return total, total
    settings = LoraSettings(config.lora_rank, config.lora_alpha, config.lora_dropout, list(config.lora_targets),
                            train_embeddings=train_embeddings)
    return add_lora(model, settings), total


def check_stage_start(folder: str, language: str, stage: str, previous: str, where: str) -> None:
    """A stage that starts from a folder (the previous stage's model) fails before anything loads when the folder
    or its tokenizer is missing, naming the language and the step to run first. Built-in and Hub names pass."""
    from pathlib import Path

    from polyembed.errors import PolyembedError

    path = Path(folder).expanduser()
    looks_like_folder = path.is_absolute() or folder.startswith(".") or len(path.parts) > 2
    if not path.exists():
        if looks_like_folder:
            raise PolyembedError(f"language '{language}', stage {stage}: {where} {folder} does not exist "
                                 f"(run {previous} for '{language}' first)")
        return
    if (path / "modules.json").is_file() and not any(path.glob("tokenizer*.json")) \
            and not any(path.glob("*/tokenizer*.json")):
        raise PolyembedError(f"language '{language}', stage {stage}: {where} {folder} has no tokenizer (each "
                             f"language encoder carries its own: run {previous} for '{language}' first)")
