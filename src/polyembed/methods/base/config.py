"""Options shared by training methods: `TrainConfig` (the student, the optimiser schedule and the run folder,
every method), `LoraOptions` (full fine-tuning or a LoRA adapter) and `BitextConfig` (English-X bitext sources
and the student's vocabulary, for the methods that learn from bitext: distillation, WACSE, EMMA-X).

A method's config subclasses one of them and adds only what is its own (distillation: the teacher and the
projection). Every field is a YAML key and a CLI flag; ranges and `Literal` choices are checked for both by
`polyembed.config.build_config`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from polyembed.config import option
from polyembed.data.parallel_sources import TRAINING_DATASETS
from polyembed.models.lora import DEFAULT_TARGETS
from polyembed.models.vocabulary_transfer import AuxiliarySpace, UnseenRule

DEMO_LANGUAGES = ["de", "fr", "es", "ru", "zh", "ar", "tr", "kk", "sw", "ha"]
# Every registered bitext but stsb-multi-mt, which is opt-in: its machine-translated STS-B train sentences
# cost 0.5 cross-lingual and 1.0 English STS in the demo ablation (docs/benchmarks.md, with-stsb-train).
DEFAULT_TRAINING_DATASETS = [name for name in TRAINING_DATASETS if name != "stsb-multi-mt"]


@dataclass
class TrainConfig:
    """Shared options. Defaults follow the distillation paper where it fixes a value (batch 64, learning rate
    2e-5); warm-up is a ratio because fixed warm-up steps assume millions of pairs."""

    student: str = option(
        "me5-small",
        "Student: sentence-transformers or Hugging Face encoder (name or folder); "
        "'teacher' starts from a copy of the teacher where the method has one.",
    )
    batch_size: int = option(64, "Pairs per mini-batch (paper: 64).", minimum=1)
    epochs: float = option(
        1.0, "Passes over the balanced epoch (largest source size x number of sources).", above=0
    )
    max_steps: int | None = option(None, "Stop after this many optimizer steps (overrides epochs).", minimum=1)
    learning_rate: float = option(2e-5, "Peak learning rate (paper: 2e-5).", above=0)
    warmup_ratio: float = option(0.1, "Fraction of steps with linear warm-up.", minimum=0, below=1)
    lr_schedule: Literal["linear", "constant"] = option(
        "linear", "After the warm-up: 'linear' decay to 0, or 'constant' (sentence-transformers' constantlr when "
        "warmup_ratio is 0)."
    )
    weight_decay: float = option(0.01, "AdamW weight decay.", minimum=0)
    max_seq_length: int = option(
        128, "Student's maximum tokens per sentence during training (longer ones are truncated).", minimum=1
    )
    inference_max_seq_length: int | None = option(
        None,
        "Maximum tokens per sentence of the saved model; unset keeps the starting student's own (me5-small: 512), "
        "so that training at a short max_seq_length does not truncate what users encode later.",
        minimum=1,
    )
    precision: Literal["auto", "bf16", "fp32"] = option(
        "auto", "'bf16' mixed precision, 'fp32', or 'auto' (bf16 where the CPU/GPU has it)."
    )
    freeze_embeddings: bool = option(
        False, "Keep the student's word-embedding matrix fixed (a 250k-token matrix dominates CPU step time)."
    )
    freeze_layers: int = option(
        0,
        "Keep the student's lowest N transformer layers fixed as well (no backward through them: faster steps).",
        minimum=0,
    )
    dropout: float | None = option(
        None,
        "Dropout of the student's transformer during training (unset keeps the model's own, e.g. 0.1).",
        minimum=0,
        below=1,
    )
    eval_steps: int | None = option(
        None, "Dev evaluation and checkpoint every N steps; unset: four per run.", minimum=1
    )
    save_total_limit: int = option(2, "Checkpoints kept on disk (the best one is always kept).", minimum=1)
    checkpoint: Literal["best", "final"] = option(
        "best", "Which model becomes model/: the 'best' checkpoint by the method's dev measure, or the 'final' "
        "one (the dev measure is still logged, also at the last step)."
    )
    keep_checkpoints: bool = option(
        True,
        "Keep checkpoints/ once training has finished; false frees the disk (model/ holds the best model "
        "either way).",
    )
    seed: int = option(0, "Seed of data sampling, dev split and training.", minimum=0, maximum=2**32 - 1)
    output_dir: str = option("runs/train", "Run folder: config.yaml, checkpoints/, model/, training.json.")
    data_root: str | None = option(None, "Dataset folder (default: $POLYEMBED_DATA, else ../shared/data).")
    report_to: Literal["none", "tensorboard", "trackio"] = option(
        "none", "Where the trainer logs losses, learning rate and dev metrics: 'tensorboard' (event files in the "
        "run's logs/ folder: `tensorboard --logdir RUN/logs`), 'trackio' (its local dashboard: `trackio show`), "
        "or 'none'."
    )

    def required_packages(self) -> tuple[str, ...]:
        """Optional packages these option values need (checked before anything loads)."""
        return () if self.report_to == "none" else (self.report_to,)


@dataclass
class LoraOptions:
    """Whether every weight of the student trains or a LoRA adapter (peft) that is merged into the weights after
    training, and the adapter's shape. A method's config mixes this in before its `TrainConfig` base."""

    adapter: Literal["full", "lora"] = option(
        "full", "'full' (every weight trains) or 'lora' (a LoRA adapter on the transformer, merged into the "
        "weights after training, so the saved model is a plain sentence-transformers folder)."
    )
    lora_rank: int = option(8, "LoRA rank.", minimum=1)
    lora_alpha: int = option(16, "LoRA alpha (the update is scaled by alpha / rank).", minimum=1)
    lora_dropout: float = option(0.0, "Dropout on the LoRA input.", minimum=0, below=1)
    lora_targets: list[str] = option(DEFAULT_TARGETS, "Names of the linear layers LoRA adapts.")

    def required_packages(self) -> tuple[str, ...]:
        """LoRA comes from peft, through transformers' PEFT integration."""
        others: tuple[str, ...] = getattr(super(), "required_packages", tuple)()  # the TrainConfig it is mixed into
        return (*others, "peft") if self.adapter == "lora" else others


@dataclass
class BitextConfig(TrainConfig):
    """Options of methods trained on English-X bitext: where the pairs come from, how they are split and
    batched, and whether the student gets a new vocabulary for them."""

    student_vocabulary: Literal["keep", "transfer"] = option(
        "keep",
        "'keep' the student's tokenizer, or 'transfer' to a new one trained on "
        "the bitext with FOCUS-initialised embeddings.",
    )
    vocabulary_size: int = option(
        16000, "Size of the new vocabulary when student_vocabulary is 'transfer'.", minimum=1
    )
    vocabulary_unseen: UnseenRule = option(
        "random",
        "New tokens too rare in the bitext for a FOCUS vector: 'random' (FOCUS) or 'decompose' "
        "(mean of the old pieces that spell them).",
    )
    vocabulary_auxiliary: AuxiliarySpace = option(
        "ppmi-svd",
        "Token space FOCUS interpolates new tokens in: 'ppmi-svd' (count-based) or 'fasttext' (gensim "
        "FastText CBOW, as in the FOCUS code).",
    )
    languages: list[str] = option(DEMO_LANGUAGES, "Non-English languages to learn (ISO 639-1 or 639-3 codes).")
    datasets: list[str] = option(
        DEFAULT_TRAINING_DATASETS,
        f"Registry datasets to draw bitext from ({', '.join(TRAINING_DATASETS)}); "
        "each one that has a language adds a source.",
    )
    parallel_files: list[str] = option(
        [], "User bitext: LANG=FILE.tsv (English<TAB>other), or LANG=EN_FILE,FILE (two line-aligned files, English "
        "first)."
    )
    max_pairs_per_source: int | None = option(
        None,
        "Cap every (dataset, language) source at this many pairs (seeded sample); unset or 0 keeps all "
        "(0 lifts a cap set in the config file from the command line).",
        minimum=0,
    )
    dev_pairs_per_source: int = option(
        50,
        "Held-out pairs per source for dev measures (at most a fifth of the source).",
        minimum=1,
    )
    dev_sts_pairs: int = option(
        300, "stsb-multi-mt dev pairs (English-X, trained languages) for the dev STS score; 0 disables.", minimum=0
    )
    group_by_length: bool = option(
        True,
        "Deal rows of similar length into the same batch (per-batch source "
        "balance is kept); cuts padding, several times faster on CPU.",
    )

    def required_packages(self) -> tuple[str, ...]:
        """gensim (the fasttext extra) for FOCUS's fastText token space."""
        others = super().required_packages()
        fasttext = self.student_vocabulary == "transfer" and self.vocabulary_auxiliary == "fasttext"
        return (*others, "gensim") if fasttext else others
