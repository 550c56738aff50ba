"""Trainer setup shared by every method, on sentence-transformers' `SentenceTransformerTrainer` (no loop of
our own): a method describes its step as a `TrainingJob`, `fit` runs it with checkpoints, dev evaluation,
exact resume and the best checkpoint kept, and returns a `TrainResult`.

Room for methods that are not "one loss on one dataset":
- several datasets, each with its own loss (`train_dataset` and `loss` as dicts with the same keys; the
  trainer's `multi_dataset_batch_sampler` decides how they alternate, e.g. round robin);
- steps that are not a loss on a batch (EMMA-X alternates two models and keeps a queue): a
  `trainer_class` subclassing SentenceTransformerTrainer (override `compute_loss` / `training_step`) and
  `callbacks` (e.g. a momentum-encoder update in `on_step_end`).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformerTrainer
from transformers import TrainerCallback

from polyembed.errors import PolyembedError
from polyembed.methods.base.config import TrainConfig
from polyembed.methods.base.distributed import process_count
from polyembed.methods.base.run import RunFolder
from polyembed.methods.base.student import default_prompt, peak_memory_mb, restore_max_seq_length
from polyembed.models.encoder import resolve_precision

logger = logging.getLogger(__name__)


@dataclass
class TrainingJob:
    """What a method hands the shared trainer."""

    model: Any
    """The SentenceTransformer being trained (saved as the run's model)."""
    train_dataset: Any
    """A `datasets.Dataset`, or a dict name -> Dataset (one loss each)."""
    loss: Any
    """A loss module, or a dict name -> loss with the keys of `train_dataset`."""
    evaluator: Any
    """A sentence-transformers evaluator run every `eval_steps` on dev data."""
    best_metric: str
    """The evaluator's metric (with the trainer's `eval_` prefix) that picks the kept checkpoint."""
    greater_is_better: bool = True
    steps_per_epoch: int | None = None
    """Optimizer steps in one epoch, when the batch sampler's epoch is not len(dataset) / batch size."""
    batch_sampler: Any = None
    """A `BatchSamplers` value or a callable building the batch sampler (default: the trainer's own)."""
    multi_dataset_batch_sampler: Any = None
    router_mapping: Any = None
    """Dataset columns -> routes of a `Router` model (per dataset name: {column: route})."""
    rows_in_steps: Any = None
    """`rows_in_steps(n)`: training rows in the first n steps, exact across a resume (default n x batch)."""
    prompts: Any = None
    """The trainer's `prompts` (a prefix for every input, or per column); None: the model's own default prompt
    (`default_prompt`, me5's "query: "), so training sees the input text `encode` will."""
    learning_rate_mapping: dict[str, float] | None = None
    """Parameter-name pattern -> learning rate, over the loss module's parameters (`model.` for the encoder,
    e.g. `head.` for a trainable part of the loss), as sentence-transformers' `learning_rate_mapping`."""
    trainer_class: Any = None
    callbacks: list[Any] = field(default_factory=list)
    final_model: Any = None
    """`final_model(model) -> model` before run/model is saved (e.g. LoRA adapters merged into the weights, so
    the saved model is a plain sentence-transformers folder)."""
    save_model: Any = None
    """`save_model(model, folder)` writes run/model when `model.save` is not the right layout (e.g. an encoder
    with parallel adapters: the plain encoder plus the adapter files)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Method-specific facts for training.json (distillation: its sources and vocabulary transfer)."""


HEAD_FILE = "mlm_head.safetensors"
LOGS_FOLDER = "logs"
"""The run's training logs (TensorBoard event files with `report_to: tensorboard`)."""


class EncoderFrozenForSteps(TrainerCallback):
    """The model's parameters take no gradient before optimizer step `steps`, so only the loss's own trainable
    head learns (a fresh head then carries information before its gradients shape the encoder); afterwards each
    parameter trains again as it was set (frozen layers stay frozen). AdamW skips a parameter without a gradient
    entirely, weight decay included. Resume-safe: the state follows `global_step`."""

    def __init__(self, model: Any, steps: int) -> None:
        self.model, self.steps = model, steps
        self._trainable: list[Any] | None = None

    def _update(self, step: int) -> None:
        if step < self.steps and self._trainable is None:
            self._trainable = [p for p in self.model.parameters() if p.requires_grad]
            for parameter in self._trainable:
                parameter.requires_grad_(False)
            logger.info("encoder frozen for the first %d steps (only the loss head trains)", self.steps)
        elif step >= self.steps and self._trainable is not None:
            for parameter in self._trainable:
                parameter.requires_grad_(True)
            self._trainable = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._update(state.global_step)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._update(state.global_step)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._update(self.steps)


class LossHeadTrainer(SentenceTransformerTrainer):
    """Saves the trainable head of the loss (`loss.head`, e.g. an MLM head, which belongs to the loss, not the
    model) into every checkpoint and loads it back with the checkpoint. It is written with the model, before
    trainer_state.json, so a checkpoint that counts as complete always has its head. `head_file` names the
    file (a subclass whose head is not an MLM head names its own)."""

    head_file = HEAD_FILE
    loss: Any  # one loss module (not a dict of them), with its `head`

    def _save(self, output_dir: str | None = None, state_dict: Any = None) -> None:
        from safetensors.torch import save_file

        super()._save(output_dir, state_dict)
        target = output_dir or self.args.output_dir
        assert target is not None  # polyembed's training arguments always name the folder
        folder = Path(target)
        save_file({k: v.contiguous() for k, v in self.loss.head.state_dict().items()}, str(folder / self.head_file))

    def _load_from_checkpoint(self, checkpoint_path: str, model: Any = None) -> None:
        from safetensors.torch import load_file

        super()._load_from_checkpoint(checkpoint_path)
        saved = Path(checkpoint_path) / self.head_file
        if not saved.is_file():
            raise PolyembedError(f"{checkpoint_path}: no {self.head_file}; the loss head cannot be restored")
        self.loss.head.load_state_dict(load_file(str(saved)))


@dataclass
class TrainResult:
    """What a run produced: the model folder, dev history, best dev metrics, speed and memory."""

    method: str
    output_dir: str
    model_dir: str
    history: list[dict[str, Any]]
    best: dict[str, float]
    """Dev metrics of the model kept as model/: the best checkpoint's, or the last evaluation's (checkpoint: final)."""
    best_checkpoint: str | None
    steps: int
    train_pairs_seen: int
    """Training rows of the whole run (a resumed run counts the steps before the checkpoint too)."""
    train_seconds: float
    """Time in optimizer steps of this process (pairs_per_second uses its own rows)."""
    pairs_per_second: float
    peak_memory_mb: float
    resumed_from: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    max_seq_length: dict[str, Any] = field(default_factory=dict)
    """Tokens per sentence in training and in the saved model, and where the saved length came from
    (`restore_max_seq_length`)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (written as training.json)."""
        return asdict(self)


class StepTimer(TrainerCallback):
    """Wall time inside optimizer steps only (dev evaluation and checkpoint saving excluded), so pairs/s
    measures training itself."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.steps = 0
        self._start = 0.0

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._start = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.seconds += time.perf_counter() - self._start
        self.steps += 1


def _log_callbacks(config: TrainConfig, run: RunFolder) -> list[Any]:
    """TensorBoard writes into the run's logs/ folder, which outlives checkpoints/ (removed when
    keep_checkpoints is false), rather than transformers' default under the checkpoints."""
    if config.report_to != "tensorboard":
        return []
    from transformers.integrations import TensorBoardCallback

    callback = TensorBoardCallback()
    callback.logging_dir = str(run.path / LOGS_FOLDER)
    return [callback]


def planned_steps(config: TrainConfig, steps_per_epoch: int) -> int:
    """The run's optimizer steps: max_steps, else epochs x steps per epoch."""
    return config.max_steps or math.ceil(steps_per_epoch * config.epochs)


def fit(
    method: str, job: TrainingJob, config: TrainConfig, run: RunFolder, resume: bool, show_progress: bool
) -> TrainResult:
    """Train `job` with the config's schedule in `run`, keep the best (or the final) checkpoint as run/model,
    write training.json; `resume` continues from the last complete checkpoint (optimizer, scheduler, RNG, data)."""
    import torch
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    rows = len(job.train_dataset) if not isinstance(job.train_dataset, dict) else sum(
        len(d) for d in job.train_dataset.values()
    )
    step_rows = config.batch_size * process_count()  # each data-parallel process trains a batch per step
    steps_per_epoch = job.steps_per_epoch or math.ceil(rows / step_rows)
    eval_steps = config.eval_steps or max(1, planned_steps(config, steps_per_epoch) // 4)
    # With one evaluation, at the last step (the demo's eval_steps = max_steps), or none, the best checkpoint is
    # the final model: reading it back at the end only costs time.
    reload_best = config.checkpoint == "best" and eval_steps < planned_steps(config, steps_per_epoch)
    bf16 = resolve_precision(config.precision, "precision") == "bf16"
    extra: dict[str, Any] = {}
    if job.batch_sampler is not None:
        extra["batch_sampler"] = job.batch_sampler
    if job.multi_dataset_batch_sampler is not None:
        extra["multi_dataset_batch_sampler"] = job.multi_dataset_batch_sampler
    if job.router_mapping is not None:
        extra["router_mapping"] = job.router_mapping
    if job.learning_rate_mapping:
        extra["learning_rate_mapping"] = job.learning_rate_mapping
    if config.report_to == "trackio":
        extra["project"] = f"polyembed-{method}"
    args = SentenceTransformerTrainingArguments(
        output_dir=str(run.checkpoints),
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_ratio,
        lr_scheduler_type={"linear": "linear", "constant": "constant_with_warmup"}[config.lr_schedule],
        weight_decay=config.weight_decay,
        num_train_epochs=config.epochs,
        max_steps=config.max_steps or -1,
        eval_strategy="steps",
        eval_steps=eval_steps,
        save_strategy="steps",
        save_steps=eval_steps,
        save_total_limit=config.save_total_limit,
        load_best_model_at_end=reload_best,
        metric_for_best_model=job.best_metric,
        greater_is_better=job.greater_is_better,
        logging_steps=max(1, min(50, eval_steps // 2)),
        seed=config.seed,
        bf16=bf16,
        prompts=job.prompts if job.prompts is not None else default_prompt(job.model),
        report_to="trackio" if config.report_to == "trackio" else "none",
        disable_tqdm=not show_progress,
        use_cpu=not torch.cuda.is_available(),
        **extra,
    )
    timer = StepTimer()
    loggers = _log_callbacks(config, run)
    trainer = (job.trainer_class or SentenceTransformerTrainer)(
        model=job.model,
        args=args,
        train_dataset=job.train_dataset,
        loss=job.loss,
        evaluator=job.evaluator,
        callbacks=[timer, *loggers, *job.callbacks],
    )
    last = run.last_checkpoint() if resume else None
    if resume and show_progress:
        logger.info(f"resuming from {last}" if last else f"no checkpoint in {run.checkpoints}: starting fresh")
    trainer.train(resume_from_checkpoint=str(last) if last else None)
    evaluated = [entry.get("step") for entry in trainer.state.log_history if job.best_metric in entry]
    if config.checkpoint == "final" and (not evaluated or evaluated[-1] != trainer.state.global_step):
        trainer.evaluate()  # the kept model's own dev measure, when the last step fell between evaluations
    for callback in loggers:  # an evaluation after training reopens TensorBoard's writer
        if getattr(callback, "tb_writer", None) is not None:
            callback.tb_writer.close()

    final = job.final_model(trainer.model) if job.final_model else trainer.model
    lengths = restore_max_seq_length(final, config.inference_max_seq_length)
    run.save_model(final, save=job.save_model)
    state = trainer.state
    history = [
        {k: v for k, v in entry.items() if k.startswith("eval_") or k in ("step", "epoch")}
        for entry in state.log_history
        if any(k.startswith("eval_") and k not in ("eval_runtime", "eval_samples_per_second") for k in entry)
    ]
    scored = [entry for entry in history if job.best_metric in entry]
    best = max(scored, key=lambda e: e[job.best_metric] * (1 if job.greater_is_better else -1)) if scored else {}
    if config.checkpoint == "final":
        best = scored[-1] if scored else {}
    count = job.rows_in_steps or (lambda steps: steps * step_rows)
    pairs_this_process = count(state.global_step) - count(state.global_step - timer.steps)
    result = TrainResult(
        method=method,
        output_dir=str(run.path),
        model_dir=str(run.model_dir),
        history=history,
        best=best,
        best_checkpoint=state.best_model_checkpoint if config.checkpoint == "best" else None,
        steps=state.global_step,
        train_pairs_seen=count(state.global_step),
        train_seconds=round(timer.seconds, 2),
        pairs_per_second=round(pairs_this_process / timer.seconds, 2) if timer.seconds else 0.0,
        peak_memory_mb=round(peak_memory_mb(), 1),
        resumed_from=str(last) if last else None,
        details=job.details,
        max_seq_length=lengths,
    )
    run.write_summary(result.to_dict())
    if not config.keep_checkpoints:
        run.remove_checkpoints()
    return result
