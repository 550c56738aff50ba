"""The distillation benchmark's studies beside the acceptance runs: training throughput against sentence-
transformers' own pattern, Table 6's data sizes, vocabulary transfer and one-variant ablations
(`python -m benchmarks.distill.run throughput | data-size | vocabulary | ablation`)."""

from __future__ import annotations

import json
import math
import resource
import subprocess
import time
from typing import Any

from benchmarks.common.results import REPO, machine, study_command
from benchmarks.distill.spec import ABLATION_BASE, OUT
from benchmarks.distill.training import evaluate, load, main_scores, save, train_and_evaluate

# ------------------------------------------------------------------------------------------ throughput

WORKER_DOC = "one training measurement in a fresh process (so peak memory is its own)"


def worker(mode: str, steps: int, batch_size: int, pairs: int) -> dict[str, Any]:
    """`ours`: polyembed's trainer glue. `st`: sentence-transformers' make_multilingual example pattern
    (dataset.map with teacher.encode for labels, MSELoss, default shuffled batches, fp32)."""
    import torch

    torch.set_num_threads(2)
    from polyembed.config import build_config
    from polyembed.eval.headline import demo_config_path
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.methods.distill.train import prepare_data

    config, origin = build_config(
        DistillConfig,
        demo_config_path(),
        {
            "max_steps": steps,
            "batch_size": batch_size,
            "eval_steps": steps,
            "output_dir": str(OUT / f"tp-{mode}"),
            "max_pairs_per_source": pairs,
        },
    )
    started = time.perf_counter()
    if mode == "ours":
        from polyembed.methods.distill.train import train_distill

        result = train_distill(config, origin=origin, overwrite=True)
        return {
            "pairs_per_second": result.pairs_per_second,
            "train_seconds": result.train_seconds,
            "wall_seconds": round(time.perf_counter() - started, 1),
            "peak_memory_mb": _peak_mb(),
        }
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
        losses,
    )
    from transformers import TrainerCallback

    from polyembed.models.loading import resolve_model_path

    data = prepare_data(config, origin)
    teacher = SentenceTransformer(resolve_model_path(config.teacher)[0], device="cpu")
    student = SentenceTransformer(resolve_model_path(config.student)[0], device="cpu")
    student.max_seq_length = config.max_seq_length
    english = [s for source in data.train for s in source.english]
    other = [s for source in data.train for s in source.other]
    dataset = Dataset.from_dict({"english": english, "non_english": other})
    dataset = dataset.map(
        lambda batch: {"label": teacher.encode(batch["english"], batch_size=128)}, batched=True, batch_size=5000
    )

    class Timer(TrainerCallback):
        seconds, steps, start = 0.0, 0, 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds += time.perf_counter() - self.start
            self.steps += 1

    timer = Timer()
    args = SentenceTransformerTrainingArguments(
        output_dir=str(OUT / "tp-st"),
        per_device_train_batch_size=batch_size,
        max_steps=steps,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_ratio,
        save_strategy="no",
        report_to="none",
        prompts=student.prompts.get(student.default_prompt_name or "", None),
        use_cpu=True,
        seed=0,
    )
    student[0].auto_model.get_input_embeddings().weight.requires_grad_(not config.freeze_embeddings)
    SentenceTransformerTrainer(
        model=student, args=args, train_dataset=dataset, loss=losses.MSELoss(student), callbacks=[timer]
    ).train()
    pairs = timer.steps * batch_size
    return {
        "pairs_per_second": round(pairs / timer.seconds, 2),
        "train_seconds": round(timer.seconds, 2),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "peak_memory_mb": _peak_mb(),
    }


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def throughput(steps: int, batch_size: int, pairs: int) -> None:
    """Both loops on the demo's models, languages and batch size, each in its own process."""
    out: dict[str, Any] = {
        "steps": steps,
        "batch_size": batch_size,
        "max_pairs_per_source": pairs,
        "machine": machine(),
    }
    for mode in ("st", "ours"):
        command = study_command("benchmarks.distill.run", "_worker", mode, str(steps), str(batch_size),
                                str(pairs))  # the benchmark's own entry point runs the worker
        completed = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO)
        out[mode] = json.loads(completed.stdout.strip().splitlines()[-1])
        print(mode, out[mode], flush=True)
    out["ratio"] = round(out["ours"]["pairs_per_second"] / out["st"]["pairs_per_second"], 2)
    save("throughput", out)


# ------------------------------------------------------------------------------------------ data size


PAIR_SCORE = {
    "de": ("stsb-multi-mt", "en-de"),
    "ar": ("sts17", "ar-en"),
    "es": ("sts17", "es-en"),
    "tr": ("sts17", "tr-en"),
    "fr": ("stsb-multi-mt", "en-fr"),
    "zh": ("stsb-multi-mt", "en-zh"),
}


def _pair_score(result: Any, language: str) -> float:
    """The en-X cross-lingual STS of one language: stsb-multi-mt en-de (the paper's STS2017 en-de is not in
    the shared data), STS2017 ar-en as in Table 6."""
    task, subset = PAIR_SCORE[language]
    values = [s.value for s in result.scores if s.task == task and s.subset == subset and s.metric == "spearman"]
    return values[0] if values else float("nan")


def data_size(sizes: list[str], languages: list[str], min_steps: int) -> None:
    """Bilingual en-X runs on k seeded-sampled Tatoeba-Challenge pairs (LASER test removed), as Table 6.
    Each run trains max(min_steps, one epoch) steps of 32 pairs: small sets are repeated, not under-trained."""
    from polyembed.config import build_config
    from polyembed.eval.headline import headline_metrics
    from polyembed.methods.distill.config import DistillConfig

    rows = (load("data-size") or {}).get("rows", [])
    for language in languages:
        for size in sizes:
            cap = None if size == "all" else int(size)
            config, origin = build_config(
                DistillConfig,
                None,
                {
                    "languages": [language],
                    "datasets": ["tatoeba-challenge"],
                    "max_pairs_per_source": cap,
                    "batch_size": 32,
                    "learning_rate": 1e-4,
                    "freeze_embeddings": True,
                    "dev_pairs_per_source": 50,
                    "dev_sts_pairs": 100,
                    "max_steps": max(min_steps, math.ceil((cap or 20000) / 32)),
                    "output_dir": str(OUT / f"size-{language}-{size}"),
                },
            )
            training, result, _ = train_and_evaluate(config, origin, f"{language}-{size}")
            rows = [r for r in rows if not (r["language"] == language and r["size"] == size)]
            rows.append(
                {
                    "language": language,
                    "size": size,
                    "pairs": sum(s["train_pairs"] for s in training.details["sources"]),
                    "steps": training.steps,
                    "pair_sts": _pair_score(result, language),
                    "headline": headline_metrics(result),
                }
            )
            save("data-size", {"rows": rows, "machine": machine()})


# ------------------------------------------------------------------------------------------ vocabulary


def vocabulary(
    name: str,
    steps: int,
    overrides: dict[str, Any],
    untrained_only: bool = False,
    modes: tuple[str, ...] = ("keep", "transfer"),
) -> None:
    """One named comparison: the same student, data, steps and seed trained once with its own tokenizer
    ('keep') and once with a FOCUS-transferred one ('transfer'); both starting points are evaluated too, so the
    table shows what FOCUS itself preserves. `modes` trains only some (e.g. a transfer variant whose 'keep'
    run another comparison already has); `untrained_only` re-evaluates only the starting points of an
    existing comparison. Rows accumulate in vocabulary.json."""
    from polyembed.config import build_config
    from polyembed.eval.headline import demo_config_path, headline_metrics
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.models.loading import load_model

    rows = (load("vocabulary") or {}).get("rows", {})
    if untrained_only:
        if name not in rows:
            raise SystemExit(f"--untrained-only: no finished comparison '{name}' in vocabulary.json; run it first")
        row, options = rows[name], rows[name]["options"]
    else:
        options = {"max_steps": steps, "eval_steps": steps, **overrides}
        row = {"options": options}
    for mode in modes:
        config, origin = build_config(
            DistillConfig,
            demo_config_path(),
            {**options, "student_vocabulary": mode, "output_dir": str(OUT / f"vocab-{name}-{mode}")},
        )
        if not untrained_only:
            training, result, seconds = train_and_evaluate(config, origin, f"vocabulary {name} {mode}")
            row[mode] = {
                "headline": headline_metrics(result),
                "scores": main_scores(result),
                "vocabulary_transfer": training.details["vocabulary_transfer"],
                "pairs_per_second": training.pairs_per_second,
                "train_seconds_total": round(seconds, 1),
            }
            rows[name] = row
            save("vocabulary", {"rows": rows, "machine": machine()})  # after each mode: nothing lost
    starts = {
        "keep-untrained": config.teacher if config.student == "teacher" else config.student,
        "transfer-untrained": str(OUT / f"vocab-{name}-transfer" / "student-init"),
    }
    for mode, model_name in starts.items():
        if mode.removesuffix("-untrained") not in row:
            continue
        result = evaluate(load_model(model_name), f"vocabulary {name} {mode}", config.languages)
        row[mode] = {
            "headline": headline_metrics(result),
            "scores": main_scores(result),
            "vocabulary_transfer": row["transfer"]["vocabulary_transfer"] if mode.startswith("transfer") else None,
        }
        rows[name] = row
        save("vocabulary", {"rows": rows, "machine": machine()})


# ------------------------------------------------------------------------------------------ ablation


def ablation(name: str, steps: int, seed: int, overrides: dict[str, Any]) -> None:
    """One named variant of the demo config at `max_pairs_per_source` 1000 and `steps` steps; rows accumulate
    in ablation.json so variants run one call at a time (each ~7 minutes at 150 steps)."""
    from polyembed.config import build_config
    from polyembed.eval.headline import demo_config_path, headline_metrics
    from polyembed.methods.distill.config import DistillConfig

    options = {**ABLATION_BASE, "max_steps": steps, "eval_steps": steps, "seed": seed, **overrides}
    config, origin = build_config(
        DistillConfig, demo_config_path(), {**options, "output_dir": str(OUT / f"ablation-{name}")}
    )
    training, result, _ = train_and_evaluate(config, origin, f"ablation {name}")
    rows = (load("ablation") or {}).get("rows", {})
    rows[name] = {
        "options": options,
        "headline": headline_metrics(result),
        "scores": main_scores(result),
        "dev_negative_mse": training.best.get("eval_dev_negative_mse"),
        "dev_mse_both_terms": True,  # rows stored without it count the translation term only (the renderer's `*`)
        "pairs_per_second": training.pairs_per_second,
    }
    save("ablation", {"rows": rows, "machine": machine()})
