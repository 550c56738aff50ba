"""The demo report's prose: the recipe's choices and why, how the evaluations encoded, the saved student's
length and the kept checkpoint's dev measures (kept apart from `polyembed.demo`, which runs the job)."""

from __future__ import annotations

from typing import Any

RECIPE_CHOICES: dict[str, tuple[Any, str]] = {
    "teacher": (
        "minilm-en",
        "the stronger English teacher mpnet-en gave the same cross-lingual STS at this recipe and helped the "
        "languages the run never saw less on Tatoeba; minilm-en is a fifth of its size, which keeps the demo short",
    ),
    "projection_fit": (
        "orthogonal",
        "a scaled rotation into the teacher's dimensions keeps the student's own cosine similarities at step 0: "
        "the languages the run never saw forget far less Tatoeba than with the least-squares map, at the same "
        "cross-lingual STS",
    ),
    "learning_rate": (
        3.0e-5,
        "chosen on dev splits over two seeds: more cross-lingual STS than 1e-4 and about half its monolingual "
        "loss; 1e-5 keeps monolingual STS best but loses cross-lingual retrieval in more of the languages the "
        "run never saw. No rate tried keeps every language within a point of the untrained student",
    ),
    "teacher_weight": (
        0.2,
        "each English target is a fifth the teacher's embedding and four fifths the untrained student's own: "
        "chosen on dev splits over two seeds against the teacher's full share, which made the trained "
        "low-resource languages (Hausa most) lose long-sentence retrieval; with the fifth they keep it and "
        "cross-lingual STS still rises",
    ),
}
"""The demo recipe's choices and why (the numbers: docs/benchmarks.md, "Notes on the recipes against
forgetting"): the report repeats the reason when a run keeps the demo's value, and says so when it does not."""


def recipe_lines(config: dict[str, Any]) -> list[str]:
    """The report's recipe section: each choice of RECIPE_CHOICES with its reason, or a note that this run
    changed it from the demo's value."""
    lines = ["## Recipe", ""]
    for option, (demo_value, reason) in RECIPE_CHOICES.items():
        value = config.get(option)
        if value == demo_value:
            lines.append(f"- `{option}: {value}`: {reason}.")
        else:
            lines.append(f"- `{option}: {value}` (your setting; the demo uses `{demo_value}`: {reason}).")
    return [*lines, ""]


def precision_line(precision: str) -> str:
    """Say how the evaluations encoded, so numbers are compared like with like."""
    if precision in ("bf16", "fp16"):
        return (f"Every evaluation encoded under {precision} autocast (the device computes it natively): faster than "
                f"float32, with scores that differ slightly from float32's (docs/benchmarks.md, \"Inference "
                "precision\", measures by how much on CPUs; `polyembed demo --precision fp32` for float32).")
    return "Every evaluation encoded in float32."


def length_line(lengths: dict[str, Any]) -> str:
    """Which maximum length the saved student reads at, and why: a student saved at its training length would
    truncate long sentences silently."""
    if not lengths.get("saved"):
        return ""
    source = {
        "starting model": "the untrained student's own",
        "inference_max_seq_length": "set by `inference_max_seq_length`",
    }.get(lengths.get("saved_from", ""), "the training length")
    return (f"The saved student reads up to {lengths['saved']} tokens per sentence ({source}); training truncated "
            f"at {lengths.get('training')}.")


def per_language_dev_table(best: dict[str, float]) -> list[str]:
    """The kept checkpoint's dev measures per language: a mean can hide a language that got worse."""
    languages = [key.removeprefix("eval_dev_").removesuffix("_accuracy") for key in best
                 if key.startswith("eval_dev_") and key.endswith("_accuracy") and key != "eval_dev_mean_accuracy"]
    if not languages:
        return []
    rows = [
        f"| {code} | {best[f'eval_dev_{code}_mse_english']:.4f} | {best[f'eval_dev_{code}_mse_translation']:.4f} | "
        f"{best[f'eval_dev_{code}_accuracy']:.3f} |"
        for code in languages
    ]
    return [
        f"Kept checkpoint (step {best.get('step')}), per language:",
        "",
        "| language | MSE x100 student(English) | MSE x100 student(translation) | translation accuracy |",
        "|---|---|---|---|",
        *rows,
        "",
    ]
