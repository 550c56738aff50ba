"""The Single baselines on a tiny model and the real data root: one model over every language's SE pairs
(Single_m) or CLA pairs (Single_c), each language its own dataset; Single_mc continues a Single_m model."""

from __future__ import annotations

from pathlib import Path

import pytest
from sentence_transformers import SentenceTransformer

from polyembed.errors import PolyembedError
from polyembed.methods.base.registry import train
from tests.helpers import tiny_sentence_transformer


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_sentence_transformer(tmp_path_factory.mktemp("single") / "base", seed=0)


pytestmark = pytest.mark.usefixtures("offline_cache")


def _options(student: Path, out: Path, shared_data: Path, **extra: object) -> dict[str, object]:
    return {"student": str(student), "languages": ["en", "de", "kk"], "max_pairs": 48, "dev_pairs": 10,
            "batch_size": 8, "max_steps": 6, "eval_steps": 3, "precision": "fp32", "output_dir": str(out),
            "data_root": str(shared_data), **extra}


@pytest.mark.realdata
def test_single_m_then_single_c_train_one_model_on_every_languages_pairs(tiny_model, shared_data, tmp_path) -> None:
    mono = train("modular-single", show_progress=False, **_options(tiny_model, tmp_path / "m", shared_data))
    pairs = mono.details["pairs"]
    assert pairs["train_pairs"] == {"en": 48, "de": 48, "kk": 48} and pairs["dev_pairs"] == 30
    assert mono.steps == 6 and mono.details["trainable_parameters"] == mono.details["model_parameters"]
    # Single_mc: the cross-lingual pairs (no English dataset of its own) continue the Single_m model
    both = train("modular-single", show_progress=False,
                 **_options(Path(mono.model_dir), tmp_path / "mc", shared_data, pairs="cross-lingual"))
    assert both.details["pairs"]["train_pairs"] == {"de-paraphrase": 48, "de-parallel": 48, "kk-paraphrase": 48,
                                                   "kk-parallel": 48}
    before = SentenceTransformer(mono.model_dir, device="cpu").encode(["ein Hund"])
    after = SentenceTransformer(both.model_dir, device="cpu").encode(["ein Hund"])
    assert abs(before - after).max() > 1e-4


@pytest.mark.realdata
def test_a_language_without_pairs_is_named_before_any_model_loads(tiny_model, shared_data, tmp_path) -> None:
    with pytest.raises(PolyembedError, match=r"single model, language 'sw': .*paraphrase pairs"):
        train("modular-single", show_progress=False,
              **_options(tiny_model, tmp_path / "run", shared_data, languages=["de", "sw"]))
    assert not (tmp_path / "run").exists()
