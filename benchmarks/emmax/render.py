"""The EMMA-X benchmark's docs sections, rendered from the saved JSON of `benchmarks.emmax.run` only (its tables,
the rank-share figure and the notes the results need)."""

from __future__ import annotations

import json
import math
from typing import Any

from benchmarks.common.docs_sections import missing_tables, publish, replace_section
from benchmarks.common.results import DOCS, REPO
from benchmarks.common.tables import cell, mean
from benchmarks.emmax.spec import (
    ABLATION_END,
    ABLATION_START,
    ABLATIONS,
    COMMAND,
    END,
    FIGURE,
    LASER,
    LONG_TAIL,
    MINING,
    OUT,
    ROWS,
    START,
    STS_CROSS,
    TIMING_NOTES,
    WARMUP_LANGUAGES,
)


def _summary(scores: dict[str, float]) -> dict[str, float]:
    """The table's columns from one model's scores."""
    def tatoeba(code: str) -> float:
        return scores.get(f"tatoeba/{LASER[code]}/accuracy", math.nan)

    row = {f"tatoeba {code}": tatoeba(code) for code in LASER}
    row["tatoeba head"] = mean([tatoeba(code) for code in WARMUP_LANGUAGES])
    row["tatoeba long-tail"] = mean([tatoeba(code) for code in LONG_TAIL])
    row["sts17 cross"] = mean([scores.get(f"sts17/{track}/spearman", math.nan) for track in STS_CROSS])
    row["mining f1"] = scores.get("comparable-mining/avg/f1", math.nan)
    for metric in ("kl_divergence", "calinski_harabasz", "principal_ratio"):
        row[metric] = scores.get(f"geometry-kardes/all/{metric}", math.nan)
    return row


def _rank_figure(seeds: list[dict[str, Any]]) -> str | None:
    """Share of each rank among the EM phase's training pairs, per evaluation interval, per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(seeds), figsize=(5 * len(seeds), 3.2), squeeze=False)
    for axis, seed in zip(axes[0], seeds, strict=True):
        history = [entry for entry in seed["runs"]["em"]["history"] if "eval_dev_rank_1_share" in entry]
        ranks = sorted(int(k.split("_")[3]) for k in history[0] if k.endswith("_share")) if history else []
        for rank in ranks:
            axis.plot([e["step"] for e in history], [100 * e[f"eval_dev_rank_{rank}_share"] for e in history],
                      marker="o", label=f"rank {rank}")
        axis.set_title(f"EM phase, seed {seed['seed']}", fontsize=9)
        axis.set_xlabel("step")
        axis.set_ylabel("% of decided (anchor, key) pairs")
        axis.legend(fontsize=7)
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(FIGURE, dpi=110)
    plt.close(figure)
    return str(FIGURE.relative_to(REPO / "docs"))


def _classifier_table(seeds: list[dict[str, Any]]) -> list[str]:
    """The classifier's held-out rank-1 / rank-N accuracy, the held-out cosines and s_r at every evaluation."""
    lines = ["The classifier over training (held-out pairs of each phase's dev bitext; rank 1: translations, "
             "both orientations; rank N: mismatched pairs; cosines: mean over held-out translations / mismatched "
             "pairs; s_r: the rank similarities, 1 to N):", "",
             "| seed | phase | step | rank-1 acc. | rank-N acc. | translation cos | random cos | s_r |",
             "|---|---|---|---|---|---|---|---|"]
    for seed in seeds:
        for phase in ("warmup", "em"):
            run = seed["runs"].get(phase) or {}
            before = (run.get("details") or {}).get("before") or {}
            entries = ([{**{f"eval_{k}": v for k, v in before.items()}, "step": 0}] if before else []) + [
                entry for entry in run.get("history", []) if "eval_dev_classifier_rank1_accuracy" in entry]
            for entry in entries:
                shares = [entry.get(f"eval_dev_rank_{r}_similarity") for r in range(1, 9)]
                similarity = " / ".join(f"{v:.3f}" for v in shares if v is not None)
                lines.append(
                    f"| {seed['seed']} | {ROWS[phase]} | {entry.get('step')} | "
                    f"{100 * entry.get('eval_dev_classifier_rank1_accuracy', math.nan):.1f} | "
                    f"{100 * entry.get('eval_dev_classifier_rankN_accuracy', math.nan):.1f} | "
                    f"{entry.get('eval_dev_translation_cosine', math.nan):.3f} | "
                    f"{entry.get('eval_dev_random_cosine', math.nan):.3f} | {similarity} |")
    return [*lines, ""]


def _budget_tables(curves: list[dict[str, Any]]) -> list[str]:
    """EM against continued phase 1 at each step count, and the gap."""
    lines: list[str] = []
    columns = ["tatoeba long-tail", "tatoeba head", "sts17 cross"]
    for curve in curves:
        command = f"{COMMAND} budget --seed {curve['seed']}"
        lines += [f"Budget curve, seed {curve['seed']} (`{command}`): EM and continued phase 1 from the same "
                  "warm-up on the same bitext, each a run of that many steps "
                  "(its warm-up and decay scaled to it); cells: EM / continued / EM minus continued.", "",
                  "| steps | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        for count in curve["steps"]:
            em, continued = (_summary(curve["scores"][f"{name}-{count}"]) for name in ("em", "continued"))
            lines.append(f"| {count} | " + " | ".join(
                f"{em[c]:.1f} / {continued[c]:.1f} / {em[c] - continued[c]:+.1f}" for c in columns) + " |")
        lines.append("")
    return lines


def _authors_tables(results: list[dict[str, Any]]) -> list[str]:
    """The authors' three stages: encoder stage, its continuation and EM, on the tables' columns."""
    lines: list[str] = []
    labels = {"encoder": "encoder stage (their InfoNCE, MLM 0.1)", "continued": "encoder stage continued (equal "
              "compute)", "em": "encoder stage + classifier stage + EM (MLM 0.1)"}
    columns = ["tatoeba head", "tatoeba long-tail", "sts17 cross", *[f"tatoeba {c}" for c in LONG_TAIL]]
    for result in results:
        lines += [f"The authors' three stages, seed {result['seed']} (`{COMMAND} authors --seed "
                  f"{result['seed']}`; one seed: a hint):", "", "| model | " + " | ".join(columns) + " |",
                  "|---|" + "---|" * len(columns),
                  *[f"| {label} | " + " | ".join(cell([_summary(result["scores"][name])[c]]) for c in columns) + " |"
                    for name, label in labels.items() if name in result["scores"]], ""]
        classifier = [e for e in result["runs"]["classifier"]["history"] if "eval_dev_classifier_rank1_accuracy" in e]
        em = [e for e in result["runs"]["em"]["history"] if "eval_dev_classifier_rank1_accuracy" in e]
        if classifier and em:
            lines += ["Classifier held-out rank-1 / rank-N accuracy and random-pair cosine: after the classifier "
                      "stage " + _classifier_cell(classifier[-1]) + "; in EM " +
                      ", ".join(f"step {e['step']} " + _classifier_cell(e) for e in em) + ".", ""]
    return lines


def _control_tables(controls: list[dict[str, Any]], seeds: list[dict[str, Any]]) -> list[str]:
    """EM and phase 1 continued at the warm-up's rate (the run) against phase 1 continued at other rates."""
    columns = ["tatoeba head", "tatoeba long-tail", "sts17 cross", "mining f1", *[f"tatoeba {c}" for c in LONG_TAIL]]
    lines: list[str] = []
    for control in controls:
        main = next((s for s in seeds if s["seed"] == control["seed"]), None)
        if main is None:
            continue
        rows = {ROWS["em"]: main["scores"]["em"], ROWS["warmup-continued"]: main["scores"]["warmup-continued"],
                **{f"phase 1 continued at {run['learning_rate']:g}".replace("e-0", "e-"): run["scores"]
                   for run in control["runs"].values()}}
        lines += [f"Equal-compute control at EM's learning rate, seed {control['seed']} (`{COMMAND} "
                  f"control --seed {control['seed']}`; one seed: a hint): phase 1 continued from the same warm-up on "
                  "the same bitext for as many steps, at another learning rate.", "",
                  "| model | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns),
                  *[f"| {label} | " + " | ".join(cell([_summary(scores)[c]]) for c in columns) + " |"
                    for label, scores in rows.items()], ""]
    return lines


def _classifier_cell(entry: dict[str, Any]) -> str:
    return (f"{100 * entry['eval_dev_classifier_rank1_accuracy']:.1f} / "
            f"{100 * entry['eval_dev_classifier_rankN_accuracy']:.1f} / {entry['eval_dev_random_cosine']:.2f}")


def _render_ablations(ablations: list[dict[str, Any]], seeds: list[dict[str, Any]]) -> None:
    """The ablation tables: a section of their own, so that they render from their own JSON (and the seed run
    they start from) while the main section's JSON lies on another machine."""
    if not ablations:
        return
    command = COMMAND
    section = [ABLATION_START]
    for result in ablations:
        columns = ["tatoeba head", "tatoeba long-tail", "sts17 cross"]
        rows = {label: _summary(result["scores"][name]) for name, (label, _, _) in ABLATIONS.items()
                if name in result["scores"]}
        main = next((s for s in seeds if s["seed"] == result["seed"]), None)
        if main:
            rows = {"phase 1 continued, equal compute (`run`)": _summary(main["scores"]["warmup-continued"]),
                    "N = 4, GMM, dual supervision, bitext (`run`)": _summary(main["scores"]["em"]), **rows}
        section += [f"EMMA-X ablations at the authors' defaults, seed {result['seed']} (`{command} ablation --seed "
                    f"{result['seed']}`, from the warm-up of `{command} run --seed {result['seed']}`; one seed: "
                    "hints, not claims). Tatoeba and STS17 as in the section above.", "",
                    "| variant | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns),
                    *[f"| {label} | " + " | ".join(cell([row[c]]) for c in columns) + " |"
                      for label, row in rows.items()], "",
                    "Tatoeba per language (head, then long-tail):", "",
                    "| variant | " + " | ".join(LASER.values()) + " |", "|---|" + "---|" * len(LASER),
                    *[f"| {label} | " + " | ".join(cell([row[f'tatoeba {code}']]) for code in LASER)
                      + " |" for label, row in rows.items()], ""]
    section.append(ABLATION_END)
    replace_section(DOCS, ABLATION_START, ABLATION_END, "\n".join(section))
    print("\n".join(section))


def render() -> None:
    """Both EMMA-X sections from the stored JSON; the main one is left alone where a table it shows has no
    JSON here (the ablation section renders from its own)."""
    seeds = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("seed-*.json"))]
    rates = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("classifier-seed-*.json"))]
    ablations = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("ablation-seed-*.json"))]
    command = COMMAND
    curves = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("budget-seed-*.json"))]
    stages = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("authors-seed-*.json"))]
    controls = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("control-seed-*.json"))]
    _render_ablations(ablations, seeds)
    present = {name for name, found in (("seeds", seeds), ("classifier", rates), ("budget", curves),
                                        ("authors", stages), ("control", controls)) if found}
    commands = {"seeds": f"{command} run", "classifier": f"{command} classifier", "budget": f"{command} budget",
                "authors": f"{command} authors", "control": f"{command} control"}
    if missing_tables(DOCS, START, END, commands, present):
        print("a table the docs show has no JSON here: the docs section is left alone")
        return
    section = [START, "### EMMA-X at the authors' defaults", "",
               "The defaults of `docs/methods/emmax.md` (phase 2 on bitext with the translation as rank 1, s_r from "
               "the warm-up at 0.999 bias-corrected, the authors' temperatures, label smoothing and queue; the "
               "encoder at 4e-5 in phase 1 and 1e-5 in phase 2).", ""]
    if rates:
        first_rates = rates[0]
        cells = {}
        for result in rates:
            for row in result["results"]:
                cells.setdefault((row["classifier"], row["learning_rate"]), []).append(row)
        section += [f"Rank classifier learning rate (`{command} classifier --seed S`, seeds "
                    f"{', '.join(str(r['seed']) for r in rates)}; cells: mean, then each seed): only the classifier "
                    f"trains, {first_rates['steps']} Adam steps of 32 pairs of Eq. 4 on frozen me5-small embeddings "
                    f"of {first_rates['pairs']:,} de/ru/kk pairs; accuracy on 300 held-out pairs (rank 1: a "
                    "translation; rank N: another pair's translation).", "",
                    "| classifier | learning rate | rank-1 accuracy | rank-N accuracy | mean |",
                    "|---|---|---|---|---|",
                    *[f"| {kind} | {rate:g} | {cell([r['rank_1_accuracy'] for r in rows])} | "
                      f"{cell([r['rank_n_accuracy'] for r in rows])} | "
                      f"{cell([(r['rank_1_accuracy'] + r['rank_n_accuracy']) / 2 for r in rows])} |"
                      for (kind, rate), rows in cells.items()], ""]
    if seeds:
        first = seeds[0]
        summaries = {name: [_summary(s["scores"][name]) for s in seeds] for name in ROWS
                     if all(name in s["scores"] for s in seeds)}
        columns = ["tatoeba head", "tatoeba long-tail", "sts17 cross", "mining f1", "kl_divergence",
                   "calinski_harabasz", "principal_ratio"]
        section += [
            f"Seeds {', '.join(str(s['seed']) for s in seeds)} (cells: mean, then each seed); {first['machine']}. "
            f"`{command} run --seed S --warmup-steps {first['warmup_steps']} --em-steps {first['em_steps']}`. "
            f"Phase 1: {first['warmup_steps']} steps of {first['batch_size']} on at most {first['max_pairs']} pairs "
            f"per language (de, ru, kk); phase 2: {first['em_steps']} steps on the bitext of de, ru, kk and the "
            f"long-tail {', '.join(LONG_TAIL)} (at most {first['max_pairs']} pairs each); the equal-compute row "
            "continues phase 1 on that same bitext for as many steps.",
            "Tatoeba: LASER test, 500 rows, mean of both directions (head: de, ru, kk; long-tail: "
            f"{', '.join(LONG_TAIL)}). STS17 cross: mean Spearman of {', '.join(STS_CROSS)} (es-en is track 4a). "
            f"Mining: F1 of margin mining in TICO-19 pools ({', '.join(MINING)}). Geometry on Kardes STS 6-way "
            "parallel sentences (en az kk ky ug uz): KL invariance (lower: more language-invariant), "
            "Calinski-Harabasz (higher: translations cluster), principal ratio (higher: more isotropic).",
            "",
            "| model | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns),
            *[f"| {ROWS[name]} | " + " | ".join(cell([row[c] for row in rows], 2 if c in ("kl_divergence",
                                                                                          "principal_ratio") else 1)
                                                 for c in columns) + " |" for name, rows in summaries.items()],
            "",
            "Tatoeba per language (accuracy, mean of both directions):",
            "",
            "| model | " + " | ".join(LASER.values()) + " |", "|---|" + "---|" * len(LASER),
            *[f"| {ROWS[name]} | " + " | ".join(cell([row[f'tatoeba {code}'] for row in rows]) for code in LASER)
              + " |" for name, rows in summaries.items()],
            "",
            "Cost per phase (wall time of the run and its own peak resident memory; cells: "
            + " / ".join(f"seed {s['seed']}" for s in seeds) + "):",
            "",
            "| phase | steps | wall time (s) | peak memory (MB) |", "|---|---|---|---|",
            *[f"| {ROWS[name]} | {first['runs'][name]['steps']} | "
              + " / ".join(f"{s['runs'][name]['wall_seconds']:.1f}" for s in seeds) + " | "
              + " / ".join(f"{s['runs'][name]['peak_memory_mb']:.0f}" for s in seeds) + " |"
              for name in ("warmup", "warmup-continued", "em")],
            "",
            *[TIMING_NOTES[s["seed"]] for s in seeds if s["seed"] in TIMING_NOTES],
            "",
        ]
        section += _classifier_table(seeds)
        figure = _rank_figure(seeds)
        if figure:
            section += [f"![Rank shares in the EM phase]({figure})", "",
                        "The share of each rank among the (anchor, key) pairs whose rank the classifier decided "
                        "between "
                        "two dev evaluations of the EM phase.", ""]
    section += _control_tables(controls, seeds) + _budget_tables(curves) + _authors_tables(stages)
    section.append(END)
    publish(DOCS, START, END, section)
