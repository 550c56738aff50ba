"""The student every method trains: loading it (model, maximum length, prompt), freezing, dropout, memory
accounting."""

from __future__ import annotations

import contextlib
import resource
import weakref
from pathlib import Path
from typing import Any

from polyembed.errors import PolyembedError


def freeze_lowest_layers(model: Any, count: int) -> None:
    """Fix the embeddings and the lowest `count` transformer layers: the backward pass then stops above
    them, which is the main CPU saving, and the student keeps its low-level multilingual features."""
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    if layers is None:
        raise PolyembedError(f"freeze_layers: {type(model).__name__} has no encoder.layer list (BERT-style expected)")
    if not 0 <= count <= len(layers):
        raise PolyembedError(f"freeze_layers={count}: the student has {len(layers)} transformer layers")
    for module in [getattr(model, "embeddings", None) or model.get_input_embeddings(), *layers[:count]]:
        module.requires_grad_(False)


def set_dropout(model: Any, probability: float) -> None:
    """Set every dropout of the transformer (hidden and attention) to `probability`; the Hugging Face
    config is updated too so that the saved model trains the same way when loaded again."""
    import torch

    if not 0.0 <= probability < 1.0:
        raise PolyembedError(f"dropout={probability}: expected a probability in [0, 1)")
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = probability
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout"):
        if hasattr(model.config, key):
            setattr(model.config, key, probability)


_OWN_LENGTHS: weakref.WeakKeyDictionary[Any, tuple[int, int | None]] = weakref.WeakKeyDictionary()
"""Each model's own maximum length and its tokenizer's limit from before the first `set_max_seq_length`: training
truncates for speed, the saved model reads as far as its base model did (`restore_max_seq_length`). The limit is
kept because sentence-transformers writes `max_seq_length` into the tokenizer's `model_max_length` too."""


def set_max_seq_length(model: Any, wanted: int) -> None:
    """`wanted` tokens per sentence, capped at what the model's tokenizer and positions allow (a tiny model with
    64 positions would otherwise fail on its first long batch). The model's own length is remembered for
    `restore_max_seq_length`."""
    own = getattr(model, "max_seq_length", None)
    if isinstance(own, int) and model not in _OWN_LENGTHS:
        _OWN_LENGTHS[model] = (own, _tokenizer_limit(model))
    model.max_seq_length = _capped(model, wanted)


def _tokenizer_limit(model: Any) -> int | None:
    limit = getattr(model.tokenizer, "model_max_length", None)
    return limit if isinstance(limit, int) and limit < 1_000_000 else None


def _capped(model: Any, wanted: int) -> int:
    """`wanted`, capped at the tokenizer's limit from before training shortened it (else the current one)."""
    limit = _OWN_LENGTHS[model][1] if model in _OWN_LENGTHS else _tokenizer_limit(model)
    return min(wanted, limit) if limit is not None else wanted


def restore_max_seq_length(model: Any, wanted: int | None = None) -> dict[str, Any]:
    """Set the length a model is saved with: `wanted` (capped as in `set_max_seq_length`), else its own length
    from before training truncated it. Why: a student trained at 128 tokens and saved at 128 silently cuts every
    longer sentence a user encodes later (me5-small reads 512). Returns what was chosen, for training.json."""
    training = getattr(model, "max_seq_length", None)
    own = _OWN_LENGTHS[model][0] if model in _OWN_LENGTHS else None
    if wanted is not None:
        model.max_seq_length = _capped(model, wanted)
        source = "inference_max_seq_length"
    elif own is not None:
        model.max_seq_length = own
        source = "starting model"
    else:
        source = "training"
    return {"training": training, "saved": getattr(model, "max_seq_length", None), "saved_from": source}


def default_prompt(model: Any) -> str | None:
    """The prompt the model puts before every input at inference (me5: "query: "), so training sees the same
    input text as `encode` will."""
    name = getattr(model, "default_prompt_name", None)
    return (model.prompts or {}).get(name or "", None)


def load_student(reference: str, config: Any, *, apply_options: bool = True) -> Any:
    """The SentenceTransformer a method trains, from a built-in name, a folder or a Hub id (`load_model`, so
    me5-small is the offline built-in), at the config's `max_seq_length` (capped at what the model allows),
    with `apply_student_options` unless a method applies them later. Its prompt is `default_prompt(model)`,
    which `fit` gives the trainer by default."""
    from polyembed.models.loading import as_sentence_transformer, load_model

    model, _ = as_sentence_transformer(load_model(reference))
    set_max_seq_length(model, config.max_seq_length)
    if apply_options:
        apply_student_options(model, config)
    return model


def add_adapter(model: Any, config: Any, train_embeddings: bool = False) -> tuple[int, int]:
    """A LoRA adapter as a `LoraOptions` config shapes it (nothing for adapter 'full'); (trainable, total)
    parameters. `fit` merges it back when the job's `final_model` is `merge_lora`."""
    from polyembed.models.lora import LoraSettings, add_lora

    total = sum(p.numel() for p in model.parameters())
    if config.adapter != "lora":
        return total, total
    settings = LoraSettings(config.lora_rank, config.lora_alpha, config.lora_dropout, list(config.lora_targets),
                            train_embeddings=train_embeddings)
    return add_lora(model, settings), total


def apply_student_options(student: Any, config: Any) -> None:
    """freeze_embeddings, freeze_layers and dropout of a `TrainConfig` on a SentenceTransformer student."""
    transformer = student[0].auto_model
    if config.freeze_embeddings:
        transformer.get_input_embeddings().weight.requires_grad_(False)
    if config.freeze_layers:
        freeze_lowest_layers(transformer, config.freeze_layers)
    if config.dropout is not None:
        set_dropout(transformer, config.dropout)


def reset_peak_memory() -> None:
    """Start a new peak-memory measurement, so that a run's peak is its own and not that of an earlier run in
    the same process (the modular pipeline trains its stages one after another). Linux resets the resident
    high-water mark through /proc/self/clear_refs; elsewhere the process peak stays."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5", encoding="ascii")


def peak_memory_mb() -> float:
    """Peak resident memory since the last `reset_peak_memory` (CPU, Linux: VmHWM; elsewhere the process
    peak), or the peak CUDA allocation when training on a GPU."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
