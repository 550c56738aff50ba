"""The training-throughput section of docs/benchmarks.md, from the stored training_throughput.json only: what was
run, where and on what; each run's training phase and whole job; the ratios polyembed / plain sentence-transformers
against the issue's 0.95; the median seconds of every phase of both jobs; and whether the two jobs trained on the
same rows, batches, model and arguments."""

from __future__ import annotations

from typing import Any

from benchmarks.common.docs_sections import missing_tables, publish
from benchmarks.common.results import DOCS, load_json
from benchmarks.training_throughput.spec import ACCEPTANCE, COMMAND, END, JOBS, OUT, PHASES, RESULT_FILE, START


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _setup_line(payload: dict[str, Any]) -> str:
    setup, versions = payload["setup"], payload["versions"]
    sources = setup["sources"]
    warm_up = _count(setup["warmup_steps"], "untimed warm-up step")
    embeddings = "frozen" if setup["freeze_embeddings"] else "trained"
    batches = "length-grouped" if setup["group_by_length"] else "shuffled"
    return (f"`{payload['command']}` ({payload['machine']['cpu']}, {payload['torch_threads']} torch threads; "
            f"polyembed {versions['polyembed']}, sentence-transformers {versions['sentence_transformers']}, "
            f"transformers {versions['transformers']}, torch {versions['torch']}). Both jobs in one process, after "
            f"{warm_up}, {_count(setup['repeats'], 'repeat')} in alternating order: the demo preset's distillation "
            f"({setup['teacher']} -> {setup['student']}, {len(setup['languages'])} languages, "
            f"{len(sources)} sources of {', '.join(setup['datasets'])} capped at {setup['pairs_per_source']} pairs, "
            f"{sum(s['train_pairs'] for s in sources):,} training pairs) for {setup['steps']} steps of "
            f"{setup['batch_size']} pairs, learning rate {setup['learning_rate']:g}, "
            f"warm-up {setup['warmup_ratio']:g}, {setup['precision']}, seed {setup['seed']}, teacher weight "
            f"{setup['teacher_weight']:g}, {setup['projection_fit']} projection, {embeddings} embeddings, {batches} "
            "balanced batches. **polyembed**: `polyembed.train(\"distill\", ...)`; **plain**: the same job with "
            "sentence-transformers alone (`benchmarks/training_throughput/plain.py`), on the same batches row for row. "
            "The training phase runs from the trainer's first step to the end of its last (collation, forward, "
            "backward, optimizer, logging, callbacks); polyembed's dev evaluation and checkpoint after the last step, "
            "which the plain script does not do, count in the whole job only.")


def _verdict(summary: dict[str, Any]) -> str:
    ratio = summary["training_ratio"]
    met = "meets" if ratio >= ACCEPTANCE else "misses"
    return (f"**Training phase: polyembed / plain = {ratio:.3f}** ({summary['pairs_per_second']['polyembed']:.2f} "
            f"against {summary['pairs_per_second']['plain']:.2f} pairs/s, medians), which {met} the "
            f"{ACCEPTANCE:.2f} of the issue; per repeat "
            + ", ".join(f"{p['training']:.3f}" for p in summary["paired"])
            + f". **Whole job: {summary['whole_ratio']:.3f}** ({summary['whole_seconds']['polyembed']:.0f} s "
            f"against {summary['whole_seconds']['plain']:.0f} s); per repeat "
            + ", ".join(f"{p['whole']:.3f}" for p in summary["paired"]) + ".")


def _runs_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = ["| repeat | order | job | training phase s | pairs/s | fixed s | whole job s | whole-job pairs/s |",
             "|---|---|---|---|---|---|---|---|"]
    for run in runs:
        lines.append(f"| {run['repeat']} | {run['position'] + 1} | {run['job']} | {run['phases']['loop']:.1f} | "
                     f"{run['pairs_per_second']:.2f} | {run['fixed_seconds']:.1f} | {run['whole_seconds']:.1f} | "
                     f"{run['whole_pairs_per_second']:.2f} |")
    return lines


def _phases_table(summary: dict[str, Any]) -> list[str]:
    phases = summary["phases"]
    lines = ["| phase | what | " + " s | ".join(JOBS) + " s | difference s |", "|---|---|---|---|---|"]
    for name, what in PHASES:
        plain, ours = phases["plain"][name], phases["polyembed"][name]
        lines.append(f"| {name} | {what} | {plain:.1f} | {ours:.1f} | {ours - plain:+.1f} |")
    return lines


def _checks_line(checks: list[dict[str, Any]]) -> str:
    rows = all(c["same_rows"] for c in checks)
    batches = all(c["same_batch_sizes"] for c in checks)
    modules = all(c["same_modules"] for c in checks)
    label = max(c["max_label_difference"] for c in checks)
    parameters = checks[0]["trainable_parameters"]
    differing = sorted({key for c in checks for key in c["arguments_differing"]})
    return (f"Same job, checked after each repeat: the same rows in the same batches: {'yes' if rows else '**no**'}; "
            f"batch sizes alike: {'yes' if batches else '**no**'}; largest target difference "
            f"{label:.1e}; the same modules: {'yes' if modules else '**no**'}; trainable parameters "
            + ", ".join(f"{job} {parameters[job]:,}" for job in JOBS)
            + "; TrainingArguments that differ (output folders and the sampler aside): "
            + (", ".join(f"`{key}`" for key in differing) if differing else "none") + ".")


def render() -> None:
    """The section from training_throughput.json; left alone (with a note) where the docs show one measured
    elsewhere and no JSON is stored here."""
    payload = load_json(OUT / RESULT_FILE)
    if payload is None:
        if missing_tables(DOCS, START, END, {"training-throughput": COMMAND}, set()):
            print(f"docs/benchmarks.md left as it is: no {RESULT_FILE} in {OUT}")
        return
    summary = payload["summary"]
    lines = [START, "### polyembed against plain sentence-transformers", "", _setup_line(payload), "",
             _verdict(summary), "", *_runs_table(payload["runs"]), "",
             "Median seconds per phase (the training phase is `loop`; every other phase is a fixed cost):", "",
             *_phases_table(summary), "", _checks_line(payload["checks"]), "", END]
    publish(DOCS, START, END, lines)
