"""The paper's Single baselines (Huang et al. 2024, section 4): one multilingual encoder trained with
MultipleNegativesRankingLoss on the same pairs the modular stages use, for comparison with the modular bundle.

- Single_m (`pairs: monolingual`): every language's SE paraphrase pairs; each batch is of one language, the
  language drawn per batch in proportion to its pairs (the paper: "each batch is monolingual; language randomly
  sampled for each batch").
- Single_c (`pairs: cross-lingual`): every non-English language's CLA pairs (cross-lingual paraphrases and
  parallel sentences, each with its English counterpart). One model has no frozen pivot to regress onto, so the
  parallel pairs train with MNRL too.
- Single_mc: a Single_c run started from a Single_m model (`student: RUN/model`).

Each language's data is read by the SE and CLA stages' own `prepare_*` functions, so the baselines see exactly
the modular encoders' pairs (same sources, dev split and caps).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from polyembed.config import ConfigOrigin
from polyembed.data.parallel_sources import check_language
from polyembed.errors import PolyembedError
from polyembed.methods.base.run import RunFolder
from polyembed.methods.base.trainer import TrainingJob
from polyembed.methods.modular.config import (
    CrossLingualAlignmentConfig,
    SentenceEncodingConfig,
    SingleModelConfig,
)

logger = logging.getLogger(__name__)

PIVOT = "en"


@dataclass
class MultilingualPairs:
    """Training pairs per dataset name (a language, or language/kind), and the pooled dev pairs."""

    train: dict[str, tuple[list[str], list[str]]]
    dev: tuple[list[str], list[str]]
    sources: dict[str, Any]

    def describe(self) -> dict[str, Any]:
        return {"train_pairs": {name: len(pairs[0]) for name, pairs in self.train.items()},
                "dev_pairs": len(self.dev[0]), "sources": self.sources}


def prepare_pairs(config: SingleModelConfig, origin: ConfigOrigin | None = None) -> MultilingualPairs:
    """Each language's pairs through the modular stage that owns them (errors name the language)."""
    from polyembed.methods.modular.cross_lingual_alignment import AlignmentData, prepare_alignment
    from polyembed.methods.modular.sentence_encoding import ParaphraseData, prepare_paraphrases

    origin = origin or ConfigOrigin()
    languages = [check_language(code, origin.where("languages", i)) for i, code in enumerate(config.languages)]
    if config.pairs == "cross-lingual":
        languages = [code for code in languages if code != PIVOT]
    if not languages:
        raise origin.error("languages", "no language to train on (cross-lingual pairs need a language besides en)")
    common: dict[str, Any] = {"seed": config.seed, "data_root": config.data_root, "max_pairs": config.max_pairs,
                              "dev_pairs": config.dev_pairs}
    train: dict[str, tuple[list[str], list[str]]] = {}
    dev: tuple[list[str], list[str]] = ([], [])
    sources: dict[str, Any] = {}
    data: ParaphraseData | AlignmentData
    for language in dict.fromkeys(languages):
        try:
            if config.pairs == "monolingual":
                data = prepare_paraphrases(SentenceEncodingConfig(language=language, **common))
                train[language] = data.train
            else:
                data = prepare_alignment(CrossLingualAlignmentConfig(language=language, **common))
                if data.paraphrases[0]:
                    train[f"{language}-paraphrase"] = data.paraphrases
                train[f"{language}-parallel"] = data.parallel
        except PolyembedError as err:
            raise PolyembedError(f"single model, language '{language}': {err}") from None
        dev[0].extend(data.dev[0])
        dev[1].extend(data.dev[1])
        sources[language] = data.describe()
    return MultilingualPairs(train, dev, sources)


def build_job(config: SingleModelConfig, data: MultilingualPairs, run: RunFolder, show_progress: bool) -> TrainingJob:
    """One encoder, one MNRL loss shared by every language's dataset, batches of one dataset each (no
    duplicate sentence in a batch), dev retrieval over every language's held-out pairs."""
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.evaluation import TranslationEvaluator
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers, MultiDatasetBatchSamplers

    from polyembed.methods.base.student import add_adapter, default_prompt, load_student
    from polyembed.models.lora import merge_lora

    model = load_student(config.student, config)
    evaluator = TranslationEvaluator(*data.dev, batch_size=config.batch_size, name="dev", show_progress_bar=False)
    before = evaluator(model)
    trainable, total = add_adapter(model, config)
    loss = MultipleNegativesRankingLoss(model, scale=config.mnrl_scale)
    if show_progress:
        counts = ", ".join(f"{name} {len(pairs[0]):,}" for name, pairs in data.train.items())
        logger.info(f"single model ({config.pairs}): {counts} pairs, {len(data.dev[0]):,} dev; "
                    f"dev retrieval before {before['dev_mean_accuracy']:.3f}")
    return TrainingJob(
        model=model,
        train_dataset={name: Dataset.from_dict({"anchor": pairs[0], "positive": pairs[1]})
                       for name, pairs in data.train.items()},
        loss=dict.fromkeys(data.train, loss),
        evaluator=evaluator,
        best_metric="eval_dev_mean_accuracy",
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        multi_dataset_batch_sampler=MultiDatasetBatchSamplers.PROPORTIONAL,
        final_model=merge_lora if config.adapter == "lora" else None,
        prompts=default_prompt(model),
        details={"pairs": data.describe(), "adapter": config.adapter, "trainable_parameters": trainable,
                 "model_parameters": total, "before": before},
    )
