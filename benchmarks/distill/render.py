"""The distillation benchmark's docs section and figures, rendered from the saved JSON of
`benchmarks.distill.run` only (the main and recipe tables, forgetting, the trade-off figure); the long-sentence
section and the recipes' dev table are `render_long`'s."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from benchmarks.common.docs_sections import missing_tables, replace_section
from benchmarks.common.results import DOCS, FIGURES, load_json
from benchmarks.common.tables import score_cell as _f
from benchmarks.distill.render_long import render_long_sentences
from benchmarks.distill.spec import (
    ABLATION_BASE,
    COMMAND,
    END,
    FORGETTING_GROUPS,
    OUT,
    SECTION_SOURCES,
    START,
    VOCABULARY_MODES,
)
from polyembed.outputs import atomic_write


def _load(name: str) -> dict[str, Any] | None:
    return load_json(OUT / f"{name}.json")

# ------------------------------------------------------------------------------------------ render


RECIPE_HEADLINES = ("cross_sts", "english_sts", "mono_sts", "kardes_cross_sts", "language_bias_gap")


def _recipe_table(saved: dict[str, Any] | None) -> list[str]:
    """Recipes against forgetting, mean over seeds: STS, Tatoeba after training per group, worst loss."""
    if not saved or not saved.get("rows"):
        return []
    rows_note = "every row" if saved["max_rows"] is None else f"{saved['max_rows']} rows per language"
    lines = [
        "",
        f"Recipes against forgetting (`{COMMAND} recipe NAME --seeds ... --set ...`; demo config "
        f"plus the options shown, mean over seeds; Tatoeba: all 112 LASER languages, {rows_note}, mean of both "
        "directions, after training (change against the untrained student); 'anchored': languages whose text "
        "only anchored the student (no teacher target), 'other': languages the run had no text for; 'lost > 1': "
        "languages with >= 500 test pairs that lost more than 1 point; bias gap: the mean of the seeds' gaps and of "
        "their 95% interval bounds):",
        "",
        "| recipe | options | seeds | cross STS | English STS | student-language STS | Kardes en-kk | bias gap "
        "| Tatoeba trained | Tatoeba anchored | Tatoeba other | lost > 1 (trained / anchored / other) "
        "| worst loss | pairs/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for model_name, entry in saved["baselines"].items():
        h = entry["headline"]
        lines.append(
            f"| {model_name} (untrained) | - | - | {_f(h['cross_sts'])} | {_f(h['english_sts'])} | "
            f"{_f(h.get('mono_sts', math.nan))} | {_f(h['kardes_cross_sts'])} | {_f(h['language_bias_gap'])} "
            f"[{_f(h.get('language_bias_ci95_low', math.nan))}, {_f(h.get('language_bias_ci95_high', math.nan))}] "
            "| | | | | | |"
        )
    for name, row in saved["rows"].items():
        runs = list(row["runs"].values())

        def mean(get: Any, runs: list[dict[str, Any]] = runs) -> float:
            return sum(get(run) for run in runs) / len(runs)

        def group(run: dict[str, Any], key: str, field: str) -> float:
            return run["forgetting"]["summary"].get(key, {}).get(field, math.nan)

        present = [g for g in FORGETTING_GROUPS if any(g in run["forgetting"]["summary"] for run in runs)]
        tatoeba_cells = [
            f"{_f(mean(lambda r, g=g: group(r, g, 'after')))} ({mean(lambda r, g=g: group(r, g, 'change')):+.2f})"
            if g in present else "-"
            for g in FORGETTING_GROUPS
        ]
        lost = " / ".join(
            f"{mean(lambda r, g=g: group(r, g, 'lost_more_than_tolerance')):.1f}" if g in present else "-"
            for g in FORGETTING_GROUPS
        )
        worst = min(
            (lang for run in runs for lang in run["forgetting"]["languages"]), key=lambda lang: lang["change"]
        )
        cells = [
            name,
            ", ".join(f"{k}={v}" for k, v in row["overrides"].items()) or "-",
            str(len(runs)),
            *(_f(mean(lambda r, k=k: r["headline"][k])) for k in RECIPE_HEADLINES[:-1]),
            f"{_f(mean(lambda r: r['headline']['language_bias_gap']))} "
            f"[{_f(mean(lambda r: r['headline'].get('language_bias_ci95_low', math.nan)))}, "
            f"{_f(mean(lambda r: r['headline'].get('language_bias_ci95_high', math.nan)))}]",
            *tatoeba_cells,
            lost,
            f"{worst['language']} {worst['change']:+.1f}",
            f"{mean(lambda r: r['pairs_per_second']):.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines



def recipe_summary(saved: dict[str, Any] | None) -> list[str]:
    """Per recipe and seed: languages (of all scored) losing more than 1 point / 3 points or more, and the mean
    change of the languages no recipe had any text for (not trained, not anchored in any recipe)."""
    if not saved or not saved.get("rows"):
        return []
    seen: set[str] = set()
    for row in saved["rows"].values():
        for run in row["runs"].values():
            seen |= {lang["language"] for lang in run["forgetting"]["languages"]
                     if lang.get("trained") or lang.get("anchored")}
    lines = ["| recipe | seed | losing > 1 | losing >= 3 | never-seen languages | their mean change |",
             "|---|---|---|---|---|---|"]
    for name, row in saved["rows"].items():
        for seed, run in row["runs"].items():
            languages = run["forgetting"]["languages"]
            never = [lang["change"] for lang in languages if lang["language"] not in seen]
            lines.append(
                f"| {name} | {seed} | {sum(1 for lang in languages if lang['change'] < -1)} | "
                f"{sum(1 for lang in languages if lang['change'] <= -3)} | {len(never)} | "
                f"{sum(never) / len(never):+.2f} |"
            )
    return lines


def full_row_forgetting_table() -> list[str]:
    """Every forgetting-NAME.json (`forgetting --recipe NAME`, every Tatoeba row): per recipe and seed the group
    means and the languages with >= 500 test pairs that lost more than a point (the issue's bound)."""
    lines = [
        "| recipe | seed | trained: mean change | not trained: mean change | languages (>= 500 pairs) losing > 1 "
        "| worst of them |",
        "|---|---|---|---|---|---|",
    ]
    for path in sorted(OUT.glob("forgetting-*.json")):
        saved = json.loads(path.read_text(encoding="utf-8"))
        for seed, report in saved["seeds"].items():
            summary = report["summary"]
            beyond = {row["language"]: row["change"] for row in report["languages"]
                      if row["language"] in summary["beyond_tolerance"]}
            worst = min(beyond, key=lambda language: beyond[language]) if beyond else None
            lines.append(
                f"| {saved['recipe']} | {seed} | {summary['trained']['change']:+.2f} | "
                f"{summary['not_trained']['change']:+.2f} | {len(beyond)}: {', '.join(sorted(beyond))} | "
                + (f"{worst} {beyond[worst]:+.2f} |" if worst else "- |")
            )
    return lines


def recipe_figure(saved: dict[str, Any] | None) -> Path:
    """The recipes' trade-off in one picture: cross-lingual STS against the student's own-language STS and against
    the Tatoeba languages that lost more than 1 point; one point per seed, the mean as a labelled marker, the
    untrained student and the issue's bound (1 point of own-language STS) for reference."""
    from matplotlib.figure import Figure

    if not saved or not saved.get("rows"):
        raise SystemExit(f"no recipes.json here: run `{COMMAND} recipe NAME` first")
    untrained = next(iter(saved["baselines"].values()))["headline"]
    figure = Figure(figsize=(11, 4.8))
    panels = [("student-language STS (mean)", lambda run: run["headline"]["mono_sts"], untrained["mono_sts"]),
              (f"Tatoeba languages losing > 1 point ({saved['max_rows'] or 'all'} rows each)", lambda run: sum(
                  1 for lang in run["forgetting"]["languages"] if lang["change"] < -1), 0)]
    for position, (label, x_of, untrained_x) in enumerate(panels, start=1):
        axes = figure.add_subplot(1, 2, position)
        for index, (name, row) in enumerate(saved["rows"].items()):
            runs = list(row["runs"].values())
            xs, ys = [x_of(run) for run in runs], [run["headline"]["cross_sts"] for run in runs]
            colour = f"C{index % 10}"
            axes.scatter(xs, ys, s=12, alpha=0.5, color=colour)
            axes.scatter([sum(xs) / len(xs)], [sum(ys) / len(ys)], s=40, color=colour, label=name)
        axes.scatter([untrained_x], [untrained["cross_sts"]], s=60, marker="x", color="black", label="untrained")
        if position == 1:
            axes.axvline(untrained["mono_sts"] - 1, linestyle="--", color="grey", linewidth=1)
            axes.text(untrained["mono_sts"] - 1, untrained["cross_sts"], " bound", color="grey", fontsize=8)
        axes.set_xlabel(label)
        axes.set_ylabel("cross-lingual STS")
    figure.axes[0].legend(fontsize=7)
    figure.suptitle("Distillation recipes: cross-lingual gain against forgetting (each seed, and the mean)",
                    fontsize=10)
    target = FIGURES / "distill-recipes-tradeoff.png"
    with atomic_write(target, "wb") as handle:
        figure.savefig(handle, format="png", dpi=100, bbox_inches="tight")
    return target


def render() -> str:
    """The docs section from every saved JSON (and the long-sentence section, which has its own markers)."""
    from polyembed.eval.headline import format_headline, with_teacher_ratio

    render_long_sentences()

    lines = [START, "### Multilingual knowledge distillation", ""]
    acc = _load("acceptance")
    if acc:
        base = acc["baselines"]
        lines += [
            f"`{COMMAND} acceptance --seeds "
            + " ".join(str(r["seed"]) for r in acc["runs"])
            + "".join(f" --set {k}={v}" for k, v in acc.get("overrides", {}).items())
            + "`"
            f" — demo config ({acc['config']['max_steps']} steps x {acc['config']['batch_size']} pairs, "
            f"{', '.join(acc['config']['languages'])})"
            + (
                "; the seed models were re-evaluated from their saved folders (`--evaluate-only`)."
                if any(r.get("re_evaluated") for r in acc["runs"])
                else "."
            ),
            "",
            "| model | cross-lingual STS | English STS | cross / teacher English | bias gap [95% CI] | Tatoeba "
            "| Kardes cross |",
            "|---|---|---|---|---|---|---|",
        ]
        entries = with_teacher_ratio({**base, **{f"distilled, seed {r['seed']}": r["headline"] for r in acc["runs"]}})
        for name, h in entries.items():
            lines.append(
                f"| {name} | {_f(h['cross_sts'])} | {_f(h['english_sts'])} "
                f"| {_f(h['cross_over_teacher_english'], True)} | {format_headline('language_bias_gap', h)} "
                f"| {_f(h['tatoeba_accuracy'])} | {_f(h['kardes_cross_sts'])} |"
            )
        lines.append("")
    tp = _load("throughput")
    if tp:
        lines += [
            f"Training throughput, demo models and languages, batch {tp['batch_size']}, {tp['steps']} steps "
            f"(`{COMMAND} throughput`):",
            "",
            "| loop | pairs/s (optimizer steps only) | wall s (incl. teacher labels, setup) | peak RSS MB |",
            "|---|---|---|---|",
            f"| sentence-transformers make_multilingual-style | {tp['st']['pairs_per_second']} | "
            f"{tp['st']['wall_seconds']} | {tp['st']['peak_memory_mb']} |",
            f"| polyembed train distill | {tp['ours']['pairs_per_second']} | {tp['ours']['wall_seconds']} | "
            f"{tp['ours']['peak_memory_mb']} |",
            f"| ratio | {tp['ratio']} | | |",
            "",
        ]
    size = _load("data-size")
    if size:
        lines += [
            f"Data-size curve as the paper's Table 6 (`{COMMAND} data-size`): bilingual runs on "
            "k Tatoeba-Challenge pairs; en-de is stsb-multi-mt en-de, en-ar is STS2017 ar-en.",
            "",
            "| language | training pairs | steps x 32 | en-X STS | Tatoeba |",
            "|---|---|---|---|---|",
        ]
        for r in size["rows"]:
            h = r["headline"]
            lines.append(
                f"| {r['language']} | {r['pairs']} | {r['steps']} | {_f(r.get('pair_sts', float('nan')))} | "
                f"{_f(h['tatoeba_accuracy'])} |"
            )
        lines.append("")
    lost = _load("forgetting")
    if lost:
        rows_note = "every row" if lost["max_rows"] is None else f"{lost['max_rows']} rows per language"
        lines += [
            "",
            f"Forgetting (`{COMMAND} forgetting`, same overrides): LASER Tatoeba in all 112 "
            f"languages, {rows_note}, untrained student -> acceptance seed model, mean of both directions.",
            "",
            "| seed | trained languages: change (lost > 1) | other languages: change (lost > 1) | worst losses |",
            "|---|---|---|---|",
        ]
        for seed, report in lost["seeds"].items():
            summary = report["summary"]
            worst = sorted((r for r in report["languages"] if r["change"] < 0), key=lambda r: r["change"])[:5]
            cells = [
                f"{summary[group]['change']:+.2f} ({summary[group]['lost_more_than_tolerance']})"
                if group in summary else "-"
                for group in ("trained", "not_trained")
            ]
            worst_text = ", ".join(f"{r['language']} {r['change']:+.1f}" for r in worst) or "none"
            lines.append(f"| {seed} | {cells[0]} | {cells[1]} | {worst_text} |")
    lines += _recipe_table(_load("recipes"))
    vocab = _load("vocabulary")
    if vocab and "rows" in vocab:
        lines += [
            "Vocabulary transfer: each comparison trains the same student on the same data, steps and seed with "
            "its own tokenizer and with a new one (FOCUS-initialised embeddings); 'untrained' rows are the two "
            "starting points in the student's own space (no projection), "
            f"`{COMMAND} vocabulary NAME --steps N --set KEY=VALUE ...`:",
            "",
            "| comparison | options beside the demo config | vocabulary "
            "| new tokens copied / interpolated / decomposed / random "
            "| cross STS | English STS | bias gap [95% CI] | Tatoeba | pairs/s | train s |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, row in vocab["rows"].items():
            options = ", ".join(f"{k}={v}" for k, v in row["options"].items() if k != "eval_steps")
            for mode, mode_label in VOCABULARY_MODES.items():
                if mode not in row:
                    continue
                entry = row[mode]
                h, report = entry["headline"], entry["vocabulary_transfer"]
                if report:
                    total = report["target_vocab_size"]
                    parts = ("copied", "interpolated", "decomposed", "random")
                    counts = " / ".join(f"{100 * report.get(k, 0) / total:.1f}%" for k in parts)
                    vocabulary_label = f"{mode_label} {report['source_vocab_size']:,} -> {total:,}"
                else:
                    counts, vocabulary_label = "-", mode_label
                lines.append(
                    f"| {name} | {options} | {vocabulary_label} | {counts} | {_f(h['cross_sts'])} | "
                    f"{_f(h['english_sts'])} | {format_headline('language_bias_gap', h)} | "
                    f"{_f(h['tatoeba_accuracy'])} | {entry.get('pairs_per_second', '-')} | "
                    f"{entry.get('train_seconds_total', '-')} |"
                )
        lines.append("")
    ablations = _load("ablation")
    if ablations:
        lines += [
            "Ablations of the demo config at 1000 pairs per source, seed 0, one run each "
            f"(`{COMMAND} ablation NAME --steps N --set KEY=VALUE ...`; dev MSE x100 on the "
            "held-out pairs, as in the paper: both terms of the loss, or the translation term only where marked `*`):",
            "",
            "| variant | changed options | steps | cross STS | English STS | bias gap | Tatoeba | dev MSE | pairs/s |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, row in ablations["rows"].items():
            h = row["headline"]
            options = row["options"]
            base = {**ABLATION_BASE, "max_steps": options["max_steps"], "eval_steps": options["max_steps"]}
            changed = ", ".join(f"{k}={v}" for k, v in options.items() if base.get(k, object()) != v) or "-"
            mse = -row["dev_negative_mse"] if row.get("dev_negative_mse") is not None else float("nan")
            lines.append(
                f"| {name} | {changed} | {options['max_steps']} | {_f(h['cross_sts'])} | "
                f"{_f(h['english_sts'])} | {_f(h['language_bias_gap'])} | {_f(h['tatoeba_accuracy'])} | "
                f"{mse:.4f}{'' if row.get('dev_mse_both_terms') else '*'} | {row['pairs_per_second']:.1f} |"
            )
        lines.append("")
    lines.append(END)
    section = "\n".join(lines)
    present = {name for name in SECTION_SOURCES if _load(name) is not None}
    commands = {name: f"benchmarks.distill.run {command}" for name, command in SECTION_SOURCES.items()}
    missing = missing_tables(DOCS, START, END, commands, present)
    if missing:
        # results/ is not in git: on another machine a re-render would drop every table whose JSON is absent
        print(f"docs/benchmarks.md left as it is: no {', '.join(m + '.json' for m in missing)} in {OUT}; "
              "copy the tables you re-measured from the section below by hand")
        return section
    replace_section(DOCS, START, END, section)
    return section
