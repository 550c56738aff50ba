"""Options of the new-language recipe: multilingual knowledge distillation's, with the recipe's defaults (the
demo's distillation recipe plus a translation-ranking term, the user's own files only) and the consent
non-commercial registry data needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from polyembed.config import option
from polyembed.methods.distill.config import DistillConfig


@dataclass
class NewLanguageConfig(DistillConfig):
    """One new-language run: your bitext (and registry datasets only when named) -> a better encoder."""

    languages: list[str] = option(
        [], "Languages of the registry --datasets to add (default: those of your --parallel-files); your own "
        "files' languages come from --parallel-files."
    )
    datasets: list[str] = option(
        [], "Registry datasets to add to your own bitext (they need a data root; non-commercial ones also "
        "--allow-noncommercial)."
    )
    allow_noncommercial: bool = option(
        False, "Allow registry datasets under non-commercial terms (e.g. MAFAND-MT); the model card then offers "
        "the weights for non-commercial use only."
    )
    teacher_weight: float = option(
        0.2, "Share of the teacher in each English target; the rest is the untrained student's own embedding "
        "(keeps the student's space where it was).", minimum=0, maximum=1
    )
    projection_fit: Literal["least-squares", "orthogonal"] = option(
        "orthogonal", "How the projection into the teacher's space is fitted: 'orthogonal' keeps the student's own "
        "cosine similarities, 'least-squares' the lowest MSE at step 0."
    )
    ranking_weight: float = option(
        0.1, "Weight of the translation-ranking term added to the MSE (each English sentence picks its "
        "translation among the batch's, and back); 0 is distillation alone.", minimum=0
    )
    learning_rate: float = option(3e-5, "Peak learning rate.", above=0)
    batch_size: int = option(
        32, "Pairs per mini-batch; the other pairs of the batch are translation ranking's negatives.", minimum=2
    )
    freeze_embeddings: bool = option(
        True, "Keep the student's word-embedding matrix fixed (a 250k-token matrix dominates CPU step time)."
    )
    max_steps: int | None = option(200, "Stop after this many optimizer steps (overrides epochs).", minimum=1)
    checkpoint: Literal["best", "final"] = option(
        "final", "Which model the run keeps: 'final' (the last step) or 'best' (by the dev measure)."
    )
    dev_pairs_per_source: int = option(
        500, "Pairs held out of each of your files (at most a fifth of it): the dev measure during training and "
        "the before/after table at the end are scored on them.", minimum=1
    )
    dev_sts_pairs: int = option(0, "stsb-multi-mt dev pairs for a dev STS score (needs a data root); 0 disables.",
                                minimum=0)
    output_dir: str = option("runs/new-language", "Run folder: config.yaml, checkpoints/, model/, training.json.")
