"""The modular pipeline end to end on the real data root with a tiny base model (a few steps per stage): every
stage's run folder, the bundle, pipeline.json, and a rerun that skips the finished stages."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from polyembed.errors import PolyembedError
from polyembed.methods.modular.pipeline import ModularPipelineConfig, run_pipeline
from tests.helpers import tiny_sentence_transformer

pytestmark = pytest.mark.usefixtures("offline_cache")


def test_pipeline_builds_a_bundle_and_resumes_by_skipping_finished_stages(shared_data: Path, tmp_path: Path) -> None:
    from polyembed.models.loading import load_model

    base = tiny_sentence_transformer(tmp_path / "base", seed=0, mask_token=True)
    config = ModularPipelineConfig(languages=["de"], student=str(base), vocabulary="prune", la_steps=2, se_steps=2,
                                   cla_steps=2, batch_size=8, precision="fp32", output_dir=str(tmp_path / "run"),
                                   cla_parallel_batches=2, cla_dev_measure="sts")
    summary = run_pipeline(config, show_progress=False)  # max_seq_length 128 > the tiny model's 64: capped
    assert set(summary["languages"]["de"]["stages"]) == {"la", "se", "cla"}
    alignment = json.loads((tmp_path / "run" / "de" / "cla" / "training.json").read_text(encoding="utf-8"))
    assert alignment["details"]["batches_per_cycle"] == {"paraphrase": 1, "parallel": 2}
    assert "eval_dev_sts_spearman" in alignment["best"]  # the checkpoint kept by en-de dev STS
    assert set(summary["languages"]["en"]["stages"]) == {"se"}
    assert summary["languages"]["de"]["encoder_parameters"] < summary["base_parameters"]  # pruned vocabulary
    for stage in ("la", "se", "cla"):
        assert (tmp_path / "run" / "de" / stage / "training.json").is_file()
    bundle = load_model(summary["bundle"])
    vectors = bundle.encode(["der hund sieht das meer"], language="de", mode="cross")
    assert vectors.shape == (1, 32) and np.isfinite(vectors).all()
    written = (tmp_path / "run" / "de" / "la" / "training.json").stat().st_mtime_ns
    again = run_pipeline(config, show_progress=False)
    assert (tmp_path / "run" / "de" / "la" / "training.json").stat().st_mtime_ns == written
    assert again["languages"] == json.loads((tmp_path / "run" / "pipeline.json").read_text())["languages"]
    # a rerun that would change what a finished stage trained on is refused, not silently reused
    changed = dataclasses.replace(config, skip_la=["de"])
    with pytest.raises(PolyembedError, match=r"de/se holds a finished stage trained with other options \(student: "):
        run_pipeline(changed, show_progress=False)


def test_cla_options_apply_to_bilingual_alignment_only(tmp_path: Path) -> None:
    with pytest.raises(PolyembedError, match="^cla_paraphrase_batches, .* bilingual CLA only, not alignment all-pairs"):
        run_pipeline(ModularPipelineConfig(languages=["de"], alignment="all-pairs", cla_dev_measure="sts",
                                           output_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()


def test_english_is_the_pivot_not_a_listed_language(tmp_path: Path) -> None:
    with pytest.raises(PolyembedError, match="English is the pivot"):
        run_pipeline(ModularPipelineConfig(languages=["en", "de"], output_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()


def test_a_language_without_paraphrases_fails_before_any_training(shared_data: Path, tmp_path: Path) -> None:
    config = ModularPipelineConfig(languages=["de", "sw"], output_dir=str(tmp_path / "run"))
    with pytest.raises(PolyembedError, match=r"language 'sw': .*1 paraphrase pairs"):
        run_pipeline(config, show_progress=False)
    assert not (tmp_path / "run").exists()


def test_all_pairs_alignment_is_one_joint_stage_for_every_language(shared_data: Path, tmp_path: Path) -> None:
    from polyembed.models.loading import load_model

    base = tiny_sentence_transformer(tmp_path / "base", seed=0)
    config = ModularPipelineConfig(languages=["de", "ru"], student=str(base), vocabulary="keep", skip_la=["all"],
                                   se_steps=2, cla_steps=2, batch_size=8, max_pairs=40, dev_pairs=10,
                                   alignment="all-pairs", precision="fp32", output_dir=str(tmp_path / "run"))
    summary = run_pipeline(config, show_progress=False)
    joint = summary["languages"]["de"]["stages"]["cla"]
    assert joint == summary["languages"]["ru"]["stages"]["cla"] and joint["steps"] == 4  # cla_steps x 2 languages
    bundle = load_model(summary["bundle"])
    assert bundle.languages == ["de", "en", "ru"]
    assert (tmp_path / "run" / "bundle" / "ru" / "parallel_adapter.json").is_file()
    assert not (tmp_path / "run" / "bundle" / "en" / "parallel_adapter.json").exists()


def test_skip_la_names_languages_of_the_pipeline(tmp_path: Path) -> None:
    from polyembed.config import build_config

    config = ModularPipelineConfig(languages=["de", "kk"], skip_la=["kaz"])
    assert config.skips_la("kk") and not config.skips_la("de")
    assert ModularPipelineConfig(languages=["de", "kk"], skip_la=["all"]).skips_la("de")
    with pytest.raises(PolyembedError, match=r"^skip_la: 'ru' is not one of the languages \(de, kk\) nor 'all'"):
        ModularPipelineConfig(languages=["de", "kk"], skip_la=["ru"])
    path = tmp_path / "pipeline.yaml"
    path.write_text("languages: [de, kk]\nskip_la:\n  - kk\n  - ru\n", encoding="utf-8")
    with pytest.raises(PolyembedError, match=r"pipeline.yaml:4: skip_la: 'ru' is not one of the languages"):
        build_config(ModularPipelineConfig, path)
