"""The distillation benchmark's long-sentence section of docs/benchmarks.md (issue 36, its own markers) and
the recipes' dev table it ends with, rendered from the saved JSON of `benchmarks.distill.run` only."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.common.docs_sections import replace_section, shown_section
from benchmarks.common.results import DOCS, load_json
from benchmarks.common.tables import score_cell as _f
from benchmarks.distill.spec import COMMAND, DEV_STS_PAIRS, FORGETTING_GROUPS, LONG_END, LONG_START, OUT


def _load(name: str) -> dict[str, Any] | None:
    return load_json(OUT / f"{name}.json")


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
        f"Dev splits (`{COMMAND} recipe-dev`; stsb-multi-mt and Kardes STS dev, "
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
        f"Long sentences (`{COMMAND} recipe NAME`): TICO-19 retrieval, every row, mean of both "
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
    lines = [LONG_START, "### Distillation on long sentences", "", RECIPES_NOTE.format(", ".join(rows)), "",
             f"Recipes (`{COMMAND} recipe NAME --seeds 0 1 --max-rows 100 --set ...`; the demo "
             f"config plus the options shown; {saved.get('machine', {}).get('cpus', '?')} CPU cores, one run at a "
             "time):",
             ""]
    lines += [f"- `{name}`: " + (", ".join(f"{k}={v}" for k, v in row["overrides"].items()) or "the demo config")
              + f" (seeds {', '.join(sorted(row['runs'], key=int))})" for name, row in rows.items()]
    lines += [*table, *_per_seed_long_losses(rows)]
    student = next(iter(saved["baselines"]))
    dev = recipe_dev_table(_load("recipes-dev"), student)
    if dev:
        lines += [*dev, ""]
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
