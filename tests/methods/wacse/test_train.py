"""`polyembed train wacse` on a tiny model and a bitext file: alignments from the store, the three objectives,
the ablations, the MLM head in checkpoints, and options checked before any model loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.errors import PolyembedError
from polyembed.methods.base.registry import train
from tests.helpers import PAIRS, assert_plain_sentence_transformers_loads, tiny_sentence_transformer


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("wacse")
    bitext = root / "en-de.tsv"
    bitext.write_text("".join(f"{en}\t{de}\n" for en, de in PAIRS), encoding="utf-8")
    return {"model": tiny_sentence_transformer(root / "base", seed=0, mask_token=True), "bitext": bitext}


pytestmark = pytest.mark.usefixtures("offline_cache")


def _options(tiny: dict[str, Path], out: Path, **extra: object) -> dict[str, object]:
    return {"student": str(tiny["model"]), "aligner_model": str(tiny["model"]), "aligner_layer": 1,
            "languages": [], "datasets": [], "parallel_files": [f"de={tiny['bitext']}"], "dev_pairs_per_source": 16,
            "dev_sts_pairs": 0, "alignment_threshold": 0.0, "batch_size": 8, "max_steps": 6, "eval_steps": 3,
            "precision": "fp32", "output_dir": str(out), **extra}


def test_all_three_objectives_train_and_the_head_is_checkpointed(tiny, tmp_path: Path) -> None:
    result = train("wacse", show_progress=False, **_options(tiny, tmp_path / "run"))
    assert result.steps == 6 and result.details["weights"] == {"tr": 0.8, "awp": 0.1, "wtr": 0.1}
    assert result.details["links_per_pair"] >= 1
    assert (tmp_path / "run" / "checkpoints" / "checkpoint-6" / "mlm_head.safetensors").is_file()
    assert list((tmp_path / "cache" / "alignments").glob("*/store.sqlite"))  # aligned once, kept
    assert_plain_sentence_transformers_loads(result.model_dir, tmp_path, [en for en, _ in PAIRS[:3]])


def test_translation_ranking_alone_needs_no_alignment(tiny, tmp_path: Path) -> None:
    result = train("wacse", show_progress=False, **_options(tiny, tmp_path / "run", objectives=["tr"]))
    assert result.details["weights"] == {"tr": 0.8, "awp": 0.0, "wtr": 0.0}
    assert not (tmp_path / "cache" / "alignments").exists()
    assert not (tmp_path / "run" / "checkpoints" / "checkpoint-6" / "mlm_head.safetensors").exists()


def test_language_embeddings_train_and_the_saved_model_routes_by_language(tiny, tmp_path: Path) -> None:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from polyembed.models.language_embedding import LanguageEmbeddingEncoder, add_language_embeddings
    from polyembed.models.loading import load_model

    result = train("wacse", show_progress=False, **_options(tiny, tmp_path / "run", language_embeddings=True))
    assert result.details["language_embedding_ids"] == {"en": 2, "de": 3}
    assert "eval_dev_mean_accuracy" in result.best
    encoder = load_model(result.model_dir)
    assert isinstance(encoder, LanguageEmbeddingEncoder) and encoder.languages == ["en", "de"]
    start = SentenceTransformer(str(tiny["model"]), device="cpu")
    add_language_embeddings(start, ["en", "de"], seed=0)  # the rows the run started from (same seed)
    trained, initial = (model[0].auto_model.embeddings.token_type_embeddings.weight.detach().numpy()
                        for model in (SentenceTransformer(result.model_dir, device="cpu"), start))
    assert np.abs(trained[2:] - initial[2:]).max() > 1e-5  # the language rows trained (lr 5e-5, 6 steps)
    german = ["der Hund läuft nach Hause"]
    assert not np.allclose(encoder.encode(german, "de"), encoder.encode(german, "en"), atol=1e-5)


def test_eflomal_aligns_the_corpus(tiny, tmp_path: Path) -> None:
    result = train("wacse", show_progress=False,
                   **_options(tiny, tmp_path / "run", aligner="eflomal", objectives=["tr", "wtr"], max_steps=2))
    assert result.details["links_per_pair"] >= 1 and result.details["aligner"]["method"] == "eflomal"


def test_eflomal_learns_from_the_aligner_datasets_and_links_only_the_runs_pairs(tiny, tmp_path: Path,
                                                                              shared_data: Path) -> None:
    """aligner_datasets: Kardes XNLI's Kazakh pairs join eflomal's corpus; the training pairs stay the run's."""
    options = _options(tiny, tmp_path / "run", aligner="eflomal", objectives=["tr", "wtr"], max_steps=2,
                       parallel_files=[f"kk={tiny['bitext']}"], aligner_datasets=["kardes-xnli"],
                       data_root=str(shared_data))
    result = train("wacse", show_progress=False, **options)
    extra = result.details["aligner"]["extra_pairs"]
    assert list(extra) == ["kk"] and extra["kk"] > 1000
    assert [row["train_pairs"] for row in result.details["bitext"]] == [len(PAIRS) - 16]
    assert result.details["links_per_pair"] >= 1


def test_the_head_warm_up_leaves_the_encoder_as_it_was(tiny, tmp_path: Path) -> None:
    """awp_head_warmup_steps: in those steps only the AWP head learns; the encoder trains afterwards."""
    import torch
    from safetensors.torch import load_file

    start = load_file(str(tiny["model"] / "model.safetensors"))
    warm = train("wacse", show_progress=False,
                 **_options(tiny, tmp_path / "warm", max_steps=2, eval_steps=2, awp_head_warmup_steps=2))
    saved = load_file(str(Path(warm.model_dir) / "model.safetensors"))
    assert all(torch.equal(start[name], saved[name]) for name in start)
    head = load_file(str(tmp_path / "warm" / "checkpoints" / "checkpoint-2" / "mlm_head.safetensors"))
    assert float(head["bias"].abs().max()) > 0  # the head learned (its bias starts at zero)
    later = train("wacse", show_progress=False,
                  **_options(tiny, tmp_path / "later", max_steps=3, eval_steps=3, awp_head_warmup_steps=2))
    moved = load_file(str(Path(later.model_dir) / "model.safetensors"))
    assert any(not torch.equal(start[name], moved[name]) for name in start)


def test_dev_sts_of_the_trained_languages_is_logged_beside_retrieval(tiny, tmp_path: Path, shared_data: Path) -> None:
    """The user's en-de file meets stsb-multi-mt's en-de dev split: dev STS is measured at each evaluation, and
    the checkpoint is still the one of best dev retrieval (the paper's measure)."""
    result = train("wacse", show_progress=False, **_options(
        tiny, tmp_path / "run", objectives=["tr"], dev_sts_pairs=40, data_root=str(shared_data)))
    history = [entry for entry in result.history if "eval_dev-sts_spearman_cosine" in entry]
    assert len(history) == 2 and "dev-sts_spearman_cosine" in result.details["before"]
    assert result.best["eval_dev_mean_accuracy"] == max(entry["eval_dev_mean_accuracy"] for entry in history)


@pytest.mark.parametrize(("extra", "message"), [
    ({"objectives": ["tr", "mlm"]}, "'mlm' is not an objective"),
    ({"objectives": ["awp"], "awp_weight": 0.0}, "every chosen objective has weight 0"),
    ({"student_vocabulary": "transfer"}, "WACSE keeps the student's vocabulary"),
    ({"alignment_threshold": 1.5}, "alignment-threshold: 1.5 is out of range"),
    ({"objectives": ["tr", "wtr"], "awp_head_warmup_steps": 3}, "warms up the AWP head, but awp is not trained"),
    ({"group_by_length": True}, "length grouping does not apply"),
    ({"aligner": "itermax", "aligner_datasets": ["kardes-xnli"]}, "aligner-datasets: only eflomal learns"),
    ({"aligner": "eflomal", "aligner_datasets": ["kardes"]}, "aligner-datasets: 'kardes' is not a training dataset"),
])
def test_bad_options_stop_before_any_model_loads(tiny, tmp_path: Path, extra: dict, message: str) -> None:
    with pytest.raises(PolyembedError, match=message):
        train("wacse", show_progress=False, **_options(tiny, tmp_path / "run", **extra))
    assert not (tmp_path / "run").exists()


def test_sigkill_then_resume_matches_uninterrupted_run(tiny, tmp_path: Path) -> None:
    from tests.helpers import killed_and_uninterrupted_runs, resume_tolerance

    options = _options(tiny, tmp_path / "unused", max_steps=12, eval_steps=4, save_total_limit=10)
    a, b = killed_and_uninterrupted_runs("wacse", options, tmp_path, kill_at_step=8)
    assert a["steps"] == b["steps"] == 12
    for entry_a, entry_b in zip(a["history"], b["history"], strict=True):
        assert entry_a["eval_dev_mean_accuracy"] == pytest.approx(entry_b["eval_dev_mean_accuracy"],
                                                                  abs=resume_tolerance())
