"""Options of EMMA-X (Guo et al. 2023): YAML keys and CLI flags of its two phases.

Where the authors' code differs from the paper, the paper is the default and the code's value is an option:
queue 768 there (`queue_size`, paper 256), per-rank temperatures 0.05..0.1 spaced linearly (`temperatures`;
the paper fixes only their order), label smoothing 0.3 on the classifier (`label_smoothing`, paper none).
The code numbers ranks the other way round (rank N = translation); here rank 1 is a translation, as in the
paper, everywhere. One default follows MoCo (whose setting the paper says it uses) and the code rather than the
paper's text: each anchor also meets its own key and the batch's keys (`own_key`); the queue alone made the
miniature drift (see `EmmaxEmLoss`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from polyembed.config import option
from polyembed.methods.base.config import BitextConfig

WARMUP_LANGUAGES = ["de", "ru", "kk"]
EM_LANGUAGES = ["de", "ru", "kk", "uz", "tt", "tk"]


@dataclass
class ClassifierOptions:
    """How the semantic-rank classifier learns (both phases)."""

    classifier_learning_rate: float = option(
        1e-3,
        "Adam learning rate of the rank classifier (paper: 3e-5 at batch 1024 over millions of steps). 1e-3 is "
        "chosen on held-out me5-small pairs (`benchmarks/emmax.py classifier`, two seeds): 1e-2 and above "
        "overshoot in 384 dimensions, 3e-3 was a point lower.",
        above=0,
    )
    label_smoothing: float = option(
        0.0, "Label smoothing of the classifier's rank targets (paper: none; the authors' code: 0.3).", minimum=0,
        below=1,
    )


@dataclass
class EmmaxWarmupConfig(ClassifierOptions, BitextConfig):
    """Phase 1: the encoder with InfoNCE on parallel pairs, the classifier by maximum likelihood on rank 1
    (translations), rank N (an outlier of the batch) and mixup examples between them (Eq. 2-4)."""

    languages: list[str] = option(WARMUP_LANGUAGES, "Non-English languages of the parallel warm-up.")
    datasets: list[str] = option(["tatoeba-challenge"], "Registry datasets to draw the warm-up bitext from.")
    ranks: int = option(4, "N, the number of semantic ranks (paper: 4); at least 2.", minimum=2)
    classifier: Literal["gmm", "fcn"] = option(
        "gmm", "Rank classifier: 'gmm' (the paper's Gaussian mixture) or 'fcn' (its feed-forward ablation)."
    )
    mixup_examples: int = option(
        1, "Virtual examples per pair between the translation and the outlier (Eq. 3); 0 disables mixup.", minimum=0
    )
    temperature: float = option(0.05, "InfoNCE temperature of the encoder on parallel pairs (Eq. 2).", above=0)
    max_seq_length: int = option(64, "Maximum tokens per sentence.", minimum=8)
    output_dir: str = option("runs/emmax-warmup", "Run folder: config.yaml, checkpoints/, model/, training.json.")


@dataclass
class EmmaxEmConfig(ClassifierOptions, BitextConfig):
    """Phase 2: EM on non-parallel text. Anchors meet a MoCo queue of random sentences; the classifier's
    argmax rank trains the encoder (ranking InfoNCE), the encoder's similarity rank trains the classifier."""

    student: str = option(
        "", "The warm-up's model folder (it holds the rank classifier): `polyembed train emmax warmup` output."
    )
    languages: list[str] = option(
        EM_LANGUAGES,
        "Languages whose text feeds the EM phase: both sides of their registry bitext, each side shuffled on its "
        "own so that no pair stays aligned, plus text_files.",
    )
    datasets: list[str] = option(["tatoeba-challenge"], "Registry bitext whose sides become monolingual text.")
    text_files: list[str] = option(
        [], "Monolingual text of your own: 'LANG=FILE' (one sentence per line); a language may have only these."
    )
    english_text: bool = option(True, "Add the English sides of the bitext (shuffled) to the text.")
    max_sentences_per_language: int | None = option(
        None, "Cap on each language's sentences (a seeded sample).", minimum=1
    )
    queue_size: int = option(256, "K, the MoCo queue of random sentences (paper: 256; authors' code: 768).", minimum=2)
    momentum: float = option(0.999, "Momentum of the key encoder (paper: 0.999).", minimum=0, maximum=1)
    temperatures: list[float] = option(
        [],
        "Per-rank temperatures tau_1 < ... < tau_N of ranking InfoNCE (N values, increasing); empty: 0.05 to 0.1 "
        "spaced linearly (the authors' code).",
    )
    rank_similarity_momentum: float = option(
        0.9, "epsilon of Eq. 11, the moving average of each rank's similarity s_r.", minimum=0, maximum=1
    )
    own_key: bool = option(
        True,
        "Compare each anchor with its own key (rank 1 by construction) and the batch's other keys as well as the "
        "queue, as MoCo and the authors' code do; off: the queue only, as the paper's text reads.",
    )
    dual_supervision: bool = option(
        True,
        "Train the classifier on the encoder's ranks (Eq. 6); off: the classifier stays as the warm-up left it "
        "and only supervises the encoder (the paper's ablation).",
    )
    max_seq_length: int = option(64, "Maximum tokens per sentence.", minimum=8)
    output_dir: str = option("runs/emmax-em", "Run folder: config.yaml, checkpoints/, model/, training.json.")
