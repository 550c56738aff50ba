"""Options of the modular recipe's stages (Huang et al. 2024): YAML keys and CLI flags.

Each stage trains one language's encoder on the shared `TrainConfig` schedule; `student` is the encoder the
stage starts from (the base model, or the previous stage's `model/` folder).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from polyembed.config import option
from polyembed.methods.base.config import LoraOptions, TrainConfig

LANGUAGE_TEXT_DATASETS = ["tatoeba-challenge", "mafand-mt", "multi30k", "stsb-multi-mt", "kardes-xnli"]
"""Registry bitext with whole sentences (MUSE dictionaries hold single words: no MLM text)."""


@dataclass
class StageLoraOptions(LoraOptions):
    """The LoRA-capable stages (LA, SE, Single) train a LoRA adapter by default, as the ACL 2025 version does."""

    adapter: Literal["full", "lora"] = option(
        "lora", "'lora' (the ACL 2025 variant: a LoRA adapter, merged into the weights after training) or "
        "'full' (the arXiv variant: every weight trains)."
    )


@dataclass
class LanguageAdaptationConfig(StageLoraOptions, TrainConfig):
    """The LA stage: continued masked language modelling on one language's text."""

    language: str = option("", "The language to adapt to (ISO 639-1 or 639-3 code); required.")
    text_files: list[str] = option([], "Text of the language of your own: files with one sentence per line.")
    datasets: list[str] = option(
        ["tatoeba-challenge", "kardes-xnli"],
        f"Registry bitext whose non-English side is the language's text ({', '.join(LANGUAGE_TEXT_DATASETS)}); "
        "[] for text_files only.",
    )
    max_sentences: int | None = option(
        None, "Cap on the training sentences (a seeded sample); unset keeps all.", minimum=1
    )
    heldout_sentences: int = option(
        500, "Sentences held out for the MLM loss / perplexity before and after (at most a fifth).", minimum=1
    )
    mlm_probability: float = option(0.15, "Share of tokens masked (paper: 0.15).", above=0, below=1)
    train_embeddings: bool = option(
        True, "LoRA: the word-embedding matrix trains as well (the paper's language-specific embedding layer)."
    )
    learning_rate: float = option(
        5e-5, "Peak learning rate (the authors' code: 5e-5; higher rates lose more cross-lingual alignment, "
        "measured by modular_la.py in benchmarks/).", above=0
    )
    batch_size: int = option(32, "Sentences per mini-batch (paper: 128).", minimum=1)
    output_dir: str = option("runs/modular-la", "Run folder: config.yaml, checkpoints/, model/, training.json.")


@dataclass
class SentenceEncodingConfig(StageLoraOptions, TrainConfig):
    """The SE stage: contrastive training (MultipleNegativesRankingLoss) on the language's paraphrase pairs."""

    language: str = option("", "The encoder's language (ISO 639-1 or 639-3 code); required.")
    paraphrase_datasets: list[str] = option(
        ["stsb-multi-mt", "tatoeba-challenge", "kardes-xnli"],
        "Registry paraphrase sources (the paraphrases module of polyembed.data); those without the language are "
        "skipped. The default gives English the same multi-parallel kind as the other languages; add "
        "'paraphrase-en' (WikiAuto, English only) for more English pairs.",
    )
    paraphrase_files: list[str] = option(
        [], "Paraphrase pairs of your own (e.g. from `polyembed data translate`): TSV anchor<TAB>paraphrase."
    )
    max_pairs: int | None = option(None, "Cap on the training pairs (a seeded sample); unset keeps all.", minimum=1)
    dev_pairs: int = option(200, "Pairs held out for the dev paraphrase retrieval (at most a fifth).", minimum=1)
    mnrl_scale: float = option(20.0, "Similarity scale of the multiple-negatives ranking loss (paper code: 20).",
                               above=0)
    learning_rate: float = option(
        1e-4, "Peak learning rate (LoRA default; the paper's full-parameter contrastive step used 2e-5).", above=0
    )
    batch_size: int = option(32, "Pairs per mini-batch: in-batch negatives (paper: 128).", minimum=2)
    output_dir: str = option("runs/modular-se", "Run folder: config.yaml, checkpoints/, model/, training.json.")


@dataclass
class CrossLingualAlignmentConfig(TrainConfig):
    """The CLA stage: a parallel adapter on one language's encoder, trained towards the frozen English pivot."""

    language: str = option("", "The encoder's language (ISO 639-1 or 639-3 code, not English); required.")
    pivot: str = option(
        "me5-small", "The English pivot encoder (frozen; usually the English encoder after its SE stage)."
    )
    paraphrase_datasets: list[str] = option(
        ["stsb-multi-mt", "kardes-xnli"],
        "Cross-lingual paraphrase pairs (a sentence of the language, an English paraphrase of it) from these "
        "registry sources (those without the language are skipped): each translated sentence with the English of "
        "its pair (stsb-multi-mt pairs scored >= 4, Kardes XNLI entailment pairs).",
    )
    paraphrase_files: list[str] = option(
        [], "Cross-lingual paraphrases of your own: TSV, a sentence of the language<TAB>its English paraphrase."
    )
    parallel_datasets: list[str] = option(
        ["tatoeba-challenge", "kardes-xnli"],
        "Registry bitext for the parallel-sentence batches (cosine loss); those without the language are skipped.",
    )
    parallel_files: list[str] = option([], "Bitext of your own: TSV, English<TAB>the sentence in the language.")
    max_pairs: int | None = option(None, "Cap on each kind of training pair (a seeded sample).", minimum=1)
    dev_pairs: int = option(200, "Parallel pairs held out for dev retrieval against the pivot.", minimum=1)
    batch_mixing: Literal["round-robin", "proportional"] = option(
        "round-robin",
        "How paraphrase and parallel batches alternate: 'round-robin' (cycles of paraphrase_batches then "
        "parallel_batches; one each is the paper's alternation) or 'proportional' (at random, by dataset size).",
    )
    paraphrase_batches: int = option(
        1, "Paraphrase (MNRL) batches per round-robin cycle (paper: 1); 0 trains on parallel pairs only.", minimum=0
    )
    parallel_batches: int = option(
        1, "Parallel (cosine) batches per round-robin cycle (paper: 1); 0 trains on paraphrases only, the arXiv "
        "paper's CLA (dev retrieval still uses held-out parallel pairs).", minimum=0,
    )
    paraphrase_loss: Literal["cross-model", "pivot"] = option(
        "cross-model",
        "Paraphrase batches: 'cross-model' (the authors' code: per pair a coin picks the anchor side, the language "
        "through its encoder or English through the pivot, so candidates mix both encoders) or 'pivot' (the "
        "language is always the anchor, every candidate a pivot embedding).",
    )
    parallel_loss: Literal["squared", "linear"] = option(
        "squared", "Parallel batches: '(1 - cos)^2' as sentence-transformers' CosineSimilarityLoss ('squared') or "
        "'1 - cos' ('linear')."
    )
    dev_measure: Literal["retrieval", "sts"] = option(
        "retrieval",
        "The dev measure (what picks the kept checkpoint with checkpoint: best): 'retrieval' (held-out parallel "
        "pairs against the pivot; any language) or 'sts' (the language's en-X STS dev split, stsb-multi-mt or "
        "Kardes STS: graded similarity, which retrieval cannot see). Retrieval is always measured.",
    )
    reduction_factor: float = option(2.0, "Parallel adapter bottleneck: hidden size / this (ParBn: 2).", above=0)
    adapter_scaling: float = option(4.0, "Parallel adapter output scaling (ParBn: 4.0).", above=0)
    mnrl_scale: float = option(20.0, "Similarity scale of the multiple-negatives ranking loss.", above=0)
    learning_rate: float = option(1e-4, "Learning rate (the authors': 1e-4 at batch 128).", above=0)
    warmup_ratio: float = option(0.0, "Fraction of steps with linear warm-up (the authors': none).", minimum=0,
                                 below=1)
    lr_schedule: Literal["linear", "constant"] = option(
        "constant", "After the warm-up: 'constant' (the authors' constantlr) or 'linear' decay to 0."
    )
    checkpoint: Literal["best", "final"] = option(
        "final", "Which model becomes model/: the 'final' one (the authors') or the 'best' by dev_measure."
    )
    batch_size: int = option(32, "Pairs per mini-batch (the authors': 128).", minimum=2)
    output_dir: str = option("runs/modular-cla", "Run folder: config.yaml, checkpoints/, model/, training.json.")


@dataclass
class SingleModelConfig(StageLoraOptions, TrainConfig):
    """The paper's Single baselines: one multilingual encoder trained on every language's pairs at once."""

    languages: list[str] = option(
        ["en", "de"], "Languages whose pairs train the one model (English included when listed)."
    )
    pairs: Literal["monolingual", "cross-lingual"] = option(
        "monolingual",
        "'monolingual': each language's paraphrase pairs, the SE stage's data (Single_m); 'cross-lingual': each "
        "non-English language's cross-lingual paraphrases and parallel pairs with English, the CLA stage's data "
        "(Single_c). Single_mc is a cross-lingual run whose student is a monolingual run's model.",
    )
    max_pairs: int | None = option(
        None, "Cap on each language's training pairs of each kind (a seeded sample).", minimum=1
    )
    dev_pairs: int = option(100, "Pairs per language held out for dev retrieval (at most a fifth).", minimum=1)
    mnrl_scale: float = option(20.0, "Similarity scale of the multiple-negatives ranking loss (paper code: 20).",
                               above=0)
    adapter: Literal["lora", "full"] = option(
        "full", "'full' (the paper's Single models: every weight trains) or 'lora' (merged after training)."
    )
    batch_size: int = option(32, "Pairs per mini-batch, all of one language (paper: 128).", minimum=2)
    output_dir: str = option("runs/modular-single", "Run folder: config.yaml, checkpoints/, model/, training.json.")


@dataclass
class JointAlignmentConfig(TrainConfig):
    """The paper's all-pairs CLA ablation: parallel adapters on every non-English encoder (and, optionally, the
    English one), trained together on cross-lingual pairs between every two languages."""

    encoders: list[str] = option(
        [], "Each language's encoder as LANG=FOLDER (usually its SE result), English included; required."
    )
    pivot_adapter: bool = option(
        False, "Give the English encoder an adapter too (the paper's 'All-pairs incl. EN'); default: it stays fixed."
    )
    paraphrase_datasets: list[str] = option(
        ["stsb-multi-mt", "kardes-xnli"], "Cross-lingual paraphrase sources, for X-English and X-Y pairs."
    )
    parallel_datasets: list[str] = option(
        ["tatoeba-challenge", "kardes-xnli"], "Registry bitext for X-English parallel pairs."
    )
    max_pairs: int | None = option(None, "Cap on each language pair's training pairs (a seeded sample).", minimum=1)
    dev_pairs: int = option(200, "Parallel pairs per language held out for dev retrieval against English.",
                            minimum=1)
    reduction_factor: float = option(2.0, "Parallel adapter bottleneck: hidden size / this (ParBn: 2).", above=0)
    adapter_scaling: float = option(4.0, "Parallel adapter output scaling (ParBn: 4.0).", above=0)
    mnrl_scale: float = option(20.0, "Similarity scale of the multiple-negatives ranking loss.", above=0)
    learning_rate: float = option(
        1e-5, "Peak learning rate (paper: 1e-4 at batch 128; 1e-5 chosen on the STS dev splits, docs/benchmarks.md).",
        above=0,
    )
    batch_size: int = option(32, "Pairs per mini-batch, all of one language pair (paper: 128).", minimum=2)
    output_dir: str = option("runs/modular-all-pairs",
                             "Run folder: config.yaml, checkpoints/, model/ (a modular bundle), training.json.")
