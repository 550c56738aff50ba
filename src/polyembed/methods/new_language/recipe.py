"""The new-language recipe's steps: check the input (the user's files, and consent for non-commercial registry
data), train as distillation does (with its translation-ranking term), then score the model it started from and
the trained one on the held-out pairs of every source and put that table in the log, the model card and
training.json."""

from __future__ import annotations

import logging
from typing import Any

from polyembed.config import ConfigOrigin
from polyembed.methods.base.run import RunFolder
from polyembed.methods.base.trainer import TrainingJob, TrainResult
from polyembed.methods.distill.train import DistillData, build_job, prepare_data
from polyembed.methods.new_language.config import NewLanguageConfig

logger = logging.getLogger(__name__)
TASK = "held-out-retrieval"


def prepare(config: NewLanguageConfig, origin: ConfigOrigin | None = None) -> DistillData:
    """The bitext, after the recipe's own checks: something to train on, and no non-commercial registry data
    without --allow-noncommercial."""
    from polyembed.data.registry import DATASETS
    from polyembed.methods.base.model_card import NON_COMMERCIAL

    origin = origin or ConfigOrigin()
    if not config.parallel_files and not config.datasets:
        raise origin.error("parallel_files", "the new-language recipe trains on your bitext: give --parallel-files "
                           "LANG=ENGLISH_FILE,OTHER_FILE (or LANG=FILE.tsv), or name registry --datasets")
    restricted = [name for name in config.datasets if name in DATASETS and NON_COMMERCIAL.search(
        DATASETS[name].licence)]
    if restricted and not config.allow_noncommercial:
        names = ", ".join(f"{name} ({DATASETS[name].licence})" for name in restricted)
        raise origin.error("datasets", f"{names}: for non-commercial use only; pass --allow-noncommercial to train "
                           "on it (the model card then offers the weights for non-commercial use only), or leave "
                           "it out")
    if config.datasets and not config.languages:  # registry data for the languages of the user's own files
        config.languages = list(dict.fromkeys(spec.split("=", 1)[0].strip() for spec in config.parallel_files))
    return prepare_data(config, origin)


def build(config: NewLanguageConfig, bitext: DistillData, run: RunFolder, show_progress: bool) -> TrainingJob:
    """Distillation's training job on the recipe's options."""
    return build_job(config, bitext, run, show_progress)


def held_out_scores(model: str, bitext: DistillData, batch_size: int) -> list[Any]:
    """Retrieval accuracy (English <-> other, mean of both directions) of `model` on each held-out source."""
    from polyembed.eval.base import Score
    from polyembed.eval.tasks.retrieval import retrieval_accuracy
    from polyembed.models.loading import load_model

    encoder = load_model(model)
    scores = []
    for source in bitext.dev:
        english = encoder.encode(source.english, "en", batch_size=batch_size, normalize=True)
        other = encoder.encode(source.other, source.language, batch_size=batch_size, normalize=True)
        value = (retrieval_accuracy(english, other) + retrieval_accuracy(other, english)) / 2
        scores.append(Score(task=TASK, split="held-out", subset=f"{source.language} ({source.name})",
                            metric="accuracy", value=value, main=True, n=len(source)))
    return scores


def finish(config: NewLanguageConfig, bitext: DistillData, result: TrainResult, show_progress: bool) -> None:
    """Before/after on the pairs training never saw: the log shows the table, the card and training.json
    keep it."""
    from polyembed.eval.compare import compare_scores
    from polyembed.methods.base.model_card import append_comparison

    if not bitext.dev:
        logger.warning("no held-out pairs (every source has fewer than 5 pairs): no before/after table")
        return
    if show_progress:
        logger.info(f"scoring {config.student} and the trained model on {sum(len(s) for s in bitext.dev):,} "
                    "held-out pairs")
    before = held_out_scores(config.student, bitext, config.batch_size)
    after = held_out_scores(result.model_dir, bitext, config.batch_size)
    comparison = compare_scores(before, after, "trained", config.student, [s.language for s in bitext.dev])
    try:
        append_comparison(result.model_dir, comparison, "held-out pairs of the training bitext")
    except (OSError, ValueError) as err:  # the model is saved; a card that cannot be written stays as it is
        logger.warning("the model card was left as it is: %s", err)
    result.details["held_out"] = comparison.to_dict()
    RunFolder(result.output_dir).write_summary(result.to_dict())
    logger.info("before/after on held-out pairs of your bitext (retrieval accuracy, English <-> other):\n%s",
                comparison.markdown())
