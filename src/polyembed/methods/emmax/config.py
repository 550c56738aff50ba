"""Options of EMMA-X (Guo et al. 2023): YAML keys and CLI flags of its two phases.

Defaults follow the authors' code (github.com/guopingiie/EMMA-X) where it and the paper differ, and the paper
where the code is silent; the other reading is an option. docs/methods/emmax.md has the parity table: every
choice, its value in the paper, in the authors' code and here, and the reason for each difference.
Ranks are numbered as in the paper everywhere (rank 1 = translation; the authors' code numbers them the other
way round).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from polyembed.config import option
from polyembed.methods.base.config import BitextConfig

WARMUP_LANGUAGES = ["de", "ru", "kk"]
EM_LANGUAGES = ["de", "ru", "kk", "uz", "tt", "tk"]
AUTHORS_LEARNING_RATE = 4e-5


@dataclass
class ClassifierOptions:
    """How the semantic-rank classifier and the rank similarities learn (both phases)."""

    learning_rate: float = option(
        AUTHORS_LEARNING_RATE, "Peak learning rate of the encoder (the authors' code: 4e-5; paper: 5e-4).", above=0
    )
    weight_decay: float = option(0.0, "AdamW weight decay of the encoder (the authors' code: 0).", minimum=0)
    label_smoothing: float = option(
        0.3,
        "Label smoothing eps of the classifier's rank targets: 1 - eps on the true rank, eps / (N - 1) on each "
        "other (the authors' code: 0.3; paper: none).",
        minimum=0,
        below=1,
    )
    rank_similarity_momentum: float = option(
        0.999,
        "epsilon of Eq. 11, the moving average of each rank's similarity s_r (the authors' code: 0.999), "
        "bias-corrected for its zero start.",
        minimum=0,
        below=1,
    )
    queue_size: int = option(
        768,
        "K, the MoCo queue of earlier keys (the authors' code: 768; paper: 256): phase 2's, and the warm-up's with "
        "the authors' encoder loss or classifier examples.",
        minimum=2,
    )
    momentum: float = option(0.999, "Momentum of the key encoder (paper and the authors' code: 0.999).", minimum=0,
                             maximum=1)
    mlm_probability: float = option(
        0.0,
        "Joint masked-language modelling (the authors' code: 0.1; the paper: none): the share of each sentence's "
        "tokens masked; every sentence embedding is then computed on the masked input and the masked tokens' "
        "cross-entropy joins the loss. 0: off. The MLM head starts new (the offline base models ship none) and "
        "is saved in the model folder for the next phase.",
        minimum=0,
        below=1,
    )


@dataclass
class EmmaxWarmupConfig(ClassifierOptions, BitextConfig):
    """Phase 1: the encoder with InfoNCE on parallel pairs, the classifier by maximum likelihood on rank 1
    (translations), rank N (an outlier of the batch) and mixup examples between them (Eq. 2-4)."""

    classifier_learning_rate: float = option(
        1e-3,
        "Adam learning rate of the rank classifier in the warm-up (the authors' code: the encoder's; paper: 3e-5, "
        "both over millions of pairs). 1e-3 is chosen on held-out me5-small pairs (`benchmarks/emmax.py "
        "classifier`, two seeds): a few hundred steps at the encoder's rate leave the classifier near chance.",
        above=0,
    )
    languages: list[str] = option(WARMUP_LANGUAGES, "Non-English languages of the parallel warm-up.")
    datasets: list[str] = option(["tatoeba-challenge"], "Registry datasets to draw the warm-up bitext from.")
    ranks: int = option(4, "N, the number of semantic ranks (paper: 4); at least 2.", minimum=2)
    classifier: Literal["gmm", "fcn"] = option(
        "gmm", "Rank classifier: 'gmm' (the paper's Gaussian mixture) or 'fcn' (its feed-forward ablation)."
    )
    mixup_examples: int = option(
        1, "Virtual examples per pair between the translation and the outlier (Eq. 3); 0 disables mixup.", minimum=0
    )
    mixup_rule: Literal["uniform", "ceil", "prior"] = option(
        "uniform",
        "Rank of a mixup example: 'uniform' bins of lambda, 1 / N each; 'prior', bins as wide as the GMM's rank "
        "priors (the authors' code; the same as 'uniform' while the priors are equal); or 'ceil', "
        "ceil((1 - lambda) + lambda N) (the paper, after Eq. 3: rank 1 never drawn).",
    )
    both_orientations: bool = option(
        True,
        "Feed the classifier each example both ways (x - y and y - x), as phase 2 and the authors' classifier "
        "stage do; off: English minus the other side only.",
    )
    stage: Literal["joint", "encoder", "classifier"] = option(
        "joint",
        "What the warm-up trains: 'joint', encoder and classifier in one loop (the paper's Algorithm 1); "
        "'encoder', the encoder only (the authors' first stage); 'classifier', the classifier only on a frozen "
        "encoder given as student (the authors' second stage; the checkpoint is picked by classifier accuracy).",
    )
    encoder_loss: Literal["paper", "authors"] = option(
        "paper",
        "'paper': InfoNCE of each sentence against the batch's translations (Eq. 2); 'authors': both sides of each "
        "pair against a momentum key encoder's keys of the batch and the queue, the translation's key positive, "
        "the own key left out (the authors' code).",
    )
    classifier_examples: Literal["paper", "authors"] = option(
        "paper",
        "'paper': translation rank 1, another pair's translation rank N, mixups between them (Eq. 3-4); "
        "'authors': every sentence of the batch mixed with every key of the batch and the queue, ranked by the "
        "key's weight, the own key and the translation rank 1 (the authors' classifier stage).",
    )
    temperature: float = option(0.05, "InfoNCE temperature of the encoder on parallel pairs (Eq. 2).", above=0)
    max_seq_length: int = option(64, "Maximum tokens per sentence.", minimum=8)
    output_dir: str = option("runs/emmax-warmup", "Run folder: config.yaml, checkpoints/, model/, training.json.")


@dataclass
class EmmaxEmConfig(ClassifierOptions, BitextConfig):
    """Phase 2: EM with dual supervision. Anchors meet the batch's keys and a MoCo queue; the classifier's argmax
    rank trains the encoder (ranking InfoNCE), the encoder's similarity rank trains the classifier. By default
    on bitext with the translation as rank 1 (the authors' code); `parallel: false` for monolingual text."""

    student: str = option(
        "", "The warm-up's model folder (it holds the rank classifier): `polyembed train emmax warmup` output."
    )
    learning_rate: float = option(
        1e-5,
        "Peak learning rate of the encoder in phase 2 (the authors' code: 4e-5 after 8000 warm-up steps; paper: "
        "5e-4). 1e-5 is chosen on dev retrieval (`benchmarks/emmax.py`, docs/methods/emmax.md): at 4e-5 a "
        "miniature reaches its peak within a few steps and unrelated pairs drift together.",
        above=0,
    )
    parallel: bool = option(
        True,
        "Train on bitext, both sides of each pair in one batch, each anchor's translation rank 1 for encoder and "
        "classifier (the authors' code); false: the sides shuffled apart into monolingual text, no translation "
        "in the batch (the paper's Algorithm 1).",
    )
    classifier_learning_rate: float | None = option(
        None,
        "Adam learning rate of the rank classifier; unset: the encoder's (the authors' code trains both in one "
        "optimizer group; paper: 3e-5).",
        above=0,
    )
    languages: list[str] = option(
        EM_LANGUAGES,
        "Languages of the EM phase: their registry bitext (and parallel_files); with `parallel: false` both "
        "sides, each shuffled on its own so that no pair stays aligned, plus text_files.",
    )
    datasets: list[str] = option(["tatoeba-challenge"], "Registry bitext of the EM phase.")
    text_files: list[str] = option(
        [],
        "Monolingual text of your own: 'LANG=FILE' (one sentence per line); a language may have only these. "
        "Needs `parallel: false`.",
    )
    english_text: bool = option(True, "With `parallel: false`: add the English sides of the bitext (shuffled).")
    max_sentences_per_language: int | None = option(
        None, "With `parallel: false`: cap on each language's sentences (a seeded sample).", minimum=1
    )
    temperatures: list[float] = option(
        [],
        "Per-rank temperatures tau_1 < ... < tau_N of ranking InfoNCE (N values, increasing; tau_N has no term); "
        "empty: 0.05 to 0.1 spaced linearly over ranks 1 to N - 1 (the authors' code).",
    )
    own_key: bool = option(
        True,
        "With `parallel: false`: compare each anchor with its own key (its rank 1, MoCo's positive) and the "
        "batch's other keys as well as the queue; off: the queue only, as the paper's text reads. With bitext the "
        "batch's keys are always compared and the own key is left out of the encoder's loss (the authors' code).",
    )
    dual_supervision: bool = option(
        True,
        "Train the classifier on the encoder's ranks (Eq. 6); off: the classifier stays as the warm-up left it "
        "and only supervises the encoder (the paper's ablation).",
    )
    max_seq_length: int = option(64, "Maximum tokens per sentence.", minimum=8)
    output_dir: str = option("runs/emmax-em", "Run folder: config.yaml, checkpoints/, model/, training.json.")
