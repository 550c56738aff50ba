"""The serving section's tables beside the main one: the queue runs, the recovery per window and per second, the
malformed suite; and the verdicts and cells they share with it (recovered, statuses, the control's p99)."""

from __future__ import annotations

from typing import Any

from benchmarks.serve.spec import (
    MALFORMED_LIMITS,
    MALFORMED_OPENING,
    MALFORMED_SUMMARY,
    P99_BOUND_MS,
    QUEUE_OPENING,
    RECOVERY_REQUESTS,
    RECOVERY_SECONDS,
    SENTENCE_ORDER,
)
from benchmarks.serve.spec_phases import SETTLE_S, WINDOW_S

RECOVERY_TEXT = f"about {RECOVERY_REQUESTS} requests sent from {SETTLE_S:g} s into it on"
QUEUE_SETTING = "--max-queue-seconds / --queue-target-seconds / --resume-queue-seconds"


def queue_rows(found: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    """The table of `queue`: per run, the sustainable rate, the overload's statuses and p99, the recovery p99."""
    lines = ["", f"{QUEUE_OPENING}): each run finds its sustainable rate on the grid, "
             f"overloads at twice it for 10 s, then offers the sustainable rate ({_queue_recovery_length(found)}); "
             "statuses of both phases, overload p99 of the 200s of the 10 s at twice the rate, "
             f"recovery p99 from {SETTLE_S:g} s on; control: the same phase once more with no overload before it "
             "(runs in the "
             "order made, alternating between settings; a target or resume shown '-' predates its option: no "
             "target, no drain; a resume at or above the limit: no drain; recovered: as in the main table"
             + _queue_order_text(found) + "):", "",
             f"| model | backend | sentences / request | {QUEUE_SETTING} | "
             "sustainable (req/s) | overload statuses | overload p99 ms | recovery p99 ms | control p99 ms | "
             "recovered |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key, by_setting in found.items():
        model, backend = key.rsplit("/", 1)
        for setting, runs in by_setting.items():
            label = _setting_label(setting)
            for result in runs:
                control = result.get("control")
                overload = result.get("overload") or []
                statuses = overload_statuses(result)
                lines.append(f"| {model} | {backend} | {result.get('sentences_per_request', 1)} | {label} | "
                             f"{result['sustainable_per_s'] or '-'} | "
                             + statuses_text(statuses)
                             + f" | {overload[0]['p99_ms'] if overload else '-'} | "
                             f"{recovery_p99(overload[-1]) if overload else '-'} | "
                             f"{control_cell(control)} | {recovered(result)} |")
    named = [([*key.rsplit("/", 1), str(r.get("sentences_per_request", 1)), _setting_label(setting)], r)
             for key, by_setting in found.items() for setting, runs in by_setting.items() for r in runs]
    return (lines + window_lines(named, ["model", "backend", "sentences / request", QUEUE_SETTING],
                                  f"Queue runs per {WINDOW_S:g} s")
            + second_lines(named, ["model", "backend", "sentences / request", QUEUE_SETTING], "Queue runs"))


def _queue_order_text(found: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    """How many of the queue runs sent the sentences in file order (with its clump of long ones) and how many in
    SENTENCE_ORDER."""
    runs = [r for by_setting in found.values() for rs in by_setting.values() for r in rs]
    shuffled = sum("sentence_order" in r for r in runs)
    if not shuffled:
        return ""
    return (f"; sentences {SENTENCE_ORDER} in {shuffled} of the {len(runs)} runs, in file order (its long news "
            "sentences as one clump) in the others")


def _queue_recovery_length(found: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    """How long the queue runs' recovery phases lasted (20 s in the runs from before RECOVERY_REQUESTS)."""
    phases = [r["overload"][-1]["seconds"] for runs in found.values() for results in runs.values()
              for r in results if r.get("overload")]
    least, most = RECOVERY_SECONDS
    short = sum(seconds <= 20 for seconds in phases)
    if short == len(phases):
        return "20 s"
    return f"{least:g}-{most:g} s: {RECOVERY_TEXT}" + (f"; {short} of the runs: 20 s" if short else "")


def _back_after(phase: dict[str, Any]) -> str:
    """The second of the phase's first SETTLE_S from which every second's 200s had p99 within the bound and no
    request got another answer ('0': from the start; '> 10': not within them)."""
    slow = [i for i, (p99, other) in enumerate(zip(phase["p99_seconds_ms"], phase["not_ok_seconds"], strict=True))
            if other or (p99 is not None and p99 > P99_BOUND_MS)]
    after = slow[-1] + 1 if slow else 0
    return f"> {len(phase['p99_seconds_ms'])}" if after == len(phase["p99_seconds_ms"]) else str(after)


def second_lines(rows: list[tuple[list[str], dict[str, Any]]], heads: list[str], opening: str) -> list[str]:
    """The first SETTLE_S of the recovery and its control second by second, for the runs that stored it: how long
    the work an overload left behind took to drain (the server's queue wait) and the latency to come back."""
    rows = [(cells, r) for cells, r in rows if r.get("overload") and "p99_seconds_ms" in r["overload"][-1]
            and r.get("control") and "p99_seconds_ms" in r["control"][0]]
    if not rows:
        return []

    def seconds(phase: dict[str, Any]) -> str:
        return " / ".join(_number(p99) + (f" ({other})" if other else "") for p99, other
                          in zip(phase["p99_seconds_ms"], phase["not_ok_seconds"], strict=True))

    def waits(phase: dict[str, Any]) -> str:
        found = phase.get("queue_wait_per_s") or []
        return " / ".join(_number(wait) for at, wait in found if at < SETTLE_S) or "-"

    lines = ["", f"{opening}, the first {SETTLE_S:g} s of the recovery and of its control second by second: the p99 "
             "(ms) of the 200s of the requests sent in each second (in brackets, how many got another answer: a "
             "429 of the queue limit or of the drain after it); the queue wait the server estimated (s, /metrics, "
             f"sampled each second); back from: the second from which every second stayed within {P99_BOUND_MS:.0f}"
             " ms with no other answer:", "",
             "| " + " | ".join(heads) + " | rate (req/s) | recovery p99 per s | recovery queue wait per s | back from "
             "(s) | control p99 per s | control back from (s) |", "|" + "---|" * (len(heads) + 6)]
    for cells, result in rows:
        recovery, control = result["overload"][-1], result["control"][0]
        lines.append("| " + " | ".join(cells) + f" | {result['sustainable_per_s']:g} | {seconds(recovery)} | "
                     f"{waits(recovery)} | {_back_after(recovery)} | {seconds(control)} | {_back_after(control)} |")
    return lines


def _setting_label(setting: str) -> str:
    """A queue run's setting as `limit / target / resume`; runs from before an option show it as '-'."""
    parts = setting.split(" / ")
    return " / ".join(parts + ["-"] * (3 - len(parts)))


def overload_statuses(result: dict[str, Any]) -> dict[str, int]:
    """Statuses over the overload and the recovery phase together."""
    statuses: dict[str, int] = {}
    for phase in result.get("overload") or []:
        for code, count in phase["statuses"].items():
            statuses[code] = statuses.get(code, 0) + count
    return statuses


def recovery_p99(phase: dict[str, Any]) -> float | None:
    """The p99 of a recovery or control phase from `SETTLE_S` into it. Runs from before its 40-s phases stored
    the p99 of the second half of 20 s: the same requests."""
    return phase.get("p99_after_settle_ms", phase.get("p99_last_half_ms"))


def recovered(result: dict[str, Any]) -> str:
    """Whether the sustainable p99 is back `SETTLE_S` into the recovery: "yes" within the bound; "as control"
    above it, but with no larger share of requests over the bound than the control (the same rate with no overload
    before it, measured a minute later: on a machine whose capacity moves, the rate's own tail at that time) by
    `_slower_than_control`; "no" otherwise, or when any request of the overload or the recovery got neither a 200
    nor a 429."""
    overload = result.get("overload")
    if not overload:
        return "-"
    recovery = recovery_p99(overload[-1])
    control = (result.get("control") or [{}])[0]
    if recovery is None or set(overload_statuses(result)) - {"200", "429"}:
        return "no"
    if recovery <= P99_BOUND_MS:
        return "yes"
    slower = _slower_than_control(overload[-1], control)
    if slower is None:  # runs that kept no latencies: the p99s themselves
        slower = recovery_p99(control) is None or recovery > recovery_p99(control)
    return "no" if slower else "as control"


AS_CONTROL_TEST = (f"one-sided Fisher's exact test on the requests sent from {SETTLE_S:g} s on, p < 0.05 counts as "
                    "more; runs that kept no latencies: a recovery p99 not above the control's")


def _slower_than_control(recovery: dict[str, Any], control: dict[str, Any]) -> bool | None:
    """Whether more of the recovery's requests from `SETTLE_S` on went unanswered within the bound (slower, refused
    or failed) than of the control's, beyond chance: one-sided Fisher's exact test, p < 0.05. The p99 of 100 requests
    is their second slowest, and of two samples of one rate either is the higher half the time: comparing the p99s
    themselves would call a recovery slow by a coin toss. None where a phase kept no latencies."""
    from scipy.stats import fisher_exact

    if "latencies_after_settle_ms" not in recovery or "latencies_after_settle_ms" not in control:
        return None

    def slow_and_fast(phase: dict[str, Any]) -> list[int]:
        fast = sum(latency <= P99_BOUND_MS for latency in phase["latencies_after_settle_ms"])
        return [phase["requests_after_settle"] - fast, fast]

    return bool(fisher_exact([slow_and_fast(recovery), slow_and_fast(control)], alternative="greater").pvalue < 0.05)


def window_lines(rows: list[tuple[list[str], dict[str, Any]]], heads: list[str], opening: str) -> list[str]:
    """Recovery and control per 10 s for the runs that stored it (`rows`: the cells that name a run under
    `heads`, and its result): a p99 above the bound in one window with the windows around it low is a stall of
    that moment (seen in the control as well), a run of them is the server."""
    rows = [(cells, r) for cells, r in rows
            if r.get("overload") and "p99_windows_ms" in r["overload"][-1] and r.get("control")]
    if not rows:
        return []

    def windows(phase: dict[str, Any], key: str = "p99_windows_ms") -> str:
        return " / ".join(_number(v) for v in phase[key]) if key in phase else "-"

    def server(phase: dict[str, Any]) -> str:
        if "server_windows" not in phase:
            return "-"
        return " / ".join("-" if w is None else _server_cell(w) for w in phase["server_windows"])

    accounted = any("server_windows" in r["overload"][-1] for _, r in rows)

    lines = ["", f"{opening}: the p99 (ms) of the requests sent in each {WINDOW_S:g} s of the recovery phase and of "
             f"its control, and how many were sent from {SETTLE_S:g} s on (what the recovered column judges); steal: "
             "CPU seconds the hypervisor took from the machine's vCPUs in each window (`/proc/stat`; '-' where "
             "not recorded), time in which neither server nor generator ran"
             + ("; model: the server's own /metrics per window, milliseconds of model calls per thousand padded "
                "tokens and (in brackets) the share of the window they took, then, where recorded, the share of "
                "the core the whole server process used (`/proc/PID/stat`: model, HTTP, tokenising), then, where "
                "recorded, the mean of the queue wait the server estimated (/metrics, sampled each second): the "
                "same cost with a higher latency is queueing, a higher cost a slower machine, a CPU share near "
                "100 % a saturated core, a falling wait the overload's leftover work draining"
                if accounted else "") + ":", "",
             "| " + " | ".join(heads) + f" | rate (req/s) | seconds | requests from {SETTLE_S:g} s, recovery / "
             f"control | recovery p99 per {WINDOW_S:g} s | steal s | " + ("model | " if accounted else "")
             + f"control p99 per {WINDOW_S:g} s | steal s | " + ("model | " if accounted else "") + "recovered |",
             "|" + "---|" * (len(heads) + 8 + 2 * accounted)]
    for cells, result in rows:
        recovery, control = result["overload"][-1], result["control"][0]
        lines.append("| " + " | ".join(cells) + f" | {result['sustainable_per_s']:g} | {recovery['seconds']:g} | "
                     f"{recovery['requests_after_settle']} / {control['requests_after_settle']} | "
                     f"{windows(recovery)} | {windows(recovery, 'steal_windows_s')} | "
                     + (f"{server(recovery)} | " if accounted else "")
                     + f"{windows(control)} | {windows(control, 'steal_windows_s')} | "
                     + (f"{server(control)} | " if accounted else "") + f"{recovered(result)} |")
    return lines


def _server_cell(window: dict[str, Any]) -> str:
    """'cost (model share, cpu share, queue wait)' of one window; what the server did not report is left out."""
    shares = ([f"{window['model_busy']:.0%}"] if "model_busy" in window else []) + (
        [f"cpu {window['cpu_busy']:.0%}"] if "cpu_busy" in window else []) + (
        [f"wait {window['queue_wait_s']:.2f} s"] if "queue_wait_s" in window else [])
    cost = _number(window["model_ms_per_1k_tokens"]) if "model_ms_per_1k_tokens" in window else ""
    return f"{cost} ({', '.join(shares)})".strip()


def control_cell(control: list[dict[str, Any]] | None) -> str:
    """The control's p99 from `SETTLE_S` on, with any status but 200 beside it (a rate refused without overload)."""
    if not control:
        return "-"
    other = {code: count for code, count in control[0]["statuses"].items() if code != "200"}
    return f"{recovery_p99(control[0])}" + "".join(f" ({code}: {count})" for code, count in sorted(other.items()))


def statuses_text(statuses: dict[str, int]) -> str:
    """"200: 90, 429: 10" in code order ("-" for none)."""
    return ", ".join(f"{code}: {count}" for code, count in sorted(statuses.items())) or "-"


def _number(value: float | None) -> str:
    """A number as the tables show it ('-' for none)."""
    return "-" if value is None else f"{value:g}"


def malformed_lines(found: dict[str, dict[str, Any]]) -> list[str]:
    """The malformed suite's tables: one row per bad request and model, then one per model for the good traffic,
    the burst, the probe and the server's own count."""
    lines = ["", f"{MALFORMED_OPENING}, the server started with `{' '.join(MALFORMED_LIMITS)}`): each bad request "
             "sent among 48 good single-sentence requests on 6 concurrent connections; then 24 requests of 16 "
             "sentences at once (over the concurrency limit), /metrics scraped every 20 ms while it runs; a probe "
             "sentence embedded alone before, between and after. Expected: the status the server should answer with "
             "('4xx': any):", "",
             "| model | backend | bad request | expected | status | error message |", "|---|---|---|---|---|---|"]
    for key, result in found.items():
        model, backend = key.rsplit("/", 1)
        for case in result["cases"]:
            message = case["error"].replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {model} | {backend} | {case['case']} | {case['expected'] or '4xx'} | {case['status']} "
                         f"| {message} |")
    lines += ["", f"{MALFORMED_SUMMARY}: the bad requests' statuses against the expected ones, the good requests "
              "among them, the burst, the probe, and the server's own count of answers by status (/metrics):", "",
              "| model | backend | bad requests as expected | good requests | lowest cosine, good request to the "
              "same sentence alone | burst of 24 | Retry-After on every 429 | most in flight / queued seen during "
              "the burst | probe identical | answers by status (/metrics) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for key, result in found.items():
        model, backend = key.rsplit("/", 1)
        good, burst, cases = result["good"], result["burst"], result["cases"]
        expected = sum(400 <= c["status"] < 500 and c["status"] == (c["expected"] or c["status"]) for c in cases)
        lines.append(f"| {model} | {backend} | {expected} of {len(cases)} | "
                     + statuses_text(good["statuses"])
                     + f" | {good['min_cosine_to_alone']} | "
                     + statuses_text(burst["statuses"])
                     + f" | {'yes' if burst['retry_after_on_every_429'] else 'no'} | "
                     f"{_number(burst['in_flight_during'])} / {_number(burst['queue_depth_during'])} | "
                     f"{'yes' if result['probe_identical'] else 'no'} | "
                     + statuses_text(result["requests_by_status"]) + " |")
    return lines
