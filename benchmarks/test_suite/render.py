"""The fresh-clone section of docs/benchmarks.md, from the stored results.json only: what was run and on what,
each step's wall time and outcome, and how much faster the parallel test run is than the serial one."""

from __future__ import annotations

from typing import Any

from benchmarks.common.docs_sections import missing_tables, publish, shown_section
from benchmarks.common.results import DOCS, load_json
from benchmarks.test_suite.spec import ACCEPTANCE, COMMAND, END, MODES, OUT, RESULT_FILE, START

WHAT = {"setup": "`make setup`", "demo": "`make demo`", **{mode: f"`{command}`" for mode, command in MODES.items()}}


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s ({int(seconds // 60)} min {round(seconds % 60):02d} s)"


def _verdict(steps: dict[str, Any]) -> str:
    serial, parallel = steps.get("serial", {}), steps.get("parallel", {})
    if any("pytest_seconds" not in run or run["exit_code"] for run in (serial, parallel)):
        return "The two test runs did not both pass: no comparison."
    cut = 1 - parallel["pytest_seconds"] / serial["pytest_seconds"]
    wall = 1 - parallel["wall_seconds"] / serial["wall_seconds"]
    met = "meets" if cut >= ACCEPTANCE else "misses"
    return (f"**The parallel run's pytest time is {cut:.0%} below the serial run's** ({parallel['pytest_seconds']:.0f} "
            f"s against {serial['pytest_seconds']:.0f} s; wall time {wall:.0%} below), which {met} the goal of "
            f"{ACCEPTANCE:.0%}.")


def render() -> None:
    """The section from results.json; left alone (with a note) where no JSON is stored here."""
    payload = load_json(OUT / RESULT_FILE)
    if payload is None:
        if missing_tables(DOCS, START, END, {"test-suite": COMMAND}, set()):
            print(f"docs/benchmarks.md left as it is: no {RESULT_FILE} in {OUT}")
        elif not shown_section(DOCS, START, END):  # the page declares the section: say how to fill it
            publish(DOCS, START, END, [START, f"Not measured on this machine yet: `{COMMAND} --empty-caches --demo`.",
                                       END])
        return
    steps = payload["steps"]
    caches = ("new, empty uv, pip and polyembed caches (every wheel fetched again, me5-small converted)"
              if payload["empty_caches"] else "the machine's uv, pip and polyembed caches")
    lines = [START, "### The README's commands from a fresh clone", "",
             f"`{payload['command']}` ({payload['machine']['cpu']}): a fresh clone of the committed code beside the "
             f"data, a new virtual environment, {caches}, `$POLYEMBED_DATA` unset as in CI; each step after the "
             "one before on the same clone, nothing else running.", "",
             "| step | command | wall time | result |", "|---|---|---|---|"]
    for name, step in steps.items():
        # pytest's summary, the demo's last line (what it wrote) or a failing step's; not setup's (local paths)
        result = step.get("pytest_summary") or (step["last_line"] if name == "demo" or step["exit_code"] else "")
        lines.append(f"| {name} | {WHAT.get(name, name)} | {_minutes(step['wall_seconds'])} | exit "
                     f"{step['exit_code']}{'; ' + result.replace('|', '/') if result else ''} |")
    lines += ["", _verdict(steps), "", END]
    publish(DOCS, START, END, lines)
