"""`push_to_hub` / `polyembed push`: what a push would send (dry run), the card's model-index from the evaluation
rows, and every refusal before the network. No test reaches the Hub: its client is replaced by one that fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import huggingface_hub
import pytest
import yaml
from typer.testing import CliRunner

from polyembed.cli import app
from polyembed.config import build_config
from polyembed.methods.base import get_method
from polyembed.methods.base.model_card import CARD_FILE, append_evaluation, card_text
from polyembed.methods.base.trainer import TrainResult
from polyembed.methods.distill.config import DistillConfig
from polyembed.models.hub import HubPushError, push_to_hub
from tests.helpers import tiny_sentence_transformer

pytestmark = pytest.mark.usefixtures("offline_cache")

ROWS = [{"task": "sts17", "metric": "spearman", "languages": "en-en", "value": 81.5},
        {"task": "tatoeba", "metric": "accuracy", "languages": "deu", "value": 90.0}]
REPO = "someone/tiny-distill"


class NoNetwork:
    """In place of huggingface_hub's HfApi: any call is a test failure."""

    def __init__(self, **_: Any) -> None:
        raise AssertionError("push_to_hub reached for the network")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(huggingface_hub, "HfApi", NoNetwork)


@pytest.fixture
def distilled(tmp_path: Path) -> Path:
    """A tiny student in a run's model/ folder with the card a distillation writes (me5-small student, a
    non-commercial dataset), `polyembed eval` rows, and polyembed's hidden records."""
    folder = tiny_sentence_transformer(tmp_path / "run" / "model", seed=1)
    config, _ = build_config(DistillConfig, None, {"student": "me5-small", "languages": ["ha", "sw"],
                                                   "datasets": ["mafand-mt", "tatoeba-challenge"]})
    result = TrainResult(method="distill", output_dir=str(folder.parent), model_dir=str(folder), history=[],
                         best={}, best_checkpoint=None, steps=10, train_pairs_seen=320, train_seconds=1.0,
                         pairs_per_second=320.0, peak_memory_mb=1.0)
    (folder / CARD_FILE).write_text(card_text(get_method("distill"), config, result), encoding="utf-8")
    append_evaluation(folder, ROWS, "polyembed eval, test")
    (folder / ".polyembed.lock").write_text("")
    (folder / ".polyembed-outputs.json").write_text("{}\n")
    return folder


def _metrics(front: dict[str, Any]) -> dict[tuple[str, str, str], Any]:
    return {(result["task"]["name"], result["dataset"].get("config"), metric["type"]): metric["value"]
            for result in front["model-index"][0]["results"] for metric in result["metrics"]}


def test_a_dry_run_lists_the_files_and_a_model_index_of_the_rows(distilled: Path, no_network: None) -> None:
    before = {path: path.read_bytes() for path in distilled.rglob("*") if path.is_file()}
    result = push_to_hub(distilled, REPO, dry_run=True)
    names = [name for name, _ in result.files]
    assert {"modules.json", "model.safetensors", CARD_FILE, ".polyembed-outputs.json"} <= set(names)
    assert ".polyembed.lock" not in names and result.left_out == [".polyembed.lock"]
    assert all(size == (distilled / name).stat().st_size for name, size in result.files if name != CARD_FILE)
    assert result.private and result.dry_run and result.url is None
    front = result.front_matter
    assert front["model-index"][0]["name"] == REPO
    assert _metrics(front) == {(row["task"], row["languages"], row["metric"]): row["value"] for row in ROWS}
    sts = next(entry for entry in front["model-index"][0]["results"] if entry["task"]["name"] == "sts17")
    assert sts["task"]["type"] == "STS" and sts["dataset"] == {"name": "sts2017", "type": "sts2017",
                                                               "config": "en-en", "split": "test"}
    assert front["base_model"] == "intfloat/multilingual-e5-small" and front["license"] == "cc-by-nc-4.0"
    assert f'load_model("{REPO}")' in (result.card or "") and str(distilled) not in (result.card or "")
    assert {path: path.read_bytes() for path in distilled.rglob("*") if path.is_file()} == before  # nothing written


def test_polyembed_push_dry_run_prints_the_files_and_the_front_matter(distilled: Path, no_network: None) -> None:
    result = CliRunner().invoke(app, ["push", str(distilled), REPO, "--dry-run", "--public"])
    assert result.exit_code == 0, result.output
    assert "would push" in result.stdout and "(public)" in result.stdout and "model.safetensors" in result.stdout
    assert "left out (polyembed's records of this machine): .polyembed.lock" in result.stdout
    front = yaml.safe_load(result.stdout.split("README.md front matter:\n---\n", 1)[1].split("\n---", 1)[0])
    assert _metrics(front)[("sts17", "en-en", "spearman")] == 81.5


@pytest.mark.parametrize("repo_id", ["a/b/c", "bad name", "me/bad--name", "-me/model", "me/model.git", ""])
def test_a_bad_repository_id_is_refused_before_the_network(distilled: Path, no_network: None, repo_id: str) -> None:
    with pytest.raises(HubPushError, match="is not valid"):
        push_to_hub(distilled, repo_id)


def test_a_folder_that_is_not_a_model_is_refused(tmp_path: Path, distilled: Path, no_network: None) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "thesis.txt").write_text("not a model\n")
    with pytest.raises(HubPushError, match="not a model folder"):
        push_to_hub(tmp_path / "notes", REPO, dry_run=True)
    with pytest.raises(HubPushError, match="a training run's model is in"):  # the run folder, not its model/
        push_to_hub(distilled.parent, REPO, dry_run=True)
    with pytest.raises(HubPushError, match="no such folder"):
        push_to_hub(tmp_path / "nowhere", REPO, dry_run=True)


def test_a_real_push_offline_is_refused_and_writes_nothing(distilled: Path, no_network: None,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    card = (distilled / CARD_FILE).read_text(encoding="utf-8")
    with pytest.raises(HubPushError, match="HF_HUB_OFFLINE=1 is set"):
        push_to_hub(distilled, REPO)
    assert (distilled / CARD_FILE).read_text(encoding="utf-8") == card


def test_a_push_creates_a_private_repository_and_uploads_without_local_records(
    distilled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the Hub's client faked: the calls, their arguments, and the card in the folder written for the
    repository before the upload reads it."""
    calls: list[tuple[str, dict[str, Any]]] = []

    class FakeApi:
        def __init__(self, **kwargs: Any) -> None:
            calls.append(("init", kwargs))

        def create_repo(self, repo_id: str, **kwargs: Any) -> str:
            calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))
            return f"https://huggingface.co/{repo_id}"

        def create_branch(self, repo_id: str, **kwargs: Any) -> None:
            calls.append(("create_branch", {"repo_id": repo_id, **kwargs}))

        def upload_folder(self, **kwargs: Any) -> None:
            calls.append(("upload_folder", {**kwargs, "card": Path(kwargs["folder_path"], CARD_FILE).read_text()}))

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    result = push_to_hub(distilled, REPO, revision="v1", token="hf_test")
    kinds = dict(calls)
    assert [name for name, _ in calls] == ["init", "create_repo", "create_branch", "upload_folder"]
    assert kinds["init"] == {"token": "hf_test"}
    assert kinds["create_repo"]["private"] is True and kinds["create_repo"]["exist_ok"] is True
    assert kinds["create_branch"]["branch"] == "v1" and kinds["upload_folder"]["revision"] == "v1"
    assert ".polyembed.lock" in kinds["upload_folder"]["ignore_patterns"]
    assert kinds["upload_folder"]["card"] == result.card and result.url == f"https://huggingface.co/{REPO}"


def test_load_model_passes_a_revision_for_hub_ids_and_ignores_it_for_folders(
    distilled: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import sentence_transformers

    from polyembed.models.loading import ModelNotAvailableError, load_model

    encoder = load_model(str(distilled), revision="v1", device="cpu")  # a folder has no revisions
    assert encoder.encode(["hello"]).shape == (1, 32) and "revision 'v1' ignored" in caplog.text
    seen: dict[str, Any] = {}

    def not_cached(target: str, **kwargs: Any) -> None:
        seen.update(kwargs, target=target)
        raise OSError("not in the cache")

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", not_cached)
    with pytest.raises(ModelNotAvailableError, match="not in the local Hugging Face cache"):
        load_model(REPO, revision="v2", device="cpu")
    assert seen == {"target": REPO, "device": "cpu", "local_files_only": True, "revision": "v2"}


def test_a_card_without_evaluation_rows_is_sent_as_it_is(tmp_path: Path, no_network: None) -> None:
    """An export's card is covered by its checksum record (`.polyembed-outputs.json`, which is sent: a download
    without it does not load), so a card that is not a trained model's stays byte for byte."""
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "config.json").write_text("{}\n")
    card = "---\nlibrary_name: onnx\n---\n\n# export: ONNX export of me5-small\n"
    (folder / CARD_FILE).write_text(card, encoding="utf-8")
    (folder / ".polyembed-outputs.json").write_text("{}\n")
    (folder / ".polyembed-staging-1").mkdir()
    (folder / ".polyembed-staging-1" / "half.onnx").write_text("")
    result = push_to_hub(folder, "someone/export", dry_run=True)
    assert result.card == card and result.front_matter == {"library_name": "onnx"}
    assert [name for name, _ in result.files] == [".polyembed-outputs.json", CARD_FILE, "config.json"]
    assert result.left_out == [".polyembed-staging-1/half.onnx"]
