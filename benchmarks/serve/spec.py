"""What the serving benchmark's runners and renderers share: where serve.json goes, the section's markers and the
openings that name its tables, the cores and thread settings, the p99 bound and the rules a rate is judged by
(within the bound, how long a confirmation and a recovery last)."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.common.results import RESULTS
from benchmarks.serve.spec_phases import SETTLE_S

OUT = RESULTS / "serve"
START, END = "<!-- serve-load:start -->", "<!-- serve-load:end -->"
COMMAND = "python -m benchmarks.serve.run"
SERVER_CORE, CLIENT_CORE = "0", "1"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
              "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"}
P99_BOUND_MS = 500.0
CONFIRM_SECONDS, CONFIRM_TRIES = 20.0, 4
CONFIRM_HEADROOM, CONFIRM_MARGIN = 1.1, 0.8
"""A candidate rate is confirmed by a run at CONFIRM_HEADROOM times it whose p99 (over the run and in each 10 s)
stays within CONFIRM_MARGIN of the bound; each guards against one way a recovery stays over the bound long after
the overload while its control holds it. Capacity: the work an overload leaves behind drains only with capacity to
spare, and a rate the core serves only at its capacity drains it slowly. Latency: near capacity p99 varies from run
to run, and a rate whose own p99 sits near the bound leaves no room for the leftover work. Runs from a6236bd to
6349526 confirmed with the margin alone (at the rate itself), a run of df79671 with the headroom alone."""
GRID_MISSES = 2
"""The grid stops after this many rates in a row that miss the bound: the rates above them are beyond capacity,
and their overload would only lengthen the drain that follows."""
STEP_DOWNS = 2
"""How many times a rate whose control missed the bound is given up for the next lower one."""
RECOVERY_REQUESTS, RECOVERY_SECONDS = 100, (40.0, 120.0)
"""The recovery (and its control) lasts long enough that at least RECOVERY_REQUESTS are sent after its first
`spec_phases.SETTLE_S` (within the bounds): the p99 of fewer is the slowest single request, one stall of the machine."""
DRAIN_SECONDS = 90.0
"""How long a phase waits for the work left by an overloaded one (`load._drain`); after the grid, a server not done by
then is restarted."""
PORT = 8790
SENTENCE_ORDER = "shuffled once (seed 0)"
"""The file groups its sentences by source, and the long news sentences came as one clump: at a steady rate, a
burst of nearly twice the work every 512 requests (every 5 s at 100 requests/s), which set the p99 near capacity.
Shuffled once with a fixed seed, every server gets the same sentences in the same order at an even mean length."""
CALLS_OPENING = f"Batches cut by length (`{COMMAND} calls`"
QUEUE_OPENING = f"Queue limit (`{COMMAND} queue`"
MALFORMED_OPENING = f"Malformed requests (`{COMMAND} malformed`"
MALFORMED_SUMMARY = "Malformed suite per model"
OVERHEADS = [0, 8, 16, 32, 64, 128, 256, 1_000_000]
"""`call_overhead_tokens` values `calls` tries; the last never cuts a batch (one padded call per batch)."""
MALFORMED_LIMITS = ("--max-concurrent-requests", "8", "--max-request-tokens", "256", "--max-body-bytes", "65536")
"""The limits the malformed suite's server runs with: low enough that single requests and a burst reach them."""


def within_bound(run: dict[str, Any], bound: float = P99_BOUND_MS) -> bool:
    """All 200s, with the p99 within `bound` over the run and over each WINDOW_S of it: a rate whose p99 crosses
    the bound in some 10 s without any overload before it is not sustained, and a recovery judged at that rate
    would measure the rate, not the overload."""
    windows = [w for w in run.get("p99_windows_ms", []) if w is not None]
    return (set(run["statuses"]) == {"200"} and (run["p99_ms"] or 1e9) <= bound
            and all(w <= bound for w in windows))


def confirm_seconds(rate: float) -> float:
    """How long a candidate rate must hold the bound again: as long as the recovery and its control
    (`recovery_seconds`), over the whole phase. Near capacity a rate that holds for 20 s often misses over 40 s
    with no overload before it (the control); confirmed on a shorter run, the recovery and the control that follow
    would be judged at a rate the machine does not sustain for their length."""
    return recovery_seconds(rate)


def recovery_seconds(rate: float) -> float:
    """The recovery phase's length at `rate` requests/s: RECOVERY_REQUESTS after the settling time, within bounds."""
    least, most = RECOVERY_SECONDS
    return float(min(most, max(least, SETTLE_S + math.ceil((RECOVERY_REQUESTS + 1) / rate))))
