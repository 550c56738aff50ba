"""Parallel bottleneck adapter: the cross-lingual alignment (CLA) adapter of modular sentence encoders.

Why our own module: the modular encoders paper (Huang et al. 2024) aligns each language encoder to the English
pivot with AdapterHub's parallel bottleneck adapter (`ParBnConfig`), and peft has no such type (peft issues 244,
2654), while AdapterHub's `adapters` package pins an older transformers. The module is small:

    out = LayerNorm(dropout(dense(h)) + x + scaling * up(relu(down(x))))

where `x` is the feed-forward block's input, `dense(h)` its output projection and `LayerNorm(... + x)` its
residual normalisation; the adapter term is added beside the block, before its LayerNorm. As in `ParBnConfig`:
reduction factor 2, scaling 4.0, `down` Kaiming-uniform, `up` zero, so a fresh adapter is exactly the identity.

Switching the adapters off (`set_parallel_adapters_active(model, False)`) runs the block's own forward, so the
encoder's monolingual embeddings are bit-identical to those without adapters: the paper's point that alignment
never disturbs monolingual quality. Adapter weights are saved apart from the encoder (`parallel_adapter.json` +
`parallel_adapter.safetensors`), the way peft saves LoRA weights. The layers themselves live in the
self-contained `polyembed_parallel_adapter.py`, which modular bundles carry so that plain sentence-transformers
loads them.

Example:

    add_parallel_adapters(encoder)                   # every feed-forward block of a BERT/XLM-R/MPNet encoder
    freeze_all_but_parallel_adapters(encoder)        # train only the adapters
    ...
    set_parallel_adapters_active(encoder, False)     # monolingual mode: the encoder as it was
    save_parallel_adapters(encoder, "de-encoder")
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

from polyembed.errors import PolyembedError
from polyembed.models.polyembed_parallel_adapter import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    FeedForwardOutputWithParallelAdapter,
    ParallelAdapter,
    adapter_blocks,
    adapter_state_dict,
    adapters_unwrapped,
    feed_forward_outputs,
    load_adapter_state,
    wrap_feed_forward_outputs,
)
from polyembed.outputs import atomic_write

__all__ = ["CONFIG_FILE", "WEIGHTS_FILE", "FeedForwardOutputWithParallelAdapter", "ParallelAdapter",
           "ParallelAdapterConfig", "add_parallel_adapters", "freeze_all_but_parallel_adapters",
           "load_parallel_adapters", "parallel_adapter_blocks", "parallel_adapter_state_dict",
           "parallel_adapters_off", "save_parallel_adapters", "save_with_parallel_adapters",
           "set_parallel_adapters_active"]


@dataclass(frozen=True)
class ParallelAdapterConfig:
    """AdapterHub's `ParBnConfig` defaults: bottleneck = hidden / reduction_factor, output scaled by `scaling`."""

    reduction_factor: float = 2.0
    scaling: float = 4.0

    def __post_init__(self) -> None:
        if not self.reduction_factor > 0 or not math.isfinite(self.reduction_factor):
            raise PolyembedError(f"parallel adapter: reduction_factor must be > 0, got {self.reduction_factor}")
        if not math.isfinite(self.scaling):
            raise PolyembedError(f"parallel adapter: scaling must be a finite number, got {self.scaling}")


def parallel_adapter_blocks(model: nn.Module) -> list[FeedForwardOutputWithParallelAdapter]:
    """The wrapped feed-forward outputs of `model`, in layer order (empty if it has no adapters)."""
    return adapter_blocks(model)


def add_parallel_adapters(model: nn.Module, config: ParallelAdapterConfig | None = None) -> int:
    """Add a parallel adapter beside every feed-forward block of `model` (a transformers encoder or a
    sentence-transformers model); returns the number of adapter parameters. The model's outputs are unchanged
    until the adapters are trained."""
    config = config or ParallelAdapterConfig()
    if parallel_adapter_blocks(model):
        raise PolyembedError("parallel adapter: this model already has parallel adapters")
    if not any(True for _ in feed_forward_outputs(model)):
        raise PolyembedError(
            f"parallel adapter: {type(model).__name__} has no transformer feed-forward block "
            "(a layer with `intermediate` and an `output` of dense, dropout and LayerNorm)"
        )
    count = wrap_feed_forward_outputs(model, config.reduction_factor, config.scaling)
    model._polyembed_parallel_adapter_config = config  # type: ignore[assignment]
    return count


def set_parallel_adapters_active(model: nn.Module, active: bool) -> None:
    """Switch every parallel adapter on (cross-lingual mode) or off (monolingual mode: the encoder as it was)."""
    for block in _require_blocks(model):
        block.active = active


@contextmanager
def parallel_adapters_off(model: nn.Module) -> Iterator[None]:
    """Run a block of code with the adapters off, restoring each one's previous state afterwards."""
    blocks = _require_blocks(model)
    states = [block.active for block in blocks]
    try:
        for block in blocks:
            block.active = False
        yield
    finally:
        for block, state in zip(blocks, states, strict=True):
            block.active = state


def freeze_all_but_parallel_adapters(model: nn.Module) -> int:
    """requires_grad only on adapter weights (CLA training keeps the language encoder fixed); returns their count."""
    for parameter in model.parameters():
        parameter.requires_grad = False
    trainable = 0
    for block in _require_blocks(model):
        for parameter in block.parallel_adapter.parameters():
            parameter.requires_grad = True
            trainable += parameter.numel()
    return trainable


def parallel_adapter_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """Adapter weights only, keyed `layers.{i}.{down,up}.{weight,bias}` in layer order."""
    _require_blocks(model)
    return adapter_state_dict(model)


def save_parallel_adapters(model: nn.Module, folder: str | Path) -> None:
    """Write the adapter config and weights into `folder` (each file atomically)."""
    from safetensors.torch import save as save_tensors

    folder = Path(folder)
    config = getattr(model, "_polyembed_parallel_adapter_config", None) or ParallelAdapterConfig()
    weights = parallel_adapter_state_dict(model)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_write(folder / WEIGHTS_FILE, "wb", encoding=None) as handle:
        handle.write(save_tensors(weights))
    with atomic_write(folder / CONFIG_FILE) as handle:
        handle.write(json.dumps({**asdict(config), "layers": len(parallel_adapter_blocks(model))}, indent=2))


def load_parallel_adapters(model: nn.Module, folder: str | Path) -> None:
    """Load the adapter weights saved in `folder` into `model`, adding the adapters first if it has none (a
    model that has them, e.g. in training, gets the saved weights); errors name the file at fault."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    folder = Path(folder)
    config_path, weights_path = folder / CONFIG_FILE, folder / WEIGHTS_FILE
    for path in (config_path, weights_path):
        if not path.is_file():
            raise PolyembedError(f"{path}: missing (a folder saved by save_parallel_adapters has both files)")
    try:
        saved = json.loads(config_path.read_text(encoding="utf-8"))
        config = ParallelAdapterConfig(float(saved["reduction_factor"]), float(saved["scaling"]))
        layers = int(saved["layers"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
        raise PolyembedError(f"{config_path}: not a parallel adapter config ({err})") from None
    try:
        weights = load_file(str(weights_path))
    except (SafetensorError, OSError) as err:
        raise PolyembedError(f"{weights_path}: unreadable adapter weights ({err})") from None
    if not parallel_adapter_blocks(model):
        add_parallel_adapters(model, config)
    blocks = parallel_adapter_blocks(model)
    if len(blocks) != layers:
        raise PolyembedError(f"{config_path}: saved for {layers} layers, this encoder has {len(blocks)}")
    try:
        load_adapter_state(model, weights)
    except RuntimeError as err:
        raise PolyembedError(f"{weights_path}: {err}") from None


def _require_blocks(model: nn.Module) -> list[FeedForwardOutputWithParallelAdapter]:
    blocks = parallel_adapter_blocks(model)
    if not blocks:
        raise PolyembedError("parallel adapter: this model has no parallel adapters (add_parallel_adapters first)")
    return blocks


def save_with_parallel_adapters(model: SentenceTransformer, target: str | Path) -> None:
    """Save a SentenceTransformer with parallel adapters as its plain encoder (the blocks unwrapped, so any
    sentence-transformers user loads it) plus the adapter files beside it (`load_parallel_adapters`)."""
    with adapters_unwrapped(model):
        model.save(str(target), create_model_card=False)
    save_parallel_adapters(model, target)
