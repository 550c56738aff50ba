"""Training throughput: `polyembed.train("distill", ...)` against a plain sentence-transformers script doing the same
job (`plain.py`), in one process, in alternating order (plain first in even repeats, polyembed first in odd ones).

  python -m benchmarks.training_throughput.run run [--steps 48 --repeats 2]  # -> results/bench/training_throughput/
  python -m benchmarks.training_throughput.run render                       # the docs section, from the saved JSON

The job: the demo preset (src/polyembed/presets/distill-demo.yaml: minilm-en -> me5-small, its languages and
datasets, batch 32, learning rate 3e-5, warm-up 0.1, frozen embeddings, orthogonal projection, teacher_weight 0.2,
length-grouped balanced batches, precision auto, seed 0) with `max_steps` S and `max_pairs_per_source` just
enough for S steps in one epoch (every source capped at ceil(S x batch / sources) + the dev pairs), so the fixed
costs stay those of the pairs trained on. Both jobs train on the same pairs, the same targets, the same batches
(row for row), the same model, loss, arguments, precision and seed (`plain.py` says how); the runner checks it
after each repeat (rows, labels, batch sizes, trainable parameters, modules and TrainingArguments) and stores what
differs. Targets agree to float32 rounding once the projection sample has more English sentences than the student
has dimensions (384: from about 12 steps of 32 on); below that the orthogonal projection is not unique and the
part the sample does not fix follows rounding (about 5e-4 at 3 steps). An untimed plain job of a few steps runs
first, so the process's first training (kernel choice, files into the page cache) counts against neither job.

Where the two differ, and why that is fair:
- Evaluation and checkpoints: excluded from the training phase. polyembed evaluates and saves once, after the
  last step (`eval_steps` = S, as the demo's `eval_steps: 48` with 48 steps); the training phase of both jobs runs
  from `on_train_begin` to the last step's `on_step_end`, so it holds batch collation, forward, backward,
  optimizer, scheduler, logging and callbacks, and nothing of the evaluation. The plain script neither evaluates
  nor saves checkpoints; polyembed's evaluation, checkpoint and reload of the best checkpoint are shown as their
  own phases and count in the whole-job time only.
- The teacher: polyembed's embedding store would find the English side from an earlier run, so each polyembed
  run gets an empty store (`probe.fresh_embedding_cache`) and pays for embedding and storing it, as the plain
  script pays for embedding it.
- The dev split: polyembed also embeds the dev English (teacher and student) for its evaluator; the plain script
  only what it trains on. Both read the data through polyembed's reader, so the pairs are the same.
- Instruments: both trainers carry the same probe callback (`probe.watching_trainers`); polyembed's own StepTimer
  comes on top, part of its overhead.

Reported: per run the wall time of every phase (`spec.PHASES`), the training phase's pairs/s (S x batch / its
seconds) and the whole job's; the ratio polyembed / plain of the training phase and of the whole job (medians
over the repeats); the machine. On 2 idle cores the default (S 48, 2 repeats, a warm-up) takes about 20 minutes.

polyembed's overhead, by reading (src/polyembed/...):
- methods/base/trainer.py `fit`: `save_strategy` "steps" makes the trainer write a full checkpoint (model,
  optimizer, scheduler, RNG) at S (what `--resume` restarts from); then `run.save_model` writes the model again
  (`models/saving.py`, through a staging folder), plus training.json and the model card. The best checkpoint is
  read back at the end only when there was an evaluation before the last step (with one evaluation, at S, the
  best checkpoint is the final model, and reading it back was the 'after' phase).
- The dev evaluation at S (`methods/distill/evaluation.py` + dev STS): the student encodes the dev pairs and STS.
- `methods/distill/train.py`: `_teacher_targets` embeds train and dev English; the embedding store
  (`models/embedding_cache.py`) writes each vector with a BLAKE2b checksum to SQLite and checks the checksum of
  every row at every lookup (`_teacher_targets`, the projection sample, the labels, each evaluation).
- Both jobs (the plain script mirrors it): `EnglishTargets` encodes every English sentence with the student after
  `fit_projection` encoded the same sentences (up to 10,000) for the fit; the projection is linear, so the fit's
  encodings times W could serve as the student's own targets (they were encoded under bf16 autocast, the targets
  in float32: a change of the targets to weigh).
- Per step (training phase): `StepTimer` (two perf_counter calls), logging every S/2 steps (`logging_steps`):
  nothing measurable expected; `BalancedBatchSampler` orders the epoch once (numpy, milliseconds).
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import math
import shutil
import statistics
import tempfile
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

from benchmarks.common.results import machine, write_json
from benchmarks.common.script_cli import invocation, script_parser
from benchmarks.training_throughput.probe import (
    PhaseClock,
    TrainerRecord,
    fresh_embedding_cache,
    model_folder,
    timed_functions,
    watching_trainers,
)
from benchmarks.training_throughput.render import render
from benchmarks.training_throughput.spec import FIXED_PHASES, JOBS, OUT, PHASES, RESULT_FILE

logger = logging.getLogger("benchmarks.training_throughput")

POLYEMBED_PHASES = {"prepare_data": "data", "_teacher_targets": "teacher", "build_student": "student",
                    "EnglishTargets": "targets", "_train_dataset": "dataset"}
"""The functions of polyembed.methods.distill.train that do each phase's work before training."""
BEFORE_TRAINING = ("data", "teacher", "student", "targets", "dataset")
MIRRORED_DEFAULTS = {"student_vocabulary": "keep", "anchor_languages": [], "anchor_files": [], "ranking_weight": 0.0,
                     "adapter": "full", "freeze_layers": 0, "dropout": None, "parallel_files": []}
"""Options `plain.py` mirrors only at these values (the demo's): another value stops the run before any work."""
IGNORED_ARGUMENTS = ("output_dir", "logging_dir", "batch_sampler")
"""TrainingArguments that differ by construction: the folders, and the sampler (its batches are compared)."""


def job_config(options: Namespace) -> tuple[Path, dict[str, Any], Any]:
    """(preset, overrides both jobs get, the resolved DistillConfig): the preset with S steps, evaluation at S only,
    the pairs per source S steps need, and the precision resolved once for both."""
    from polyembed.config import build_config
    from polyembed.eval.headline import demo_config_path
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.methods.distill.train import prepare_data
    from polyembed.models.precision import resolve_precision

    preset = Path(options.preset) if options.preset else demo_config_path()
    given = {"teacher": options.teacher, "student": options.student, "batch_size": options.batch_size,
             "seed": options.seed}
    base, _ = build_config(DistillConfig, preset, given)
    unsupported = {key: getattr(base, key) for key, value in MIRRORED_DEFAULTS.items() if getattr(base, key) != value}
    if unsupported or base.student == "teacher":
        raise SystemExit(f"the plain script does not mirror {unsupported or {'student': 'teacher'}}")
    pairs = options.pairs_per_source
    if not pairs:
        sources = len(prepare_data(base).train)
        pairs = math.ceil(options.steps * base.batch_size / sources) + base.dev_pairs_per_source
    bf16 = resolve_precision(base.precision, "precision") == "bf16"
    overrides = {**{k: v for k, v in given.items() if v is not None}, "max_steps": options.steps,
                 "eval_steps": options.steps, "max_pairs_per_source": pairs, "precision": "bf16" if bf16 else "fp32"}
    config, _ = build_config(DistillConfig, preset, overrides)
    return preset, overrides, config


def phases_of(start: float, end: float, clock: PhaseClock, record: TrainerRecord) -> dict[str, float]:
    """Every phase of `spec.PHASES` in seconds, from the clock (before training) and the trainer's probe; they add
    up to end - start."""
    probe = record.probe
    seconds = {name: clock.seconds.get(name, 0.0) for name in BEFORE_TRAINING}
    seconds["setup"] = record.call_start - start - sum(seconds.values())
    seconds["trainer"] = probe.train_begin - record.call_start
    seconds["loop"] = probe.last_step_end - probe.train_begin
    mark = probe.last_step_end
    evaluated = [t for t in probe.evaluated if t >= mark]
    seconds["evaluation"] = evaluated[0] - mark if evaluated else 0.0
    mark = evaluated[0] if evaluated else mark
    saved = [t for t in probe.saved if t >= mark]
    seconds["checkpoint"] = saved[0] - mark if saved else 0.0
    mark = saved[0] if saved else mark
    seconds["after"] = record.call_end - mark
    seconds["finish"] = end - record.call_end
    return {name: round(seconds[name], 3) for name, _ in PHASES}


def timing(job: str, start: float, end: float, clock: PhaseClock, record: TrainerRecord, batch: int) -> dict[str, Any]:
    """One run's row of the JSON."""
    phases = phases_of(start, end, clock, record)
    pairs = record.steps * batch
    loop = phases["loop"]
    return {"job": job, "steps": record.steps, "pairs": pairs, "phases": phases,
            "whole_seconds": round(end - start, 3), "fixed_seconds": round(sum(phases[n] for n in FIXED_PHASES), 3),
            "pairs_per_second": round(pairs / loop, 3) if loop else 0.0,
            "whole_pairs_per_second": round(pairs / (end - start), 3),
            "step_seconds": round(record.probe.step_seconds, 3), "train_runtime": round(record.train_runtime, 3)}


def run_plain(config: Any, folders: tuple[str, str], bf16: bool, scratch: Path) -> tuple[dict[str, Any], TrainerRecord]:
    from benchmarks.training_throughput.plain import plain_job

    clock = PhaseClock()
    with watching_trainers() as records:
        start = time.perf_counter()
        plain_job(config, folders[0], folders[1], bf16, scratch, clock)
        end = time.perf_counter()
    return timing("plain", start, end, clock, records[-1], config.batch_size), records[-1]


def run_polyembed(preset: Path, overrides: dict[str, Any], batch: int,
                  scratch: Path) -> tuple[dict[str, Any], TrainerRecord]:
    import polyembed
    from polyembed.methods.distill import train as distill_train

    clock = PhaseClock()
    with fresh_embedding_cache(scratch), timed_functions(clock, distill_train, POLYEMBED_PHASES), \
            watching_trainers() as records:
        start = time.perf_counter()
        result = polyembed.train("distill", preset, show_progress=False, output_dir=str(scratch / "run"), **overrides)
        end = time.perf_counter()
    row = timing("polyembed", start, end, clock, records[-1], batch)
    row["reported_pairs_per_second"] = result.pairs_per_second  # polyembed's own measure (its StepTimer)
    return row, records[-1]


def snapshot(record: TrainerRecord, steps: int) -> dict[str, Any]:
    """What a trainer trained on and with (its first `steps` batches' rows, its modules, trainable parameters and
    arguments), read right after its job, outside every clock, so the trainer can go before the next job starts."""
    import numpy as np

    trainer = record.trainer
    batches = record.batches(steps)
    rows = trainer.train_dataset.select([i for batch in batches for i in batch])
    return {"sizes": [len(batch) for batch in batches], "english": rows["english"], "other": rows["other"],
            "label": np.asarray(rows["label"], dtype=np.float64), "modules": [type(m).__name__ for m in trainer.model],
            "trainable": sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
            "arguments": record.arguments}


def same_job(plain: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """Whether the two jobs trained the same rows in the same batches, towards the same targets, with the same
    modules and parameters; and the TrainingArguments that differ (folders and the sampler aside)."""
    import numpy as np

    arguments = (plain["arguments"], ours["arguments"])
    differing = {key: [str(arguments[0].get(key)), str(arguments[1].get(key))]
                 for key in sorted(set(arguments[0]) | set(arguments[1]))
                 if key not in IGNORED_ARGUMENTS and arguments[0].get(key) != arguments[1].get(key)}
    return {"same_rows": plain["english"] == ours["english"] and plain["other"] == ours["other"],
            "max_label_difference": float(np.abs(plain["label"] - ours["label"]).max()),
            "same_batch_sizes": plain["sizes"] == ours["sizes"], "same_modules": plain["modules"] == ours["modules"],
            "trainable_parameters": {"plain": plain["trainable"], "polyembed": ours["trainable"]},
            "arguments_differing": differing}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians per job, the ratios polyembed / plain (training phase: pairs/s; whole job: plain seconds / polyembed
    seconds) and each repeat's own ratio."""
    def median(job: str, key: str) -> float:
        return statistics.median(run[key] for run in runs if run["job"] == job)

    phases = {job: {name: round(statistics.median(run["phases"][name] for run in runs if run["job"] == job), 3)
                    for name, _ in PHASES} for job in JOBS}
    by_repeat: dict[int, dict[str, dict[str, Any]]] = {}
    for run in runs:
        by_repeat.setdefault(run["repeat"], {})[run["job"]] = run
    paired = [{"repeat": repeat, "training": round(jobs["polyembed"]["pairs_per_second"]
                                                    / jobs["plain"]["pairs_per_second"], 4),
               "whole": round(jobs["plain"]["whole_seconds"] / jobs["polyembed"]["whole_seconds"], 4)}
              for repeat, jobs in sorted(by_repeat.items()) if set(jobs) == set(JOBS)]
    speed = {job: round(median(job, "pairs_per_second"), 3) for job in JOBS}
    whole = {job: round(median(job, "whole_seconds"), 3) for job in JOBS}
    return {"pairs_per_second": speed, "whole_seconds": whole, "phases": phases, "paired": paired,
            "training_ratio": round(speed["polyembed"] / speed["plain"], 4),
            "whole_ratio": round(whole["plain"] / whole["polyembed"], 4)}


def warm_up(config: Any, folders: tuple[str, str], bf16: bool, parent: Path | None, steps: int) -> None:
    """A short plain job, untimed: the process's first training pays for what every later one finds ready (the
    kernels torch picks for these shapes, the models' and data files in the page cache), which would otherwise
    count against whichever job runs first."""
    scratch = Path(tempfile.mkdtemp(prefix="throughput-warm-up-", dir=parent))
    try:
        run_plain(dataclasses.replace(config, max_steps=steps, eval_steps=steps), folders, bf16, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        gc.collect()
    logger.info("warm-up: %d untimed steps of the plain job", steps)


def measure(options: Namespace) -> dict[str, Any]:
    """Every run of both jobs, the checks and the summary (see the module docstring)."""
    import sentence_transformers
    import torch
    import transformers

    import polyembed
    from polyembed.methods.distill.train import prepare_data  # imported before any clock starts

    preset, overrides, config = job_config(options)
    folders = (model_folder(config.teacher), model_folder(config.student))
    bf16 = config.precision == "bf16"
    parent = Path(options.scratch) if options.scratch else None
    runs: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    if options.warmup_steps:
        warm_up(config, folders, bf16, parent, options.warmup_steps)
    for repeat in range(options.repeats):
        order = JOBS if repeat % 2 == 0 else JOBS[::-1]
        snapshots: dict[str, dict[str, Any]] = {}
        for position, job in enumerate(order):
            scratch = Path(tempfile.mkdtemp(prefix=f"throughput-{job}-", dir=parent))
            try:
                row, record = (run_plain(config, folders, bf16, scratch) if job == "plain"
                               else run_polyembed(preset, overrides, config.batch_size, scratch))
                snapshots[job] = snapshot(record, options.steps)
                record.release()
                del record
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
                gc.collect()  # the job's model and optimizer go before the next job starts
            runs.append({"repeat": repeat, "position": position, **row})
            logger.info("repeat %d, %s: training phase %.1f s (%.2f pairs/s), whole job %.1f s", repeat, job,
                        row["phases"]["loop"], row["pairs_per_second"], row["whole_seconds"])
        checks.append({"repeat": repeat, **same_job(snapshots["plain"], snapshots["polyembed"])})
    sources = [{"source": s.name, "language": s.language, "train_pairs": len(s)} for s in prepare_data(config).train]
    return {
        "command": invocation(), "machine": machine(), "torch_threads": torch.get_num_threads(),
        "versions": {"polyembed": polyembed.__version__, "sentence_transformers": sentence_transformers.__version__,
                     "transformers": transformers.__version__, "torch": torch.__version__},
        "setup": {"preset": preset.name, "teacher": config.teacher, "student": config.student,
                  "languages": config.languages, "datasets": config.datasets, "sources": sources,
                  "pairs_per_source": config.max_pairs_per_source, "batch_size": config.batch_size,
                  "steps": options.steps, "repeats": options.repeats, "warmup_steps": options.warmup_steps,
                  "learning_rate": config.learning_rate,
                  "warmup_ratio": config.warmup_ratio, "precision": config.precision, "seed": config.seed,
                  "teacher_weight": config.teacher_weight, "projection": config.projection,
                  "projection_fit": config.projection_fit, "freeze_embeddings": config.freeze_embeddings,
                  "group_by_length": config.group_by_length, "max_seq_length": config.max_seq_length},
        "runs": runs, "checks": checks, "summary": summary(runs),
    }


def run(options: Namespace) -> None:
    payload = measure(options)
    out = Path(options.out) if options.out else OUT / RESULT_FILE
    write_json(out, payload)
    logger.info("training phase polyembed / plain %.3f, whole job %.3f -> %s", payload["summary"]["training_ratio"],
                payload["summary"]["whole_ratio"], out)
    if out == OUT / RESULT_FILE:
        render()


def main() -> None:
    parser, commands = script_parser(__doc__)
    one = commands.add_parser("run", help="measure both jobs and render")
    one.add_argument("--steps", type=int, default=48, help="optimizer steps of each job (the demo's 48)")
    one.add_argument("--repeats", type=int, default=2, help="runs of each job, in alternating order")
    one.add_argument("--warmup-steps", type=int, default=2, help="untimed plain steps first (0: none)")
    one.add_argument("--batch-size", type=int, default=None, help="default: the preset's")
    one.add_argument("--pairs-per-source", type=int, default=None,
                     help="default: just enough for the steps in one epoch, plus the dev pairs")
    one.add_argument("--teacher", default=None, help="teacher name or folder (default: the preset's)")
    one.add_argument("--student", default=None, help="student name or folder (default: the preset's)")
    one.add_argument("--seed", type=int, default=None, help="default: the preset's")
    one.add_argument("--preset", default=None, help="a distill config YAML (default: the packaged demo preset)")
    one.add_argument("--scratch", default=None, help="folder for the runs' temporary output (default: the system's)")
    one.add_argument("--out", default=None, help=f"JSON file (default: {OUT / RESULT_FILE}; only that one is rendered)")
    commands.add_parser("render", help="rewrite the docs section from the saved JSON")
    options = parser.parse_args()
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    run(options) if options.command == "run" else render()


if __name__ == "__main__":
    main()
