"""The language-identification section of docs/benchmarks.md, from the stored langid.json only."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.common.docs_sections import missing_tables, publish
from benchmarks.common.results import DOCS
from benchmarks.language_id.spec import COMMAND, END, OUT, START


def _table(rows: list[dict[str, Any]], names: list[str], key: str) -> list[str]:
    """One row per (language, set), one column per identifier; '-' where an identifier lacks the language."""
    cells: dict[tuple[str, str, str], dict[str, float]] = {}
    for row in rows:
        cells.setdefault((row[key] if key != "language" else row["language"], row["language"], row["source"]),
                         {})[row["identifier"]] = row["accuracy"]
    lines = [f"| {'group | ' if key != 'language' else ''}language | set | " + " | ".join(names) + " |",
             "|---|---|" + ("---|" if key != "language" else "") + "---|" * len(names)]
    for (group, language, source), values in sorted(cells.items()):
        shown = [f"{values[name]:.1f}" if name in values else "-" for name in names]
        lines.append(f"| {group + ' | ' if key != 'language' else ''}{language} | {source} | " + " | ".join(shown)
                     + " |")
    return lines


def render() -> None:
    """The language-ID section from langid.json; left alone where the docs show it and no JSON is here."""
    path = OUT / "langid.json"
    if not path.is_file():
        if missing_tables(DOCS, START, END, {"langid": COMMAND}, set()):
            print("no saved results here: the docs section is left alone")
        return
    payload = json.loads(path.read_text(encoding="utf-8"))
    names: list[str] = payload["identifiers"]
    lines = [START, "### Language identifiers on held-out sentences", "",
             f"`{COMMAND}` ({payload['machine']}). Accuracy (%) on held-out sentences of the data layer, each "
             "identifier choosing among all the languages it knows ('-': it does not know the language); the "
             "n-gram identifier (`polyembed.models.ngram_langid`) never saw these rows. Languages known: "
             + ", ".join(f"{name} {payload['languages'][name]}" for name in names)
             + "; sentences/s over the held-out sets: "
             + ", ".join(f"{name} {payload['speed'][name]:,.0f}" for name in names) + "."
             + (f" At most {payload['max_sentences']} held-out sentences per language and set."
                if payload.get("max_sentences") else "")]
    for length, title in (("short", "Short sentences (LASER Tatoeba, Kardes XNLI)"),
                          ("long", "Long sentences (TICO-19, MAFAND-MT test)")):
        rows = [row for row in payload["rows"] if row["length"] == length]
        lines += ["", f"#### {title}", ""]
        means = []
        for name in names:
            own = [row["accuracy"] for row in rows if row["identifier"] == name]
            means.append(f"{name} {sum(own) / len(own):.1f} over {len(own)}" if own else f"{name} -")
        lines += ["Mean over the (language, set) rows each knows: " + "; ".join(means) + ".", ""]
        lines += _table(rows, names, "language")
    lines += ["", "#### Routing among a model's languages", "",
              "Each identifier restricted to the languages of the set that it knows (what `encode` without a "
              "language does on a routed model); a language it does not know counts 0.", ""]
    lines += _table(payload["routing"], names, "bundle")
    lines += ["", END]
    publish(DOCS, START, END, lines)
