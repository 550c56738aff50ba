"""The CLA study's docs sections (the settings on dev, and en-X STS per STS-B genre), rendered from the saved JSON
of `benchmarks.modular.run_cla` only."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.common.docs_sections import missing_tables, publish, replace_section
from benchmarks.common.results import DOCS, load_json
from benchmarks.modular.spec import (
    CLA_COMMAND,
    CLA_END,
    CLA_START,
    DEFAULT_BATCHES,
    DEFAULT_LOSS,
    DEFAULT_MIXING,
    DEFAULT_SCHEDULE,
    GENRES_END,
    GENRES_START,
    OUT,
    batches_label,
)


def _table(results: dict[str, Any]) -> tuple[list[str], str | None]:
    """The dev table (one row per setting) and the setting with the best mean en-X dev STS."""
    languages = list(results["languages"])
    names = [n for n in results["languages"][languages[0]] if n != "no-cla"]
    names = [n for n in names if all(n in results["languages"][code] for code in languages)]
    with_test = any("test_cross" in row for code in languages for row in results["languages"][code].values())
    header = ["CLA setting", *[f"en-{c} dev STS" for c in languages], *[f"{c} dev mono (cross)" for c in languages],
              "en-X mean", "mono mean", "dev retrieval to pivot, mean",
              *([f"en-{c} test STS (not chosen on)" for c in languages] if with_test else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    best, best_mean = None, -math.inf
    for name in [*names, "no-cla"]:
        rows = [results["languages"][code].get(name, {}) for code in languages]
        cross = [row.get("cross", math.nan) for row in rows]
        mono = [row.get("mono", math.nan) for row in rows]
        cross_mean, mono_mean = sum(cross) / len(cross), sum(mono) / len(mono)
        label = _label(name, rows[0], results["steps"])
        test = [f"{row['test_cross']:.1f}" if "test_cross" in row else "-" for row in rows] if with_test else []
        retrieval = [row.get("dev_retrieval") for row in rows]
        retrieval_mean = "-" if None in retrieval else f"{sum(retrieval) / len(retrieval):.1f}"
        lines.append("| " + " | ".join([label, *[f"{v:.1f}" for v in cross], *[f"{v:.1f}" for v in mono],
                                        f"{cross_mean:.1f}", f"{mono_mean:.1f}", retrieval_mean, *test]) + " |")
        if name != "no-cla" and cross_mean > best_mean:
            best, best_mean = name, cross_mean
    return lines, best


def _label(name: str, row: dict[str, Any], default_steps: int) -> str:
    if name == "no-cla":
        return "no CLA (SE encoders, mode mono)"
    return (f"lr {row['learning_rate']:g}, scaling {row['adapter_scaling']:g}, {row.get('steps', default_steps)} steps"
            + ("" if row.get("batch_mixing", DEFAULT_MIXING) == DEFAULT_MIXING else f", {row['batch_mixing']}")
            + ("" if row.get("batches", DEFAULT_BATCHES) == DEFAULT_BATCHES else f", {batches_label(row['batches'])}")
            + ("" if row.get("dev_measure", "retrieval") == "retrieval" else ", dev measure en-X STS")
            + ("" if row.get("paraphrase_loss", DEFAULT_LOSS) == DEFAULT_LOSS else f", {row['paraphrase_loss']} loss")
            + ("" if row.get("schedule", DEFAULT_SCHEDULE) == DEFAULT_SCHEDULE else
               ", linear decay, best checkpoint"))


def _seed_table(all_results: list[dict[str, Any]]) -> list[str]:
    """Settings scored on dev and test in every seed: the mean over seeds (each seed in brackets)."""
    languages = list(all_results[0]["languages"])
    if len(all_results) < 2 or any(list(r["languages"]) != languages for r in all_results):
        return []
    names = [n for n in all_results[0]["languages"][languages[0]]
             if all("test_cross" in r["languages"][c].get(n, {}) for r in all_results for c in languages)]
    if not names:
        return []

    def cell(values: list[float]) -> str:
        return f"{sum(values) / len(values):.1f} ({' / '.join(f'{v:.1f}' for v in values)})"

    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    header = ["CLA setting", "en-X dev STS", "mono dev (cross)", "dev retrieval to pivot",
              *[f"en-{c} test STS" for c in languages], "en-X test STS"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in [n for n in names if n != "no-cla"] + ["no-cla"]:
        per_seed = [[r["languages"][c][name] for c in languages] for r in all_results]
        retrieval = [[row.get("dev_retrieval") for row in rows] for rows in per_seed]
        lines.append("| " + " | ".join([
            _label(name, per_seed[0][0], all_results[0]["steps"]),
            cell([mean([row["cross"] for row in rows]) for rows in per_seed]),
            cell([mean([row["mono"] for row in rows]) for rows in per_seed]),
            "-" if any(None in values for values in retrieval) else cell([mean(values) for values in retrieval]),
            *[cell([rows[index]["test_cross"] for rows in per_seed]) for index in range(len(languages))],
            cell([mean([row["test_cross"] for row in rows]) for rows in per_seed]),
        ]) + " |")
    return lines


def genre_section(tables: list[dict[str, Any]]) -> list[str]:
    """Per language, en-X STS per STS-B genre without and with CLA (`genres` runs), one column per seed and the
    mean change: does CLA shift one genre against another?"""
    section = [GENRES_START, "#### en-X STS per STS-B genre, without and with CLA", ""]
    for language in sorted({table["language"] for table in tables}):
        runs = sorted((t for t in tables if t["language"] == language), key=lambda t: t["seed"])
        section += [
            f"`{CLA_COMMAND} genres --seed S --language {language}`: the seed's pipeline "
            f"bundle in mode mono (no CLA) and mode cross (CLA), every stsb-multi-mt dev and test pair split by the "
            "genre column of the English STS Benchmark files it translates row by row; Spearman x100, mean en-"
            f"{language} cosine in brackets.",
            "",
            "| split | genre | pairs | " + " | ".join(f"seed {t['seed']}: no CLA -> CLA" for t in runs)
            + " | mean change |",
            "|---|---|---|" + "---|" * (len(runs) + 1),
        ]
        first = runs[0]["splits"]
        for split, by_genre in first.items():
            for genre in by_genre:
                cells, changes = [], []
                for run_ in runs:
                    modes = run_["splits"].get(split, {}).get(genre)
                    if modes is None:
                        cells.append("-")
                        continue
                    before, after = modes["mono"], modes["cross"]
                    changes.append(after["cross"] - before["cross"])
                    cells.append(f"{before['cross']:.1f} ({before['cross_mean_cosine']:.3f}) -> {after['cross']:.1f} "
                                 f"({after['cross_mean_cosine']:.3f})")
                change = f"{sum(changes) / len(changes):+.1f}" if changes else "-"
                section.append(f"| {split} | {genre} | {by_genre[genre]['mono']['pairs']} | " + " | ".join(cells)
                               + f" | {change} |")
        section.append("")
    return [*section, GENRES_END]


def render() -> None:
    """The genres section, then the CLA settings' section, each from its own JSON; a section whose JSON is
    not here and that the docs show is left alone."""
    tables = [load_json(path) for path in sorted((OUT / "cla-ablation").glob("seed-*/genres-*.json"))]
    if tables:
        replace_section(DOCS, GENRES_START, GENRES_END, "\n".join(genre_section([t for t in tables if t])))
    elif missing_tables(DOCS, GENRES_START, GENRES_END, {"genres": "benchmarks.modular.run_cla genres"}, set()):
        print("no saved genre table here: the genres section is left alone")
    command = f"{CLA_COMMAND} run"
    paths = sorted((OUT / "cla-ablation").glob("seed-*/results.json"))
    if not paths:
        if missing_tables(DOCS, CLA_START, CLA_END, {"cla": command}, set()):
            print("no saved ablation here: the docs section is left alone")
        return
    section = [CLA_START, "#### Choosing the CLA learning rate, adapter scaling and batch mix (dev splits)", ""]
    all_results = []
    for path in paths:
        results = load_json(path)
        assert results is not None
        all_results.append(results)
        lines, best = _table(results)
        section += [
            f"Seed {results['seed']}, `{command} --seed {results['seed']}` with each row's `--settings`, "
            f"`--batches` and `--dev-measure`: each language's CLA stage (the pipeline runs {results['steps']} "
            "steps) from the benchmark's SE encoders and English pivot, scored on the STS dev "
            "splits (stsb-multi-mt dev for de/ru, Kardes STS dev for kk; Spearman x100) in mode cross.",
            "",
            *lines,
            "",
            f"Best mean en-X dev STS: {best}.",
            "",
        ]
    summary = _seed_table(all_results)
    if summary:
        section += [f"Settings run in seeds {', '.join(str(r['seed']) for r in all_results)} with `--with-test` "
                    "(mean, then each seed; test columns: at most 1,000 test pairs per language, never chosen on):",
                    "", *summary, ""]
    section.append(CLA_END)
    publish(DOCS, CLA_START, CLA_END, section)
