"""The FOCUS auxiliary-space section of docs/benchmarks.md, from the stored auxiliary-random.json only."""

from __future__ import annotations

from typing import Any

from benchmarks.common.docs_sections import missing_tables, replace_section
from benchmarks.common.results import DOCS, load_json
from benchmarks.vocabulary_transfer.spec import COMMAND, END, OUT, SPACES, START


def render() -> None:
    """The docs section from auxiliary-random.json (the default rule for rare tokens); left alone, with a note,
    where the docs show a table measured elsewhere and no JSON is stored here."""
    payload = load_json(OUT / "auxiliary-random.json")
    if payload is None:
        if missing_tables(DOCS, START, END, {"auxiliary": COMMAND}, set()):
            print(f"docs/benchmarks.md left as it is: no auxiliary-random.json in {OUT}")
        return
    replace_section(DOCS, START, END, "\n".join([START, table(payload), "", END]))


def table(payload: dict[str, Any]) -> str:
    """The markdown table: per language, mean over seeds (min-max in brackets), and the time per space."""
    rows, seeds = payload["rows"], [str(s) for s in payload["seeds"]]

    def cell(entries: dict[str, dict[str, float]], key: str) -> str:
        values = [entries[s][key] for s in seeds]
        mean = sum(values) / len(values)
        digits = 3 if key == "cos" else 1
        spread = f" [{min(values):.{digits}f}-{max(values):.{digits}f}]" if len(values) > 1 else ""
        return f"{mean:.{digits}f}{spread}"

    split_label = "copied / interp. / decomp. / random" if payload.get("unseen") == "decompose" else (
        "copied / interp. / random")
    lines = [
        f"| language | sentences | vocabulary | {split_label} | base | copy+random | PPMI-SVD | fastText "
        "| cos base: copy+random / PPMI-SVD / fastText |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    means: dict[str, list[float]] = {"base": [], "copy+random": [], "ppmi-svd": [], "fasttext": []}
    for code, row in rows.items():
        if code.startswith("_"):
            continue
        first = row["ppmi-svd"][seeds[0]]
        total = first["vocabulary"]
        kinds = ("copied", "interpolated", "random")
        if payload.get("unseen") == "decompose":
            kinds = ("copied", "interpolated", "decomposed", "random")
        split = " / ".join(f"{100 * first[k] / total:.0f}%" for k in kinds)
        lines.append(
            f"| {code} | {row['corpus_sentences']:,} | {total:,} | {split} | {row['base']['tatoeba']:.1f} | "
            f"{cell(row['copy+random'], 'tatoeba')} | {cell(row['ppmi-svd'], 'tatoeba')} | "
            f"{cell(row['fasttext'], 'tatoeba')} | {cell(row['copy+random'], 'cos')} / "
            f"{cell(row['ppmi-svd'], 'cos')} / {cell(row['fasttext'], 'cos')} |"
        )
        means["base"].append(row["base"]["tatoeba"])
        for key in ("copy+random", "ppmi-svd", "fasttext"):
            means[key].append(sum(row[key][s]["tatoeba"] for s in seeds) / len(seeds))
    lines.append(
        "| **mean** | | | | " + " | ".join(f"{sum(v) / len(v):.1f}" for v in means.values()) + " | |"
    )
    seconds = rows.get("_seconds", {})
    timing = ", ".join(
        f"{space} {sum(seconds[space].values()) / len(seconds[space]):.0f} s" for space in SPACES if space in seconds
    )
    languages = [code for code in rows if not code.startswith("_")]
    lines.append(f"\n`{COMMAND}` with {', '.join(languages)}, seeds "
                 f"{', '.join(seeds)}: time for {'all ' if len(languages) > 1 else ''}{len(languages)} "
                 f"language{'s' if len(languages) > 1 else ''} (tokenizers + FOCUS + save, mean over "
                 f"seeds): {timing}.")
    return "\n".join(lines)
