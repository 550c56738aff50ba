"""Options of WACSE (Miao et al. 2024): YAML keys and CLI flags. The bitext options are the shared
`BitextConfig`'s; the objectives, their weights and the word aligner are WACSE's own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from polyembed.config import option
from polyembed.methods.base.config import BitextConfig

LOW_RESOURCE_LANGUAGES = ["kk", "ug", "tt", "tk", "uz", "az", "sw"]
"""Tatoeba-Challenge languages that LASER Tatoeba also tests (its test pairs are left out of training)."""


@dataclass
class WacseConfig(BitextConfig):
    """One WACSE run: translation ranking plus the word-level objectives on aligned words of the bitext."""

    languages: list[str] = option(LOW_RESOURCE_LANGUAGES, "Non-English languages to learn (ISO 639-1 or 639-3).")
    datasets: list[str] = option(["tatoeba-challenge"], "Registry datasets to draw bitext from.")
    student: str = option("me5-small", "The encoder to train (name or folder).")
    objectives: list[str] = option(
        ["tr", "awp", "wtr"], "Objectives: tr (translation ranking), awp (aligned word prediction), wtr (word "
        "translation ranking); the paper's ablation trains tr alone, tr+awp and tr+wtr."
    )
    tr_weight: float = option(0.8, "alpha: weight of translation ranking (paper: 0.8).", minimum=0)
    awp_weight: float = option(0.1, "beta: weight of aligned word prediction (paper: 0.1).", minimum=0)
    wtr_weight: float = option(0.1, "gamma: weight of word translation ranking (paper: 0.1).", minimum=0)
    scale: float = option(20.0, "Similarity scale of TR (1 / temperature; DAP's code: temperature 0.05).", above=0)
    wtr_scale: float = option(1.0, "Similarity scale of WTR (paper, eq. 6: a plain cosine, 1.0).", above=0)
    awp_links: Literal["all", "together", "one"] = option(
        "together", "AWP's masking: together masks all of a sentence's aligned words in one copy of it and sums the "
        "loss over its links (one extra forward pass per direction); all masks each aligned word in its own copy "
        "(one forward pass per link); one masks one random aligned word per sentence and direction. The paper "
        "(eq. 4) sums over links without saying which; docs/methods/wacse.md compares them."
    )
    awp_head_warmup_steps: int = option(
        0, "First steps in which only the AWP head trains (the encoder frozen), so a fresh head carries "
        "information before its gradients reach the encoder.", minimum=0
    )
    pooling: Literal["model", "cls"] = option(
        "model", "Sentence vector: the model's own pooling, or the CLS token's hidden state (the paper)."
    )
    aligner: Literal["eflomal", "itermax", "argmax", "match"] = option(
        "eflomal", "Word aligner for the bitext: eflomal (statistical, learnt per language from the run's bitext, "
        "independent of the student), or SimAlign-style from `aligner_model`."
    )
    aligner_datasets: list[str] = option(
        [], "eflomal only: registry training datasets whose pairs of the run's languages eflomal also learns from "
        "(a language a dataset lacks is skipped); the links are used on the run's own pairs only, so the training "
        "data does not change. kardes-xnli adds Turkic text (az, kk, ky, ug, uz)."
    )
    aligner_model: str = option("me5-small", "Encoder whose token embeddings align words (frozen).")
    aligner_layer: int = option(8, "Hidden layer of `aligner_model` used for alignment.", minimum=0)
    alignment_threshold: float = option(
        0.8, "Keep links scoring at least this: eflomal 1.0 where both directions link the words, 0.5 where one "
        "does; the other aligners (cos+1)/2 (the paper keeps WSPAlign links >= 0.9).", minimum=0, maximum=1,
    )
    max_links: int = option(32, "Most aligned word pairs kept per sentence pair.", minimum=1)
    language_embeddings: bool = option(
        False, "Add a learned vector per language (English included) to every token embedding, as the paper's "
        "Table 8 ablation; the saved model then encodes with a language (see the language_embedding module of "
        "polyembed.models)."
    )
    batch_size: int = option(
        64, "Pairs per mini-batch; the other pairs of the batch are TR's negatives (paper: 1024, by gradient "
        "accumulation over two GPUs; accumulated steps do not share negatives).", minimum=2
    )
    learning_rate: float = option(5e-5, "Peak learning rate (paper: 5e-5).", above=0)
    max_seq_length: int = option(32, "Maximum tokens per sentence (paper: 32).", minimum=8)
    output_dir: str = option("runs/wacse", "Run folder: config.yaml, checkpoints/, model/, training.json.")

    def required_packages(self) -> tuple[str, ...]:
        """eflomal (the alignment extra) when it aligns the words an objective trains on."""
        others = super().required_packages()
        links = any(getattr(self, f"{name}_weight") > 0 for name in ("awp", "wtr") if name in self.objectives)
        return (*others, "eflomal") if self.aligner == "eflomal" and links else others
