"""The aligner benchmark's section of docs/benchmarks.md, from its stored aligners.json only."""

from __future__ import annotations

import json

from benchmarks.alignment.spec import COMMAND, END, EXTRA_LABEL, OUT, PUBLISHED, SETS, START, TRAINING_FILTER
from benchmarks.common.docs_sections import missing_tables, publish
from benchmarks.common.results import DOCS


def render() -> None:
    """The aligners' section from aligners.json; left alone where the docs show it and no JSON is here."""
    path = OUT / "aligners.json"
    command = COMMAND
    if not path.is_file():
        if missing_tables(DOCS, START, END, {"aligners": command}, set()):
            print("no saved results here: the docs section is left alone")
        return
    payload = json.loads(path.read_text(encoding="utf-8"))
    aligners = list(dict.fromkeys(row["aligner"] for row in payload["rows"]))
    lines = [START, "### Word aligners on the gold sets", "",
             f"`{command}` ({payload['machine']}). AER / precision / recall in percent (AER: lower is better), "
             "then seconds per 1,000 sentence pairs. Gold links past a sentence end (ja-en, de-en) are scored as "
             "published. eflomal learns from the text it aligns: the gold set itself (100-582 pairs), and in "
             f"'{EXTRA_LABEL}' also the data layer's Tatoeba-Challenge pairs of that language ("
             + ", ".join(f"{r['set']} {r['extra_pairs']:,}" for r in payload["rows"] if r.get("extra_pairs")
                         and r["aligner"] == EXTRA_LABEL)
             + " pairs; WACSE's low-resource languages have far fewer once the LASER test is left out, "
             "docs/methods/wacse.md). "
             f"'{TRAINING_FILTER}': the same run's links that pass WACSE's default `alignment_threshold` (eflomal: "
             "both directions agree; itermax: (cos + 1) / 2). "
             f"{PUBLISHED}: the predictions awesome-align ships with its four test sets (mBERT fine-tuned on "
             "parallel text, so a supervised-by-bitext reference, not a rival run here).",
             "", "| set | pairs | " + " | ".join(aligners) + " |", "|---|---|" + "---|" * len(aligners)]
    for name in SETS:
        rows = {row["aligner"]: row for row in payload["rows"] if row["set"] == name}
        if not rows:
            continue
        cells = [f"{r['aer']} / {r['precision']} / {r['recall']}" + (
            f" ({r['seconds_per_1000_pairs']} s)" if r["seconds_per_1000_pairs"] is not None else "")
            if r else "-" for r in (rows.get(a) for a in aligners)]
        lines.append(f"| {name} | {next(iter(rows.values()))['pairs']} | " + " | ".join(cells) + " |")
    lines += ["", END]
    publish(DOCS, START, END, lines)
