"""All-pairs CLA on tiny encoders and the real data root: one Router over the language encoders, pairs between
every two languages, adapters only (a fixed English pivot unless `pivot_adapter`), a bundle as the model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from polyembed.errors import PolyembedError
from polyembed.methods.base.registry import train
from tests.helpers import killed_and_uninterrupted_runs, resume_tolerance, tiny_sentence_transformer


@pytest.fixture(scope="module")
def encoders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("all-pairs")
    return {code: tiny_sentence_transformer(root / code, seed=seed) for seed, code in enumerate(("en", "de", "ru"))}


pytestmark = pytest.mark.usefixtures("offline_cache")


def _options(encoders: dict[str, Path], out: Path, shared_data: Path, **extra: object) -> dict[str, object]:
    return {"encoders": [f"{code}={folder}" for code, folder in encoders.items()], "max_pairs": 40, "dev_pairs": 10,
            "batch_size": 8, "max_steps": 8, "eval_steps": 4, "learning_rate": 1e-2, "precision": "fp32",
            "output_dir": str(out), "data_root": str(shared_data), **extra}


@pytest.mark.realdata
def test_every_language_pair_trains_its_adapters_and_english_stays_fixed(encoders, shared_data, tmp_path) -> None:
    from polyembed.models.loading import load_model

    result = train("modular-cla-all-pairs", show_progress=False, **_options(encoders, tmp_path / "run", shared_data))
    assert result.details["alignment"]["train_pairs"] == {"de-en": 80, "ru-en": 80, "de-ru": 40}
    bundle = load_model(result.model_dir)
    assert bundle.languages == ["de", "en", "ru"]
    assert not (Path(result.model_dir) / "en" / "parallel_adapter.json").exists()
    sentences = ["der hund sieht das meer", "the dog sees the sea"]
    for code in ("en", "de", "ru"):
        untouched = SentenceTransformer(str(encoders[code]), device="cpu").encode(sentences)
        assert np.array_equal(bundle.encode(sentences, language=code, mode="mono"), untouched)
    assert np.array_equal(bundle.encode(sentences, language="en", mode="cross"),
                          SentenceTransformer(str(encoders["en"]), device="cpu").encode(sentences))
    assert not np.allclose(bundle.encode(sentences, language="de", mode="cross"),
                           SentenceTransformer(str(encoders["de"]), device="cpu").encode(sentences), atol=1e-4)


@pytest.mark.realdata
def test_with_a_pivot_adapter_english_adapts_too(encoders, shared_data, tmp_path) -> None:
    result = train("modular-cla-all-pairs", show_progress=False,
                   **_options(encoders, tmp_path / "run", shared_data, pivot_adapter=True, max_steps=2))
    assert (Path(result.model_dir) / "en" / "parallel_adapter.json").is_file()


@pytest.mark.realdata
def test_sigkill_then_resume_matches_uninterrupted_run(encoders, shared_data, tmp_path) -> None:
    options = _options(encoders, tmp_path / "unused", shared_data, max_steps=12, save_total_limit=10)
    a, b = killed_and_uninterrupted_runs("modular cla-all-pairs", options, tmp_path, kill_at_step=8)
    assert a["steps"] == b["steps"] == 12
    for entry_a, entry_b in zip(a["history"], b["history"], strict=True):
        assert entry_a["eval_dev_mean_accuracy"] == pytest.approx(entry_b["eval_dev_mean_accuracy"],
                                                                  abs=resume_tolerance())


@pytest.mark.realdata
@pytest.mark.parametrize(("encoders_option", "message"), [
    (["de={de}"], "give the English encoder"),
    (["en={en}", "de={tmp}/nothing"], "language 'de': .* is not a sentence-transformers folder"),
    (["en={en}", "de"], "expected LANG=FOLDER"),
])
def test_bad_encoders_fail_before_any_model_loads(encoders, shared_data, tmp_path, encoders_option, message) -> None:
    given = [spec.format(tmp=tmp_path, **{code: str(folder) for code, folder in encoders.items()})
             for spec in encoders_option]
    with pytest.raises(PolyembedError, match=message):
        train("modular-cla-all-pairs", show_progress=False,
              **{**_options(encoders, tmp_path / "run", shared_data), "encoders": given})
    assert not (tmp_path / "run").exists()
