"""Options of multilingual knowledge distillation (Reimers & Gurevych, 2020): YAML keys and CLI flags.

Only the teacher, its batch size, the projection, the anchor text and the dev measure are distillation's own;
everything else is the shared `BitextConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from polyembed.config import option
from polyembed.methods.base.config import DEFAULT_TRAINING_DATASETS, DEMO_LANGUAGES, BitextConfig, LoraOptions

__all__ = ["DEFAULT_TRAINING_DATASETS", "DEMO_LANGUAGES", "DistillConfig"]


@dataclass
class DistillConfig(LoraOptions, BitextConfig):
    """One distillation run (MSE on held-out pairs is the paper's dev measure)."""

    teacher: str = option(
        "minilm-en", "Teacher sentence encoder (name or folder); targets are its embeddings of the English side."
    )
    teacher_weight: float = option(
        1.0,
        "Share of the teacher in each English target: target = w * teacher(en) + (1 - w) * untrained student(en) "
        "(projection included). 1 is the paper; lower keeps the student's English nearer where it started; 0 "
        "only pulls translations onto the student's own English (measured: slightly less forgetting of languages "
        "without bitext, lower STS; docs/benchmarks.md).",
        minimum=0,
        maximum=1,
    )
    teacher_batch_size: int = option(128, "Batch size for computing the teacher's embeddings.", minimum=1)
    projection: Literal["auto", "always", "never"] = option(
        "auto",
        "Linear layer after the student, fitted by least squares from the student's "
        "to the teacher's embeddings of the English side: 'auto' (when the student is not "
        "the teacher or dimensions differ), 'always' or 'never'.",
    )
    projection_fit: Literal["least-squares", "orthogonal"] = option(
        "least-squares",
        "How the projection is fitted: 'least-squares' (lowest MSE at step 0) or 'orthogonal' "
        "(a scaled rotation: keeps the student's own cosine similarities intact; a student no wider than its teacher).",
    )
    anchor_languages: list[str] = option(
        [],
        "Languages without teacher targets whose text keeps the student near its starting point: MSE between "
        "the student's and the untrained student's embedding of the same sentence (the non-English side of "
        "`datasets`; must not be in `languages`). Each language is one more source in the balanced batches.",
    )
    anchor_files: list[str] = option(
        [], "Monolingual anchor text of your own: LANG=FILE, one sentence per line (same role as anchor_languages)."
    )
    anchor_sentences_per_language: int = option(
        1000, "Cap on the anchor sentences of each language (a seeded sample).", minimum=1
    )
    ranking_weight: float = option(
        0.0, "Weight of a translation-ranking term added to the MSE (each English sentence picks its translation "
        "among the batch's, and back; WACSE's TR): 0 is the paper's MSE alone. Needs no anchor text.", minimum=0
    )
    ranking_scale: float = option(20.0, "Similarity scale of the translation-ranking term (1 / temperature).",
                                  above=0)
    best_metric: Literal["mse", "translation", "sts"] = option(
        "mse", "Dev measure that picks the kept checkpoint: 'mse' (paper), 'translation' or 'sts'."
    )
    output_dir: str = option("runs/distill", "Run folder: config.yaml, checkpoints/, model/, training.json.")

    def anchor_codes(self) -> list[str]:
        """Every anchor language as written (anchor_languages and the LANG of each anchor_files entry)."""
        return [*self.anchor_languages, *(spec.partition("=")[0].strip() for spec in self.anchor_files)]
