"""The parallel bottleneck adapter: identity at start, bit-identical when off, trainable alone, saved apart."""

from __future__ import annotations

import json
import math

import pytest
import torch

from polyembed.errors import PolyembedError
from polyembed.models.parallel_adapter import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    ParallelAdapter,
    ParallelAdapterConfig,
    add_parallel_adapters,
    freeze_all_but_parallel_adapters,
    load_parallel_adapters,
    parallel_adapter_blocks,
    parallel_adapters_off,
    save_parallel_adapters,
    set_parallel_adapters_active,
)
from tests.helpers import TRAINING_TEXTS, tiny_sentence_transformer


@pytest.fixture()
def encoder(tmp_path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_sentence_transformer(tmp_path / "tiny", seed=0)), device="cpu")


def _embed(model) -> torch.Tensor:
    model.eval()
    with torch.no_grad():
        return model.encode(TRAINING_TEXTS, convert_to_tensor=True, batch_size=4)


def _train_adapters(model, steps: int = 5) -> None:
    """A few steps that move the adapters: pull every sentence towards a fixed random direction."""
    freeze_all_but_parallel_adapters(model)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    target = torch.nn.functional.normalize(torch.randn(model.get_embedding_dimension()), dim=0)
    model.train()
    features = model.tokenize(TRAINING_TEXTS)
    for _ in range(steps):
        embeddings = model(dict(features))["sentence_embedding"]
        loss = -(torch.nn.functional.normalize(embeddings, dim=-1) @ target).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test_the_adapter_is_adapterhubs_parallel_bottleneck() -> None:
    config = ParallelAdapterConfig()
    adapter = ParallelAdapter(32, config.reduction_factor, config.scaling)
    assert adapter.down.out_features == 16 and adapter.up.out_features == 32  # reduction factor 2
    assert torch.count_nonzero(adapter.up.weight) == 0 and torch.count_nonzero(adapter.down.weight) > 0
    x = torch.randn(3, 32)
    assert torch.equal(adapter(x), torch.zeros(3, 32))  # identity at initialisation
    torch.nn.init.normal_(adapter.up.weight)
    expected = 4.0 * (torch.relu(x @ adapter.down.weight.T + adapter.down.bias) @ adapter.up.weight.T + adapter.up.bias)
    assert torch.allclose(adapter(x), expected, atol=1e-6)  # scaling 4.0 times up(relu(down(x)))


def test_a_fresh_adapter_leaves_the_embeddings_bit_identical(encoder) -> None:
    before = _embed(encoder)
    count = add_parallel_adapters(encoder)
    assert len(parallel_adapter_blocks(encoder)) == 2  # one beside each of the two feed-forward blocks
    assert count == 2 * (32 * 16 + 16 + 16 * 32 + 32)
    assert torch.equal(_embed(encoder), before)


def test_trained_adapters_move_cross_mode_and_never_mono_mode(encoder) -> None:
    before = _embed(encoder)
    base_weights = {k: v.clone() for k, v in encoder.state_dict().items() if "parallel_adapter" not in k}
    add_parallel_adapters(encoder)
    trainable = freeze_all_but_parallel_adapters(encoder)
    assert trainable == sum(p.numel() for p in encoder.parameters() if p.requires_grad)
    _train_adapters(encoder)
    after = _embed(encoder)
    assert not torch.allclose(after, before, atol=1e-3)  # the adapters learnt something
    with parallel_adapters_off(encoder):
        assert torch.equal(_embed(encoder), before)  # monolingual mode: bit-identical
    assert torch.equal(_embed(encoder), after)  # the context manager restored the adapters
    set_parallel_adapters_active(encoder, False)
    assert torch.equal(_embed(encoder), before)
    # the encoder's own weights did not move (keys gain a `.base.` level inside wrapped blocks)
    now = {k.replace(".output.base.", ".output."): v for k, v in encoder.state_dict().items()
           if "parallel_adapter" not in k}
    assert now.keys() == base_weights.keys() and all(torch.equal(now[k], base_weights[k]) for k in now)


def test_adapters_round_trip_through_their_own_files(encoder, tmp_path) -> None:
    from sentence_transformers import SentenceTransformer

    add_parallel_adapters(encoder, ParallelAdapterConfig(reduction_factor=4, scaling=2.0))
    _train_adapters(encoder)
    trained = _embed(encoder)
    save_parallel_adapters(encoder, tmp_path / "adapter")
    saved = json.loads((tmp_path / "adapter" / CONFIG_FILE).read_text())
    assert saved == {"reduction_factor": 4, "scaling": 2.0, "layers": 2}
    fresh = SentenceTransformer(str(tmp_path / "tiny"), device="cpu")
    load_parallel_adapters(fresh, tmp_path / "adapter")
    assert torch.equal(_embed(fresh), trained)
    assert parallel_adapter_blocks(fresh)[0].parallel_adapter.down.out_features == 8


def test_bad_adapter_folders_and_models_are_clear_errors(encoder, tmp_path) -> None:
    folder = tmp_path / "adapter"
    with pytest.raises(PolyembedError, match="no parallel adapters"):
        save_parallel_adapters(encoder, folder)
    with pytest.raises(PolyembedError, match=f"{CONFIG_FILE}: missing"):
        load_parallel_adapters(encoder, folder)
    add_parallel_adapters(encoder)
    with pytest.raises(PolyembedError, match="already has parallel adapters"):
        add_parallel_adapters(encoder)
    save_parallel_adapters(encoder, folder)
    (folder / WEIGHTS_FILE).write_bytes(b"not safetensors")
    with pytest.raises(PolyembedError, match=f"{WEIGHTS_FILE}: unreadable"):
        load_parallel_adapters(torch.nn.Sequential(), folder)
    with pytest.raises(PolyembedError, match="no transformer feed-forward block"):
        add_parallel_adapters(torch.nn.Sequential(torch.nn.Linear(2, 2)))
    with pytest.raises(PolyembedError, match="reduction_factor"):
        ParallelAdapterConfig(reduction_factor=0)
    with pytest.raises(PolyembedError, match="scaling"):
        ParallelAdapterConfig(scaling=math.inf)
