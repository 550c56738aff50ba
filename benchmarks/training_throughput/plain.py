"""The plain sentence-transformers side of the training-throughput study: the distillation job `polyembed train
distill` runs, written as a user would write it with sentence-transformers alone (SentenceTransformer,
Dataset.from_dict, MSELoss, SentenceTransformerTrainer), step for step what polyembed's distillation computes:

- the pairs: polyembed's reader (`prepare_data`: the same files, cap, seeded sample and dev split), so both jobs
  train on the same pairs and pay the same to read them;
- teacher targets: the teacher's embedding of each English sentence, blended with the untrained student's own
  (`teacher_weight`: w x teacher + (1 - w) x student, projection included) as `EnglishTargets` does;
- the student: loaded at `max_seq_length` tokens, followed by a projection into the teacher's space fitted in closed
  form (scaled orthogonal Procrustes or ridge least squares, on the same seeded sample of at most 10,000 English
  sentences, encoded under bf16 autocast when training is bf16) as `fit_projection` does, embeddings frozen;
- the loss: `MSELoss` (student(en) and student(xx) against the target), as `distillation_loss` returns it;
- the batches: the rows polyembed's balanced, length-grouped sampler deals in its first epoch
  (`polyembed.data.mixing.balanced_order`, a few milliseconds of numpy), stored in that order and read back with
  sentence-transformers' own `DefaultBatchSampler` over a `SequentialSampler`: every step sees the same 32 rows,
  padded alike, in both jobs. Without it the comparison would measure padding, not overhead: length grouping
  alone makes CPU steps several times faster;
- the arguments: those `polyembed.methods.base.trainer.fit` passes (batch, learning rate, warm-up, schedule, weight
  decay, epochs, max steps, logging steps, seed, bf16, the model's prompt, no reporting, no progress bar), except
  that a plain script neither evaluates nor keeps checkpoints (`eval_strategy` and `save_strategy` "no").

What it does not do, because it is polyembed's product rather than training: no embedding store (the teacher
embeds every run), no dev set embedded or evaluated, no checkpoint, no run folder, training.json or model card.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from benchmarks.training_throughput.probe import PhaseClock

PROJECTION_SENTENCES = 10000
"""As `polyembed.methods.distill.train.PROJECTION_FIT_SENTENCES`."""
RIDGE = 1.0
"""As `polyembed.methods.distill.train.PROJECTION_RIDGE` (projection_fit: least-squares only)."""
ENCODE_BATCH = 64
"""The batch polyembed encodes the student with (projection sample and the student's own targets)."""


def in_order(dataset: Any, batch_size: int, drop_last: bool, valid_label_columns: list[str] | None = None,
             generator: Any = None, seed: int = 0) -> Any:
    """sentence-transformers' default batch sampler, over the rows in stored order instead of shuffled."""
    from sentence_transformers.base.sampler import DefaultBatchSampler
    from torch.utils.data import SequentialSampler

    return DefaultBatchSampler(SequentialSampler(dataset), batch_size=batch_size, drop_last=drop_last,
                               valid_label_columns=valid_label_columns, generator=generator, seed=seed)


def projection_weights(inputs: Any, outputs: Any, method: str) -> tuple[Any, Any]:
    """(W, b) of the linear map from student to teacher embeddings: scaled orthogonal Procrustes (b = 0) or ridge
    least squares, both in float64."""
    import numpy as np

    if method == "orthogonal":
        left, singular, right = np.linalg.svd(inputs.T @ outputs, full_matrices=False)
        return singular.sum() / float((inputs**2).sum()) * (left @ right), np.zeros(outputs.shape[1])
    design = np.hstack([inputs, np.ones((len(inputs), 1))])
    solution = np.linalg.solve(design.T @ design + RIDGE * np.eye(design.shape[1]), design.T @ outputs)
    return solution[:-1], solution[-1]


def _student(config: Any, folder: str, english: list[str], teacher_vectors: dict[str, Any], bf16: bool) -> Any:
    """The student at the training length, with its projection and frozen embeddings."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense

    student = SentenceTransformer(folder)
    limit = getattr(student.tokenizer, "model_max_length", None)
    student.max_seq_length = min(config.max_seq_length, limit) if isinstance(limit, int) and limit < 10**6 else (
        config.max_seq_length)
    teacher_dimension = len(next(iter(teacher_vectors.values())))
    if config.projection == "always" or (config.projection == "auto" and (
            config.student != "teacher" or student.get_embedding_dimension() != teacher_dimension)):
        sample = random.Random(config.seed).sample(english, min(len(english), PROJECTION_SENTENCES))
        with torch.autocast(student.device.type, dtype=torch.bfloat16, enabled=bf16):
            encoded = student.encode(sample, batch_size=ENCODE_BATCH, show_progress_bar=False, convert_to_numpy=True)
        targets = np.stack([teacher_vectors[s] for s in sample]).astype(np.float64)
        weight, bias = projection_weights(np.asarray(encoded, dtype=np.float64), targets, config.projection_fit)
        dense = Dense(weight.shape[0], weight.shape[1], bias=True, activation_function=torch.nn.Identity())
        with torch.no_grad():
            dense.linear.weight.copy_(torch.from_numpy(weight.T).float())
            dense.linear.bias.copy_(torch.from_numpy(bias).float())
        student.append(dense)
    if config.freeze_embeddings:
        transformer: Any = student[0].auto_model
        transformer.get_input_embeddings().weight.requires_grad_(False)
    return student


def plain_arguments(config: Any, output_dir: Path, prompt: str | None, bf16: bool) -> Any:
    """The TrainingArguments polyembed's `fit` passes, less evaluation and checkpoints."""
    import torch
    from sentence_transformers import SentenceTransformerTrainingArguments

    return SentenceTransformerTrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_ratio,
        lr_scheduler_type={"linear": "linear", "constant": "constant_with_warmup"}[config.lr_schedule],
        weight_decay=config.weight_decay,
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        eval_strategy="no",
        save_strategy="no",
        logging_steps=max(1, min(50, config.eval_steps // 2)),
        seed=config.seed,
        bf16=bf16,
        prompts=prompt,
        report_to="none",
        disable_tqdm=True,
        use_cpu=not torch.cuda.is_available(),
        batch_sampler=in_order,
    )


def plain_job(config: Any, teacher_folder: str, student_folder: str, bf16: bool, scratch: Path,
              clock: PhaseClock) -> Any:
    """Distil as a sentence-transformers user would, timing the phases before training into `clock` (the rest is
    the caller's: what lies outside them, and the trainer's probe); returns the trainer's Dataset (rows in training
    order)."""
    import numpy as np
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.sentence_transformer.losses import MSELoss
    from transformers import set_seed

    from polyembed.data.mixing import balanced_order
    from polyembed.methods.distill.train import prepare_data

    rows = config.max_steps * config.batch_size
    with clock.phase("data"):
        data = prepare_data(config)
        english_rows = [s for source in data.train for s in source.english]
        other_rows = [s for source in data.train for s in source.other]
        lengths = [max(len(e), len(o)) for e, o in zip(english_rows, other_rows, strict=True)]
        order = balanced_order([len(s) for s in data.train], config.seed, 0,
                               lengths=lengths if config.group_by_length else None, batch_size=config.batch_size)
        if len(order) < rows:
            raise SystemExit(f"{len(order)} rows in an epoch, fewer than {rows} (steps x batch): raise "
                             "--pairs-per-source")
        order = order[:rows]
    set_seed(config.seed)
    english = list(dict.fromkeys(english_rows))
    with clock.phase("teacher"):
        teacher = SentenceTransformer(teacher_folder)
        vectors = teacher.encode(english, batch_size=config.teacher_batch_size, show_progress_bar=False,
                                 convert_to_numpy=True)
        teacher_vectors = dict(zip(english, np.asarray(vectors, dtype=np.float32), strict=True))
        del teacher
    with clock.phase("student"):
        student = _student(config, student_folder, english, teacher_vectors, bf16)
    with clock.phase("targets"):
        targets = teacher_vectors
        if config.teacher_weight < 1:
            own = student.encode(english, batch_size=ENCODE_BATCH, show_progress_bar=False, convert_to_numpy=True)
            weight = config.teacher_weight
            targets = {s: weight * teacher_vectors[s] + (1 - weight) * np.asarray(o, dtype=np.float32)
                       for s, o in zip(english, own, strict=True)}
    with clock.phase("dataset"):
        chosen = [int(i) for i in order]
        labels = np.stack([targets[english_rows[i]] for i in chosen])
        dataset = Dataset.from_dict({"english": [english_rows[i] for i in chosen],
                                     "other": [other_rows[i] for i in chosen], "label": labels.tolist()})
    prompt = (student.prompts or {}).get(student.default_prompt_name or "", None)
    trainer = SentenceTransformerTrainer(model=student, args=plain_arguments(config, scratch / "checkpoints", prompt,
                                                                             bf16),
                                         train_dataset=dataset, loss=MSELoss(student))
    trainer.train()
    student.save(str(scratch / "model"))
    return dataset
