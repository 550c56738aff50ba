"""`polyembed train modular pipeline --preset smoke` on me5-small and the real data root: the whole recipe
(pruned vocabularies, LA, SE, CLA, bundle) in about a minute, half of it pruning the vocabularies (the English
pivot's over all of Tatoeba-Challenge's English); slow (`make test-slow`), the tiny-model pipeline test
covers the path in the default run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from polyembed.cli import app


@pytest.mark.realdata
@pytest.mark.slow
def test_the_smoke_preset_builds_a_small_aligned_bundle(shared_data: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from sentence_transformers import SentenceTransformer

    from polyembed.models.loading import load_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "modular", "pipeline", "--preset", "smoke", "--languages", "kk",
                                      "--data-root", str(shared_data), "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "pipeline.json").read_text(encoding="utf-8"))
    assert summary["config"]["la_steps"] == 3 and summary["config"]["max_pairs"] == 64  # the preset's values
    for language in ("en", "kk"):  # pruned vocabularies: each encoder under half the base model
        assert summary["languages"][language]["encoder_parameters"] < summary["base_parameters"] / 2
        for stage in summary["languages"][language]["stages"].values():
            assert stage["steps"] == 3 and stage["wall_seconds"] > 0 and stage["peak_memory_mb"] > 100
    bundle = load_model(str(out / "bundle"))
    sentences = ["Мен бұл кітапты оқыдым.", "Бүгін ауа райы жақсы."]
    before_alignment = SentenceTransformer(str(out / "kk" / "se" / "model"), device="cpu").encode(sentences)
    assert np.array_equal(bundle.encode(sentences, language="kk", mode="mono"), before_alignment)
    assert (out / "bundle" / "kk" / "parallel_adapter.safetensors").is_file()  # three steps may keep identity
    english = ["The weather is nice today."]
    assert np.array_equal(bundle.encode(english, language="en", mode="mono"),
                          bundle.encode(english, language="en", mode="cross"))
