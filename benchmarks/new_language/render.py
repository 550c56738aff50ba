"""The new-language head-to-head's section of docs/benchmarks.md, from its stored results only (results.json of
`benchmarks.new_language.run`; this module never imports the runner).

  python -m benchmarks.new_language.render
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.common.docs_sections import publish
from benchmarks.common.results import DOCS
from benchmarks.new_language.spec import BASE, END, METHOD_NOTES, RESULTS, START
from polyembed.eval.compare import score_half_width
from polyembed.languages import normalize_language

AFRICAN = {
    "data": "MAFAND-MT's train split (news)",
    "dev": "MAFAND-MT dev retrieval accuracy, en<->X, both directions, evenly spaced rows",
    "test": "retrieval accuracy, en<->X; MAFAND-MT test, and TICO-19 for Hausa",
}
"""What the first family's parts are, for results stored before the runner stored these descriptions."""


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
        if "test" in entry and not entry.get("curve"):
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
    kinds = {_kind(k) for k in keys}
    averaged = [k for k in keys if _kind(k) == "accuracy"] if len(kinds) > 1 else keys
    if mean_row and len(averaged) > 1:
        cells = []
        for name in names:
            mean = _mean(methods.get(name, []), part, averaged)
            cells.append("-" if mean is None else f"{mean:.1f}")
        lines.append(f"| {'retrieval mean' if len(kinds) > 1 else 'mean'} | " + " | ".join(cells) + " |")
    return lines


def _error_cut(methods: dict[str, list[dict[str, Any]]], keys: list[str]) -> list[str]:
    """How much of the base model's retrieval error (100 - accuracy) each method removes, per trained language."""
    base = methods.get(BASE, [])
    names = sorted(m for m in methods if m != BASE)
    keys = [k for k in keys if _kind(k) == "accuracy"]
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
    sts_parts = {**{k: "test" for k in test_keys}, **{k: "elsewhere" for k in elsewhere_keys}}
    cross = [k for k in sts_parts if k.endswith("cross-avg")]
    mono = [k for k in sts_parts if k.endswith("mono-avg")]
    test_keys = [k for k in test_keys if _kind(k) == "accuracy"]
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
            part = sts_parts[key]
            before_k, after_k = _mean(base, part, [key]), _mean(methods[name], part, [key])
            sts.append("-" if before_k is None or after_k is None else f"{after_k - before_k:+.1f}")
        smallest = min(cuts) if cuts else None
        lines.append(f"| {name} | " + ("-" if smallest is None else f"{100 * smallest[0]:.0f} % ({smallest[1]})")
                     + f" | {mean_cut} | " + ("-" if worst is None else f"{worst[0]:+.1f} ({worst[1]})") + " | "
                     + " | ".join(sts) + " |")
    return lines


def _budgets(methods: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each run's steps (a multi-stage run's: per stage, times its stages), wall and training minutes, memory."""
    lines = ["| method | seed | steps | wall minutes | of which training steps | peak memory GB |",
             "|---|---|---|---|---|---|"]
    for name in sorted(m for m in methods if m != BASE):
        for entry in methods[name]:
            steps = f"{entry['steps']} x {entry['stages']} stages" if entry.get("stages") else entry["steps"]
            lines.append(f"| {name} | {entry['seed']} | {steps} | {entry['wall_seconds'] / 60:.1f} | "
                         f"{entry['train_seconds'] / 60:.1f} | {entry['peak_memory_mb'] / 1024:.1f} |")
    return lines


def _curve(family: dict[str, Any], methods: dict[str, list[dict[str, Any]]], dev_keys: list[str],
           test_keys: list[str]) -> list[str]:
    """Dev and test means per method and budget: the main runs and the curve's extra points (means over seeds)."""
    accuracy = [k for k in test_keys if _kind(k) == "accuracy"]
    points: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for key, entry in family["runs"].items():
        if key != BASE and "test" in entry:
            points.setdefault((entry["method"], entry["minutes"]), []).append(entry)
    curved = {method for (method, _), entries in points.items() if any(e.get("curve") for e in entries)}
    if not curved:
        return []
    base = methods.get(BASE, [])
    dev_base, test_base = _mean(base, "dev", dev_keys), _mean(base, "test", accuracy)
    lines = ["Budget curve (the same recipe at fewer or more minutes, `run ... --curve --minutes M`; dev and test "
             "means over seeds, the test mean over the trained languages' retrieval rows):", "",
             "| method | minutes | steps | seeds | dev mean | test retrieval mean |", "|---|---|---|---|---|---|",
             f"| {BASE} | 0 | 0 | - | {_f(dev_base)} | {_f(test_base)} |"]
    for method, minutes in sorted(p for p in points if p[0] in curved):
        entries = sorted(points[(method, minutes)], key=lambda e: e["seed"])
        lines.append(f"| {method} | {minutes:g} | {entries[0]['steps']} | "
                     f"{', '.join(str(e['seed']) for e in entries)} | {_f(_mean(entries, 'dev', dev_keys))} | "
                     f"{_f(_mean(entries, 'test', accuracy))} |")
    return [*lines, ""]


def _forgetting(family: dict[str, Any]) -> list[str]:
    """What the runs scored on every Tatoeba and TICO-19 language cost or gained against the base model: per run
    the languages scored and those that lose more than a point, then the rows that move by a point or more."""
    base = family["runs"].get(BASE, {}).get("forgetting")
    runs = {key: entry["forgetting"] for key, entry in family["runs"].items()
            if key != BASE and "forgetting" in entry}
    if not base or not runs:
        return []
    trained = {normalize_language(code) for code in family.get("languages", [])}
    measured = [k for k in base if k.split("/", 1)[1] != "avg"]
    keys = [k for k in measured if normalize_language(k.split("/", 1)[1]) not in trained]
    left_out = [k for k in measured if k not in keys]
    lines = ["Forgetting on every language: each LASER Tatoeba language and each TICO-19 language (1,000 evenly "
             "spaced rows), retrieval accuracy against the base model (`run ... forgetting --runs KEY`)"
             + (f"; the trained languages' rows ({', '.join(left_out)}) are left out, their gains are in the test "
                "table" if left_out else "") + ":", "",
             "| run | languages scored | of which >= 500 rows | losing more than 1 point (>= 500 rows) | "
             "largest loss | largest gain |", "|---|---|---|---|---|---|"]
    moved: set[str] = set()
    for key, scores in runs.items():
        changes = {k: scores[k]["value"] - base[k]["value"] for k in keys if k in scores}
        large = [k for k in changes if (base[k].get("n") or 0) >= 500]
        losing = sorted((k for k in large if changes[k] < -1), key=lambda k: changes[k])
        worst = min(changes, key=lambda k: changes[k])
        best = max(changes, key=lambda k: changes[k])
        moved |= {k for k, change in changes.items() if abs(change) >= 1}
        lines.append(f"| {key} | {len(changes)} | {len(large)} | "
                     + (", ".join(f"{k} {changes[k]:+.1f}" for k in losing) or "none")
                     + f" | {worst} {changes[worst]:+.1f} | {best} {changes[best]:+.1f} |")
    lines += ["", "Rows that move by a point or more in any of these runs (base score with its 95 % interval):", "",
              "| subset | rows | " + BASE + " | " + " | ".join(runs) + " |", "|---|---|---|" + "---|" * len(runs)]
    for k in sorted(moved, key=lambda k: (min(runs[r][k]["value"] - base[k]["value"] for r in runs if k in runs[r]),
                                          k)):  # ties by name: the same order every render
        width = score_half_width("accuracy", base[k]["value"], base[k].get("n"))
        cells = [f"{runs[r][k]['value'] - base[k]['value']:+.1f}" if k in runs[r] else "-" for r in runs]
        lines.append(f"| {k} | {base[k].get('n')} | {base[k]['value']:.1f}"
                     + (f" ±{width:.1f}" if width is not None else "") + " | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def section(payload: dict[str, Any]) -> list[str]:
    """The section's lines, markers included."""
    lines = [START, "### Bringing a new language: the methods head to head", ""]
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
        described = {**AFRICAN, **family.get("described", {})}
        lines += [
            f"#### {name.capitalize()} languages: {', '.join(family['languages'])}",
            "",
            f"`python -m benchmarks.new_language.run run --family {name} --minutes "
            f"{', '.join(f'{m:g}' for m in minutes)}` on {'; '.join(machines) or 'no runs yet'}. Every method "
            f"starts from {BASE} and trains one model for all of these languages on the same bitext "
            f"({described['data']}) for the same wall-clock minutes (turned into steps "
            "by each method's measured seconds per step; the last table shows the real minutes). Cells: mean over "
            "seeds (each seed in brackets) and, on test rows, the 95 % interval of one run's score on that many "
            "rows (binomial for retrieval accuracy, Fisher's z for Spearman). Methods are compared on the dev "
            "splits; the test rows are reported, not chosen on. The methods:",
            "",
            *[f"- {name}: {METHOD_NOTES.get(name, 'see the runner')}." for name in sorted(methods) if name != BASE],
            "",
            f"Dev ({described['dev']}):",
            "",
            *_table(methods, "dev", dev_keys, interval=False, mean_row=True),
            "",
            f"Test, the trained languages ({described['test']}):",
            "",
            *_table(methods, "test", test_keys, interval=True, mean_row=True),
            "",
            "Share of the base model's test retrieval error (100 - accuracy) each method removes:",
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
            *_curve(family, methods, dev_keys, test_keys),
            *_forgetting(family),
            "Budgets as they came out:",
            "",
            *_budgets(methods),
            "",
        ]
    return [*lines, END]


def render() -> None:
    """The section from results.json; without it the docs section is left as it is (results/ is not in git)."""
    if not RESULTS.is_file():
        raise SystemExit(f"no {RESULTS} here: the docs section is left alone; run python -m "
                         "benchmarks.new_language.run run --family NAME first")
    publish(DOCS, START, END, section(json.loads(RESULTS.read_text(encoding="utf-8"))))


if __name__ == "__main__":
    render()
