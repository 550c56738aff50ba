"""MTEB on polyembed models: a local STS task scores as our own computation, routed subsets get their language."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.stats import spearmanr

mteb = pytest.importorskip("mteb")

from mteb.abstasks.sts import AbsTaskSTS  # noqa: E402
from mteb.abstasks.task_metadata import TaskMetadata  # noqa: E402

import polyembed  # noqa: E402
from polyembed.eval.mteb_model import MTEBEncoder, subset_languages  # noqa: E402
from tests.conftest import HashingEncoder  # noqa: E402

PAIRS = 120


def _local_sts_task(shared_data) -> AbsTaskSTS:
    """stsb-multi-mt test, first PAIRS rows: German mono and English-German cross, as an MTEB task."""
    from polyembed.data.readers.sts import read_stsb_multi_mt
    from polyembed.data.registry import get_dataset

    folder = get_dataset("stsb-multi-mt").path(shared_data)
    subsets = {"deu": read_stsb_multi_mt(folder, "de"), "eng-deu": read_stsb_multi_mt(folder, "en", "test", "de")}

    class LocalSTS(AbsTaskSTS):
        metadata = TaskMetadata(
            name="PolyembedLocalSTS", type="STS", main_score="cosine_spearman", category="t2t",
            description="stsb-multi-mt test rows read from the local data root.",
            reference="https://huggingface.co/datasets/PhilipMay/stsb_multi_mt",
            dataset={"path": "NA", "revision": "NA"}, eval_splits=["test"],
            eval_langs={"deu": ["deu-Latn"], "eng-deu": ["eng-Latn", "deu-Latn"]},
            date=("2021-01-01", "2021-01-01"), dialect=[], domains=[], task_subtypes=[], license="not specified",
            annotations_creators="human-annotated", modalities=["text"], sample_creation="machine-translated",
            bibtex_citation="",
        )
        min_score, max_score = 0, 5

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            from datasets import Dataset, DatasetDict

            self.dataset = DatasetDict({
                name: DatasetDict({"test": Dataset.from_dict({
                    "sentence1": pairs.sentences1[:PAIRS], "sentence2": pairs.sentences2[:PAIRS],
                    "score": pairs.scores[:PAIRS]})})
                for name, pairs in subsets.items()
            })
            self.data_loaded = True

    return LocalSTS(), subsets


def _main_scores(results) -> dict[str, float]:
    task_result = results.task_results[0] if hasattr(results, "task_results") else results[0]
    return {row["hf_subset"]: row["main_score"] for row in task_result.scores["test"]}


def test_mteb_scores_a_local_task_as_our_own_computation(shared_data) -> None:
    model = polyembed.load_model("me5-small")
    task, subsets = _local_sts_task(shared_data)
    results = mteb.evaluate(MTEBEncoder(model), [task], cache=None, show_progress_bar=False,
                            encode_kwargs={"batch_size": 32})
    scores = _main_scores(results)
    for name, pairs in subsets.items():
        left = polyembed.encode(model, pairs.sentences1[:PAIRS])
        right = polyembed.encode(model, pairs.sentences2[:PAIRS])
        ours = spearmanr((left * right).sum(axis=1), pairs.scores[:PAIRS]).statistic
        assert abs(scores[name] - ours) < 1e-3, (name, scores[name], ours)
    assert scores["eng-deu"] > 0.5  # me5-small aligns English and German (stsb-multi-mt en-de: 67.2)


class TwoLanguageHashing(HashingEncoder):
    """A routed test model: each language has its own hashing dimension, so routing changes the vectors."""

    routes_by_language = True

    def __init__(self) -> None:
        super().__init__(dimension=64, name="two-language")
        self.languages: list[str | None] = []

    def encode(self, sentences, language=None, *, batch_size=64, show_progress_bar=False):
        self.languages.append(language)
        vectors = super().encode(sentences, language, batch_size=batch_size)
        return np.roll(vectors, 7) if language == "fr" else vectors


def test_a_routed_model_gets_each_subsets_language() -> None:
    from mteb.mocks.mock_tasks.sts import MockMultilingualSTSTask

    wrapper = MTEBEncoder(TwoLanguageHashing())
    mteb.evaluate(wrapper, [MockMultilingualSTSTask()], cache=None, show_progress_bar=False,
                  encode_kwargs={"batch_size": 8})
    assert {language for _, language in wrapper.languages_used} == {"en", "fr"}
    assert ("eng", "en") in wrapper.languages_used and ("fra", "fr") in wrapper.languages_used
    assert wrapper.mteb_model_meta.name == "polyembed/two-language"


def test_subset_languages_read_eval_langs() -> None:
    class Meta:
        eval_langs = {"deu": ["deu-Latn"], "eng-deu": ["eng-Latn", "deu-Latn"]}

    assert subset_languages(Meta, "deu") == ["de"] and subset_languages(Meta, "eng-deu") == ["en", "de"]
    assert subset_languages(Meta, "missing") == []
