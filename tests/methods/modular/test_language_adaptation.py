"""The LA stage on tiny models: BERT masking, the tied MLM head, LoRA merged into the weights, held-out
perplexity before and after, exact resume after SIGKILL, and bad input stopped before any model loads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from polyembed.errors import PolyembedError
from polyembed.methods.base.registry import train
from polyembed.methods.modular.losses import IGNORE_INDEX, mask_tokens
from polyembed.models.lora import LoraSettings, add_lora, has_lora, merge_lora
from tests.helpers import PAIRS, killed_and_uninterrupted_runs, tiny_sentence_transformer


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("modular-la")
    text = root / "de.txt"
    text.write_text("".join(f"{de}\n" for _, de in PAIRS), encoding="utf-8")
    return {"root": root, "model": tiny_sentence_transformer(root / "base", seed=0, mask_token=True), "text": text}


pytestmark = pytest.mark.usefixtures("offline_cache")


def _options(tiny: dict[str, Path], out: Path, **extra: object) -> dict[str, object]:
    return {"student": str(tiny["model"]), "language": "de", "datasets": [], "text_files": [str(tiny["text"])],
            "batch_size": 8, "max_steps": 30, "eval_steps": 15, "learning_rate": 5e-3, "heldout_sentences": 16,
            "precision": "fp32", "output_dir": str(out), **extra}


def test_masking_follows_bert_and_never_touches_special_tokens() -> None:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 100, (64, 50), generator=generator)
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    masked, labels = mask_tokens(ids, special, mask_id=1, vocabulary_size=100, probability=0.15, generator=generator)
    chosen = labels != IGNORE_INDEX
    assert not chosen[special].any() and torch.equal(labels[chosen], ids[chosen])
    assert torch.equal(masked[~chosen], ids[~chosen])
    share = chosen.sum().item() / (~special).sum().item()
    assert 0.12 < share < 0.18
    as_mask = (masked[chosen] == 1).float().mean().item()
    kept = (masked[chosen] == ids[chosen]).float().mean().item()
    assert 0.74 < as_mask < 0.86 and 0.06 < kept < 0.16


def test_merged_lora_embeds_as_the_adapter_did(tiny: dict[str, Path]) -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny["model"]), device="cpu")
    add_lora(model, LoraSettings(rank=4, train_embeddings=True))
    with torch.no_grad():  # LoRA's B starts at zero: give the adapter and the embedding copy a real change
        for name, parameter in model.named_parameters():
            if "lora_B" in name or "modules_to_save" in name:
                parameter.add_(0.05 * torch.randn_like(parameter))
    sentences = [de for _, de in PAIRS[:6]]
    with_adapter = model.encode(sentences)
    merge_lora(model)
    assert not has_lora(model)
    assert np.allclose(model.encode(sentences), with_adapter, atol=1e-5)


def test_language_adaptation_lowers_heldout_perplexity_and_saves_a_plain_model(tiny, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    result = train("modular-la", show_progress=False, **_options(tiny, tmp_path / "run"))
    details = result.details
    assert details["text"]["train_sentences"] == len(PAIRS) - 16 and details["text"]["heldout_sentences"] == 16
    assert details["trainable_parameters"] < details["model_parameters"]
    before = details["before"]["heldout_mlm_loss"]
    assert result.best["eval_heldout_mlm_loss"] < before - 0.5, (before, result.best)
    saved = Path(result.model_dir)
    assert not (saved / "adapter_config.json").exists() and (saved / "model.safetensors").is_file()
    assert (Path(result.output_dir) / "checkpoints" / "checkpoint-30" / "mlm_head.safetensors").is_file()
    model = SentenceTransformer(str(saved), device="cpu")
    base = SentenceTransformer(str(tiny["model"]), device="cpu")
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in base.parameters())
    assert not np.allclose(model.encode(["die katze sieht das meer"]), base.encode(["die katze sieht das meer"]))


def test_full_fine_tuning_trains_every_weight(tiny, tmp_path: Path) -> None:
    result = train("modular-la", show_progress=False,
                   **_options(tiny, tmp_path / "full", adapter="full", max_steps=4, eval_steps=2))
    assert result.details["trainable_parameters"] == result.details["model_parameters"]


def test_sigkill_then_resume_matches_uninterrupted_run(tiny, tmp_path: Path) -> None:
    options = _options(tiny, tmp_path / "unused", max_steps=40, eval_steps=10, save_total_limit=10)
    a, b = killed_and_uninterrupted_runs("modular la", options, tmp_path, kill_at_step=20)
    assert a["steps"] == b["steps"] == 40
    for entry_a, entry_b in zip(a["history"], b["history"], strict=True):
        assert entry_a["eval_heldout_mlm_loss"] == pytest.approx(entry_b["eval_heldout_mlm_loss"], abs=1e-4)


@pytest.mark.parametrize(("extra", "message"), [
    ({"language": ""}, "no language given"),
    ({"language": "xq1"}, "unknown language 'xq1'"),
    ({"text_files": []}, "language 'de': 0 sentences for language adaptation"),
    ({"datasets": ["muse-dictionaries"]}, "has no sentences for MLM"),
])
def test_bad_input_fails_before_any_model_loads(tiny, tmp_path: Path, extra: dict, message: str) -> None:
    with pytest.raises(PolyembedError, match=message):
        train("modular-la", show_progress=False, **_options(tiny, tmp_path / "bad", student="no-such-model", **extra))
    assert not (tmp_path / "bad").exists()
