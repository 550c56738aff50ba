"""WACSE on the shared training layer: the bitext as the distillation method reads it, word alignments from
the store (computed once), one loss with the three objectives, translation retrieval on held-out pairs as the
dev measure that picks the checkpoint (as the paper does)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from polyembed.config import ConfigOrigin
from polyembed.data.parallel_sources import TRAINING_DATASETS, ParallelSource, covered_sources
from polyembed.data.root import data_root
from polyembed.errors import PolyembedError
from polyembed.methods.base.bitext import Bitext, prepare_bitext
from polyembed.methods.base.run import RunFolder
from polyembed.methods.base.trainer import EncoderFrozenForSteps, LossHeadTrainer, TrainingJob
from polyembed.methods.wacse.config import WacseConfig

logger = logging.getLogger(__name__)

WEIGHTS = {"tr": "tr_weight", "awp": "awp_weight", "wtr": "wtr_weight"}


@dataclass
class WacseBitext(Bitext):
    """The run's bitext plus the extra pairs eflomal learns alignments from (`aligner_datasets`)."""

    aligner_text: list[ParallelSource] = field(default_factory=list)


def prepare_data(config: WacseConfig, origin: ConfigOrigin | None = None) -> WacseBitext:
    """The bitext, read and split before any model loads, after the WACSE options are checked."""
    origin = origin or ConfigOrigin()
    if config.student_vocabulary != "keep":
        raise origin.error("student_vocabulary", "WACSE keeps the student's vocabulary (aligned spans are the "
                           "student's tokens); use 'keep'")
    if config.group_by_length and ("group_by_length" in origin.key_lines or "group_by_length" in origin.from_cli):
        raise origin.error("group_by_length", "WACSE draws its batches at random with no text twice (the other "
                           "pairs of a batch are TR's negatives); length grouping does not apply: leave it out")
    if not config.objectives:
        raise origin.error("objectives", "no objective: choose from tr, awp, wtr")
    for index, name in enumerate(config.objectives):
        if name not in WEIGHTS:
            raise origin.error("objectives", f"'{name}' is not an objective (choose from tr, awp, wtr)", index)
    if all(getattr(config, WEIGHTS[name]) == 0 for name in config.objectives):
        raise origin.error("objectives", "every chosen objective has weight 0")
    if config.awp_head_warmup_steps and _weights(config)["awp"] == 0:
        raise origin.error("awp_head_warmup_steps", "warms up the AWP head, but awp is not trained (objectives, "
                           "awp_weight)")
    if config.aligner_datasets and config.aligner != "eflomal":
        raise origin.error("aligner_datasets", f"only eflomal learns from extra text (the aligner is "
                           f"'{config.aligner}')")
    for index, name in enumerate(config.aligner_datasets):
        if name not in TRAINING_DATASETS:
            raise origin.error("aligner_datasets", f"'{name}' is not a training dataset (choose from: "
                               f"{', '.join(TRAINING_DATASETS)})", index)
    bitext = prepare_bitext(config, origin)
    if not config.aligner_datasets:
        return WacseBitext(bitext.train, bitext.dev, bitext.dev_sts)
    languages = list(dict.fromkeys(source.language for source in bitext.train))
    try:
        extra = covered_sources(languages, config.aligner_datasets, data_root(config.data_root))
    except PolyembedError as err:
        raise origin.error("aligner_datasets", str(err)) from err
    return WacseBitext(bitext.train, bitext.dev, bitext.dev_sts, aligner_text=extra)


def _weights(config: WacseConfig) -> dict[str, float]:
    return {name: (getattr(config, attribute) if name in config.objectives else 0.0)
            for name, attribute in WEIGHTS.items()}


def build_job(config: WacseConfig, bitext: WacseBitext, run: RunFolder, show_progress: bool) -> TrainingJob:
    """Student, alignments of the training pairs, labels of token spans and links, the loss, dev retrieval."""
    import numpy as np
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.evaluation import (
        EmbeddingSimilarityEvaluator,
        SequentialEvaluator,
        TranslationEvaluator,
    )
    from sentence_transformers.sentence_transformer.modules import Pooling
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    from polyembed.methods.base.student import default_prompt, load_student
    from polyembed.methods.wacse.alignments import align_bitext, link_label, word_token_spans
    from polyembed.methods.wacse.losses import WordAlignedTranslationLoss
    from polyembed.models.language_embedding import add_language_embeddings, language_translation_evaluator

    model = load_student(config.student, config)
    if config.pooling == "cls":
        model[1] = Pooling(model.get_embedding_dimension(), pooling_mode="cls")
    english = [e for source in bitext.train for e in source.english]
    other = [o for source in bitext.train for o in source.other]
    type_ids: dict[str, int] = {}
    if config.language_embeddings:
        languages = ["en", *(source.language for source in [*bitext.train, *bitext.dev])]
        type_ids = add_language_embeddings(model, languages, seed=config.seed)
    other_types = [type_ids.get(source.language, 0) for source in bitext.train for _ in source.other]
    weights = _weights(config)
    needs_links = weights["awp"] > 0 or weights["wtr"] > 0
    row_languages = [source.language for source in bitext.train for _ in source.other]
    extra: dict[str, tuple[list[str], list[str]]] = {}  # per language: the text eflomal also learns from
    for source in bitext.aligner_text:
        texts = extra.setdefault(source.language, ([], []))
        texts[0].extend(source.english)
        texts[1].extend(source.other)
    links = (align_bitext(english, other, config.aligner, config.aligner_model, config.aligner_layer,
                          show_progress, languages=row_languages, extra=extra) if needs_links
             else [{} for _ in english])
    prompt = default_prompt(model) or ""
    tokenizer = model.tokenizer
    size = model.max_seq_length
    labels = []
    for english_text, other_text, row_links, other_type in zip(english, other, links, other_types, strict=True):
        label = link_label(word_token_spans(tokenizer, english_text, prompt, size),
                           word_token_spans(tokenizer, other_text, prompt, size), row_links,
                           config.alignment_threshold, config.max_links, size)
        type_row = np.zeros((1, size, 2), dtype=label.dtype)
        type_row[0, 0] = (type_ids.get("en", 0), other_type)
        labels.append(np.concatenate([label, type_row]).tolist())
    kept = sum(sum(1 for link in label[2] if link[0] >= 0) for label in labels)
    if needs_links and kept == 0:
        raise PolyembedError(f"no word links at threshold {config.alignment_threshold}: lower alignment_threshold")
    dev_english = [e for source in bitext.dev for e in source.english]
    dev_other = [o for source in bitext.dev for o in source.other]
    if type_ids:
        dev_types = [type_ids[source.language] for source in bitext.dev for _ in source.other]
        evaluator = language_translation_evaluator(dev_english, dev_other, type_ids["en"], dev_types,
                                                   batch_size=config.batch_size, name="dev", show_progress_bar=False)
    else:
        evaluator = TranslationEvaluator(dev_english, dev_other, batch_size=config.batch_size, name="dev",
                                         show_progress_bar=False)
        if bitext.dev_sts is not None:  # logged beside retrieval: what the word objectives cost sentence STS
            first, second, scores = bitext.dev_sts
            evaluator = SequentialEvaluator([evaluator, EmbeddingSimilarityEvaluator(
                first, second, scores, name="dev-sts", batch_size=config.batch_size, write_csv=False)])
    before = evaluator(model)
    loss = WordAlignedTranslationLoss(model, weights["tr"], weights["awp"], weights["wtr"], config.scale,
                                      language_embeddings=bool(type_ids), wtr_scale=config.wtr_scale,
                                      awp_links=config.awp_links)
    callbacks = [EncoderFrozenForSteps(model, config.awp_head_warmup_steps)] if loss.head is not None and \
        config.awp_head_warmup_steps else []
    if show_progress:
        logger.info(f"wacse: {len(english):,} pairs, {kept / max(len(english), 1):.1f} word links per pair kept "
                    f"(>= {config.alignment_threshold}); dev retrieval before {before['dev_mean_accuracy']:.3f}"
                    + (f", dev STS before {before['dev-sts_spearman_cosine']:.3f}" if bitext.dev_sts else "") + "; "
                    f"objectives {', '.join(f'{k} {v}' for k, v in weights.items() if v)}")
    return TrainingJob(
        model=model,
        train_dataset=Dataset.from_dict({"english": english, "other": other, "label": labels}),
        loss=loss,
        evaluator=evaluator,
        best_metric="eval_dev_mean_accuracy",
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        trainer_class=LossHeadTrainer if loss.head is not None else None,
        callbacks=callbacks,
        prompts=prompt or None,
        details={"bitext": bitext.describe(), "weights": weights, "links_per_pair": kept / max(len(english), 1),
                 "aligner": {"method": config.aligner, "model": config.aligner_model, "layer": config.aligner_layer,
                             "threshold": config.alignment_threshold,
                             "extra_pairs": {language: len(texts[0]) for language, texts in extra.items()}},
                 "language_embedding_ids": type_ids,
                 "before": before},
    )
