"""Multilingual knowledge distillation on the shared training layer (`polyembed.methods.base`).

The method's own parts: `prepare_data` reads and validates all bitext (registry datasets + user files;
file:line errors) and splits off the dev set; `build_job` embeds the English side once with the teacher
(persistent `EmbeddingStore`), builds the student (optional FOCUS vocabulary transfer, a projection into the
teacher's space), and hands the trainer `MSELoss` on balanced batches (`BalancedBatchSampler`) with the dev
measures (MSE on held-out pairs, translation accuracy, STS). Optional anchor text (`anchors.py`) adds sources
whose target is the untrained student's own embedding. Run folder, checkpoints, exact resume, the best
checkpoint as `<output_dir>/model` and training.json come from the shared layer.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyembed.config import ConfigOrigin
from polyembed.errors import PolyembedError
from polyembed.methods.base.bitext import Bitext, prepare_bitext
from polyembed.methods.base.run import CONFIG_FILE, RunFolder
from polyembed.methods.base.student import add_adapter, apply_student_options, load_student
from polyembed.methods.base.trainer import TrainingJob, TrainResult
from polyembed.methods.distill.anchors import AnchorText, load_anchor_text
from polyembed.methods.distill.config import DistillConfig
from polyembed.methods.distill.evaluation import DistillationDevEvaluator
from polyembed.methods.distill.losses import LABEL_COLUMN, TEXT_COLUMNS, distillation_loss
from polyembed.models.encoder import resolve_precision

logger = logging.getLogger(__name__)

__all__ = ["CONFIG_FILE", "build_job", "fit_projection", "prepare_data", "train_distill"]

PROJECTION_FIT_SENTENCES = 10000  # held-out residual: 0.64 of the teacher's energy at 2k, 0.54 at 10k
PROJECTION_FITS = ("least-squares", "orthogonal")
PROJECTION_RIDGE = 1.0  # best held-out fit for unit-norm student embeddings at 2k-10k sentences
BEST_METRICS = {
    "mse": "eval_dev_negative_mse",
    "translation": "eval_dev_mean_accuracy",
    "sts": "eval_dev-sts_spearman_cosine",
}


@dataclass
class DistillData(Bitext):
    """The run's bitext plus its anchor text (sentences whose target is the untrained student's embedding)."""

    anchors: list[AnchorText] = field(default_factory=list)

    def describe(self) -> list[dict[str, Any]]:
        anchors = [
            {"source": "anchor", "language": a.language, "train_pairs": len(a), "dev_pairs": 0, "origin": a.origin}
            for a in self.anchors
        ]
        return super().describe() + anchors


def prepare_data(config: DistillConfig, origin: ConfigOrigin | None = None) -> DistillData:
    """Read, validate and split all bitext and anchor text before any model is loaded (errors name file and
    line)."""
    origin = origin or ConfigOrigin()
    if config.ranking_weight > 0 and config.anchor_codes():
        raise origin.error("ranking_weight", "translation ranking needs bitext rows only: anchor text (a sentence "
                           "paired with itself) would be its own translation; leave out the anchors or the ranking")
    bitext = prepare_bitext(config, origin)
    return DistillData(bitext.train, bitext.dev, bitext.dev_sts, load_anchor_text(config, origin))


def _teacher_targets(config: DistillConfig, data: Bitext, show_progress: bool) -> tuple[Any, Any]:
    """(teacher encoder, EmbeddingStore) with every English sentence of train and dev embedded."""
    from polyembed.models.embedding_cache import EmbeddingStore
    from polyembed.models.loading import load_model

    teacher = load_model(config.teacher)
    store = EmbeddingStore(teacher, batch_size=config.teacher_batch_size)
    english = [s for source in data.train + data.dev for s in source.english]
    unique = list(dict.fromkeys(english))
    if show_progress:
        new = sum(1 for s in unique if s not in store)
        logger.info(f"teacher {config.teacher}: {len(unique):,} English sentences to embed ({new:,} not cached)")
    store.embed(unique, show_progress_bar=show_progress)
    return teacher, store


def build_student(config: DistillConfig, data: Bitext, store: Any, output_dir: Path, verbose: bool):
    """The student SentenceTransformer: loaded, optionally given a transferred vocabulary, followed by a
    least-squares projection into the teacher's space (see `fit_projection`), embeddings optionally frozen, with
    a LoRA adapter on its transformer when `adapter` is 'lora' (the projection then still trains in full)."""
    name = config.teacher if config.student == "teacher" else config.student
    transfer_report = None
    if config.student_vocabulary == "transfer":
        from polyembed.models.vocabulary_transfer import REPORT_FILE, transfer_vocabulary

        init_dir = output_dir / "student-init"
        if not (init_dir / REPORT_FILE).is_file():
            corpus = [s for source in data.train for side in (source.english, source.other) for s in side]
            transfer_vocabulary(
                name,
                corpus,
                init_dir,
                vocab_size=config.vocabulary_size,
                unseen=config.vocabulary_unseen,
                auxiliary_space=config.vocabulary_auxiliary,
                seed=config.seed,
                overwrite=True,
                verbose=verbose,
            )
        transfer_report = json.loads((init_dir / REPORT_FILE).read_text(encoding="utf-8"))
        name = str(init_dir)
    student = load_student(name, config, apply_options=False)  # the options apply after the projection is fitted
    teacher_dimension = int(store.embed(data.train[0].english[:1], show_progress_bar=False).shape[1])
    different_model = config.student != "teacher" or config.student_vocabulary == "transfer"
    other_dimension = student.get_embedding_dimension() != teacher_dimension
    if config.projection == "always" or (config.projection == "auto" and (different_model or other_dimension)):
        english = list(dict.fromkeys(s for source in data.train for s in source.english))
        sample = random.Random(config.seed).sample(english, min(len(english), PROJECTION_FIT_SENTENCES))
        targets = store.embed(sample, show_progress_bar=False)
        projection = fit_projection(student, sample, targets, verbose, method=config.projection_fit,
                                    precision=config.precision)
        # on the student's device now: an encode that has to move a module does it in inference mode under some
        # sentence-transformers versions, and training then refuses the moved (inference) weights
        student.append(projection.to(student.device))
    apply_student_options(student, config)
    add_adapter(student, config)  # LoRA starts as the identity: targets and anchors need no adapter-free copy
    return student, transfer_report


def fit_projection(
    student: Any,
    sentences: list[str],
    targets: Any,
    verbose: bool = True,
    ridge: float = PROJECTION_RIDGE,
    method: str = "least-squares",
    precision: str = "fp32",
) -> Any:
    """A Dense layer W, b minimising ||student(s) W + b - teacher(s)||^2 over `sentences` (closed form).

    `method="orthogonal"` restricts W to a scaled rotation and b to 0 (Procrustes): a higher MSE at step 0,
    but the student's cosine similarities, and so its STS, are exactly those of the untrained student. A student
    narrower than its teacher gets a scaled isometric embedding (orthonormal rows), which keeps them too.

    A pre-trained student (e.g. multilingual-e5) lives in a space unrelated to the teacher's; starting the
    MSE from there first spends many steps rotating the whole space and wrecks the student's similarity
    structure meanwhile. The least-squares map puts the student's English next to the teacher's at step 0,
    so training time goes to pulling translations together. (An addition to the paper, whose XLM-R student
    has no sentence space to keep.) When dimensions differ, it is also the paper's projection layer.

    `precision` is the training's ('bf16' or 'auto' where bf16 is native: the student is encoded under bf16
    autocast, as training will run it); the solve itself is float64.
    """
    import numpy as np
    import torch
    from sentence_transformers.sentence_transformer.modules import Dense

    if method not in PROJECTION_FITS:
        raise PolyembedError(f"projection fit '{method}' is not one of {', '.join(PROJECTION_FITS)}")
    with torch.autocast(student.device.type, dtype=torch.bfloat16, enabled=resolve_precision(precision) == "bf16"):
        encoded = student.encode(sentences, batch_size=64, show_progress_bar=verbose, convert_to_numpy=True)
    inputs = np.asarray(encoded, dtype=np.float64)
    outputs = np.asarray(targets, dtype=np.float64)
    if method == "orthogonal":
        if inputs.shape[1] > outputs.shape[1]:
            raise PolyembedError(
                f"an orthogonal projection needs a student no wider than its teacher (student {inputs.shape[1]}, "
                f"teacher {outputs.shape[1]} dimensions): fewer dimensions cannot keep its cosines; use "
                "projection_fit: least-squares"
            )
        # a narrower student (me5-small 384 -> mpnet-en 768) gets orthonormal rows: an isometric embedding
        left, singular, right = np.linalg.svd(inputs.T @ outputs, full_matrices=False)
        rotation = left @ right
        scale = singular.sum() / float((inputs**2).sum())
        solution = np.vstack([scale * rotation, np.zeros((1, outputs.shape[1]))])
    else:
        design = np.hstack([inputs, np.ones((len(inputs), 1))])
        penalty = ridge * np.eye(design.shape[1])
        solution = np.linalg.solve(design.T @ design + penalty, design.T @ outputs)
    dense = Dense(inputs.shape[1], targets.shape[1], bias=True, activation_function=torch.nn.Identity())
    with torch.no_grad():
        dense.linear.weight.copy_(torch.from_numpy(solution[:-1].T).float())
        dense.linear.bias.copy_(torch.from_numpy(solution[-1]).float())
    return dense


class EnglishTargets:
    """What each English sentence (and its translation) is pulled to: the teacher's embedding, blended with
    the untrained student's own (projection included) by `weight` (config `teacher_weight`). The student's side
    is computed once, before training, for every sentence the run will ask about (training and dev English);
    `embed` has the EmbeddingStore signature, so the dev evaluator measures MSE against the same targets."""

    def __init__(self, store: Any, student: Any, weight: float, sentences: list[str], show_progress: bool) -> None:
        import numpy as np

        self.store, self.weight = store, weight
        self.own: dict[str, Any] = {}
        if weight < 1:
            unique = list(dict.fromkeys(sentences))
            if show_progress:
                logger.info(f"targets: {weight:g} x teacher + {1 - weight:g} x the untrained student "
                            f"({len(unique):,} English sentences embedded by the student)")
            vectors = student.encode(unique, batch_size=64, show_progress_bar=show_progress, convert_to_numpy=True)
            self.own = dict(zip(unique, np.asarray(vectors, dtype=np.float32), strict=True))

    def embed(self, sentences: list[str], show_progress_bar: bool = False) -> Any:
        import numpy as np

        teacher = self.store.embed(sentences, show_progress_bar=show_progress_bar)
        if self.weight >= 1:
            return teacher
        own = np.stack([self.own[s] for s in sentences]).astype(teacher.dtype)
        return self.weight * teacher + (1 - self.weight) * own


def _train_dataset(data: DistillData, targets: EnglishTargets, student: Any, show_progress: bool):
    """Rows of all sources back to back (the order BalancedBatchSampler expects): bitext rows labelled with
    the target of the English side (`EnglishTargets`), then anchor rows labelled with the untrained student's
    embedding of the sentence (both text columns hold the sentence, so MSELoss sees it twice, each time under
    its own dropout)."""
    import numpy as np
    from datasets import Dataset

    english = [s for source in data.train for s in source.english]
    other = [s for source in data.train for s in source.other]
    labels = targets.embed(english)
    anchored = [s for anchor in data.anchors for s in anchor.sentences]
    if anchored:
        if show_progress:
            logger.info(f"anchors: {len(anchored):,} sentences in {len(data.anchors)} languages, "
                        "embedded by the student")
        own = student.encode(anchored, batch_size=64, show_progress_bar=show_progress, convert_to_numpy=True)
        english, other = english + anchored, other + anchored
        labels = np.vstack([labels, np.asarray(own, dtype=labels.dtype)])
    return Dataset.from_dict({TEXT_COLUMNS[0]: english, TEXT_COLUMNS[1]: other, LABEL_COLUMN: labels.tolist()})


def _evaluator(data: Bitext, targets: EnglishTargets, batch_size: int):
    """The paper's dev measures per language (`DistillationDevEvaluator`, MSE against the training targets)
    plus English-X dev STS."""
    from sentence_transformers.sentence_transformer.evaluation import (
        EmbeddingSimilarityEvaluator,
        SequentialEvaluator,
    )

    evaluators: list[Any] = [DistillationDevEvaluator(data.dev, targets, batch_size, name="dev")]
    if data.dev_sts is not None:
        first, second, scores = data.dev_sts
        evaluators.append(
            EmbeddingSimilarityEvaluator(first, second, scores, name="dev-sts", batch_size=batch_size, write_csv=False)
        )
    return SequentialEvaluator(evaluators)


def build_job(config: DistillConfig, data: DistillData, run: RunFolder, show_progress: bool) -> TrainingJob:
    """Teacher targets, the student, and MSE on balanced (optionally length-grouped) batches."""
    from polyembed.data.mixing import BalancedBatchSampler, rows_in_steps
    from polyembed.methods.base.distributed import process_count
    from polyembed.models.lora import merge_lora

    if show_progress:
        total = sum(len(s) for s in data.train)
        dev = sum(len(d) for d in data.dev)
        logger.info(f"bitext: {len(data.train)} sources, {total:,} training pairs, {dev:,} dev")
    _, store = _teacher_targets(config, data, show_progress)
    student, transfer_report = build_student(config, data, store, run.path, show_progress)
    english = [s for source in [*data.train, *data.dev] for s in source.english]
    targets = EnglishTargets(store, student, config.teacher_weight, english, show_progress)
    sizes = [len(s) for s in data.train] + [len(a) for a in data.anchors]
    lengths = None
    if config.group_by_length:
        lengths = [
            max(len(e), len(o)) for source in data.train for e, o in zip(source.english, source.other, strict=True)
        ] + [len(s) for anchor in data.anchors for s in anchor.sentences]
    processes = process_count()
    step_rows = config.batch_size * processes  # rows per optimizer step over all data-parallel processes
    return TrainingJob(
        model=student,
        train_dataset=_train_dataset(data, targets, student, show_progress),
        loss=distillation_loss(student, config.ranking_weight, config.ranking_scale),
        evaluator=_evaluator(data, targets, config.batch_size),
        best_metric=BEST_METRICS[config.best_metric],
        steps_per_epoch=math.ceil(max(sizes) * len(sizes) / step_rows),
        batch_sampler=functools.partial(
            BalancedBatchSampler, source_sizes=sizes, lengths=lengths, processes=processes
        ),
        rows_in_steps=functools.partial(rows_in_steps, source_sizes=sizes, batch_size=step_rows),
        final_model=merge_lora if config.adapter == "lora" else None,
        details={"sources": data.describe(), "vocabulary_transfer": transfer_report, "adapter": config.adapter,
                 "trainable_parameters": sum(p.numel() for p in student.parameters() if p.requires_grad)},
    )


def train_distill(
    config: DistillConfig | None = None,
    *,
    origin: ConfigOrigin | None = None,
    resume: bool = False,
    overwrite: bool = False,
    show_progress: bool = True,
) -> TrainResult:
    """Distil the teacher into a multilingual student (`polyembed.train("distill", ...)` with a config)."""
    from polyembed.methods.base.registry import get_method, train

    return train(
        get_method("distill"),
        config or DistillConfig(),
        origin=origin,
        resume=resume,
        overwrite=overwrite,
        show_progress=show_progress,
    )
