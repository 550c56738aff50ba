"""The serving-under-load section of docs/benchmarks.md, from the stored serve.json only: the main table, the
acceptance, the open loop at each rate, and (`render_tables`) the queue, recovery and malformed tables."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.common.docs_sections import missing_tables, publish, shown_table
from benchmarks.common.results import DOCS
from benchmarks.serve.render_tables import (
    AS_CONTROL_TEST,
    RECOVERY_TEXT,
    control_cell,
    malformed_lines,
    overload_statuses,
    queue_rows,
    recovered,
    recovery_p99,
    second_lines,
    statuses_text,
    window_lines,
)
from benchmarks.serve.spec import (
    CALLS_OPENING,
    COMMAND,
    CONFIRM_HEADROOM,
    CONFIRM_MARGIN,
    CONFIRM_SECONDS,
    END,
    GRID_MISSES,
    MALFORMED_OPENING,
    MALFORMED_SUMMARY,
    OUT,
    OVERHEADS,
    P99_BOUND_MS,
    QUEUE_OPENING,
    RECOVERY_REQUESTS,
    RECOVERY_SECONDS,
    SENTENCE_ORDER,
    START,
    STEP_DOWNS,
    confirm_seconds,
    within_bound,
)
from benchmarks.serve.spec_phases import SETTLE_S, WINDOW_S


def _load() -> dict[str, Any] | None:
    """serve.json as stored (None where it is not here: results/ is not in git)."""
    path = OUT / "serve.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
def render() -> None:
    """The section from serve.json; where no `run` is stored here and the docs show its table, left alone (a
    table of `calls`, `queue` or `malformed` missing from serve.json keeps the text the docs show)."""
    saved = _load()
    command = f"{COMMAND} run"
    if not saved or not saved.get("entries"):  # `queue` or `calls` alone: their tables wait for a `run`
        if missing_tables(DOCS, START, END, {"serving under load": command}, set()):
            print(f"no `run` results here: the docs section is left alone until `{command}` has run")
        return
    confirmed = all("confirmation" in result for entry in saved["entries"] for result in entry["sizes"].values())
    lines = [START, "### Serving under load", "",
             f"`{command}` ({saved['machine']}): each server {_held_text(saved['entries'])} with one thread, the "
             "open-loop generator (`benchmarks/serve/loadgen.py`) and wrk on the other. Sustainable: the highest "
             f"offered rate whose requests all got a 200 with p99 <= {P99_BOUND_MS:.0f} ms"
             + (f", in its 10 s on the grid and again over {_confirm_length(saved['entries'])}"
                f"{_margin_text(saved['entries'])} (otherwise "
                "the next lower rate is tried; the grid's rate in brackets where it differs; p99 there: the "
                "confirming run)"
                if confirmed else "") + ". Overload: twice that for 10 s, "
             f"then the sustainable rate ({_recovery_length(saved['entries'])}; statuses over both phases; "
             f"recovery: p99 of the requests sent from {SETTLE_S:g} s into it on"
             + ("; control: the same phase once more, no overload before it, its p99 from "
                f"{SETTLE_S:g} s on; recovered: 'yes' with the recovery p99 <= {P99_BOUND_MS:.0f} ms, 'as control' "
                f"above that but with no larger share of requests over {P99_BOUND_MS:.0f} ms (or refused) than the "
                f"control ({AS_CONTROL_TEST}), 'no' otherwise or if any request got neither a 200 nor a 429"
                if confirmed else "") + ")."
             + (f" A rate whose control missed the bound the rate was confirmed by is not sustained: it is given up "
                f"for the next lower one, confirmed, overloaded and controlled again (at most {STEP_DOWNS} times; "
                "'control missed at' in the rate's cell)."
                if any("given_up" in r for e in saved["entries"] for r in e["sizes"].values()) else "")
             + " Raw "
             "encode: the same model and backend, plain `encode` with batch 64 on the same core, in sentences/s."
             + _drain_sentence(saved["entries"]),
             ""]
    if all("prompt_sent" in entry for entry in saved["entries"]):
        lines[-2] += (" The open loop sends the STS-B test sentences in turn, one or 16 per request (wrk repeats the "
                      "first request)" + _order_text(saved["entries"]) + "; Infinity, which applies no prompt, gets "
                      "the model's default prompt in the text, so both servers embed the same tokens.")
    if saved.get("generator_selftest"):
        reached = max(r["ok_per_s"] for r in saved["generator_selftest"])
        lines += [f"The generator alone, against a stub server: {reached}/s answered at its highest offered rate.", ""]
    lines += ["| server | model | backend | sentences / request | sustainable (req/s) | "
              + ("p99 ms there | " if confirmed else "") + "sentences/s there | raw encode "
              "sentences/s | overload statuses | recovery p99 ms | "
              + ("control p99 ms | recovered | " if confirmed else "") + "wrk 200 connections |",
              "|---|---|---|---|---|" + ("---|---|---|" if confirmed else "") + "---|---|---|---|---|"]
    for entry in saved["entries"]:
        for size, result in entry["sizes"].items():
            sustainable = result["sustainable_per_s"]
            overload = result.get("overload") or []
            statuses = overload_statuses(result)
            ceiling = saved["ceilings"].get(f"{entry['model']}/{entry['backend']}", "-") \
                if entry["server"] == "polyembed" else "-"
            closed = result["closed_loop"]
            lines.append(
                f"| {entry['server']} | {entry['model']} | {entry['backend']} | {size} | "
                + (_confirmed_cells(result) if confirmed else f"{sustainable or '-'} | ")
                + f"{sustainable * int(size) if sustainable else '-'} | {ceiling} | "
                + statuses_text(statuses)
                + f" | {recovery_p99(overload[-1]) if overload else '-'} | "
                + (f"{control_cell(result.get('control'))} | {recovered(result)} | " if confirmed else "")
                + f"{closed['requests_per_s']}/s, p50 {closed['p50_ms']} / p99 {closed['p99_ms']} ms, "
                f"non-2xx {closed['non_2xx']} |")
    if confirmed:
        lines += _acceptance_lines(saved)
    named = [([e["server"], e["model"], e["backend"], size], r) for e in saved["entries"]
             for size, r in e["sizes"].items()]
    heads = ["server", "model", "backend", "sentences / request"]
    lines += window_lines(named, heads, f"Recovery per {WINDOW_S:g} s") + second_lines(named, heads, "Recovery")

    def by_rate(entry: dict[str, Any], size: str) -> dict[float, dict[str, Any]]:
        """A row's runs by the rate of single-sentence requests they stand for (16 sentences at a 16th)."""
        return {round(run["offered_per_s"] * int(size), 3): run for run in entry["sizes"][size]["open_loop"]}

    rates = sorted({rate for entry in saved["entries"] for size in entry["sizes"] for rate in by_rate(entry, size)})
    stopped = any(len(r["open_loop"]) < len(rates)
                  and not any(within_bound(run) for run in r["open_loop"][-GRID_MISSES:])
                  for e in saved["entries"] for r in e["sizes"].values())
    stop_text = f"; a row's grid stops after {GRID_MISSES} rates in a row that miss the bound" if stopped else ""
    lines += ["", "Open loop, each offered rate (answered 200s per second, latency of the 200s, statuses; '-': "
              f"not offered to that server{stop_text}):" if any(len(by_rate(e, s)) < len(rates)
                                                                for e in saved["entries"] for s in e["sizes"]) else
              "Open loop, each offered rate (answered 200s per second, latency of the 200s, statuses):", "",
              "| server | model | backend | sentences / request | " + " | ".join(f"{r:.0f}/s" for r in rates) + " |",
              "|---|---|---|---|" + "---|" * len(rates)]
    for entry in saved["entries"]:
        for size in entry["sizes"]:
            runs = by_rate(entry, size)
            lines.append(f"| {entry['server']} | {entry['model']} | {entry['backend']} | {size} | "
                         + " | ".join(_cell(runs.get(rate)) for rate in rates) + " |")
    costs = saved.get("call_costs")
    kept = [] if costs else shown_table(DOCS, START, END, CALLS_OPENING)
    if kept:
        print("no call costs in serve.json here: the docs keep the table they show")
        lines += ["", *kept]
    if costs:
        shown = [value for value in map(str, OVERHEADS) if all(value in cost[size] for cost in costs.values()
                                                                for size in cost)]
        label = {str(OVERHEADS[-1]): "never cut"}
        lines += ["", f"{CALLS_OPENING}, the server's core, one thread): "
                  "sentences/s encoding the open loop's sentences in batches of 16 (one request) and 64 (four), each "
                  "batch cut into model calls by `token_budget_chunks` at each `--call-overhead-tokens` (best of two "
                  "passes; calls per batch in brackets):", "",
                  "| model | backend | sentences / batch | " + " | ".join(label.get(v, v) for v in shown) + " |",
                  "|---|---|---|" + "---|" * len(shown)]
        for key, cost in costs.items():
            model, backend = key.rsplit("/", 1)
            for size, by_overhead in cost.items():
                lines.append(f"| {model} | {backend} | {size} | " + " | ".join(
                    f"{by_overhead[v]['sentences_per_s']} ({by_overhead[v]['calls_per_batch']})" for v in shown) + " |")
    if saved.get("queue_limits"):
        lines += queue_rows(saved["queue_limits"])
    elif queue_kept := shown_table(DOCS, START, END, QUEUE_OPENING):
        print("no queue-limit runs in serve.json here: the docs keep the table they show")
        lines += ["", *queue_kept]
    if saved.get("malformed"):
        lines += malformed_lines(saved["malformed"])
    elif malformed_kept := shown_table(DOCS, START, END, MALFORMED_OPENING):
        print("no malformed-suite runs in serve.json here: the docs keep the tables they show")
        lines += ["", *malformed_kept, "", *shown_table(DOCS, START, END, MALFORMED_SUMMARY)]
    for server, reason in saved.get("failures", {}).items():
        lines += ["", f"Not measured: {server}, which did not start: `{reason}`"]
    seen = sorted({name for e in saved["entries"] for name in e.get("metrics_seen", [])})  # rows of several runs
    if seen:
        lines += ["", "Metrics scraped from `/metrics` after the load: " + ", ".join(f"`{m}`" for m in seen) + "."]
    lines += ["", END]
    publish(DOCS, START, END, lines)


def _confirm_length(entries: list[dict[str, Any]]) -> str:
    """How long the confirmation ran: as long as the recovery phase (`confirm_seconds`); in rows measured
    before that, 20 s, or as long as RECOVERY_REQUESTS take where that was longer."""
    def name(entry: dict[str, Any]) -> str:
        return f"{entry['server']} {entry['model']} {entry['backend']}"

    def short(result: dict[str, Any]) -> bool:
        ran = result["confirmation"][-1].get("seconds", CONFIRM_SECONDS)
        return ran < confirm_seconds(result["sustainable_per_s"])

    confirmed = [e for e in entries if any(r.get("sustainable_per_s") for r in e["sizes"].values())]
    old = [name(e) for e in confirmed if any(short(r) for r in e["sizes"].values() if r.get("sustainable_per_s"))]
    least, most = RECOVERY_SECONDS
    text = f"the length of the recovery phase ({least:g}-{most:g} s), in each {WINDOW_S:g} s of it"
    old_text = f"{CONFIRM_SECONDS:.0f} s, or as long as {RECOVERY_REQUESTS} requests take where that is longer"
    if old and len(old) == len(confirmed):
        return old_text
    return text + (f" (the rows of {', '.join(old)}: {old_text})" if old else "")


def _margin_text(entries: list[dict[str, Any]]) -> str:
    """How the confirming run was stricter than the grid: at CONFIRM_HEADROOM times the rate with p99 within
    CONFIRM_MARGIN of the bound, or (runs from before) the margin alone at the rate; rows confirmed otherwise are
    named."""
    def rule(result: dict[str, Any]) -> str:
        tried = result.get("confirmation") or [{}]
        return ("headroom" if "headroom" in tried[0] and "bound_ms" in tried[0] else "margin" if "bound_ms" in tried[0]
                else "plain")

    rows: dict[str, list[str]] = {"headroom": [], "margin": [], "plain": []}
    for entry in entries:
        for result in entry["sizes"].values():
            if result.get("confirmation"):
                name = f"{entry['server']} {entry['model']} {entry['backend']}"
                rows[rule(result)] += [name] if name not in rows[rule(result)] else []
    texts = {"headroom": f" at {CONFIRM_HEADROOM:g}x that rate with p99 <= {CONFIRM_MARGIN * P99_BOUND_MS:.0f} ms "
                         f"({CONFIRM_MARGIN:.0%} of the bound; the work an overload leaves behind drains only with "
                         "capacity to spare and with room under the bound, and near capacity p99 varies from run to "
                         "run)",
             "margin": f" with p99 <= {CONFIRM_MARGIN * P99_BOUND_MS:.0f} ms ({CONFIRM_MARGIN:.0%} of the bound: near "
                       "capacity p99 varies from run to run, and a rate confirmed by a hair missed the bound in the "
                       "recovery or control after it as often as not)",
             "plain": ""}
    used = [kind for kind in ("headroom", "margin", "plain") if rows[kind]]
    if len(used) <= 1:
        return texts[used[0]] if used else ""
    return "; ".join(f"the rows of {', '.join(rows[kind])}:{texts[kind] or ' at the rate itself'}" for kind in used)


def _recovery_length(entries: list[dict[str, Any]]) -> str:
    """How long the rows' recovery phases lasted: 40-120 s for RECOVERY_REQUESTS, 20 s in runs from before."""
    short = [f"{e['server']} {e['model']} {e['backend']}" for e in entries
             if any(r.get("overload") and r["overload"][-1]["seconds"] <= 20 for r in e["sizes"].values())]
    least, most = RECOVERY_SECONDS
    long_text = f"{least:g}-{most:g} s: {RECOVERY_TEXT}"
    if not short:
        return long_text
    return "20 s" if len(short) == len(entries) else f"{long_text}; the rows of {', '.join(short)}: 20 s"


def _grid_rate(result: dict[str, Any]) -> float | None:
    """The highest rate that held the bound in its 10 s on the grid: the acceptance's p99 bound, before the
    confirmation holds the rate to its margin for longer."""
    return max((r["offered_per_s"] for r in result.get("open_loop", []) if within_bound(r)), default=None)


def _confirmed_cells(result: dict[str, Any]) -> str:
    """The sustainable rate (in brackets: the grid's own where confirming it failed, and the rates given up because
    their control missed the bound) and the confirming run's p99."""
    sustainable, tried = result["sustainable_per_s"], result["confirmation"]
    grid = _grid_rate(result)
    given_up = [f"control missed at {attempt['rate']}" for attempt in result.get("given_up", [])]
    grid_given_up = any(attempt["rate"] == grid for attempt in result.get("given_up", []))
    notes = ([f"grid {grid}"] if grid != sustainable and not grid_given_up else []) + given_up
    rate = f"{sustainable or '-'}" + (f" ({'; '.join(notes)})" if notes else "")
    return f"{rate} | {tried[-1]['p99_ms'] if sustainable else '-'} | "


def _order_text(entries: list[dict[str, Any]]) -> str:
    """In which order the rows' requests sent the sentences: rows without the field sent them in file order, whose
    long news sentences come as one clump (a burst of work every 512 requests)."""
    in_file_order = [f"{e['server']} {e['model']} {e['backend']}" for e in entries if "sentence_order" not in e]
    if not in_file_order:
        return f", {SENTENCE_ORDER}"
    clump = " (whose long news sentences come as one clump: a burst of work every 512 requests)"
    if len(in_file_order) == len(entries):
        return ", in file order" + clump
    return f", {SENTENCE_ORDER}; the rows of {', '.join(in_file_order)} in file order" + clump


def _drain_sentence(entries: list[dict[str, Any]]) -> str:
    """How the phases after an overloaded one started: after `_drain`, or (rows measured before it) a 3 s pause."""
    paused = [f"{e['server']} {e['model']} {e['backend']}" for e in entries
              if not all("drained_s" in result for result in e["sizes"].values())]
    if len(paused) == len(entries):
        return ""
    return (" Each phase after an overloaded one starts once the server answers a request sent alone within "
            f"{P99_BOUND_MS:.0f} ms (a server that queues without bound is otherwise still working for clients that "
            "gave up)" + (f"; the rows of {', '.join(paused)} paused 3 s instead" if paused else "") + ".")


def _acceptance_lines(saved: dict[str, Any]) -> list[str]:
    """Issue 39's acceptance from the main table: sentences/s at the sustainable rate of polyembed against Infinity
    per backend class (torch; ONNX int8 against Infinity's optimum engine) and int8 against torch, then the
    overload of polyembed's rows (statuses that are neither 200 nor 429, recovery)."""
    rates = {(e["server"], e["model"], e["backend"], size): (r["sustainable_per_s"] or 0.0) * int(size)
             for e in saved["entries"] for size, r in e["sizes"].items()}  # 0.0: no rate held the bound
    grid = {(e["server"], e["model"], e["backend"], size): (_grid_rate(r) or 0.0) * int(size)
            for e in saved["entries"] for size, r in e["sizes"].items()}
    pairs = sorted({(model, size) for server, model, _, size in rates if server == "polyembed"},
                   key=lambda pair: (pair[0], int(pair[1])))
    if not pairs:
        return []

    def cell(key: tuple[str, str, str, str]) -> str:
        return "-" if key not in rates else f"{rates[key]:g}" if rates[key] else "none"

    def ratio(top: tuple[str, str, str, str], bottom: tuple[str, str, str, str]) -> tuple[str, bool]:
        """The cell and whether it compares grid rates: sustainable rates where both sides have one; else both
        sides' grid rates, named with them (a side with no rate through the confirmation would otherwise leave the
        comparison out)."""
        if rates.get(top) and rates.get(bottom):
            return f"{rates[top] / rates[bottom]:.2f}x", False
        if top not in rates or bottom not in rates or not (grid[top] or grid[bottom]):
            return "-", False  # a side not measured, or neither held even the grid's lowest rate
        held = " / ".join(f"{grid[key]:g}" if grid[key] else "none" for key in (top, bottom))
        text = f"{grid[top] / grid[bottom]:.2f}x" if grid[top] and grid[bottom] else "-"
        return f"{text} (grid {held})", True

    lines = ["", "Acceptance: sentences/s at the sustainable rate (the main table's), polyembed against Infinity per "
             "backend class and int8 against torch:", "",
             "| model | sentences / request | polyembed torch | Infinity torch | polyembed onnx-int8 | "
             "Infinity optimum (ONNX) | polyembed / Infinity, torch | polyembed / Infinity, ONNX | int8 / torch |",
             "|---|---|---|---|---|---|---|---|---|"]
    by_grid = False
    for model, size in pairs:
        ours, theirs = ("polyembed", model, "torch", size), ("infinity", model, "torch", size)
        ours_q, theirs_q = ("polyembed", model, "onnx-int8", size), ("infinity", model, "optimum", size)
        ratios = [ratio(ours, theirs), ratio(ours_q, theirs_q), ratio(ours_q, ours)]
        by_grid = by_grid or any(on_grid for _, on_grid in ratios)
        lines.append(f"| {model} | {size} | {cell(ours)} | {cell(theirs)} | {cell(ours_q)} | {cell(theirs_q)} | "
                     f"{' | '.join(text for text, _ in ratios)} |")
    if not all(rates.values()):
        lines += ["", "none: no offered rate held the bound, in its 10 s on the grid or (where one did) in its "
                  "confirmation (the main table's 'grid' note names the rate that held on the grid)."]
    if by_grid:
        lines += ["", "(grid A / B): a side has no sustainable rate, so the ratio is of both sides' highest rates "
                  "that held the bound in their 10 s on the grid, in sentences/s (the same offered rates for both; "
                  "the acceptance's p99 bound without the confirmation's headroom and margin; none: not even the "
                  "lowest)."]
    ours_rows = [r for e in saved["entries"] if e["server"] == "polyembed" for r in e["sizes"].values()
                 if r.get("overload")]
    given_up = [{"overload": attempt["overload"]} for r in ours_rows for attempt in r.get("given_up", [])
                if attempt.get("overload")]  # every overload's requests count, also at a rate given up after it
    counted = ours_rows + given_up
    failed = sum(n for r in counted for code, n in overload_statuses(r).items() if code not in ("200", "429"))
    verdicts = [recovered(r) for r in ours_rows]
    lines += ["", f"Overload of polyembed's {len(ours_rows)} rows"
              + (f" (and {len(given_up)} at rates given up after their control)" if given_up else "") + ": "
              f"{sum(sum(overload_statuses(r).values()) for r in counted):,} requests, {failed} answered with "
              f"neither a 200 nor a 429; recovered {SETTLE_S:g} s after the overload: {verdicts.count('yes')} within "
              f"{P99_BOUND_MS:.0f} ms, {verdicts.count('as control')} above it but not slower than their control, "
              f"{verdicts.count('no')} not."]
    return lines


def _cell(run: dict[str, Any] | None) -> str:
    if not run:
        return "-"
    statuses = statuses_text(run["statuses"])
    return f"{run['ok_per_s']}/s, p50 {run['p50_ms']} / p99 {run['p99_ms']} ms ({statuses})"


def _held_text(entries: list[dict[str, Any]]) -> str:
    """How the entries' servers were held to their core: a cpuset cgroup (no thread leaves it) or `taskset`, which
    onnxruntime's threads leave; rows measured before entries recorded it count as `taskset`."""
    held = {entry.get("isolation", "taskset") for entry in entries}
    if held == {"cpuset"}:
        return "held to one core by a cpuset cgroup (no thread it starts can leave it)"
    if held == {"taskset"}:
        return "pinned to one core by `taskset`"
    return ("held to one core by a cpuset cgroup in the rows measured since that was added, by `taskset` in the "
            "others")
