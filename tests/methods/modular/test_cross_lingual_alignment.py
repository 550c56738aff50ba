"""The CLA stage on tiny models: only the parallel adapters train, dev retrieval against the frozen pivot
rises, the saved model with adapters off is bit-identical to the encoder before CLA, a resumed run matches an
uninterrupted one, and the result drops into a ModularEncoder bundle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from polyembed.errors import PolyembedError
from polyembed.methods.base.registry import train
from tests.helpers import PAIRS, killed_and_uninterrupted_runs, tiny_sentence_transformer


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("modular-cla")
    parallel = root / "en-de.tsv"
    parallel.write_text("".join(f"{en}\t{de}\n" for en, de in PAIRS), encoding="utf-8")
    paraphrases = root / "de-en.tsv"  # a sentence with the English of its neighbour: a loose "paraphrase"
    paraphrases.write_text("".join(f"{de}\t{PAIRS[(i + 1) % len(PAIRS)][0]}\n" for i, (_, de) in enumerate(PAIRS)),
                           encoding="utf-8")
    return {"pivot": tiny_sentence_transformer(root / "pivot", seed=0),
            "student": tiny_sentence_transformer(root / "student", seed=1),
            "parallel": parallel, "paraphrases": paraphrases}


pytestmark = pytest.mark.usefixtures("offline_cache")


def _options(tiny: dict[str, Path], out: Path, **extra: object) -> dict[str, object]:
    return {"student": str(tiny["student"]), "pivot": str(tiny["pivot"]), "language": "de",
            "paraphrase_datasets": [], "paraphrase_files": [str(tiny["paraphrases"])], "parallel_datasets": [],
            "parallel_files": [str(tiny["parallel"])], "batch_size": 16, "max_steps": 60, "eval_steps": 30,
            "learning_rate": 3e-2, "dev_pairs": 16, "precision": "fp32", "output_dir": str(out), **extra}


def test_alignment_trains_only_adapters_and_leaves_mono_bit_identical(tiny, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from polyembed.models.parallel_adapter import load_parallel_adapters

    result = train("modular-cla", show_progress=False, **_options(tiny, tmp_path / "run"))
    details = result.details
    assert details["alignment"]["parallel_pairs"] == len(PAIRS) - 16
    assert details["alignment"]["paraphrase_pairs"] > 0
    assert details["trainable_parameters"] < 0.2 * details["model_parameters"]
    # Random tiny models, the same in every run (a fixed vocabulary, seeded weights: tests/helpers.py). With the
    # vocabulary the WordPiece trainer made (it broke ties differently in every process), dev cosine to the
    # pivot went -0.2 -> 0.96-0.98 every time, retrieval (16 dev pairs) up in most builds and down in one: the
    # cosine is the signal, retrieval may not get worse.
    assert result.best["eval_dev_mean_cosine"] > details["before"]["dev_mean_cosine"] + 0.5
    assert result.best["eval_dev_mean_accuracy"] >= details["before"]["dev_mean_accuracy"]
    sentences = [de for _, de in PAIRS[:8]]
    before = SentenceTransformer(str(tiny["student"]), device="cpu").encode(sentences)
    saved = SentenceTransformer(result.model_dir, device="cpu")  # a plain encoder: the adapters are apart
    assert np.array_equal(saved.encode(sentences), before)
    load_parallel_adapters(saved, result.model_dir)
    assert not np.allclose(saved.encode(sentences), before)


def test_the_aligned_encoder_joins_a_modular_bundle(tiny, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from polyembed.models.loading import load_model
    from polyembed.models.modular import save_modular_bundle
    from polyembed.models.parallel_adapter import load_parallel_adapters

    result = train("modular-cla", show_progress=False, **_options(tiny, tmp_path / "run", max_steps=4, eval_steps=2))
    german = SentenceTransformer(result.model_dir, device="cpu")
    load_parallel_adapters(german, result.model_dir)
    bundle = save_modular_bundle(tmp_path / "bundle", {"en": SentenceTransformer(str(tiny["pivot"]), device="cpu"),
                                                       "de": german})
    encoder = load_model(str(bundle))
    sentences = [de for _, de in PAIRS[:4]]
    plain = SentenceTransformer(str(tiny["student"]), device="cpu").encode(sentences)
    assert np.allclose(encoder.encode(sentences, language="de", mode="mono"), plain, atol=1e-6)
    assert not np.allclose(encoder.encode(sentences, language="de", mode="cross"), plain, atol=1e-3)


def test_sigkill_then_resume_matches_uninterrupted_run(tiny, tmp_path: Path) -> None:
    options = _options(tiny, tmp_path / "unused", max_steps=40, eval_steps=10, save_total_limit=10)
    a, b = killed_and_uninterrupted_runs("modular cla", options, tmp_path, kill_at_step=20)
    assert a["steps"] == b["steps"] == 40
    for entry_a, entry_b in zip(a["history"], b["history"], strict=True):
        assert entry_a["eval_dev_mean_cosine"] == pytest.approx(entry_b["eval_dev_mean_cosine"], abs=1e-5)


def test_cycle_sampler_takes_batches_in_the_given_ratio() -> None:
    from torch.utils.data import BatchSampler, ConcatDataset, SequentialSampler

    from polyembed.methods.modular.cross_lingual_alignment import CycleBatchSampler

    parts = [list(range(10)), list(range(100, 106))]  # 5 and 3 batches of 2
    samplers = [BatchSampler(SequentialSampler(part), batch_size=2, drop_last=True) for part in parts]
    sampler = CycleBatchSampler(ConcatDataset(parts), samplers, counts=(2, 1))
    batches = list(sampler)
    assert len(batches) == len(sampler) == 6  # two whole cycles: the first dataset runs out of a third
    assert batches == [[0, 1], [2, 3], [10, 11], [4, 5], [6, 7], [12, 13]]  # rows of the ConcatDataset
    with pytest.raises(ValueError, match="one count >= 1 per dataset"):
        CycleBatchSampler(ConcatDataset(parts), samplers, counts=(1, 0))


def test_batch_ratio_and_one_kind_only(tiny, tmp_path: Path) -> None:
    ratio = train("modular-cla", show_progress=False, **_options(
        tiny, tmp_path / "ratio", max_steps=6, eval_steps=3, paraphrase_batches=2))  # checkpoints pickle the sampler
    assert ratio.details["batches_per_cycle"] == {"paraphrase": 2, "parallel": 1}
    assert ratio.steps == 6
    only = train("modular-cla", show_progress=False, **_options(
        tiny, tmp_path / "only", max_steps=4, eval_steps=2, parallel_batches=0))
    assert only.details["batches_per_cycle"] == {"paraphrase": 1}
    assert only.details["alignment"]["parallel_pairs"] == len(PAIRS) - 16  # still read: dev pairs come from them


def test_sts_dev_measure_scores_both_directions_against_the_pivot(hashing_encoder) -> None:
    from polyembed.data.types import ScoredPairs
    from polyembed.eval.tasks.sts import spearman
    from polyembed.methods.modular.cross_lingual_alignment import PivotAlignmentEvaluator

    def unit(matrix: np.ndarray) -> np.ndarray:
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    class Student:  # the hashing encoder as a sentence-transformers-like model
        def encode(self, sentences: list[str], **_: object) -> np.ndarray:
            return unit(hashing_encoder.encode(sentences))

    english, german = [en for en, _ in PAIRS[:12]], [de for _, de in PAIRS[:12]]
    gold = [float(i % 5) for i in range(12)]
    forward = ScoredPairs(english, german[::-1], gold, "en", "de")  # English first, then German first
    backward = ScoredPairs(german, english[3:] + english[:3], gold, "de", "en")
    pivot = (hashing_encoder.encode(forward.sentences1), hashing_encoder.encode(backward.sentences2))
    evaluator = PivotAlignmentEvaluator(english, hashing_encoder.encode(english), batch_size=4,
                                        sts_pairs=(forward, backward), sts_pivot_embeddings=pivot)
    metrics = evaluator(Student())
    expected = (spearman(np.einsum("ij,ij->i", unit(pivot[0]), Student().encode(forward.sentences2)), gold)
                + spearman(np.einsum("ij,ij->i", Student().encode(backward.sentences1), unit(pivot[1])), gold)) / 2
    assert metrics["dev_sts_spearman"] == pytest.approx(expected)
    assert evaluator.primary_metric == "dev_sts_spearman"
    assert metrics["dev_mean_accuracy"] == 100.0  # one space for both sides: each finds itself


def test_checkpoint_chosen_by_cross_lingual_sts_dev(tiny, tmp_path: Path, shared_data: Path) -> None:
    result = train("modular-cla", show_progress=False, **_options(
        tiny, tmp_path / "sts", max_steps=6, eval_steps=2, dev_measure="sts", checkpoint="best",
        data_root=str(shared_data)))
    assert result.details["alignment"]["dev_sts_pairs"] == 1500  # stsb-multi-mt en-de dev
    history = [entry for entry in result.history if "eval_dev_sts_spearman" in entry]
    assert len(history) == 3 and np.isfinite(result.details["before"]["dev_sts_spearman"])
    best = max(history, key=lambda entry: entry["eval_dev_sts_spearman"])
    assert result.best["eval_dev_sts_spearman"] == best["eval_dev_sts_spearman"]
    assert result.best_checkpoint is not None and result.best_checkpoint.endswith(f"checkpoint-{best['step']}")


@pytest.mark.parametrize(("extra", "message"), [
    ({"language": "en"}, "English is the pivot"),
    ({"language": "sw", "dev_measure": "sts"}, "language 'sw': no en-sw STS dev split here"),
    ({"paraphrase_batches": 0, "parallel_batches": 0}, "both 0: nothing trains"),
    ({"batch_mixing": "proportional", "parallel_batches": 2}, "use batch_mixing: round-robin"),
    ({"parallel_batches": 0, "paraphrase_files": []}, "parallel_batches is 0 .* no cross-lingual paraphrase pairs"),
    ({"parallel_files": []}, r"language 'de': 0 parallel pairs .*parallel_files"),
    ({"paraphrase_datasets": ["tatoeba-challenge"]}, "has no cross-lingual paraphrases"),
])
def test_bad_input_fails_before_any_model_loads(tiny, tmp_path: Path, extra: dict, message: str) -> None:
    with pytest.raises(PolyembedError, match=message):
        train("modular-cla", show_progress=False, **_options(tiny, tmp_path / "bad", student="no-such-model",
                                                              **extra))
    assert not (tmp_path / "bad").exists()
