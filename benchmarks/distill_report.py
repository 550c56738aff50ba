"""The distillation benchmark's docs section and figures, rendered from the saved JSON of
`benchmarks/distill.py` (the recipes' dev table, the main and recipe tables, forgetting, the trade-off figure)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from distill import DEV_STS_PAIRS, DOCS, END, OUT, REPO, SECTION_SOURCES, START, _load
from distill_studies import ABLATION_BASE, VOCABULARY_MODES
from docs_sections import missing_tables, replace_section, shown_section

from polyembed.outputs import atomic_write

DEV_GROUPS = {
    "cross (trained)": [f"stsb-multi-mt/en-{c}" for c in ("de", "fr", "es", "ru", "zh")] + ["kardes-sts/en-kk"],
    "cross (never-seen)": [f"stsb-multi-mt/en-{c}" for c in ("it", "ja", "nl", "pl", "pt")]
    + [f"kardes-sts/en-{c}" for c in ("az", "ky", "ug", "uz")],
    "English": ["stsb-multi-mt/en"],
    "student languages": [f"stsb-multi-mt/{c}" for c in ("de", "fr", "es", "ru", "zh")]
    + ["kardes-sts/kk", "semrel/hau"],
    "never-seen languages": [f"stsb-multi-mt/{c}" for c in ("it", "ja", "nl", "pl", "pt")]
    + [f"kardes-sts/{c}" for c in ("az", "ky", "ug", "uz")]
    + [f"semrel/{c}" for c in ("amh", "kin", "mar", "tel")],
    "long sentences (trained)": [f"mafand-retrieval/{c}" for c in ("hau", "swa")],
    "long sentences (other)": [f"mafand-retrieval/{c}" for c in ("amh", "ibo", "kin", "xho", "yor", "zul")],
}
"""Dev subsets behind each column: trained = in the demo's 10 languages; never-seen = in the data of no recipe
without anchors (cross-lingual en-X, and monolingual STS / relatedness, where forgetting shows without a
translation to lean on); long sentences = MAFAND-MT dev retrieval (news), where a recipe's loss on long
sentences is judged before TICO-19's test numbers are looked at."""


def recipe_dev_table(dev: dict[str, Any] | None, student: str) -> list[str]:
    """Dev-split means per recipe (over its seeds), and the monolingual dev subsets (English, student and
    never-seen languages) that lost more than a point against the untrained student, worst first: the numbers
    a recipe is chosen by (the no-forgetting bound applied per language, on dev)."""
    if not dev or student not in dev.get("models", {}):
        return []
    base = dev["models"][student]["scores"]

    def group_mean(scores: dict[str, float], keys: list[str]) -> float:
        present = [scores[k] for k in keys if k in scores]  # a model scored before a group existed: nan
        return sum(present) / len(present) if len(present) == len(keys) else math.nan

    by_recipe: dict[str, list[dict[str, float]]] = {}
    for key, entry in dev["models"].items():
        if key != student:
            by_recipe.setdefault(entry["recipe"], []).append(entry["scores"])
    lines = [
        f"Dev splits (`python benchmarks/distill.py recipe-dev`; stsb-multi-mt and Kardes STS dev, "
        f"{DEV_STS_PAIRS} evenly spaced pairs per subset, SemRel 2024 dev; Spearman x100; MAFAND-MT dev "
        "retrieval accuracy, every row; mean over seeds; change against the untrained student in brackets; "
        "'losing > 1' counts every subset but the cross-lingual STS):",
        "",
        "| model | seeds | " + " | ".join(DEV_GROUPS) + " | languages losing > 1 (monolingual) | worst |",
        "|---|---|" + "---|" * (len(DEV_GROUPS) + 2),
        f"| {student} (untrained) | - | "
        + " | ".join(f"{group_mean(base, keys):.2f}" for keys in DEV_GROUPS.values())
        + " | | |",
    ]
    monolingual = [key for name, keys in DEV_GROUPS.items() if not name.startswith("cross") for key in keys]
    for name, runs in by_recipe.items():
        cells = []
        for keys in DEV_GROUPS.values():
            after = sum(group_mean(run, keys) for run in runs) / len(runs)
            cells.append(f"{after:.2f} ({after - group_mean(base, keys):+.2f})")
        changes = {k: sum(run[k] for run in runs) / len(runs) - base[k] for k in monolingual
                   if k in base and all(k in run for run in runs)}
        losing = sorted((k for k, change in changes.items() if change < -1), key=lambda k: changes[k])
        worst = min(changes, key=lambda k: changes[k])
        lines.append(
            f"| {name} | {len(runs)} | " + " | ".join(cells) + f" | {len(losing)} / {len(changes)}: "
            + ", ".join(k.split("/")[1] for k in losing) + f" | {worst.split('/')[1]} {changes[worst]:+.2f} |"
        )
    return lines


# ------------------------------------------------------------------------------------------ render


FORGETTING_GROUPS = ("trained", "anchored", "not_trained")
RECIPE_HEADLINES = ("cross_sts", "english_sts", "mono_sts", "kardes_cross_sts", "language_bias_gap")


def _recipe_table(saved: dict[str, Any] | None) -> list[str]:
    """Recipes against forgetting, mean over seeds: STS, Tatoeba after training per group, worst loss."""
    if not saved or not saved.get("rows"):
        return []
    rows_note = "every row" if saved["max_rows"] is None else f"{saved['max_rows']} rows per language"
    lines = [
        "",
        f"Recipes against forgetting (`python benchmarks/distill.py recipe NAME --seeds ... --set ...`; demo config "
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



def long_sentence_table(saved: dict[str, Any] | None) -> list[str]:
    """TICO-19 retrieval per language (every row) for the untrained student and each recipe that has the
    long-sentence report, mean over seeds with the change, trained languages first and the largest loss
    first; Tatoeba's group means and cross-lingual STS beside them, so the three are read together."""
    if not saved or not saved.get("rows"):
        return []
    rows = {name: row for name, row in saved["rows"].items()
            if all("long_sentence_forgetting" in run for run in row["runs"].values())}
    if not rows:
        return []

    def per_language(row: dict[str, Any]) -> dict[str, tuple[str, float, float]]:
        """language -> (group, before, mean after over seeds)."""
        runs = [run["long_sentence_forgetting"]["languages"] for run in row["runs"].values()]
        return {
            entry["language"]: (entry["group"], entry["before"],
                                sum(next(e["after"] for e in languages if e["language"] == entry["language"])
                                    for languages in runs) / len(runs))
            for entry in runs[0]
        }

    tables = {name: per_language(row) for name, row in rows.items()}
    first = next(iter(tables.values()))
    order = list(FORGETTING_GROUPS)
    languages = sorted(first, key=lambda lang: (order.index(first[lang][0]),
                                                min(t[lang][2] - t[lang][1] for t in tables.values() if lang in t)))
    names = list(rows)
    lines = [
        "",
        "Long sentences (`python benchmarks/distill.py recipe NAME`): TICO-19 retrieval, every row, mean of both "
        "directions, untrained student and each recipe (mean over seeds, change in brackets); 'group' is the "
        "language's group in the first recipe. Tatoeba (112 languages) and cross-lingual STS of the same models "
        "below.",
        "",
        "| language | group | untrained | "
        + " | ".join(f"{name} ({len(rows[name]['runs'])} seed{'s' if len(rows[name]['runs']) > 1 else ''})"
                     for name in names)
        + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for language in languages:
        group, before, _ = first[language]
        cells = [f"{tables[n][language][2]:.2f} ({tables[n][language][2] - before:+.2f})"
                 if language in tables[n] else "-" for n in names]
        lines.append(f"| {language} | {group.replace('_', ' ')} | {before:.2f} | " + " | ".join(cells) + " |")
    for group in ("trained", "not_trained"):
        cells, befores = [], []
        for name in names:
            summaries = [run["forgetting"]["summary"].get(group) for run in rows[name]["runs"].values()]
            if not all(summaries):
                cells.append("-")
                continue
            befores.append(summaries[0]["before"])
            after = sum(s["after"] for s in summaries) / len(summaries)
            cells.append(f"{after:.2f} ({after - summaries[0]['before']:+.2f})")
        if befores:  # no recipe has this group: no row (an empty line would end the table)
            label = "Tatoeba mean, " + ("trained" if group == "trained" else "not trained")
            lines.append(f"| {label} | | {befores[0]:.2f} | " + " | ".join(cells) + " |")
    untrained = next(iter(saved["baselines"].values()))["headline"]["cross_sts"]
    cross = [sum(run["headline"]["cross_sts"] for run in rows[n]["runs"].values()) / len(rows[n]["runs"])
             for n in names]
    lines.append(f"| cross-lingual STS | | {_f(untrained)} | "
                 + " | ".join(f"{_f(value)} ({value - untrained:+.2f})" for value in cross) + " |")
    return [*lines, ""]


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
        raise SystemExit("no recipes.json here: run `python benchmarks/distill.py recipe NAME` first")
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
    target = REPO / "docs" / "figures" / "distill-recipes-tradeoff.png"
    with atomic_write(target, "wb") as handle:
        figure.savefig(handle, format="png", dpi=100, bbox_inches="tight")
    return target


def _f(value: float, pct: bool = False) -> str:
    return "n/a" if value != value else (f"{100 * value:.1f}%" if pct else f"{value:.2f}")


LONG_START, LONG_END = "<!-- distill-long-sentences:start -->", "<!-- distill-long-sentences:end -->"
RECIPES_NOTE = "<!-- recipes: {} -->"
"""The long-sentence section names the recipes it shows, so a re-render never drops one whose JSON is gone."""


def render_long_sentences() -> str:
    """The long-sentence section of docs/benchmarks.md (its own markers): TICO-19 per language for the
    untrained student and each recipe with the long-sentence report, the options of each recipe, and the
    recipes' dev table. Left as it is when a recipe it shows has no JSON here."""
    saved = _load("recipes")
    table = long_sentence_table(saved)
    if not table:
        print("long-sentence section: no recipe with the TICO-19 report in recipes.json")
        return ""
    rows = {name: row for name, row in saved["rows"].items()
            if all("long_sentence_forgetting" in run for run in row["runs"].values())}
    shown = shown_section(DOCS, LONG_START, LONG_END)
    earlier = next((line[len("<!-- recipes: "):-len(" -->")].split(", ") for line in shown.splitlines()
                    if line.startswith("<!-- recipes: ")), [])
    gone = [name for name in earlier if name and name not in rows]
    lines = [LONG_START, "## Distillation on long sentences (issue 36)", "", RECIPES_NOTE.format(", ".join(rows)), "",
             "Recipes (`python benchmarks/distill.py recipe NAME --seeds 0 1 --max-rows 100 --set ...`; the demo "
             f"config plus the options shown; {saved.get('machine', {}).get('cpus', '?')} CPU cores, one run at a "
             "time):",
             ""]
    lines += [f"- `{name}`: " + (", ".join(f"{k}={v}" for k, v in row["overrides"].items()) or "the demo config")
              + f" (seeds {', '.join(sorted(row['runs'], key=int))})" for name, row in rows.items()]
    lines += [*table, *_per_seed_long_losses(rows)]
    student = next(iter(saved["baselines"]))
    dev = recipe_dev_table(_load("recipes-dev"), student)
    if dev:
        lines += ["", *dev]
    lines.append(LONG_END)
    section = "\n".join(lines)
    if gone:
        print(f"docs/benchmarks.md long-sentence section left as it is: no {', '.join(gone)} in recipes.json")
        return section
    replace_section(DOCS, LONG_START, LONG_END, section)
    return section


def _per_seed_long_losses(rows: dict[str, Any]) -> list[str]:
    """Per recipe and seed: the trained languages losing more than a point of TICO-19 retrieval (the issue's
    bound), and English STS, which the mean over seeds would hide."""
    lines = ["| recipe | seed | trained languages losing > 1 point of TICO-19 | cross-lingual STS | English STS |",
             "|---|---|---|---|---|"]
    for name, row in rows.items():
        for seed, run in sorted(row["runs"].items(), key=lambda item: int(item[0])):
            losses = sorted((entry for entry in run["long_sentence_forgetting"]["languages"]
                             if entry["group"] == "trained" and entry["after"] - entry["before"] < -1),
                            key=lambda entry: entry["after"] - entry["before"])
            text = ", ".join(f"{e['language']} {e['after'] - e['before']:+.2f}" for e in losses) or "none"
            lines.append(f"| {name} | {seed} | {text} | {_f(run['headline']['cross_sts'])} | "
                         f"{_f(run['headline'].get('english_sts', math.nan))} |")
    return [*lines, ""]


def render() -> str:
    """The docs section from every saved JSON (and the long-sentence section, which has its own markers)."""
    from polyembed.demo import format_headline, with_teacher_ratio

    render_long_sentences()

    lines = [START, "## Multilingual knowledge distillation (issue 3)", ""]
    acc = _load("acceptance")
    if acc:
        base = acc["baselines"]
        lines += [
            "`python benchmarks/distill.py acceptance --seeds "
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
            "(`python benchmarks/distill.py throughput`):",
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
            "Data-size curve as the paper's Table 6 (`python benchmarks/distill.py data-size`): bilingual runs on "
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
            f"Forgetting (`python benchmarks/distill.py forgetting`, same overrides): LASER Tatoeba in all 112 "
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
            "`python benchmarks/distill.py vocabulary NAME --steps N --set KEY=VALUE ...`:",
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
            "(`python benchmarks/distill.py ablation NAME --steps N --set KEY=VALUE ...`; dev MSE x100 on the "
            "held-out pairs, as in the paper; rows trained before 2026-11-22 (fdbb8bb) count the translation term "
            "only, later rows both terms of the loss):",
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
                f"{mse:.4f} | {row['pairs_per_second']:.1f} |"
            )
        lines.append("")
    lines.append(END)
    section = "\n".join(lines)
    present = {name for name in SECTION_SOURCES if _load(name) is not None}
    commands = {name: f"benchmarks/distill.py {command}" for name, command in SECTION_SOURCES.items()}
    missing = missing_tables(DOCS, START, END, commands, present)
    if missing:
        # results/ is not in git: on another machine a re-render would drop every table whose JSON is absent
        print(f"docs/benchmarks.md left as it is: no {', '.join(m + '.json' for m in missing)} in {OUT}; "
              "copy the tables you re-measured from the section below by hand")
        return section
    replace_section(DOCS, START, END, section)
    return section
