"""Multilingual knowledge distillation, end to end, on sentence-transformers' trainer (no loop of our own).

Order of work, so that bad input fails before anything expensive:
1. read and validate all bitext (registry datasets + user files; file:line errors), split off the dev set;
2. load the teacher and embed the English side once (persistent `EmbeddingStore`);
3. build the student (optional FOCUS vocabulary transfer, projection when dimensions differ);
4. train with `SentenceTransformerTrainer` + `MSELoss`, balanced batches (`BalancedBatchSampler`), dev
   evaluation (MSE on held-out pairs, translation accuracy, STS) and checkpoints; resume picks up the
   last checkpoint exactly (optimizer, scheduler, RNG and data position come from the checkpoint);
5. keep the best checkpoint (by the dev measure) as `<output_dir>/model`, written atomically.
"""

from __future__ import annotations

import functools
import json
import math
import random
import resource
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from transformers import TrainerCallback

from polyembed.config import ConfigOrigin, dump_config, validate_config
from polyembed.data.errors import PolyembedError
from polyembed.data.parallel_sources import ParallelFileSpec, ParallelSource, load_parallel_sources, split_dev
from polyembed.data.readers.sts import read_stsb_multi_mt
from polyembed.data.registry import get_dataset
from polyembed.data.root import data_root
from polyembed.methods.distill.config import DistillConfig
from polyembed.methods.distill.losses import LABEL_COLUMN, TEXT_COLUMNS, distillation_loss
from polyembed.models.languages import normalize_language
from polyembed.models.loading import check_model_reference
from polyembed.models.saving import save_model_atomically
from polyembed.outputs import atomic_write, check_output_dir, make_dirs, remove_created_dirs

PROJECTION_FIT_SENTENCES = 10000  # held-out residual: 0.64 of the teacher's energy at 2k, 0.54 at 10k
PROJECTION_FITS = ("least-squares", "orthogonal")
PROJECTION_RIDGE = 1.0  # best held-out fit for unit-norm student embeddings at 2k-10k sentences
STSB_MULTI_MT_LANGUAGES = ("de", "es", "fr", "it", "nl", "pl", "pt", "ru", "zh")
BEST_METRICS = {
    "mse": "eval_dev_negative_mse",
    "translation": "eval_dev_mean_accuracy",
    "sts": "eval_dev-sts_spearman_cosine",
}
MODEL_DIR = "model"
CHECKPOINT_DIR = "checkpoints"
SUMMARY_FILE = "training.json"
CONFIG_FILE = "config.yaml"


@dataclass
class DistillData:
    """Validated bitext of a run: training sources (balanced in batches) and held-out dev sources."""

    train: list[ParallelSource]
    dev: list[ParallelSource]
    dev_sts: tuple[list[str], list[str], list[float]] | None = None

    def describe(self) -> list[dict[str, Any]]:
        """One row per source, for the summary and the report."""
        dev = {(d.name, d.language): len(d) for d in self.dev}
        return [
            {
                "source": s.name,
                "language": s.language,
                "train_pairs": len(s),
                "dev_pairs": dev.get((s.name, s.language), 0),
                "origin": s.origin,
            }
            for s in self.train
        ]


@dataclass
class DistillResult:
    """What a run produced: the model folder, dev history, best dev metrics, speed and memory."""

    output_dir: str
    model_dir: str
    sources: list[dict[str, Any]]
    history: list[dict[str, Any]]
    best: dict[str, float]
    best_checkpoint: str | None
    steps: int
    train_pairs_seen: int
    """Pairs trained on in the whole run (a resumed run counts the steps before the checkpoint too)."""
    train_seconds: float
    """Time in optimizer steps of this process (pairs_per_second uses its own pairs)."""
    pairs_per_second: float
    peak_memory_mb: float
    resumed_from: str | None = None
    vocabulary_transfer: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (written as training.json)."""
        return asdict(self)


def prepare_data(config: DistillConfig, origin: ConfigOrigin | None = None) -> DistillData:
    """Read, validate and split all bitext before any model is loaded (errors name file and line)."""
    origin = origin or ConfigOrigin()
    validate_config(config, origin)  # types, choices and ranges, for configs built in Python too
    if not config.languages and not config.parallel_files:
        raise origin.error("languages", "no languages and no parallel files: nothing to train on")
    try:
        root: Path | None = data_root(config.data_root)
    except PolyembedError:
        if config.datasets or config.data_root is not None:
            raise
        root = None  # only the user's own bitext: no dataset folder needed (and no dev STS)
    files = []
    for index, spec in enumerate(config.parallel_files):
        try:
            files.append(ParallelFileSpec.parse(spec))
        except PolyembedError as err:
            raise origin.error("parallel_files", str(err), index) from err
    sources = load_parallel_sources(
        config.languages,
        config.datasets,
        root,
        files=files,
        max_pairs_per_source=config.max_pairs_per_source or None,
        seed=config.seed,
        language_origin=lambda i: origin.where("languages", i),
    )
    train, dev = split_dev(sources, config.dev_pairs_per_source, config.seed)
    return DistillData(train, dev, _dev_sts(config, root) if config.dev_sts_pairs > 0 and root else None)


def _dev_sts(config: DistillConfig, root: Path) -> tuple[list[str], list[str], list[float]] | None:
    """English-X stsb-multi-mt dev pairs for the trained languages it covers, split evenly, scores in [0, 1]."""
    languages = [normalize_language(code) for code in config.languages]
    covered = [code for code in languages if code in STSB_MULTI_MT_LANGUAGES]
    folder = root / get_dataset("stsb-multi-mt").folder
    if not covered or not folder.is_dir():
        return None
    per_language = max(1, config.dev_sts_pairs // len(covered))
    first: list[str] = []
    second: list[str] = []
    scores: list[float] = []
    for code in covered:
        pairs = read_stsb_multi_mt(folder, "en", "dev", code)
        first += pairs.sentences1[:per_language]
        second += pairs.sentences2[:per_language]
        scores += [score / 5.0 for score in pairs.scores[:per_language]]
    return first, second, scores


def _teacher_targets(config: DistillConfig, data: DistillData, show_progress: bool) -> tuple[Any, Any]:
    """(teacher encoder, EmbeddingStore) with every English sentence of train and dev embedded."""
    from polyembed.models.embedding_cache import EmbeddingStore
    from polyembed.models.loading import load_model

    teacher = load_model(config.teacher)
    store = EmbeddingStore(teacher, batch_size=config.teacher_batch_size)
    english = [s for source in data.train + data.dev for s in source.english]
    unique = list(dict.fromkeys(english))
    if show_progress:
        new = sum(1 for s in unique if s not in store)
        print(f"teacher {config.teacher}: {len(unique):,} English sentences to embed ({new:,} not cached)")
    store.embed(unique, show_progress_bar=show_progress)
    return teacher, store


def build_student(config: DistillConfig, data: DistillData, store: Any, output_dir: Path, verbose: bool):
    """The student SentenceTransformer: loaded, optionally given a transferred vocabulary, followed by a
    least-squares projection into the teacher's space (see `fit_projection`), embeddings optionally frozen."""
    from polyembed.models.loading import as_sentence_transformer, load_model

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
                seed=config.seed,
                overwrite=True,
                verbose=verbose,
            )
        transfer_report = json.loads((init_dir / REPORT_FILE).read_text(encoding="utf-8"))
        name = str(init_dir)
    student, _ = as_sentence_transformer(load_model(name))
    student.max_seq_length = config.max_seq_length
    teacher_dimension = int(store.embed(data.train[0].english[:1], show_progress_bar=False).shape[1])
    different_model = config.student != "teacher" or config.student_vocabulary == "transfer"
    other_dimension = student.get_embedding_dimension() != teacher_dimension
    if config.projection == "always" or (config.projection == "auto" and (different_model or other_dimension)):
        english = list(dict.fromkeys(s for source in data.train for s in source.english))
        sample = random.Random(config.seed).sample(english, min(len(english), PROJECTION_FIT_SENTENCES))
        targets = store.embed(sample, show_progress_bar=False)
        student.append(fit_projection(student, sample, targets, verbose, method=config.projection_fit))
    if config.freeze_embeddings:
        student[0].auto_model.get_input_embeddings().weight.requires_grad_(False)
    if config.freeze_layers:
        freeze_lowest_layers(student[0].auto_model, config.freeze_layers)
    if config.dropout is not None:
        set_dropout(student[0].auto_model, config.dropout)
    return student, transfer_report


def freeze_lowest_layers(model: Any, count: int) -> None:
    """Fix the embeddings and the lowest `count` transformer layers: the backward pass then stops above
    them, which is the main CPU saving, and the student keeps its low-level multilingual features."""
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    if layers is None:
        raise PolyembedError(f"freeze_layers: {type(model).__name__} has no encoder.layer list (BERT-style expected)")
    if not 0 <= count <= len(layers):
        raise PolyembedError(f"freeze_layers={count}: the student has {len(layers)} transformer layers")
    for module in [getattr(model, "embeddings", None) or model.get_input_embeddings(), *layers[:count]]:
        module.requires_grad_(False)


def set_dropout(model: Any, probability: float) -> None:
    """Set every dropout of the transformer (hidden and attention) to `probability`; the Hugging Face
    config is updated too so that the saved model trains the same way when loaded again."""
    import torch

    if not 0.0 <= probability < 1.0:
        raise PolyembedError(f"dropout={probability}: expected a probability in [0, 1)")
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = probability
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout"):
        if hasattr(model.config, key):
            setattr(model.config, key, probability)


def fit_projection(
    student: Any,
    sentences: list[str],
    targets: Any,
    verbose: bool = True,
    ridge: float = PROJECTION_RIDGE,
    method: str = "least-squares",
) -> Any:
    """A Dense layer W, b minimising ||student(s) W + b - teacher(s)||^2 over `sentences` (closed form).

    `method="orthogonal"` restricts W to a scaled rotation and b to 0 (Procrustes): a higher MSE at step 0,
    but the student's cosine similarities, and so its STS, are exactly those of the untrained student.

    A pre-trained student (e.g. multilingual-e5) lives in a space unrelated to the teacher's; starting the
    MSE from there first spends many steps rotating the whole space and wrecks the student's similarity
    structure meanwhile. The least-squares map puts the student's English next to the teacher's at step 0,
    so training time goes to pulling translations together. (An addition to the paper, whose XLM-R student
    has no sentence space to keep.) When dimensions differ, it is also the paper's projection layer.
    """
    import numpy as np
    import torch
    from sentence_transformers.sentence_transformer.modules import Dense

    if method not in PROJECTION_FITS:
        raise PolyembedError(f"projection fit '{method}' is not one of {', '.join(PROJECTION_FITS)}")
    inputs = student.encode(sentences, batch_size=64, show_progress_bar=verbose, convert_to_numpy=True).astype(
        np.float64
    )
    outputs = np.asarray(targets, dtype=np.float64)
    if method == "orthogonal":
        if inputs.shape[1] != outputs.shape[1]:
            raise PolyembedError(
                f"an orthogonal projection needs equal dimensions (student {inputs.shape[1]}, "
                f"teacher {outputs.shape[1]}); use projection_fit: least-squares"
            )
        left, singular, right = np.linalg.svd(inputs.T @ outputs)
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


def bf16_available() -> bool:
    """Whether bf16 autocast is fast here: a GPU with bf16, or a CPU with AVX512-BF16 or AMX."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="ignore")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _train_dataset(data: DistillData, store: Any):
    """Rows of all sources back to back (the order BalancedBatchSampler expects) with teacher labels."""
    from datasets import Dataset

    english = [s for source in data.train for s in source.english]
    other = [s for source in data.train for s in source.other]
    labels = store.embed(english, show_progress_bar=False)
    return Dataset.from_dict({TEXT_COLUMNS[0]: english, TEXT_COLUMNS[1]: other, LABEL_COLUMN: labels.tolist()})


def _evaluator(data: DistillData, store: Any, batch_size: int):
    """Dev measures of the paper (MSE on held-out pairs) plus translation accuracy and STS."""
    from sentence_transformers.sentence_transformer.evaluation import (
        EmbeddingSimilarityEvaluator,
        MSEEvaluator,
        SequentialEvaluator,
        TranslationEvaluator,
    )

    english = [s for source in data.dev for s in source.english]
    other = [s for source in data.dev for s in source.other]
    evaluators = [
        MSEEvaluator(english, other, teacher_model=store, name="dev", batch_size=batch_size, write_csv=False),
        TranslationEvaluator(english, other, name="dev", batch_size=batch_size, write_csv=False),
    ]
    if data.dev_sts is not None:
        first, second, scores = data.dev_sts
        evaluators.append(
            EmbeddingSimilarityEvaluator(first, second, scores, name="dev-sts", batch_size=batch_size, write_csv=False)
        )
    return SequentialEvaluator(evaluators)


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


def peak_memory_mb() -> float:
    """Peak resident memory of this process (CPU), or peak CUDA allocation when training on a GPU."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _check_output_dir(config: DistillConfig, output_dir: Path, resume: bool, overwrite: bool) -> None:
    """Before any model loads: a resumed run must have the same options (the error names those that
    differ); a fresh run needs an empty folder, and --overwrite only ever deletes a polyembed run folder."""
    check_output_dir(output_dir, "--output-dir")
    saved = output_dir / CONFIG_FILE
    if resume:
        if saved.is_file() and saved.read_text(encoding="utf-8") != dump_config(config):
            try:
                before = yaml.safe_load(saved.read_text(encoding="utf-8"))
            except yaml.YAMLError:
                before = None
            now = asdict(config)
            if isinstance(before, dict):
                keys = [key for key in now if before.get(key) != now[key]] + [key for key in before if key not in now]
                differ = "; ".join(f"{key}: {before.get(key)!r} in the run, {now.get(key)!r} now" for key in keys)
            else:
                differ = "it cannot be read"
            raise PolyembedError(
                f"cannot resume in {output_dir}: its {CONFIG_FILE} differs from this run's options ({differ}); "
                "resume with the same options, or pass --overwrite to start again"
            )
        return
    if output_dir.is_dir() and any(output_dir.iterdir()):
        if not overwrite:
            raise PolyembedError(
                f"{output_dir} is not empty: pass --resume to continue its run or --overwrite to start again"
            )
        if not saved.is_file():
            raise PolyembedError(
                f"{output_dir} holds files but is not a polyembed run folder (no {CONFIG_FILE}): "
                "refusing to delete it with --overwrite; choose an empty or new --output-dir"
            )


def _remove_failed_start(output_dir: Path, created: list[Path], fresh: bool) -> None:
    """After a failure before the first checkpoint: remove what this run wrote, so a corrected rerun is not
    refused as 'not empty'. A folder with a checkpoint stays (--resume continues it)."""
    if not fresh or _last_checkpoint(output_dir / CHECKPOINT_DIR) is not None:
        return
    if output_dir in created:
        shutil.rmtree(output_dir, ignore_errors=True)
    else:  # the user's (empty) folder stays; what this run put in it goes
        for item in output_dir.iterdir():
            if item.is_dir():
                shutil.rmtree(item, ignore_errors=True)
            else:
                item.unlink(missing_ok=True)
    remove_created_dirs(created)


def train_distill(
    config: DistillConfig | None = None,
    *,
    origin: ConfigOrigin | None = None,
    resume: bool = False,
    overwrite: bool = False,
    show_progress: bool = True,
) -> DistillResult:
    """Distil the teacher into a multilingual student; returns where the model is and how training went.

    `resume=True` continues from the last checkpoint in `output_dir` (same config required);
    `overwrite=True` deletes a previous run there first.
    """
    config = config or DistillConfig()
    output_dir = Path(config.output_dir).expanduser().resolve()
    data = prepare_data(config, origin)  # all input errors surface here, before models are loaded
    _check_output_dir(config, output_dir, resume, overwrite)
    for key in ("teacher", "student"):
        if getattr(config, key) != "teacher":
            check_model_reference(getattr(config, key), (origin or ConfigOrigin()).where(key))
    if overwrite and not resume and (output_dir / CONFIG_FILE).is_file():
        shutil.rmtree(output_dir)
    fresh = not (output_dir.is_dir() and any(output_dir.iterdir()))
    created = make_dirs(output_dir)
    try:
        with atomic_write(output_dir / CONFIG_FILE) as handle:
            handle.write(dump_config(config))
        return _train(config, data, output_dir, resume, show_progress)
    except BaseException:
        _remove_failed_start(output_dir, created, fresh)
        raise


def _train(
    config: DistillConfig, data: DistillData, output_dir: Path, resume: bool, show_progress: bool
) -> DistillResult:
    """Everything after the checks: teacher targets, student, trainer, best model and training.json."""
    import torch
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    from polyembed.data.mixing import BalancedBatchSampler, rows_in_steps

    if show_progress:
        total = sum(len(s) for s in data.train)
        print(f"bitext: {len(data.train)} sources, {total:,} training pairs, {sum(len(d) for d in data.dev):,} dev")

    _, store = _teacher_targets(config, data, show_progress)
    student, transfer_report = build_student(config, data, store, output_dir, show_progress)
    dataset = _train_dataset(data, store)
    sizes = [len(s) for s in data.train]
    steps_per_epoch = math.ceil(max(sizes) * len(sizes) / config.batch_size)
    total_steps = config.max_steps or math.ceil(steps_per_epoch * config.epochs)
    eval_steps = config.eval_steps or max(1, total_steps // 4)
    lengths = None
    if config.group_by_length:
        lengths = [
            max(len(e), len(o)) for source in data.train for e, o in zip(source.english, source.other, strict=True)
        ]
    bf16 = config.precision == "bf16" or (config.precision == "auto" and bf16_available())
    prompt = (student.prompts or {}).get(student.default_prompt_name or "", None)

    args = SentenceTransformerTrainingArguments(
        output_dir=str(output_dir / CHECKPOINT_DIR),
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_ratio,
        weight_decay=config.weight_decay,
        num_train_epochs=config.epochs,
        max_steps=config.max_steps or -1,
        eval_strategy="steps",
        eval_steps=eval_steps,
        save_strategy="steps",
        save_steps=eval_steps,
        save_total_limit=config.save_total_limit,
        load_best_model_at_end=True,
        metric_for_best_model=BEST_METRICS[config.best_metric],
        greater_is_better=True,
        logging_steps=max(1, min(50, eval_steps // 2)),
        seed=config.seed,
        batch_sampler=functools.partial(BalancedBatchSampler, source_sizes=sizes, lengths=lengths),
        bf16=bf16,
        prompts=prompt,
        report_to="none",
        disable_tqdm=not show_progress,
        use_cpu=not torch.cuda.is_available(),
    )
    timer = StepTimer()
    trainer = SentenceTransformerTrainer(
        model=student,
        args=args,
        train_dataset=dataset,
        loss=distillation_loss(student),
        evaluator=_evaluator(data, store, config.batch_size),
        callbacks=[timer],
    )
    last = _last_checkpoint(output_dir / CHECKPOINT_DIR) if resume else None
    if resume and show_progress:
        print(f"resuming from {last}" if last else f"no checkpoint in {output_dir / CHECKPOINT_DIR}: starting fresh")
    trainer.train(resume_from_checkpoint=str(last) if last else None)

    model_dir = output_dir / MODEL_DIR
    save_model_atomically(trainer.model, model_dir)
    state = trainer.state
    history = [
        {k: v for k, v in entry.items() if k.startswith("eval_") or k in ("step", "epoch")}
        for entry in state.log_history
        if any(k.startswith("eval_dev") for k in entry)
    ]
    best = _best_entry(history, BEST_METRICS[config.best_metric])
    pairs_this_process = rows_in_steps(state.global_step, sizes, config.batch_size) - rows_in_steps(
        state.global_step - timer.steps, sizes, config.batch_size
    )
    result = DistillResult(
        output_dir=str(output_dir),
        model_dir=str(model_dir),
        sources=data.describe(),
        history=history,
        best=best,
        best_checkpoint=state.best_model_checkpoint,
        steps=state.global_step,
        train_pairs_seen=rows_in_steps(state.global_step, sizes, config.batch_size),
        train_seconds=round(timer.seconds, 2),
        pairs_per_second=round(pairs_this_process / timer.seconds, 2) if timer.seconds else 0.0,
        peak_memory_mb=round(peak_memory_mb(), 1),
        resumed_from=str(last) if last else None,
        vocabulary_transfer=transfer_report,
    )
    with atomic_write(output_dir / SUMMARY_FILE) as handle:
        handle.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")
    return result


def _best_entry(history: list[dict[str, Any]], metric: str) -> dict[str, float]:
    scored = [entry for entry in history if metric in entry]
    return max(scored, key=lambda entry: entry[metric]) if scored else {}


def _last_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint: a SIGKILL during saving can leave a newer one without its state."""
    if not folder.is_dir():
        return None
    complete = [
        path
        for path in folder.glob("checkpoint-*")
        if path.name.split("-")[-1].isdigit() and (path / "trainer_state.json").is_file()
    ]
    return max(complete, key=lambda path: int(path.name.split("-")[-1]), default=None)
