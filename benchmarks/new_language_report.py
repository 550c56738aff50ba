"""The new-language head-to-head's section of docs/benchmarks.md, from its stored results only (results.json of
`benchmarks/new_language.py`; this module never imports the runner).

  python benchmarks/new_language_report.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docs_sections import publish

from polyembed.eval.compare import score_half_width

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "results" / "bench" / "new_language"
RESULTS = OUT / "results.json"
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- new-language:start -->", "<!-- new-language:end -->"
BASE = "me5-small"


def _measured(scores: dict[str, Any]) -> list[str]:
    """The keys of measured subsets (a task's own average rows left out: the tables add their own mean)."""
    return [key for key in scores if key.split("/", 1)[1] != "avg"]


def _kind(key: str) -> str:
    return "spearman" if key.split("/")[0] in ("sts17", "stsb-multi-mt", "kardes-sts") else "accuracy"


def _runs_by_method(family: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each method's scored runs, seeds in order (the base model as one run)."""
    methods: dict[str, list[dict[str, Any]]] = {}
    for key, entry in family["runs"].items():
        method = BASE if key == BASE else entry.get("method", key.split("/")[0])
        if "test" in entry:
            methods.setdefault(method, []).append(entry)
    for entries in methods.values():
        entries.sort(key=lambda e: e.get("seed", 0))
    return methods


def _cell(entries: list[dict[str, Any]], part: str, key: str, interval: bool) -> str:
    values = [e[part][key]["value"] for e in entries if key in e.get(part, {})]
    if not values:
        return "-"
    mean = sum(values) / len(values)
    text = f"{mean:.1f}"
    if len(values) > 1:
        text += " (" + " / ".join(f"{v:.1f}" for v in values) + ")"
    if interval and not key.endswith("avg"):  # an average's n counts languages, not rows
        n = entries[0][part][key].get("n")
        width = score_half_width(_kind(key), mean, n)
        if width is not None:
            text += f" ±{width:.1f}"
    return text


def _mean(entries: list[dict[str, Any]], part: str, keys: list[str]) -> float | None:
    """The mean over keys of the mean over seeds (None when a seed lacks a key)."""
    per_seed = []
    for entry in entries:
        scores = entry.get(part, {})
        if not all(k in scores for k in keys):
            return None
        per_seed.append(sum(scores[k]["value"] for k in keys) / len(keys))
    return sum(per_seed) / len(per_seed) if per_seed else None


def _table(methods: dict[str, list[dict[str, Any]]], part: str, keys: list[str], interval: bool,
           mean_row: bool) -> list[str]:
    names = [BASE, *sorted(m for m in methods if m != BASE)]
    lines = ["| subset | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(_cell(methods.get(n, []), part, key, interval) for n in names) + " |")
    if mean_row and len(keys) > 1:
        cells = []
        for name in names:
            mean = _mean(methods.get(name, []), part, keys)
            cells.append("-" if mean is None else f"{mean:.1f}")
        lines.append("| mean | " + " | ".join(cells) + " |")
    return lines


def _error_cut(methods: dict[str, list[dict[str, Any]]], keys: list[str]) -> list[str]:
    """How much of the base model's retrieval error (100 - accuracy) each method removes, per trained language."""
    base = methods.get(BASE, [])
    names = sorted(m for m in methods if m != BASE)
    lines = ["| subset | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for key in [*keys, "mean"]:
        subset = keys if key == "mean" else [key]
        before = _mean(base, "test", subset)
        cells = []
        for name in names:
            after = _mean(methods[name], "test", subset)
            cut = None if before is None or after is None or before >= 100 else (after - before) / (100 - before)
            cells.append("-" if cut is None else f"{100 * cut:.0f} %")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return lines


def _summary(methods: dict[str, list[dict[str, Any]]], test_keys: list[str], elsewhere_keys: list[str]) -> list[str]:
    """Per method, what a user asks first: the smallest and the mean cut of the base model's test error over the
    trained languages, the largest retrieval loss elsewhere (rows with at least 500 test pairs) and the change of
    cross-lingual and monolingual STS (means over seeds)."""
    base = methods.get(BASE, [])
    retrieval = [k for k in elsewhere_keys if _kind(k) == "accuracy" and (base[0]["elsewhere"][k].get("n") or 0) >= 500]
    cross = [k for k in elsewhere_keys if k.endswith("cross-avg")]
    mono = [k for k in elsewhere_keys if k.endswith("mono-avg")]
    lines = ["| method | smallest error cut (trained language) | mean error cut | largest retrieval loss elsewhere | "
             + " | ".join(f"{k} change" for k in [*cross, *mono]) + " |",
             "|---|---|---|---|" + "---|" * len(cross + mono)]
    for name in sorted(m for m in methods if m != BASE):
        cuts = []
        for key in test_keys:
            before, after = _mean(base, "test", [key]), _mean(methods[name], "test", [key])
            if before is not None and after is not None and before < 100:
                cuts.append(((after - before) / (100 - before), key))
        before, after = _mean(base, "test", test_keys), _mean(methods[name], "test", test_keys)
        mean_cut = "-" if before is None or after is None else f"{100 * (after - before) / (100 - before):.0f} %"
        changes = []
        for key in retrieval:
            before_k, after_k = _mean(base, "elsewhere", [key]), _mean(methods[name], "elsewhere", [key])
            if before_k is not None and after_k is not None:
                changes.append((after_k - before_k, key))
        worst = min(changes) if changes else None
        sts = []
        for key in [*cross, *mono]:
            before_k, after_k = _mean(base, "elsewhere", [key]), _mean(methods[name], "elsewhere", [key])
            sts.append("-" if before_k is None or after_k is None else f"{after_k - before_k:+.1f}")
        smallest = min(cuts) if cuts else None
        lines.append(f"| {name} | " + ("-" if smallest is None else f"{100 * smallest[0]:.0f} % ({smallest[1]})")
                     + f" | {mean_cut} | " + ("-" if worst is None else f"{worst[0]:+.1f} ({worst[1]})") + " | "
                     + " | ".join(sts) + " |")
    return lines


def _budgets(methods: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = ["| method | seed | steps | wall minutes | of which training steps | peak memory GB |",
             "|---|---|---|---|---|---|"]
    for name in sorted(m for m in methods if m != BASE):
        for entry in methods[name]:
            lines.append(f"| {name} | {entry['seed']} | {entry['steps']} | {entry['wall_seconds'] / 60:.1f} | "
                         f"{entry['train_seconds'] / 60:.1f} | {entry['peak_memory_mb'] / 1024:.1f} |")
    return lines


def section(payload: dict[str, Any]) -> list[str]:
    """The section's lines, markers included."""
    lines = [START, "## Bringing a new language: the methods head to head", ""]
    families = payload.get("families", {})
    if not families:
        return [*lines, "No results stored yet.", END]
    for name, family in families.items():
        methods = _runs_by_method(family)
        trained = [e for m, es in methods.items() if m != BASE for e in es]
        minutes = sorted({e["minutes"] for e in trained})
        machines = sorted({e["machine"]["cpu"] for e in trained})
        base = methods.get(BASE, [{}])[0]
        test_keys, dev_keys = _measured(base.get("test", {})), _measured(base.get("dev", {}))
        elsewhere_keys = list(base.get("elsewhere", {}))
        lines += [
            f"### {name.capitalize()} languages: {', '.join(family['languages'])}",
            "",
            f"`python benchmarks/new_language.py run --family {name} --minutes "
            f"{', '.join(f'{m:g}' for m in minutes)}` on {'; '.join(machines) or 'no runs yet'}. Every method "
            f"starts from {BASE} and trains one model for all of these languages on the same bitext "
            f"({', '.join(family['datasets'])}, train split) for the same wall-clock minutes (turned into steps "
            "by each method's measured seconds per step; the last table shows the real minutes). Cells: mean over "
            "seeds (each seed in brackets) and, on test rows, the 95 % interval of one run's score on that many "
            "rows (binomial for retrieval accuracy, Fisher's z for Spearman). Methods are compared on the dev "
            "splits; the test rows are reported, not chosen on.",
            "",
            "Dev (MAFAND-MT dev retrieval accuracy, en<->X, both directions, evenly spaced rows):",
            "",
            *_table(methods, "dev", dev_keys, interval=False, mean_row=True),
            "",
            "Test, the trained languages (retrieval accuracy, en<->X; MAFAND-MT test, and TICO-19 for Hausa):",
            "",
            *_table(methods, "test", test_keys, interval=True, mean_row=True),
            "",
            "Share of the base model's test error (100 - accuracy) each method removes:",
            "",
            *_error_cut(methods, test_keys),
            "",
            "In short (means over seeds; a loss elsewhere counts rows with at least 500 test pairs):",
            "",
            *_summary(methods, test_keys, elsewhere_keys),
            "",
            "Elsewhere: languages the run never trains (TICO-19 rows evenly spaced, LASER Tatoeba retrieval) and "
            "cross-lingual STS (Spearman x100):",
            "",
            *_table(methods, "elsewhere", elsewhere_keys, interval=True, mean_row=False),
            "",
            "Budgets as they came out:",
            "",
            *_budgets(methods),
            "",
        ]
    return [*lines, END]


def render() -> None:
    payload = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {}
    publish(DOCS, START, END, section(payload))


if __name__ == "__main__":
    render()
