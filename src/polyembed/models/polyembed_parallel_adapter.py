"""Parallel bottleneck adapters, and a sentence-transformers module that loads them: self-contained on purpose.

Why self-contained: `write_bundle` copies this file verbatim into every modular bundle, and the bundle's
`router_config.json` names `polyembed_parallel_adapter.ParallelAdapterTransformer` for each language that has a
cross-lingual alignment (CLA) adapter. So `SentenceTransformer(bundle, trust_remote_code=True)` loads the bundle
with its adapters where polyembed is not installed, the way Hugging Face repositories ship their modeling code.
The file therefore imports only torch, safetensors and sentence-transformers; polyembed's
`models/parallel_adapter.py` (adding, freezing, switching, checked saving and loading) builds on the classes
here. The adapter is AdapterHub's `ParBnConfig` (see that module for the paper and the equation).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import torch
from sentence_transformers.base.modules import Transformer
from torch import nn

CONFIG_FILE = "parallel_adapter.json"
WEIGHTS_FILE = "parallel_adapter.safetensors"


class ParallelAdapter(nn.Module):
    """`scaling * up(relu(down(x)))`, bottleneck = hidden / reduction_factor; identity at initialisation
    (zero `up`), `down` Kaiming-uniform as in `ParBnConfig`."""

    def __init__(self, hidden_size: int, reduction_factor: float, scaling: float) -> None:
        super().__init__()
        bottleneck = max(1, int(hidden_size // reduction_factor))
        self.down = nn.Linear(hidden_size, bottleneck)
        self.up = nn.Linear(bottleneck, hidden_size)
        self.scaling = scaling
        nn.init.kaiming_uniform_(self.down.weight, a=math.sqrt(5))
        nn.init.zeros_(self.down.bias)
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scaling * self.up(torch.relu(self.down(x)))


class FeedForwardOutputWithParallelAdapter(nn.Module):
    """Wraps a feed-forward output module (`dense`, `dropout`, `LayerNorm`, forward(hidden, input)) and adds the
    adapter beside it; inactive, it calls the wrapped module unchanged."""

    base: Any  # the wrapped module, duck-typed: its dense, dropout and LayerNorm

    def __init__(self, base: nn.Module, adapter: ParallelAdapter) -> None:
        super().__init__()
        self.base = base
        self.parallel_adapter = adapter
        self.active = True

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        if not self.active:
            return self.base(hidden_states, input_tensor)
        hidden_states = self.base.dropout(self.base.dense(hidden_states))
        return self.base.LayerNorm(hidden_states + self.parallel_adapter(input_tensor) + input_tensor)


def feed_forward_outputs(model: nn.Module) -> Iterator[tuple[nn.Module, str, nn.Module]]:
    """(parent layer, attribute, module) of every transformer feed-forward output: a layer's `output` beside
    its `intermediate` (BERT, XLM-R, MPNet, ELECTRA...), with dense, dropout and LayerNorm."""
    for layer in model.modules():
        output = getattr(layer, "output", None)
        if getattr(layer, "intermediate", None) is None or not isinstance(output, nn.Module):
            continue
        if all(isinstance(getattr(output, name, None), nn.Module) for name in ("dense", "dropout", "LayerNorm")):
            yield layer, "output", output


def adapter_blocks(model: nn.Module) -> list[FeedForwardOutputWithParallelAdapter]:
    """The wrapped feed-forward outputs of `model`, in layer order (empty if it has no adapters)."""
    return [m for m in model.modules() if isinstance(m, FeedForwardOutputWithParallelAdapter)]


def wrap_feed_forward_outputs(model: nn.Module, reduction_factor: float, scaling: float) -> int:
    """Put a fresh adapter beside every feed-forward output of `model`; returns the adapters' parameter count."""
    count = 0
    for layer, name, output in list(feed_forward_outputs(model)):
        dense = cast(nn.Linear, output.dense)
        adapter = ParallelAdapter(dense.out_features, reduction_factor, scaling).to(dense.weight.device,
                                                                                   dense.weight.dtype)
        setattr(layer, name, FeedForwardOutputWithParallelAdapter(output, adapter))
        count += sum(p.numel() for p in adapter.parameters())
    return count


def adapter_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """Adapter weights only, keyed `layers.{i}.{down,up}.{weight,bias}` in layer order."""
    return {
        f"layers.{index}.{key}": value.detach().clone().contiguous()
        for index, block in enumerate(adapter_blocks(model))
        for key, value in block.parallel_adapter.state_dict().items()
    }


def load_adapter_state(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """Load `adapter_state_dict`-keyed weights into the adapters of `model` (RuntimeError naming the layer that
    does not fit)."""
    for index, block in enumerate(adapter_blocks(model)):
        prefix = f"layers.{index}."
        try:
            block.parallel_adapter.load_state_dict(
                {key[len(prefix) :]: value for key, value in weights.items() if key.startswith(prefix)}
            )
        except RuntimeError as err:
            raise RuntimeError(f"layer {index} does not fit this encoder ({err})") from None


@contextmanager
def adapters_unwrapped(model: nn.Module) -> Iterator[None]:
    """The model's own modules in place of the wrapped blocks (so it saves as the plain encoder)."""
    wrapped = [(parent, name, module) for parent in model.modules() for name, module in parent.named_children()
               if isinstance(module, FeedForwardOutputWithParallelAdapter)]
    try:
        for parent, name, module in wrapped:
            setattr(parent, name, module.base)
        yield
    finally:
        for parent, name, module in wrapped:
            setattr(parent, name, module)


class ParallelAdapterTransformer(Transformer):
    """A sentence-transformers `Transformer` with the CLA adapters saved in its folder, active: a modular
    bundle's language encoder in cross-lingual mode. Saves as the plain encoder plus the adapter files."""

    parallel_adapter_config: dict[str, float]

    @classmethod  # its keyword arguments pass through to Transformer.load, which names them one by one
    def load(  # type: ignore[override]
        cls, model_name_or_path: str, subfolder: str = "", **kwargs: Any
    ) -> ParallelAdapterTransformer:
        from safetensors.torch import load_file
        from sentence_transformers.util import load_file_path

        module = super().load(model_name_or_path, subfolder=subfolder, **kwargs)
        hub = {key: kwargs[key] for key in ("token", "cache_folder", "revision", "local_files_only") if key in kwargs}
        config_path, weights_path = (load_file_path(model_name_or_path, name, subfolder=subfolder, **hub)
                                     for name in (CONFIG_FILE, WEIGHTS_FILE))
        if not config_path or not weights_path:
            raise FileNotFoundError(f"{model_name_or_path}/{subfolder}: {CONFIG_FILE} or {WEIGHTS_FILE} is missing")
        config = json.loads(Path(config_path).read_text(encoding="utf-8"))
        module.parallel_adapter_config = {key: float(config[key]) for key in ("reduction_factor", "scaling")}
        wrap_feed_forward_outputs(module.model, **module.parallel_adapter_config)
        if len(adapter_blocks(module.model)) != int(config["layers"]):
            raise ValueError(f"{config_path}: saved for {config['layers']} layers, the encoder has "
                             f"{len(adapter_blocks(module.model))}")
        load_adapter_state(module.model, load_file(weights_path))
        return module

    def save(self, output_path: str, *args: Any, **kwargs: Any) -> None:
        from safetensors.torch import save_file

        blocks = adapter_blocks(self.model)
        with adapters_unwrapped(self.model):
            super().save(output_path, *args, **kwargs)
        if blocks:
            config = {**self.parallel_adapter_config, "layers": len(blocks)}
            save_file(adapter_state_dict(self.model), str(Path(output_path) / WEIGHTS_FILE))
            (Path(output_path) / CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")
