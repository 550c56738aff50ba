"""The shared training layer from a new method's point of view: a toy method in a test folder
(tests/methods/toy: a config and a loss) trains through the generated `polyembed train toy` command and
resumes exactly after SIGKILL, with no edit outside its folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyembed.errors import PolyembedError
from polyembed.methods.base import get_method, list_methods, train
from polyembed.methods.base.registry import PLUGIN_ENV_VAR
from tests.helpers import PAIRS, killed_and_uninterrupted_runs, tiny_sentence_transformer


@pytest.fixture(scope="module")
def toy_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("toy")
    tsv = root / "en-de.tsv"
    tsv.write_text("".join(f"{en}\t{de}\n" for en, de in PAIRS), encoding="utf-8")
    return {"student": tiny_sentence_transformer(root / "student", seed=1), "tsv": tsv}


def _toy_config(inputs: dict[str, Path], out: Path, **extra: object) -> dict[str, object]:
    options: dict[str, object] = {
        "student": str(inputs["student"]),
        "languages": ["de"],
        "datasets": [],
        "parallel_files": [f"de={inputs['tsv']}"],
        "batch_size": 8,
        "max_steps": 40,
        "eval_steps": 10,
        "save_total_limit": 10,
        "learning_rate": 1e-3,
        "dev_pairs_per_source": 10,
        "dev_sts_pairs": 0,
        "precision": "fp32",
        "temperature": 0.1,
        "output_dir": str(out),
    }
    options.update(extra)
    return options


def test_toy_method_trains_through_the_generated_command_and_resumes_exactly(
    toy_inputs: dict[str, Path], tmp_path: Path
) -> None:
    a, b = killed_and_uninterrupted_runs("toy", _toy_config(toy_inputs, tmp_path / "full"), tmp_path,
                                         kill_at_step=10, env={PLUGIN_ENV_VAR: "tests.methods.toy"})
    assert a["method"] == b["method"] == "toy" and b["resumed_from"] and a["resumed_from"] is None
    assert a["steps"] == b["steps"] == 40 and a["train_pairs_seen"] == b["train_pairs_seen"] == 40 * 8
    assert [h["step"] for h in a["history"]] == [h["step"] for h in b["history"]] == [10, 20, 30, 40]
    for entry_a, entry_b in zip(a["history"], b["history"], strict=True):
        assert abs(entry_a["eval_dev_mean_accuracy"] - entry_b["eval_dev_mean_accuracy"]) < 1e-6
    assert a["best"]["eval_dev_mean_accuracy"] > 0.2  # it learned: 10 dev pairs, chance is 0.1
    assert (tmp_path / "killed" / "model" / "modules.json").is_file()


def test_a_registered_method_gets_a_cli_command_with_its_own_options(toy_inputs: dict[str, Path], tmp_path) -> None:
    import tests.methods.toy  # noqa: F401 - registers "toy" in this process
    from polyembed.cli import add_train_commands, app

    add_train_commands()
    assert "toy" in {method.name for method in list_methods()}
    runner = CliRunner()
    help_text = runner.invoke(app, ["train", "toy", "--help"]).output
    assert "--temperature" in help_text and "--batch-size" in help_text
    bad = runner.invoke(app, ["train", "toy", "--temperature", "0", "--output-dir", str(tmp_path / "never")])
    assert bad.exit_code == 2 and "--temperature: 0.0 is out of range" in bad.stderr
    assert not (tmp_path / "never").exists()
    result = train("toy", **_toy_config(toy_inputs, tmp_path / "api", max_steps=4, eval_steps=2), show_progress=False)
    assert result.method == "toy" and result.steps == 4 and result.details == {"train_pairs": len(PAIRS) - 10}


def test_unknown_methods_and_plugin_modules_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    known = ("known: distill, emmax-em, emmax-warmup, modular-cla, modular-cla-all-pairs, modular-la, modular-se, "
             "modular-single, new-language, (toy, )?wacse")
    with pytest.raises(PolyembedError, match=f"unknown training method 'nope'; {known}"):
        get_method("nope")
    monkeypatch.setenv(PLUGIN_ENV_VAR, "no_such_module_xyz")
    monkeypatch.setattr("polyembed.methods.base.registry._discovered", False)
    with pytest.raises(PolyembedError, match=r"\$POLYEMBED_METHODS: cannot import .*no_such_module_xyz"):
        list_methods()


def test_keep_checkpoints_false_frees_the_disk_and_may_differ_on_resume(
    toy_inputs: dict[str, Path], tmp_path: Path
) -> None:
    import tests.methods.toy  # noqa: F401 - registers "toy" in this process

    kept, freed = tmp_path / "kept", tmp_path / "freed"
    options = _toy_config(toy_inputs, kept, max_steps=4, eval_steps=2)
    train("toy", **options, show_progress=False)
    assert {"checkpoint-2", "checkpoint-4"} <= {p.name for p in (kept / "checkpoints").iterdir()}
    result = train("toy", **{**options, "output_dir": str(freed), "keep_checkpoints": False}, show_progress=False)
    assert result.steps == 4 and not (freed / "checkpoints").exists()
    assert (freed / "model" / "modules.json").is_file() and json.loads((freed / "training.json").read_text())["steps"]
    # keep_checkpoints changes nothing that is trained: a resumed run may flip it; any other change is refused
    with pytest.raises(PolyembedError, match=r"\(temperature: 0.1 in the run, 0.2 now\)"):
        train("toy", **{**options, "keep_checkpoints": False, "temperature": 0.2}, resume=True, show_progress=False)
    with pytest.raises(PolyembedError, match="holds a finished run .*nothing to resume"):
        train("toy", **{**options, "keep_checkpoints": False}, resume=True, show_progress=False)


def test_final_checkpoint_and_constant_schedule(toy_inputs: dict[str, Path], tmp_path: Path) -> None:
    """checkpoint: final keeps the last model even when an earlier one scored better on dev, and measures it
    when the last step falls between evaluations; lr_schedule: constant holds the rate after the warm-up."""
    from sentence_transformers import SentenceTransformer

    import tests.methods.toy  # noqa: F401 - registers "toy" in this process

    options = _toy_config(toy_inputs, tmp_path / "final", max_steps=7, eval_steps=3, learning_rate=5e-2,
                          checkpoint="final", lr_schedule="constant", warmup_ratio=0.0, keep_checkpoints=True)
    result = train("toy", **options, show_progress=False)
    assert [entry["step"] for entry in result.history] == [3, 6, 7]  # 7 is measured after training
    assert result.best == result.history[-1] and result.best_checkpoint is None
    state = json.loads((tmp_path / "final" / "checkpoints" / "checkpoint-7" / "trainer_state.json").read_text())
    rates = {entry["learning_rate"] for entry in state["log_history"] if "learning_rate" in entry}
    assert rates == {5e-2}
    final = SentenceTransformer(str(tmp_path / "final" / "checkpoints" / "checkpoint-7"), device="cpu")
    kept = SentenceTransformer(result.model_dir, device="cpu")
    sentences = [en for en, _ in PAIRS[:4]]
    assert (final.encode(sentences) == kept.encode(sentences)).all()


def test_the_best_checkpoint_is_read_back_only_after_an_evaluation_before_the_last_step(
    toy_inputs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one evaluation, at the last step, the best checkpoint is the final model: no reading it back."""
    from sentence_transformers import SentenceTransformerTrainer

    import tests.methods.toy  # noqa: F401 - registers "toy" in this process

    reads: list[str | None] = []
    original = SentenceTransformerTrainer._load_best_model

    def counted(self: SentenceTransformerTrainer) -> None:
        reads.append(self.state.best_model_checkpoint)
        original(self)

    monkeypatch.setattr(SentenceTransformerTrainer, "_load_best_model", counted)
    once = train("toy", **_toy_config(toy_inputs, tmp_path / "once", max_steps=4, eval_steps=4), show_progress=False)
    assert [h["step"] for h in once.history] == [4] and once.best["step"] == 4
    assert once.best_checkpoint is not None and once.best_checkpoint.endswith("checkpoint-4") and reads == []
    twice = train("toy", **_toy_config(toy_inputs, tmp_path / "twice", max_steps=4, eval_steps=2), show_progress=False)
    assert [h["step"] for h in twice.history] == [2, 4] and reads == [twice.best_checkpoint]
