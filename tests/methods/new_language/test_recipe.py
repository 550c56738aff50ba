"""`polyembed train new-language`: the documented command on tiny files without a data root ends with the
before/after table (log, card, training.json); non-commercial registry data needs --allow-noncommercial."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyembed.cli import app
from polyembed.config import build_config
from polyembed.errors import PolyembedError
from polyembed.eval.api import model_languages
from polyembed.methods.new_language.config import NewLanguageConfig
from polyembed.methods.new_language.recipe import prepare
from tests.helpers import PAIRS, tiny_sentence_transformer

pytestmark = pytest.mark.usefixtures("offline_cache")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("new-language")
    (root / "my.en").write_text("".join(f"{en}\n" for en, _ in PAIRS), encoding="utf-8")
    (root / "my.yo").write_text("".join(f"{other}\n" for _, other in PAIRS), encoding="utf-8")
    return {"model": tiny_sentence_transformer(root / "base", seed=0),
            "teacher": tiny_sentence_transformer(root / "teacher", seed=1), "root": root}


def test_the_documented_command_trains_on_your_files_alone_and_ends_with_before_and_after(
        tiny: dict[str, Path], tmp_path: Path, no_data_root: None) -> None:
    out = tmp_path / "runs" / "yo"
    files = f"yo={tiny['root'] / 'my.en'},{tiny['root'] / 'my.yo'}"
    result = CliRunner().invoke(app, [
        "train", "new-language", "--parallel-files", files, "--output-dir", str(out),
        # tiny models in place of me5-small and minilm-en, and a tiny budget
        "--student", str(tiny["model"]), "--teacher", str(tiny["teacher"]), "--max-steps", "4",
        "--batch-size", "8", "--precision", "fp32"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "training.json").read_text(encoding="utf-8"))
    [row] = summary["details"]["held_out"]["rows"]
    assert row["subset"].startswith("yo") and row["n"] == len(PAIRS) // 5  # a fifth of 80 pairs held out
    assert 0 <= row["before"] <= 100 and 0 <= row["after"] <= 100
    card = (out / "model" / "README.md").read_text(encoding="utf-8")
    assert f"## Compared with `{tiny['model']}`" in card and "| held-out-retrieval | yo" in card
    assert "mafand" not in card.lower()  # the user's files only: no registry dataset was read
    assert model_languages(str(out / "model")) == ["en", "yo"]  # what `eval --baseline` marks as trained


def test_nothing_to_train_on_is_said_before_anything_loads(tmp_path: Path, no_data_root: None) -> None:
    config, origin = build_config(NewLanguageConfig, None, {"output_dir": str(tmp_path / "run")})
    with pytest.raises(PolyembedError, match="--parallel-files"):
        prepare(config, origin)


def test_non_commercial_registry_data_needs_consent(tiny: dict[str, Path], tmp_path: Path,
                                                    shared_data: Path) -> None:
    options = {"parallel_files": [f"yo={tiny['root'] / 'my.en'},{tiny['root'] / 'my.yo'}"], "datasets": ["mafand-mt"],
               "data_root": str(shared_data), "output_dir": str(tmp_path / "run")}
    config, origin = build_config(NewLanguageConfig, None, options)
    with pytest.raises(PolyembedError, match="non-commercial use only; pass --allow-noncommercial"):
        prepare(config, origin)
    config, origin = build_config(NewLanguageConfig, None, {**options, "allow_noncommercial": True})
    bitext = prepare(config, origin)
    assert {(s.name, s.language) for s in bitext.train} >= {("mafand-mt", "yo")}
