"""EMMA-X's two phases on the shared training layer. Phase 1 (`emmax-warmup`) reads bitext like every parallel
method. Phase 2 (`emmax-em`) reads bitext too by default, both sides of each pair in one batch (the authors'
code); with `parallel: false` it reads monolingual text instead: the sides of the registry bitext of its
languages, each side shuffled on its own so no pair stays aligned, plus the user's text files (the paper's
Algorithm 1). Both keep translation retrieval on held-out bitext as the dev measure that picks the checkpoint,
and log the classifier's held-out accuracy, the cosines of translations and of random pairs, and s_r at every
evaluation; phase 2 also the share of each rank among the pairs the classifier labelled since the previous one
(the ranks must not collapse into one)."""

from __future__ import annotations

import contextlib
import logging
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyembed.config import ConfigOrigin
from polyembed.data.io import read_lines
from polyembed.data.parallel_sources import (
    check_language,
    check_training_datasets,
    load_parallel_sources,
    split_dev,
)
from polyembed.data.root import data_root
from polyembed.errors import NoTrainingDataError, PolyembedError
from polyembed.methods.base.bitext import Bitext, parallel_file_specs, prepare_bitext
from polyembed.methods.base.run import RunFolder
from polyembed.methods.base.trainer import LossHeadTrainer, TrainingJob
from polyembed.methods.emmax.config import EmmaxEmConfig, EmmaxWarmupConfig

logger = logging.getLogger(__name__)

STATE_FILE = "emmax_state.safetensors"
CLASSIFIER_PARAMETERS = r"^head\.classifier\."


class EmmaxTrainer(LossHeadTrainer):
    """Checkpoints carry the loss's state (classifier; in phase 2 also the key encoder, the queue and s_r),
    and that state trains without weight decay (the paper optimises the classifier with plain Adam)."""

    head_file = STATE_FILE

    def get_decay_parameter_names(self, model: Any) -> list[str]:
        return [name for name in super().get_decay_parameter_names(model) if not name.startswith("head.")]


def default_temperatures(ranks: int) -> list[float]:
    """The authors' code (`set_each_temp`, in the paper's rank order): 0.05 for rank 1 up to 0.1 for rank N - 1,
    spaced linearly over the N - 1 ranks that have a term; tau_N, which has none, one step further."""
    if ranks == 2:
        return [0.05, 0.1]
    step = 0.05 / (ranks - 2)
    return [round(0.05 + step * r, 6) for r in range(ranks)]


def check_temperatures(temperatures: list[float], ranks: int, origin: ConfigOrigin) -> list[float]:
    """The configured temperatures, or the default ones; N values, strictly increasing (tau_1 < ... < tau_N)."""
    if not temperatures:
        return default_temperatures(ranks)
    if len(temperatures) != ranks:
        raise origin.error("temperatures", f"{len(temperatures)} values for {ranks} ranks: give one per rank")
    for index, value in enumerate(temperatures):
        if not math.isfinite(value) or value <= 0:
            raise origin.error("temperatures", f"{value!r} is not a positive number", index)
    for index in range(1, ranks):
        if temperatures[index] <= temperatures[index - 1]:
            raise origin.error("temperatures", f"not increasing at rank {index + 1} ({temperatures[index - 1]:g} "
                               f"then {temperatures[index]:g}): the paper needs tau_1 < ... < tau_N", index)
    return list(temperatures)


# ------------------------------------------------------------------------------------------------- phase 1


def prepare_warmup(config: EmmaxWarmupConfig, origin: ConfigOrigin | None = None) -> Bitext:
    """The warm-up bitext, read and split before any model loads."""
    origin = origin or ConfigOrigin()
    if config.student_vocabulary != "keep":
        raise origin.error("student_vocabulary", "EMMA-X keeps the student's vocabulary; use 'keep'")
    if config.stage == "classifier" and config.mlm_probability:
        raise origin.error("mlm_probability", "the classifier stage keeps the encoder frozen: joint MLM trains "
                           "the encoder (set it in the 'encoder' or 'joint' stage)")
    if config.mixup_rule == "prior" and config.classifier != "gmm":
        raise origin.error("mixup_rule", f"'prior' bins by the GMM's rank priors; the '{config.classifier}' "
                           "classifier has none (use 'uniform' or 'ceil')")
    bitext = prepare_bitext(config, origin)
    if _warmup_queue(config):
        sentences = len({text for source in bitext.train for text in (*source.english, *source.other)})
        if sentences < config.queue_size:
            raise origin.error("queue_size", f"{config.queue_size} is more than the {sentences} sentences of the "
                               "bitext")
    return bitext


def _warmup_queue(config: EmmaxWarmupConfig) -> bool:
    """Whether the warm-up keeps a queue: the authors' encoder loss or classifier examples in a stage that
    trains that part."""
    return ((config.encoder_loss == "authors" and config.stage != "classifier")
            or (config.classifier_examples == "authors" and config.stage != "encoder"))


def build_warmup(config: EmmaxWarmupConfig, bitext: Bitext, run: RunFolder, show_progress: bool) -> TrainingJob:
    """Student, a new rank classifier, the warm-up loss and the dev evaluator."""
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    from polyembed.methods.emmax.classifier import build_classifier
    from polyembed.methods.emmax.losses import EmmaxWarmupLoss, KeyBank, momentum_copy

    model, prompt = _student(config)
    if config.stage == "classifier":
        model.requires_grad_(False)
    classifier = build_classifier(config.classifier, model.get_embedding_dimension(), config.ranks)
    english = [e for source in bitext.train for e in source.english]
    other = [o for source in bitext.train for o in source.other]
    keys = None
    if _warmup_queue(config):
        trains_keys = config.encoder_loss == "authors" and config.stage != "classifier"
        key_encoder = momentum_copy(model) if trains_keys else None
        keys = KeyBank(_initial_queue(model, prompt, [*english, *other], config), key_encoder)
    mlm = _mlm(model, config.mlm_probability, None)
    loss = EmmaxWarmupLoss(model, classifier, config.temperature, config.mixup_examples, config.label_smoothing,
                           config.mixup_rule, config.both_orientations, config.rank_similarity_momentum,
                           config.stage, config.encoder_loss, config.classifier_examples, keys, config.momentum, mlm)
    evaluator = _evaluator(bitext, config.batch_size, loss)
    if show_progress:
        logger.info(f"emmax warm-up ({config.stage}): {len(english):,} pairs, {config.classifier} classifier with "
                    f"{config.ranks} ranks, encoder loss {config.encoder_loss}, classifier examples "
                    f"{config.classifier_examples}, MLM {config.mlm_probability:g}")
    return TrainingJob(
        model=model,
        train_dataset=Dataset.from_dict({"english": english, "other": other}),
        loss=loss,
        evaluator=evaluator,
        # a frozen encoder's retrieval cannot move: the classifier stage keeps its best classifier
        best_metric="eval_dev_classifier_accuracy" if config.stage == "classifier" else "eval_dev_mean_accuracy",
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        trainer_class=EmmaxTrainer,
        learning_rate_mapping={CLASSIFIER_PARAMETERS: config.classifier_learning_rate},
        prompts=prompt or None,
        save_model=_saver(loss, config.rank_similarity_momentum, config.stage,
                          Path(config.student).expanduser() if config.stage == "classifier" else None),
        details={"bitext": bitext.describe(), "classifier": config.classifier, "ranks": config.ranks,
                 "stage": config.stage, "encoder_loss": config.encoder_loss,
                 "classifier_examples": config.classifier_examples, "mlm_probability": config.mlm_probability},
    )


# ------------------------------------------------------------------------------------------------- phase 2


@dataclass
class EmText:
    """Phase 2's input: aligned pairs (`english`, `other`) with bitext, else shuffled monolingual `sentences`
    with their language; held-out bitext for dev either way."""

    sentences: list[str]
    languages: list[str]
    dev: Bitext
    ranks: int
    temperatures: list[float]
    counts: dict[str, int] = field(default_factory=dict)
    english: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)


def _text_file(spec: str, index: int, origin: ConfigOrigin) -> tuple[str, list[str]]:
    """'LANG=FILE' -> the language and the file's non-empty lines (an empty file is an error naming it)."""
    language, sep, path = spec.partition("=")
    if not sep or not language.strip() or not path.strip():
        raise origin.error("text_files", f"'{spec}': expected LANG=FILE", index)
    code = check_language(language.strip(), origin.where("text_files", index))
    lines = [line.strip() for line in read_lines(Path(path.strip()).expanduser(), allow_empty=True) if line.strip()]
    if not lines:
        raise origin.error("text_files", f"{path.strip()}: no sentences (the file is empty)", index)
    return code, lines


def prepare_em(config: EmmaxEmConfig, origin: ConfigOrigin | None = None) -> EmText:
    """Every sentence of phase 2, its dev bitext, N (from the warm-up's classifier) and the temperatures,
    all checked before any model loads."""
    from polyembed.methods.emmax.classifier import read_classifier_config

    origin = origin or ConfigOrigin()
    if config.student_vocabulary != "keep":
        raise origin.error("student_vocabulary", "EMMA-X keeps the student's vocabulary; use 'keep'")
    if not config.student:
        raise origin.error("student", "set student to the warm-up's model folder (`polyembed train emmax warmup`)")
    if config.parallel and config.text_files:
        raise origin.error("text_files", "monolingual text needs `parallel: false` (with bitext, phase 2 trains on "
                           "pairs: give your own as parallel_files)")
    own_text = [_text_file(spec, index, origin) for index, spec in enumerate(config.text_files)]
    if not Path(config.student).expanduser().is_dir():
        raise origin.error("student", f"{config.student}: not a folder; the EM phase starts from the warm-up's "
                           "model folder (it holds the rank classifier)")
    try:
        description = read_classifier_config(Path(config.student).expanduser())
    except PolyembedError as err:
        raise origin.error("student", str(err)) from err
    if description.get("stage") == "encoder":
        raise origin.error("student", f"{config.student}: its rank classifier was never trained (warm-up stage "
                           "'encoder'); train it first: `polyembed train emmax warmup --stage classifier --student "
                           f"{config.student}`")
    ranks = int(description["ranks"])
    temperatures = check_temperatures(config.temperatures, ranks, origin)
    check_training_datasets(config.datasets)  # a mistyped name before the data root is looked for
    root = data_root(config.data_root) if config.datasets else None
    by_language: dict[str, list[str]] = {}
    sources = []
    for index, code in enumerate(config.languages):
        language = check_language(code, origin.where("languages", index))
        with contextlib.suppress(NoTrainingDataError):  # text files may still bring its text: judged below
            sources += load_parallel_sources([language], config.datasets, root,
                                             max_pairs_per_source=config.max_pairs_per_source or None,
                                             seed=config.seed)
        by_language.setdefault(language, [])
    files = parallel_file_specs(config, origin)
    sources += load_parallel_sources([], [], None, files=files, max_pairs_per_source=config.max_pairs_per_source
                                     or None, seed=config.seed)
    train, dev = split_dev(sources, config.dev_pairs_per_source, config.seed)
    english: list[str] = []
    for source in train:
        by_language.setdefault(source.language, []).extend(source.other)
        english += source.english
    for code, lines in own_text:
        by_language.setdefault(code, []).extend(lines)
    if config.english_text and english:
        by_language.setdefault("en", []).extend(english)
    for index, code in enumerate(config.languages):
        language = check_language(code)
        if not by_language.get(language):
            searched = ", ".join(config.datasets) or "no datasets"
            raise origin.error("languages", f"'{code}': no text (no bitext in {searched} and no text file); add "
                               f"text_files {language}=FILE", index)
    if not dev:
        raise origin.error("languages", "no held-out bitext for the dev measure: at least one language needs "
                           "registry bitext (datasets) or parallel_files")
    if config.parallel:
        return _parallel_text(config, origin, train, dev, ranks, temperatures)
    sentences: list[str] = []
    languages: list[str] = []
    counts: dict[str, int] = {}
    for language, lines in by_language.items():
        rng = random.Random(f"{config.seed}:emmax:{language}")
        unique = list(dict.fromkeys(lines))
        rng.shuffle(unique)  # each side on its own: a sentence and its translation no longer share a row
        unique = unique[: config.max_sentences_per_language] if config.max_sentences_per_language else unique
        sentences += unique
        languages += [language] * len(unique)
        counts[language] = len(unique)
    order = list(range(len(sentences)))
    random.Random(f"{config.seed}:emmax:mix").shuffle(order)
    if len(order) < config.queue_size:
        raise origin.error("queue_size", f"{config.queue_size} is more than the {len(order)} sentences of the text")
    return EmText([sentences[i] for i in order], [languages[i] for i in order], Bitext(train=[], dev=dev), ranks,
                  temperatures, counts)


def _parallel_text(config: EmmaxEmConfig, origin: ConfigOrigin, train: list, dev: list, ranks: int,
                   temperatures: list[float]) -> EmText:
    """Phase 2's pairs as the authors feed them: every training pair of every language, in a seeded order."""
    rows = [(e, o, source.language) for source in train for e, o in zip(source.english, source.other, strict=True)]
    random.Random(f"{config.seed}:emmax:pairs").shuffle(rows)
    sentences = len({text for e, o, _ in rows for text in (e, o)})
    if sentences < config.queue_size:
        raise origin.error("queue_size", f"{config.queue_size} is more than the {sentences} sentences of the bitext")
    counts: dict[str, int] = {}
    for _, _, language in rows:
        counts[language] = counts.get(language, 0) + 1
    return EmText([], [], Bitext(train=[], dev=dev), ranks, temperatures, counts,
                  english=[e for e, _, _ in rows], other=[o for _, o, _ in rows])


def build_em(config: EmmaxEmConfig, text: EmText, run: RunFolder, show_progress: bool) -> TrainingJob:
    """The warm-up's encoder and classifier, a queue filled with random sentences, the EM loss, dev retrieval."""
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    from polyembed.methods.emmax.classifier import load_classifier
    from polyembed.methods.emmax.losses import EmmaxEmLoss

    model, prompt = _student(config)
    folder = Path(config.student).expanduser()
    classifier = load_classifier(folder)
    pool = [*text.english, *text.other] if config.parallel else text.sentences
    loss = EmmaxEmLoss(model, classifier, _initial_queue(model, prompt, pool, config), text.temperatures,
                       config.momentum, config.rank_similarity_momentum, config.dual_supervision,
                       config.label_smoothing, config.own_key, read_rank_similarity(folder),
                       _mlm(model, config.mlm_probability, folder))
    evaluator = _evaluator(text.dev, config.batch_size, loss)
    before = {k: v for k, v in evaluator(model).items() if "rank_" not in k or "similarity" in k}  # the warm-up's
    if show_progress:
        shown = ", ".join(f"{code} {count:,}" for code, count in text.counts.items())
        what = "pairs" if config.parallel else "sentences"
        logger.info(f"emmax EM: {sum(text.counts.values()):,} {what} ({shown}); {classifier.kind} classifier, "
                    f"{classifier.ranks} ranks, queue {config.queue_size}, temperatures {text.temperatures}")
    dataset = (Dataset.from_dict({"english": text.english, "other": text.other}) if config.parallel
               else Dataset.from_dict({"text": text.sentences}))
    return TrainingJob(
        model=model,
        train_dataset=dataset,
        loss=loss,
        evaluator=evaluator,
        best_metric="eval_dev_mean_accuracy",
        batch_sampler=BatchSamplers.NO_DUPLICATES if config.parallel else None,
        trainer_class=EmmaxTrainer,
        learning_rate_mapping={CLASSIFIER_PARAMETERS: config.classifier_learning_rate or config.learning_rate},
        prompts=prompt or None,
        save_model=_saver(loss, config.rank_similarity_momentum),
        details={"sentences" if not config.parallel else "pairs": text.counts, "ranks": classifier.ranks,
                 "classifier": classifier.kind, "temperatures": text.temperatures, "parallel": config.parallel,
                 "dual_supervision": config.dual_supervision, "own_key": config.own_key,
                 "mlm_probability": config.mlm_probability, "before": before},
    )


# ------------------------------------------------------------------------------------------------- shared


def _student(config: EmmaxWarmupConfig | EmmaxEmConfig) -> tuple[Any, str]:
    from polyembed.methods.base.student import default_prompt, load_student

    model = load_student(config.student, config)
    return model, default_prompt(model) or ""


def _initial_queue(model: Any, prompt: str, pool: list[str], config: EmmaxWarmupConfig | EmmaxEmConfig) -> Any:
    """The queue's start: `queue_size` distinct sentences of `pool` (a seeded sample), embedded."""
    import torch

    start = random.Random(f"{config.seed}:emmax:queue").sample(list(dict.fromkeys(pool)), config.queue_size)
    with torch.no_grad():
        return model.encode(start, prompt=prompt or None, batch_size=config.batch_size, convert_to_tensor=True,
                            normalize_embeddings=True, show_progress_bar=False).cpu()


def _mlm(model: Any, probability: float, folder: Path | None) -> Any:
    """The joint MLM (None at probability 0), its head loaded from `folder` where an earlier phase saved one."""
    from polyembed.methods.emmax.mlm import MLM_HEAD_FILE, JointMlm

    if not probability:
        return None
    try:
        mlm = JointMlm(model, probability)
    except ValueError as err:
        raise PolyembedError(f"mlm_probability: {err}") from err
    if folder is not None and (folder / MLM_HEAD_FILE).is_file():
        from safetensors.torch import load_file

        mlm.head.load_state_dict(load_file(str(folder / MLM_HEAD_FILE)))
    return mlm


def _saver(loss: Any, momentum: float, stage: str | None = None, student: Path | None = None) -> Any:
    """run/model: the encoder plus its rank classifier and s_r (the EM phase and users load them from there),
    the warm-up's stage (an 'encoder' stage's classifier is untrained) and the joint MLM's head: this run's, or
    the `student` folder's carried over (the classifier stage trains none)."""
    import shutil

    from polyembed.methods.emmax.classifier import save_classifier
    from polyembed.methods.emmax.mlm import MLM_HEAD_FILE

    def save(model: Any, folder: Path) -> None:
        from safetensors.torch import save_file

        model.save(str(folder))
        similarity = loss.rank_similarity
        extra = {"rank_similarity": similarity.values(momentum).tolist(),
                 "rank_similarity_updates": similarity.updates.tolist()}
        save_classifier(loss.classifier, folder, {**extra, "stage": stage} if stage else extra)
        mlm = getattr(loss, "mlm", None) or getattr(loss.head, "mlm", None)
        if mlm is not None:
            save_file({k: v.detach().contiguous().cpu() for k, v in mlm.head.state_dict().items()},
                      str(folder / MLM_HEAD_FILE))
        elif student is not None and (student / MLM_HEAD_FILE).is_file():
            shutil.copyfile(student / MLM_HEAD_FILE, folder / MLM_HEAD_FILE)

    return save


def read_rank_similarity(folder: Path) -> tuple[list[float], list[float]] | None:
    """The s_r a warm-up saved with its classifier (values and update counts); None for a folder without."""
    from polyembed.methods.emmax.classifier import read_classifier_config

    description = read_classifier_config(folder)
    values, updates = description.get("rank_similarity"), description.get("rank_similarity_updates")
    return (list(values), list(updates)) if isinstance(values, list) and isinstance(updates, list) else None


def _evaluator(bitext: Bitext, batch_size: int, loss: Any) -> Any:
    from polyembed.methods.emmax.evaluation import EmmaxEvaluator

    english = [e for source in bitext.dev for e in source.english]
    other = [o for source in bitext.dev for o in source.other]
    return EmmaxEvaluator(english, other, loss, batch_size=batch_size)
