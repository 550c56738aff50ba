"""The LA stage (Huang et al. 2024, section 3.1): continued masked language modelling of one language's
encoder on that language's text, with a LoRA adapter (and trainable embeddings) or every weight.

The base models here ship no MLM head, so the stage builds one tied to the input embeddings
(`MaskedLanguageModelingHead`); it is saved beside each checkpoint (`mlm_head.safetensors`) so a resumed run
continues with it, and with the final model. The result in `model/` is a plain sentence-transformers folder:
the LoRA adapter merged into the weights, ready for the SE stage's own adapter. training.json reports the
held-out MLM loss and perplexity before and after.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyembed.config import ConfigOrigin
from polyembed.data.io import read_lines
from polyembed.data.parallel_sources import check_language, load_parallel_sources
from polyembed.data.root import data_root
from polyembed.errors import NoTrainingDataError
from polyembed.methods.base.run import RunFolder
from polyembed.methods.base.trainer import LossHeadTrainer, TrainingJob
from polyembed.methods.modular.config import LANGUAGE_TEXT_DATASETS, LanguageAdaptationConfig
from polyembed.methods.modular.stage import check_stage_start

logger = logging.getLogger(__name__)

TEXT_COLUMN = "text"


@dataclass
class LanguageText:
    """One language's training and held-out sentences, and where they came from."""

    language: str
    train: list[str]
    heldout: list[str]
    origins: list[str]

    def describe(self) -> dict[str, Any]:
        return {"language": self.language, "train_sentences": len(self.train),
                "heldout_sentences": len(self.heldout), "sources": self.origins}


def prepare_text(config: LanguageAdaptationConfig, origin: ConfigOrigin | None = None) -> LanguageText:
    """The language's sentences from `datasets` (non-English side) and `text_files`, deduplicated, split into
    train and held-out (seeded), read and checked before any model loads."""
    origin = origin or ConfigOrigin()
    if not config.language:
        raise origin.error("language", "no language given: set language (e.g. kk)")
    language = check_language(config.language, origin.where("language"))
    check_stage_start(config.student, language, "LA",
                      "the vocabulary step (`polyembed models prune` or `models transfer-vocabulary`)",
                      origin.where("student"))
    for index, name in enumerate(config.datasets):
        if name not in LANGUAGE_TEXT_DATASETS:
            raise origin.error(
                "datasets", f"'{name}' has no sentences for MLM (choose from {', '.join(LANGUAGE_TEXT_DATASETS)})",
                index,
            )
    sentences: list[str] = []
    origins: list[str] = []
    if config.datasets and language != "en":
        root = data_root(config.data_root)
        try:
            sources = load_parallel_sources([language], config.datasets, root)
        except NoTrainingDataError:  # judged below, with the text files counted in
            sources = []
        for source in sources:
            sentences.extend(source.other)
            origins.append(source.name)
    for index, path in enumerate(config.text_files):
        lines = [line.strip() for line in read_lines(Path(path), allow_empty=True) if line.strip()]
        if not lines:
            raise origin.error("text_files", f"{path}: no sentences", index)
        sentences.extend(lines)
        origins.append(f"file:{path}")
    unique = list(dict.fromkeys(sentences))
    if len(unique) < 10:
        where = f"datasets {', '.join(config.datasets)}" if config.datasets else "no datasets"
        raise origin.error(
            "language", f"language '{config.language}': {len(unique)} sentences for language adaptation ({where}, "
            f"{len(config.text_files)} text files); give text_files with the language's text"
        )
    rng = random.Random(f"{config.seed}:la:{language}")
    rng.shuffle(unique)
    heldout = min(config.heldout_sentences, len(unique) // 5)
    train = unique[heldout:]
    if config.max_sentences is not None:
        train = train[: config.max_sentences]
    return LanguageText(language, train, unique[:heldout], origins)


def build_job(
    config: LanguageAdaptationConfig, text: LanguageText, run: RunFolder, show_progress: bool
) -> TrainingJob:
    """The encoder (with a LoRA adapter unless 'full'), MLM on the training sentences, held-out MLM loss as
    the dev measure (also measured once before training)."""
    from datasets import Dataset

    from polyembed.methods.base.student import add_adapter, load_student
    from polyembed.methods.modular.evaluation import HeldOutMLMEvaluator
    from polyembed.methods.modular.losses import MaskedLanguageModelingLoss
    from polyembed.models.lora import merge_lora

    model = load_student(config.student, config)
    loss = MaskedLanguageModelingLoss(model, config.mlm_probability)
    evaluator = HeldOutMLMEvaluator(text.heldout, loss, batch_size=config.batch_size, seed=config.seed)
    before = evaluator(model)
    trainable, total = add_adapter(model, config, train_embeddings=config.train_embeddings)
    if show_progress:
        logger.info(f"language adaptation ({text.language}): {len(text.train):,} sentences, "
                    f"{len(text.heldout):,} held out; "
                    f"held-out perplexity before {before['heldout_perplexity']:.2f}; {trainable:,} of {total:,} "
                    "parameters train")
    return TrainingJob(
        model=model,
        train_dataset=Dataset.from_dict({TEXT_COLUMN: text.train}),
        loss=loss,
        evaluator=evaluator,
        best_metric="eval_heldout_mlm_loss",
        greater_is_better=False,
        trainer_class=LossHeadTrainer,
        final_model=merge_lora if config.adapter == "lora" else None,
        details={"text": text.describe(), "adapter": config.adapter, "trainable_parameters": trainable,
                 "model_parameters": total, "before": before},
    )
