"""Multilingual distillation end to end on tiny models (seconds): training, projection, checkpoints,
exact resume after SIGKILL, and bad input stopping the run before any model is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from polyembed.cli import app
from polyembed.config import build_config
from polyembed.errors import DataError, PolyembedError, UnknownLanguageError
from polyembed.methods.distill.config import DistillConfig
from polyembed.methods.distill.train import fit_projection, prepare_data, train_distill
from tests.helpers import (
    PAIRS,
    assert_plain_sentence_transformers_loads,
    killed_and_uninterrupted_runs,
    tiny_sentence_transformer,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("distill")
    tsv = root / "en-de.tsv"
    tsv.write_text("".join(f"{en}\t{de}\n" for en, de in PAIRS), encoding="utf-8")
    return {
        "root": root,
        "teacher": tiny_sentence_transformer(root / "teacher", seed=0),
        "student": tiny_sentence_transformer(root / "student", seed=1),
        "wide": tiny_sentence_transformer(root / "wide", seed=2, hidden=48),
        "tsv": tsv,
    }


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _options(tiny: dict[str, Path], out: Path, **extra: object) -> dict[str, object]:
    options: dict[str, object] = {
        "teacher": str(tiny["teacher"]),
        "student": str(tiny["student"]),
        "languages": ["de"],
        "datasets": [],
        "parallel_files": [f"de={tiny['tsv']}"],
        "batch_size": 8,
        "max_steps": 8,
        "eval_steps": 4,
        "learning_rate": 1e-3,
        "dev_pairs_per_source": 10,
        "dev_sts_pairs": 0,
        "precision": "fp32",
        "output_dir": str(out),
    }
    options.update(extra)
    return options


def test_training_writes_best_model_history_and_speed(tiny: dict[str, Path], tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    config, origin = build_config(DistillConfig, None, _options(tiny, tmp_path / "run"))
    result = train_distill(config, origin=origin, show_progress=False)
    assert [h["step"] for h in result.history] == [4, 8]
    assert result.best == max(result.history, key=lambda h: h["eval_dev_negative_mse"])
    assert result.steps == 8 and result.train_pairs_seen == 64
    assert result.pairs_per_second > 0 and result.peak_memory_mb > 0
    source = result.details["sources"][0]
    assert source["train_pairs"] == len(PAIRS) - 10 and source["dev_pairs"] == 10
    summary = json.loads((tmp_path / "run" / "training.json").read_text())
    assert summary["best"] == result.best
    model = SentenceTransformer(result.model_dir, device="cpu")
    assert type(model[-1]).__name__ == "Dense"  # a different student gets the least-squares projection
    # trained at 128 tokens (capped at the tiny model's 64 positions), saved at the student's own length
    own = SentenceTransformer(str(tiny["student"]), device="cpu").max_seq_length
    assert model.max_seq_length == own
    assert summary["max_seq_length"] == {"training": min(128, model.tokenizer.model_max_length), "saved": own,
                                         "saved_from": "starting model"}
    assert model.encode(["the cat sees the sea"]).shape == (1, 32)
    assert_plain_sentence_transformers_loads(result.model_dir, tmp_path, ["the cat sees the sea", "die Katze"])
    # Training pulled the translations towards the teacher: their dev MSE beats the projection-only start by
    # far. (Not the MSE of both terms: the English term starts at the projection's least-squares optimum and
    # rises in the first steps of these tiny random models, so their sum can go either way after 8 steps.)
    config0, origin0 = build_config(
        DistillConfig, None, _options(tiny, tmp_path / "zero", max_steps=1, eval_steps=1, learning_rate=1e-12)
    )
    start = train_distill(config0, origin=origin0, show_progress=False)
    assert result.best["eval_dev_mse_translation"] < 0.85 * start.best["eval_dev_mse_translation"]  # 0.56-0.70 seen


def test_a_ranking_term_trains_and_refuses_anchor_text(tiny: dict[str, Path], tmp_path: Path) -> None:
    config, origin = build_config(DistillConfig, None, _options(tiny, tmp_path / "ranked", max_steps=2, eval_steps=2,
                                                                ranking_weight=1.0))
    assert train_distill(config, origin=origin, show_progress=False).steps == 2
    anchors = tmp_path / "anchors.txt"
    anchors.write_text("ein satz\n", encoding="utf-8")
    config, origin = build_config(DistillConfig, None, _options(tiny, tmp_path / "bad", ranking_weight=1.0,
                                                                anchor_files=[f"fr={anchors}"]))
    with pytest.raises(PolyembedError, match="ranking.weight: translation ranking needs bitext rows only: anchor text"):
        train_distill(config, origin=origin, show_progress=False)


def test_the_saved_length_is_the_students_own_unless_set(tiny: dict[str, Path], tmp_path: Path) -> None:
    """A short training length must not become the saved model's: users encode longer sentences later."""
    from sentence_transformers import SentenceTransformer

    short = _options(tiny, tmp_path / "short", max_steps=2, eval_steps=2, max_seq_length=8)
    config, origin = build_config(DistillConfig, None, short)
    result = train_distill(config, origin=origin, show_progress=False)
    own = SentenceTransformer(str(tiny["student"]), device="cpu").max_seq_length
    assert own > 8 and SentenceTransformer(result.model_dir, device="cpu").max_seq_length == own
    assert result.max_seq_length == {"training": 8, "saved": own, "saved_from": "starting model"}
    chosen = _options(tiny, tmp_path / "set", max_steps=2, eval_steps=2, max_seq_length=8, inference_max_seq_length=24)
    config, origin = build_config(DistillConfig, None, chosen)
    result = train_distill(config, origin=origin, show_progress=False)
    assert SentenceTransformer(result.model_dir, device="cpu").max_seq_length == 24
    assert result.max_seq_length["saved_from"] == "inference_max_seq_length"


def test_lora_trains_an_adapter_and_saves_a_plain_model(tiny: dict[str, Path], tmp_path: Path) -> None:
    """adapter: lora changes the transformer only through a low-rank update (merged before saving); the full
    student's transformer weights all move."""
    import torch
    from sentence_transformers import SentenceTransformer

    def transformer_weights(folder: str) -> dict[str, torch.Tensor]:
        model = SentenceTransformer(folder, device="cpu")
        return {k: v.clone() for k, v in model[0].auto_model.state_dict().items()}

    start = transformer_weights(str(tiny["student"]))
    runs = {}
    for adapter in ("lora", "full"):
        config, origin = build_config(DistillConfig, None, _options(tiny, tmp_path / adapter, adapter=adapter,
                                                                    lora_rank=2))
        runs[adapter] = train_distill(config, origin=origin, show_progress=False)
    lora, full = runs["lora"], runs["full"]
    assert lora.details["adapter"] == "lora" and lora.details["trainable_parameters"] < full.details[
        "trainable_parameters"]
    saved = transformer_weights(lora.model_dir)
    assert set(saved) == set(start), "the merged model is a plain transformer (no peft weights left)"
    query = "encoder.layer.0.attention.self.query.weight"
    change = saved[query] - start[query]
    assert 0 < torch.linalg.matrix_rank(change) <= 2  # the merged LoRA update of rank 2
    assert torch.equal(saved["embeddings.word_embeddings.weight"], start["embeddings.word_embeddings.weight"])
    assert torch.linalg.matrix_rank(transformer_weights(full.model_dir)[query] - start[query]) > 2


def test_teacher_with_a_transferred_vocabulary_trains_and_reports_the_transfer(
    tiny: dict[str, Path], tmp_path: Path
) -> None:
    from sentence_transformers import SentenceTransformer

    options = _options(
        tiny,
        tmp_path / "run",
        student="teacher",
        student_vocabulary="transfer",
        vocabulary_size=80,
        vocabulary_unseen="decompose",
        max_steps=2,
        eval_steps=2,
    )
    config, origin = build_config(DistillConfig, None, options)
    result = train_distill(config, origin=origin, show_progress=False)
    report = result.details["vocabulary_transfer"]
    assert report["unseen"] == "decompose" and report["target_vocab_size"] == 80
    parts = ("copied", "interpolated", "decomposed", "random")
    assert sum(report[k] for k in parts) == 80 and report["copied"] > 0 and report["decomposed"] > 0
    model = SentenceTransformer(result.model_dir, device="cpu")
    assert len(model.tokenizer) == 80 and type(model[-1]).__name__ == "Dense"  # new vocabulary: projected
    assert model.encode(["die katze sieht das meer"]).shape == (1, 32)


def test_frozen_layers_stay_fixed_and_dropout_is_set(tiny: dict[str, Path], tmp_path: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    options = _options(tiny, tmp_path / "frozen", max_steps=4, eval_steps=4, freeze_layers=1, dropout=0.0)
    config, origin = build_config(DistillConfig, None, options)
    result = train_distill(config, origin=origin, show_progress=False)
    before = SentenceTransformer(str(tiny["student"]), device="cpu")[0].auto_model
    after = SentenceTransformer(result.model_dir, device="cpu")[0].auto_model
    old_layers, new_layers = before.encoder.layer, after.encoder.layer
    assert torch.equal(old_layers[0].attention.self.query.weight, new_layers[0].attention.self.query.weight)
    assert torch.equal(before.embeddings.position_embeddings.weight, after.embeddings.position_embeddings.weight)
    assert not torch.equal(old_layers[1].output.dense.weight, new_layers[1].output.dense.weight)
    assert after.config.hidden_dropout_prob == 0.0 and after.config.attention_probs_dropout_prob == 0.0


def test_freezing_more_layers_than_the_student_has_is_an_error(tiny: dict[str, Path], tmp_path: Path) -> None:
    from polyembed.errors import PolyembedError

    config, origin = build_config(DistillConfig, None, _options(tiny, tmp_path / "bad", freeze_layers=3))
    with pytest.raises(PolyembedError, match="freeze_layers=3: the student has 2 transformer layers"):
        train_distill(config, origin=origin, show_progress=False)
    assert not (tmp_path / "bad").exists()  # a failed start leaves no half-made run folder behind
    bad = (("freeze_layers", -1), ("dropout", 1.0), ("max_pairs_per_source", -5), ("vocabulary_unseen", "zero"))
    for key, value in bad:
        with pytest.raises(PolyembedError, match=f"--{key.replace('_', '-')}"):
            build_config(DistillConfig, None, _options(tiny, tmp_path / "bad", **{key: value}))
        config = build_config(DistillConfig, None, _options(tiny, tmp_path / "bad"))[0]
        setattr(config, key, value)  # a config built in Python meets the same rules before any model loads
        with pytest.raises(PolyembedError, match=key):
            prepare_data(config)


def test_projection_maps_other_dimension_and_beats_random(tiny: dict[str, Path]) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    student = SentenceTransformer(str(tiny["wide"]), device="cpu")
    teacher = SentenceTransformer(str(tiny["teacher"]), device="cpu")
    english = [en for en, _ in PAIRS]
    targets = teacher.encode(english)
    dense = fit_projection(student, english, targets, verbose=False)
    assert (dense.linear.in_features, dense.linear.out_features) == (48, 32)
    inputs = torch.from_numpy(student.encode(english))
    with torch.no_grad():
        fitted = dense({"sentence_embedding": inputs})["sentence_embedding"].numpy()
    baseline = ((targets - targets.mean(axis=0)) ** 2).mean()  # the best constant prediction
    assert ((fitted - targets) ** 2).mean() < 0.5 * baseline


def test_orthogonal_projection_keeps_the_students_cosines(tiny: dict[str, Path]) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    from polyembed.errors import PolyembedError

    student = SentenceTransformer(str(tiny["student"]), device="cpu")
    teacher = SentenceTransformer(str(tiny["teacher"]), device="cpu")
    english = [en for en, _ in PAIRS]
    targets = teacher.encode(english)
    inputs = torch.from_numpy(student.encode(english))
    fits = {}
    for method in ("orthogonal", "least-squares"):
        dense = fit_projection(student, english, targets, verbose=False, method=method)
        with torch.no_grad():
            fits[method] = dense({"sentence_embedding": inputs})["sentence_embedding"].numpy()

    def cosines(x: np.ndarray) -> np.ndarray:
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        return x @ x.T

    np.testing.assert_allclose(cosines(fits["orthogonal"]), cosines(inputs.numpy()), atol=1e-4)
    errors = {method: ((fit - targets) ** 2).mean() for method, fit in fits.items()}
    assert errors["least-squares"] < errors["orthogonal"] < ((inputs.numpy() - targets) ** 2).mean()
    wide = SentenceTransformer(str(tiny["wide"]), device="cpu")
    with pytest.raises(PolyembedError, match="no wider than its teacher"):
        fit_projection(wide, english, targets, verbose=False, method="orthogonal")
    wide_targets = wide.encode(english)  # a narrower student into a wider teacher (me5-small -> mpnet-en)
    assert wide_targets.shape[1] > inputs.shape[1]
    dense = fit_projection(student, english, wide_targets, verbose=False, method="orthogonal")
    with torch.no_grad():
        embedded = dense({"sentence_embedding": inputs})["sentence_embedding"].numpy()
    assert embedded.shape[1] == wide_targets.shape[1]
    np.testing.assert_allclose(cosines(embedded), cosines(inputs.numpy()), atol=1e-4)


def test_wide_student_is_projected_to_teacher_dimension(tiny: dict[str, Path], tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    options = _options(tiny, tmp_path / "wide", student=str(tiny["wide"]), max_steps=2, eval_steps=2)
    config, origin = build_config(DistillConfig, None, options)
    result = train_distill(config, origin=origin, show_progress=False)
    assert SentenceTransformer(result.model_dir, device="cpu").encode(["a dog"]).shape == (1, 32)


def test_sigkill_then_resume_matches_uninterrupted_run(tiny: dict[str, Path], tmp_path: Path) -> None:
    options = _options(tiny, tmp_path / "full", max_steps=60, eval_steps=10, save_total_limit=10)
    a, b = killed_and_uninterrupted_runs("distill", options, tmp_path, kill_at_step=10)
    assert a["steps"] == b["steps"] == 60
    # The whole run, the steps before the kill included: 70 training pairs a balanced epoch = 8 batches of 8
    # and one of 6, so 60 steps = 6 epochs (420 pairs) + 6 batches of 8 (48).
    assert a["train_pairs_seen"] == b["train_pairs_seen"] == 468
    last_a, last_b = a["history"][-1], b["history"][-1]
    for key in ("eval_dev_negative_mse", "eval_dev_mean_accuracy"):
        assert abs(last_a[key] - last_b[key]) < 1e-4, (key, last_a[key], last_b[key])
    assert np.isclose(a["best"]["eval_dev_negative_mse"], b["best"]["eval_dev_negative_mse"], atol=1e-4)


# ------------------------------------------------------------------------------------- bad input


def _run_cli(tmp_path: Path, config_text: str) -> tuple[int, str]:
    config = tmp_path / "bad.yaml"
    config.write_text(config_text, encoding="utf-8")
    result = CliRunner().invoke(app, ["train", "distill", "--config", str(config)])
    return result.exit_code, result.output + (result.stderr if hasattr(result, "stderr") else "")


def test_line_count_mismatch_fails_before_training(tiny: dict[str, Path], tmp_path: Path) -> None:
    english, other = tmp_path / "train.en", tmp_path / "train.de"
    english.write_text("one\ntwo\nthree\n", encoding="utf-8")
    other.write_text("eins\nzwei\n", encoding="utf-8")
    out = tmp_path / "never"
    code, text = _run_cli(
        tmp_path,
        f"teacher: {tiny['teacher']}\nlanguages: [de]\ndatasets: []\n"
        f"parallel_files: ['de={english},{other}']\noutput_dir: {out}\n",
    )
    assert code == 2
    assert f"{english}:3" in text and "differ in length" in text
    assert not out.exists()


def test_empty_side_fails_with_file_and_line(tiny: dict[str, Path], tmp_path: Path) -> None:
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("hello\thallo\nworld\t \n", encoding="utf-8")
    config = DistillConfig(languages=["de"], datasets=[], parallel_files=[f"de={tsv}"], output_dir=str(tmp_path / "x"))
    with pytest.raises(DataError, match=rf"{tsv.name}:2.*empty other side"):
        prepare_data(config)


def test_unknown_language_names_config_line(tiny: dict[str, Path], tmp_path: Path) -> None:
    code, text = _run_cli(
        tmp_path,
        f"teacher: {tiny['teacher']}\nlanguages:\n  - de\n  - xx\ndatasets: []\n"
        f"parallel_files: ['de={tiny['tsv']}']\noutput_dir: {tmp_path / 'never'}\n",
    )
    assert code == 2 and "unknown language 'xx'" in text and "bad.yaml:4" in text
    assert not (tmp_path / "never").exists()


def test_zero_cap_from_the_command_line_lifts_the_config_files_cap(tiny: dict[str, Path], tmp_path: Path) -> None:
    yaml_file = tmp_path / "capped.yaml"
    yaml_file.write_text(yaml.safe_dump(_options(tiny, tmp_path / "x", max_pairs_per_source=20)), encoding="utf-8")
    capped, origin = build_config(DistillConfig, yaml_file, {})
    assert sum(len(s) for s in prepare_data(capped, origin).train) == 20 - 4  # a fifth held out as dev
    lifted, origin = build_config(DistillConfig, yaml_file, {"max_pairs_per_source": 0})
    data = prepare_data(lifted, origin)
    assert sum(len(s) for s in data.train) + sum(len(s) for s in data.dev) == len(PAIRS)


def test_language_without_data_is_an_error(tiny: dict[str, Path], tmp_path: Path) -> None:
    config, origin = build_config(DistillConfig, None, _options(tiny, tmp_path / "x", languages=["de", "sw"]))
    with pytest.raises(UnknownLanguageError, match="no training data for language 'sw'.*flag --languages"):
        prepare_data(config, origin)


def test_resume_refuses_a_different_config(tiny: dict[str, Path], tmp_path: Path) -> None:
    from polyembed.errors import PolyembedError

    config, origin = build_config(DistillConfig, None, _options(tiny, tmp_path / "run", max_steps=2, eval_steps=2))
    train_distill(config, origin=origin, show_progress=False)
    with pytest.raises(PolyembedError, match="not empty"):
        train_distill(config, origin=origin, show_progress=False)
    changed, origin2 = build_config(DistillConfig, None, _options(tiny, tmp_path / "run", max_steps=3, eval_steps=2))
    with pytest.raises(PolyembedError, match="differs"):
        train_distill(changed, origin=origin2, resume=True, show_progress=False)


def test_any_iso_639_3_code_is_accepted_and_a_made_up_one_names_its_config_line(tiny, tmp_path: Path) -> None:
    english, tigrinya = tmp_path / "a.en", tmp_path / "a.ti"
    english.write_text("".join(f"{en}\n" for en, _ in PAIRS), encoding="utf-8")
    tigrinya.write_text("".join(f"ትግርኛ {i}\n" for i in range(len(PAIRS))), encoding="utf-8")
    options = _options(tiny, tmp_path / "x", languages=["tir"], parallel_files=[f"tir={english},{tigrinya}"])
    data = prepare_data(*build_config(DistillConfig, None, options))
    assert {source.language for source in data.train} == {"ti"}
    code, text = _run_cli(
        tmp_path,
        f"teacher: {tiny['teacher']}\nlanguages:\n  - tir\n  - xq1\ndatasets: []\n"
        f"parallel_files: ['tir={english},{tigrinya}']\noutput_dir: {tmp_path / 'never'}\n",
    )
    assert code == 2 and "unknown language 'xq1'" in text and "bad.yaml:4" in text
    assert not (tmp_path / "never").exists()


def _anchor_drift(model_dir: str, start_dir: str, sentences: list[str]) -> float:
    """Mean squared distance between a trained student's and the untrained student's embeddings."""
    from sentence_transformers import SentenceTransformer

    trained = SentenceTransformer(model_dir, device="cpu").encode(sentences)
    start = SentenceTransformer(start_dir, device="cpu").encode(sentences)
    return float(((trained - start) ** 2).sum(axis=1).mean())


def test_anchor_text_keeps_the_student_near_its_start(tiny: dict[str, Path], tmp_path: Path) -> None:
    anchor_file = tmp_path / "fr.txt"
    french = [f"le chat {i} voit la mer" for i in range(40)] + ["", "le chat 0 voit la mer"]  # blank and repeat
    anchor_file.write_text("\n".join(french) + "\n", encoding="utf-8")
    sentences = french[:40]
    config0, origin0 = build_config(
        DistillConfig, None, _options(tiny, tmp_path / "zero", max_steps=1, eval_steps=1, learning_rate=1e-12)
    )
    start = train_distill(config0, origin=origin0, show_progress=False)
    runs = {}
    for name, extra in (("free", {}), ("anchored", {"anchor_files": [f"fr={anchor_file}"]})):
        config, origin = build_config(DistillConfig, None, _options(tiny, tmp_path / name, max_steps=12, **extra))
        runs[name] = train_distill(config, origin=origin, show_progress=False)
    anchors = [s for s in runs["anchored"].details["sources"] if s["source"] == "anchor"]
    assert anchors == [
        {"source": "anchor", "language": "fr", "train_pairs": 40, "dev_pairs": 0, "origin": f"file:{anchor_file}"}
    ]
    drift = {name: _anchor_drift(run.model_dir, start.model_dir, sentences) for name, run in runs.items()}
    assert drift["anchored"] < 0.7 * drift["free"], drift


def test_teacher_weight_blends_the_teacher_with_the_untrained_student(tiny, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from polyembed.data.parallel_sources import ParallelSource
    from polyembed.methods.distill.train import DistillData, EnglishTargets, _train_dataset
    from polyembed.models.embedding_cache import EmbeddingStore
    from polyembed.models.loading import load_model

    english = [en for en, _ in PAIRS[:6]] + [PAIRS[0][0]]  # a repeated English sentence keeps its row
    source = ParallelSource("tsv", "de", english, [de for _, de in PAIRS[:6]] + ["Wiederholung"], "test")
    data = DistillData([source], [], None)
    store = EmbeddingStore(load_model(str(tiny["teacher"])), directory=tmp_path / "store")
    student = SentenceTransformer(str(tiny["student"]), device="cpu")
    teacher = store.embed(english, show_progress_bar=False)
    own = student.encode(english)
    for weight in (1.0, 0.25, 0.0):
        targets = EnglishTargets(store, student, weight, english, show_progress=False)
        labels = np.asarray(_train_dataset(data, targets, student, show_progress=False)["label"])
        np.testing.assert_allclose(labels, weight * teacher + (1 - weight) * own, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(targets.embed(english[:2]), labels[:2], rtol=1e-5, atol=1e-6)  # the dev's


def test_anchor_languages_are_checked_before_training(tiny: dict[str, Path], tmp_path: Path) -> None:
    anchor_file = tmp_path / "de.txt"
    anchor_file.write_text("ein Satz\n", encoding="utf-8")
    code, text = _run_cli(
        tmp_path,
        f"teacher: {tiny['teacher']}\nlanguages: [de]\ndatasets: []\nparallel_files: ['de={tiny['tsv']}']\n"
        f"anchor_files:\n  - de={anchor_file}\noutput_dir: {tmp_path / 'never'}\n",
    )
    assert code == 2 and "'de' is also a trained language" in text and "bad.yaml:6" in text
    code, text = _run_cli(
        tmp_path,
        f"teacher: {tiny['teacher']}\nlanguages: [de]\ndatasets: []\nparallel_files: ['de={tiny['tsv']}']\n"
        f"anchor_files: ['xq1={anchor_file}']\noutput_dir: {tmp_path / 'never'}\n",
    )
    assert code == 2 and "unknown language 'xq1'" in text
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    options = _options(tiny, tmp_path / "never", anchor_files=[f"fr={empty}"])
    with pytest.raises(PolyembedError, match="empty.txt: no sentences"):
        prepare_data(*build_config(DistillConfig, None, options))
    assert not (tmp_path / "never").exists()
