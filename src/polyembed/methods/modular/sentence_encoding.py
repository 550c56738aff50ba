"""The SE stage (Huang et al. 2024, section 3.1): contrastive sentence-encoder training of one language's
encoder on monolingual paraphrase pairs, with MultipleNegativesRankingLoss (in-batch negatives).

Starts from the LA result (LoRA already merged, so the LA weights stay fixed under the new adapter); the SE
LoRA adapter is merged in turn, so `model/` is a plain sentence-transformers folder. The dev measure is
paraphrase retrieval on held-out pairs (sentence-transformers' TranslationEvaluator: does each sentence find
its own paraphrase among all, both directions).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any

from polyembed.config import ConfigOrigin
from polyembed.data.parallel_sources import check_language
from polyembed.data.paraphrases import PARAPHRASE_DATASETS, ParaphrasePairs, load_paraphrases, read_paraphrase_file
from polyembed.data.root import data_root
from polyembed.methods.base.run import RunFolder
from polyembed.methods.base.trainer import TrainingJob
from polyembed.methods.modular.config import SentenceEncodingConfig
from polyembed.methods.modular.stage import check_stage_start

logger = logging.getLogger(__name__)


@dataclass
class ParaphraseData:
    """Training and dev pairs of one language."""

    language: str
    train: tuple[list[str], list[str]]
    dev: tuple[list[str], list[str]]
    sources: list[dict[str, Any]]

    def describe(self) -> dict[str, Any]:
        return {"language": self.language, "train_pairs": len(self.train[0]), "dev_pairs": len(self.dev[0]),
                "sources": self.sources}


def prepare_paraphrases(config: SentenceEncodingConfig, origin: ConfigOrigin | None = None) -> ParaphraseData:
    """Every paraphrase pair of the language (registry sources that have it, then files), deduplicated and
    split into train and dev (seeded), before any model loads."""
    origin = origin or ConfigOrigin()
    if not config.language:
        raise origin.error("language", "no language given: set language (e.g. kk)")
    language = check_language(config.language, origin.where("language"))
    check_stage_start(config.student, language, "SE", "`polyembed train modular la`", origin.where("student"))
    for index, name in enumerate(config.paraphrase_datasets):
        if name not in PARAPHRASE_DATASETS:
            raise origin.error("paraphrase_datasets",
                               f"'{name}' is not a paraphrase source (choose from {', '.join(PARAPHRASE_DATASETS)})",
                               index)
    root = data_root(config.data_root) if config.paraphrase_datasets else None
    found: list[ParaphrasePairs] = load_paraphrases(language, list(config.paraphrase_datasets), root)
    for path in config.paraphrase_files:
        rows = read_paraphrase_file(path)
        found.append(ParaphrasePairs("file", language, [a for a, _ in rows], [b for _, b in rows], str(path)))
    pairs = list(dict.fromkeys((a, b) for source in found for a, b in zip(source.anchors, source.positives,
                                                                            strict=True)))
    if len(pairs) < 10:
        raise origin.error(
            "language", f"language '{config.language}': {len(pairs)} paraphrase pairs in "
            f"{', '.join(config.paraphrase_datasets) or 'no datasets'} and {len(config.paraphrase_files)} "
            "paraphrase files; give paraphrase_files (e.g. translated with `polyembed data translate`)"
        )
    random.Random(f"{config.seed}:se:{language}").shuffle(pairs)
    dev_size = min(config.dev_pairs, len(pairs) // 5)
    dev, train = pairs[:dev_size], pairs[dev_size:]
    if config.max_pairs is not None:
        train = train[: config.max_pairs]
    return ParaphraseData(
        language, ([a for a, _ in train], [b for _, b in train]), ([a for a, _ in dev], [b for _, b in dev]),
        [{"name": s.name, "pairs": len(s), "origin": s.origin} for s in found],
    )


def build_job(config: SentenceEncodingConfig, data: ParaphraseData, run: RunFolder, show_progress: bool) -> TrainingJob:
    """The encoder (with a LoRA adapter unless 'full'), MNRL on the training pairs (no duplicate sentence
    in a batch, which would be a false negative), paraphrase retrieval on the dev pairs."""
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.evaluation import TranslationEvaluator
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    from polyembed.methods.base.student import add_adapter, default_prompt, load_student
    from polyembed.models.lora import merge_lora

    model = load_student(config.student, config)
    evaluator = TranslationEvaluator(*data.dev, batch_size=config.batch_size, name="dev", show_progress_bar=False)
    before = evaluator(model)
    trainable, total = add_adapter(model, config)
    if show_progress:
        logger.info(f"sentence encoding ({data.language}): {len(data.train[0]):,} paraphrase pairs, "
                    f"{len(data.dev[0]):,} dev; dev retrieval before {before['dev_mean_accuracy']:.3f}")
    return TrainingJob(
        model=model,
        train_dataset=Dataset.from_dict({"anchor": data.train[0], "positive": data.train[1]}),
        loss=MultipleNegativesRankingLoss(model, scale=config.mnrl_scale),
        evaluator=evaluator,
        best_metric="eval_dev_mean_accuracy",
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        final_model=merge_lora if config.adapter == "lora" else None,
        prompts=default_prompt(model),
        details={"paraphrases": data.describe(), "adapter": config.adapter, "trainable_parameters": trainable,
                 "model_parameters": total, "before": before},
    )
