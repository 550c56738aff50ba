"""Every trained model folder has a model card: base model, method, languages, data licences, dev metrics; and
`polyembed eval` adds its scores to it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from polyembed.cli import app
from polyembed.config import build_config
from polyembed.data.registry import get_dataset
from polyembed.methods.base import get_method, train
from polyembed.methods.base.model_card import CARD_FILE, append_evaluation, card_number, card_text
from polyembed.methods.base.trainer import TrainResult
from polyembed.methods.distill.config import DistillConfig
from tests.helpers import PAIRS, tiny_sentence_transformer

pytestmark = pytest.mark.usefixtures("offline_cache")


def _front_matter(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_a_trained_distillation_model_has_its_card(tmp_path: Path) -> None:
    teacher = tiny_sentence_transformer(tmp_path / "teacher", seed=0)
    student = tiny_sentence_transformer(tmp_path / "student", seed=1)
    tsv = tmp_path / "en-de.tsv"
    tsv.write_text("".join(f"{en}\t{de}\n" for en, de in PAIRS), encoding="utf-8")
    result = train("distill", teacher=str(teacher), student=str(student), languages=["de"], datasets=[],
                   parallel_files=[f"de={tsv}"], batch_size=8, max_steps=4, eval_steps=4, dev_pairs_per_source=10,
                   dev_sts_pairs=0, precision="fp32", output_dir=str(tmp_path / "run"), show_progress=False)
    text = (Path(result.model_dir) / CARD_FILE).read_text(encoding="utf-8")
    front = _front_matter(text)
    assert front["library_name"] == "sentence-transformers" and front["base_model"] == str(student)
    assert front["language"] == ["de", "en"] and "polyembed-distill" in front["tags"]
    assert f"| teacher | `{teacher}` |" in text and "| languages | de (and English) |" in text
    assert "https://arxiv.org/abs/2004.09813" in text and "| training | 4 steps" in text
    metric, value = next(iter((k, v) for k, v in result.best.items() if k != "epoch"))
    assert f"| {metric} | {card_number(value)} |" in text  # the kept model's dev measure
    assert "SentenceTransformer(" in text and "learning_rate:" in text  # how to load it, and the whole config


def test_the_card_lists_each_dataset_with_its_licence(tmp_path: Path) -> None:
    config, _ = build_config(DistillConfig, None, {"languages": ["ha", "sw"],
                                                   "datasets": ["mafand-mt", "tatoeba-challenge"]})
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    result = TrainResult(method="distill", output_dir=str(tmp_path), model_dir=str(model_dir), history=[],
                         best={}, best_checkpoint=None, steps=10, train_pairs_seen=320, train_seconds=1.0,
                         pairs_per_second=320.0, peak_memory_mb=1.0)
    text = card_text(get_method("distill"), config, result)
    for name in ("mafand-mt", "tatoeba-challenge"):
        info = get_dataset(name)
        assert f"| {name} | {info.licence} | {info.source} |" in text
    assert "non-commercial" in text and "No dev evaluation was logged." in text
    assert _front_matter(text)["datasets"] == ["mafand-mt", "tatoeba-challenge"]


def test_eval_adds_its_scores_to_the_card_and_a_rerun_replaces_them(tmp_path: Path) -> None:
    card = tmp_path / CARD_FILE
    card.write_text("# m\n\n## Evaluation\n\n<!-- polyembed-eval:start -->\nnone yet\n<!-- polyembed-eval:end -->\n"
                    "\n## Usage\n", encoding="utf-8")
    append_evaluation(tmp_path, [{"task": "sts17", "metric": "spearman", "languages": "en-en", "value": 80.0}], "a")
    append_evaluation(tmp_path, [{"task": "sts17", "metric": "spearman", "languages": "en-en", "value": 81.5},
                                 {"task": "tatoeba", "metric": "accuracy", "languages": "deu", "value": 90.0}], "b")
    text = card.read_text(encoding="utf-8")
    assert "| sts17 | en-en | spearman | 81.50 | b |" in text and "80.00" not in text
    assert "| tatoeba | deu | accuracy | 90.00 | b |" in text and text.endswith("## Usage\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert append_evaluation(plain, [], "c") is None and not (plain / CARD_FILE).exists()


@pytest.mark.parametrize("rows", ['[{"task": 1}, 7, "x", {"metric": "m"}]', "{not json", '{"a": 1}', "null"])
def test_hand_edited_rows_are_dropped_not_a_crash(tmp_path: Path, rows: str) -> None:
    """Rows that are not objects with a task, a metric and a value (or no JSON at all) are dropped; the new
    rows are written."""
    card = tmp_path / CARD_FILE
    card.write_text(f"# m\n<!-- polyembed-eval:start -->\n<!-- rows: {rows} -->\n| hand | edited |\n"
                    "<!-- polyembed-eval:end -->\n", encoding="utf-8")
    append_evaluation(tmp_path, [{"task": "sts17", "metric": "spearman", "languages": "en-en", "value": 80.0}], "a")
    text = card.read_text(encoding="utf-8")
    assert "| sts17 | en-en | spearman | 80.00 | a |" in text and "hand | edited" not in text


def test_polyembed_eval_writes_into_the_card(tmp_path: Path) -> None:
    model = tiny_sentence_transformer(tmp_path / "model", seed=0)
    (model / CARD_FILE).write_text("## Evaluation\n\n<!-- polyembed-eval:start -->\n<!-- polyembed-eval:end -->\n",
                                   encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for lang, side in (("en", 0), ("de", 1)):
        (corpus / f"c.{lang}").write_text("".join(pair[side] + "\n" for pair in PAIRS[:20]), encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "-m", str(model), "--tasks", "parallel-retrieval", "--task-arg",
                                      f"directory={corpus}", "--out", str(tmp_path / "out"), "--no-plots"])
    assert result.exit_code == 0, result.output
    text = (model / CARD_FILE).read_text(encoding="utf-8")
    assert "| parallel-retrieval |" in text and "polyembed eval" in text
