"""What the training-throughput runner and renderer share: where the JSON goes, the section's markers, the command
that makes it, the phases both jobs are timed in and the acceptance threshold of the issue."""

from __future__ import annotations

from benchmarks.common.results import RESULTS

OUT = RESULTS / "training_throughput"
RESULT_FILE = "training_throughput.json"
START, END = "<!-- training-throughput:start -->", "<!-- training-throughput:end -->"
COMMAND = "python -m benchmarks.training_throughput.run run"
ACCEPTANCE = 0.95
"""polyembed's training-phase pairs/s over plain sentence-transformers' must reach this (issue: at most 5 %
overhead)."""
JOBS = ("plain", "polyembed")
"""The two jobs, by the names the JSON stores them under."""
PHASES = (
    ("data", "pairs read, capped and split"),
    ("teacher", "teacher loaded, English side embedded"),
    ("student", "student loaded, projection fitted, embeddings frozen"),
    ("targets", "targets blended with the untrained student's own"),
    ("dataset", "training rows built"),
    ("setup", "everything else before `trainer.train()`"),
    ("trainer", "`trainer.train()` up to its first step"),
    ("loop", "the optimizer steps (the training phase)"),
    ("evaluation", "dev evaluation after the last step"),
    ("checkpoint", "checkpoint after the last step"),
    ("after", "rest of `trainer.train()` (the best checkpoint read back if an evaluation came before the last step)"),
    ("finish", "model saved (polyembed: with training.json and card)"),
)
"""Every phase of a job in order, each with what it holds; together they are the whole job's wall time."""
FIXED_PHASES = tuple(name for name, _ in PHASES if name != "loop")
"""Everything but the optimizer steps: what a job costs whatever its number of steps."""
