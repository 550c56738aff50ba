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
from polyembed.models.cards import with_model_index
from tests.helpers import PAIRS, tiny_sentence_transformer

pytestmark = pytest.mark.usefixtures("offline_cache")


def _front_matter(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def _result(model_dir: Path) -> TrainResult:
    return TrainResult(method="distill", output_dir=str(model_dir.parent), model_dir=str(model_dir), history=[],
                       best={}, best_checkpoint=None, steps=10, train_pairs_seen=320, train_seconds=1.0,
                       pairs_per_second=320.0, peak_memory_mb=1.0)


def _card(tmp_path: Path, **options: object) -> str:
    config, _ = build_config(DistillConfig, None, {"languages": ["de"], **options})
    return card_text(get_method("distill"), config, _result(tmp_path / "run" / "model"))


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
    assert front["library_name"] == "sentence-transformers"
    assert "base_model" not in front and f"| base model (student) | `{student}` |" in text  # not a Hub id
    assert front["license"] == "other" and front["license_name"] == "unknown"  # nor a licence it could inherit
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
    text = card_text(get_method("distill"), config, _result(model_dir))
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
    index = _front_matter(text)["model-index"]  # the rows are the Hub's model-index too, replaced alike
    assert index[0]["name"] == tmp_path.name
    assert {(r["task"]["name"], m["value"]) for r in index[0]["results"] for m in r["metrics"]} == {
        ("sts17", 81.5), ("tatoeba", 90.0)}
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
    base = tiny_sentence_transformer(tmp_path / "base", seed=1)
    result = CliRunner().invoke(app, ["eval", "-m", str(model), "--baseline", str(base), "--tasks",
                                      "parallel-retrieval", "--task-arg", f"directory={corpus}", "-o",
                                      str(tmp_path / "compared"), "--no-plots", "--trained-languages", "de"])
    assert result.exit_code == 0, result.output
    assert "parallel-retrieval" in result.output and " -> " in result.output  # before -> after per task
    text = (model / CARD_FILE).read_text(encoding="utf-8")
    assert "## Compared with `" in text and "| parallel-retrieval | de |" in text
    report = (tmp_path / "compared" / "report.md").read_text(encoding="utf-8")
    assert "## Compared with" in report and "Forgetting" not in report  # no multi-language retrieval task


@pytest.mark.parametrize(("student", "hub_id", "licence"), [
    ("me5-small", "intfloat/multilingual-e5-small", "mit"),
    ("minilm-en", "sentence-transformers/all-MiniLM-L6-v2", "apache-2.0"),
    ("mpnet-en", "sentence-transformers/all-mpnet-base-v2", "apache-2.0"),
])
def test_a_built_in_base_model_is_named_by_its_hub_id_and_gives_its_licence(
    tmp_path: Path, student: str, hub_id: str, licence: str
) -> None:
    text = _card(tmp_path, student=student, datasets=["tatoeba-challenge"])
    front = _front_matter(text)
    assert front["base_model"] == hub_id and front["license"] == licence
    assert f"\n# {hub_id} fine-tuned with polyembed's distill for en, de\n" in text
    assert "a polyembed distill model" not in text and f"the trained weights inherit it (`{licence}`)" in text


@pytest.mark.parametrize(("dataset", "fields"), [
    ("mafand-mt", {"license": "cc-by-nc-4.0"}),
    ("kardes-xnli", {"license": "cc-by-nc-4.0"}),  # no licence file, but XNLI is CC BY-NC
    ("multi30k", {"license": "other", "license_name": "non-commercial-training-data",
                  "license_link": "https://github.com/multi30k/dataset"}),
])
def test_non_commercial_training_data_makes_the_model_non_commercial(
    tmp_path: Path, dataset: str, fields: dict[str, str]
) -> None:
    text = _card(tmp_path, student="me5-small", datasets=[dataset])
    front = _front_matter(text)
    assert {key: front[key] for key in ("license", "license_name", "license_link") if key in front} == fields
    licence = text.split("## Licence\n", 1)[1].split("\n## ", 1)[0]
    assert "`mit`" in licence and dataset in licence and "non-commercial use only" in licence


def test_an_old_card_gets_a_hub_base_model_or_none(tmp_path: Path) -> None:
    """Cards written before base models were Hub ids: a built-in's name becomes its id, a local folder goes."""
    body = "# m\n\n## Evaluation\n\n<!-- polyembed-eval:start -->\n<!-- polyembed-eval:end -->\n"
    fixed = _front_matter(with_model_index(f"---\nbase_model: minilm-en\nlicense: mit\n---\n{body}", "m"))
    assert fixed == {"base_model": "sentence-transformers/all-MiniLM-L6-v2", "license": "mit"}
    local = with_model_index(f"---\nbase_model: {tmp_path}\nlicense: mit\n---\n{body}", "m")
    assert "base_model" not in _front_matter(local) and local.endswith(body)


def test_a_comparison_becomes_its_own_section_and_a_rerun_replaces_it(tmp_path: Path) -> None:
    from polyembed.eval.base import Score
    from polyembed.eval.compare import compare_scores
    from polyembed.methods.base.model_card import append_comparison

    card = tmp_path / CARD_FILE
    card.write_text("# m\n\n<!-- polyembed-eval:start -->\nnone yet\n<!-- polyembed-eval:end -->\n\n## Usage\n",
                    encoding="utf-8")

    def scores(value: float) -> list[Score]:
        return [Score(task="tatoeba", split="test", subset="yor", metric="accuracy", value=value, main=True, n=1000)]

    append_comparison(tmp_path, compare_scores(scores(40.0), scores(50.0), "m", "me5-small", ["yo"]), "first")
    append_comparison(tmp_path, compare_scores(scores(40.0), scores(60.0), "m", "me5-small", ["yo"]), "second")
    text = card.read_text(encoding="utf-8")
    assert text.count("## Compared with `me5-small`") == 1 and "(second)" in text and "(first)" not in text
    assert "| tatoeba | yor | 40.00 | 60.00 | **+20.00 ±" in text and text.endswith("## Usage\n")
    assert text.index("polyembed-eval:end") < text.index("## Compared with")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert append_comparison(plain, compare_scores(scores(1.0), scores(2.0), "m", "b"), "x") is None
