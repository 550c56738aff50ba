"""The README's two commands from a fresh clone of the committed code, as CI meets them: `make setup` in a new
virtual environment, the test suite run serially (`make test PYTEST_WORKERS='-p no:xdist'`) and as `make test`
runs it (pytest-xdist, one worker per core), in the order given, one after the other on the same clone, then
optionally `make demo`. Each is timed by wall clock, and the suite also by pytest's own summary line.

    python -m benchmarks.test_suite.run run [--empty-caches] [--demo] [--order parallel serial] [--keep]
    python -m benchmarks.test_suite.run render

The clone is made beside this repository (so `../shared/data` resolves from it as it does from here) and removed
afterwards unless --keep. As in CI, $POLYEMBED_DATA is unset; --empty-caches gives the clone new, empty uv, pip
and polyembed caches in a temporary folder (setup then fetches every wheel and converts me5-small, as on a fresh
machine).
Results: results/bench/test_suite/results.json. Run it on an otherwise idle machine: it is a timing.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.results import REPO, machine, write_json
from benchmarks.common.script_cli import invocation, script_parser
from benchmarks.test_suite.spec import MODES, OUT, RESULT_FILE

SUMMARY = re.compile(r"^=*\s*(?P<line>\d+ passed.*? in (?P<seconds>[\d.]+)s.*?)\s*=*$", re.MULTILINE)
"""pytest's last line: `1598 passed, 2 skipped, 8 deselected, 60 warnings in 508.07s (0:08:28)`."""


def timed(command: str, clone: Path, env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run `command` (a shell line) in `clone` with its output in `log`; wall seconds, exit code and, for a test
    run, pytest's summary line and seconds."""
    print(f"$ {command}   (log: {log})", flush=True)
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as handle:
        code = subprocess.run(command, shell=True, cwd=clone, env=env, stdout=handle,
                              stderr=subprocess.STDOUT).returncode
    seconds = time.perf_counter() - started
    text = log.read_text(encoding="utf-8", errors="replace")
    summaries = list(SUMMARY.finditer(text))
    result: dict[str, Any] = {"command": command, "wall_seconds": round(seconds, 1), "exit_code": code,
                              "last_line": text.strip().splitlines()[-1] if text.strip() else ""}
    if summaries:
        result["pytest_summary"] = summaries[-1]["line"]
        result["pytest_seconds"] = float(summaries[-1]["seconds"])
    print(f"  exit {code} in {seconds:.0f} s: {result.get('pytest_summary', result['last_line'])}", flush=True)
    return result


def clone_environment(caches: Path, empty_caches: bool) -> dict[str, str]:
    """CI's environment: no data root set, the Hub offline; with `empty_caches`, new empty caches in `caches`."""
    env = {key: value for key, value in os.environ.items() if key not in ("POLYEMBED_DATA", "VIRTUAL_ENV")}
    env["HF_HUB_OFFLINE"] = "1"
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(REPO)))
    if empty_caches:
        for name, folder in (("POLYEMBED_CACHE", "polyembed"), ("UV_CACHE_DIR", "uv"), ("PIP_CACHE_DIR", "pip")):
            env[name] = str(caches / folder)
    return env


def run(order: list[str], empty_caches: bool, demo: bool, keep: bool) -> dict[str, Any]:
    """Clone, set up, run the suite in each mode of `order` (and the demo); the stored result."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    repo = Path(tempfile.mkdtemp(prefix=f"{REPO.name}-fresh-", dir=REPO.parent))  # ../shared/data as from REPO
    caches = Path(tempfile.mkdtemp(prefix="polyembed-fresh-caches-"))
    logs = OUT / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(repo)], check=True)
        env = clone_environment(caches, empty_caches)
        steps: dict[str, Any] = {"setup": timed("make setup", repo, env, logs / "setup.log")}
        if steps["setup"]["exit_code"]:
            raise SystemExit(f"make setup failed in {repo}: see {logs / 'setup.log'}")
        for mode in order:
            steps[mode] = timed(MODES[mode], repo, env, logs / f"{mode}.log")
        if demo:
            steps["demo"] = timed("make demo", repo, env, logs / "demo.log")
    finally:
        if keep:
            print(f"clone kept: {repo} (caches: {caches})")
        else:
            shutil.rmtree(repo, ignore_errors=True)
            shutil.rmtree(caches, ignore_errors=True)
    return {"command": invocation(), "commit": commit, "machine": machine(), "empty_caches": empty_caches,
            "order": order, "steps": steps}


def main() -> None:
    parser, commands = script_parser(__doc__)
    runner = commands.add_parser("run", help="Clone, set up, time the suite serial and parallel (and the demo).")
    runner.add_argument("--order", nargs="+", choices=sorted(MODES), default=["serial", "parallel"],
                        help="the suite's runs, in this order (default: %(default)s)")
    runner.add_argument("--empty-caches", action="store_true", help="new empty uv, pip and polyembed caches")
    runner.add_argument("--demo", action="store_true", help="also time `make demo` after the suite")
    runner.add_argument("--keep", action="store_true", help="keep the clone (it holds a full .venv)")
    commands.add_parser("render", help="The docs section from the stored JSON.")
    args = parser.parse_args()
    if args.command == "run":
        result = run(args.order, args.empty_caches, args.demo, args.keep)
        write_json(OUT / RESULT_FILE, result)
        print(f"stored in {OUT / RESULT_FILE}: " + shlex.join(f"{k}={v.get('wall_seconds')}"
                                                               for k, v in result["steps"].items()))
    from benchmarks.test_suite.render import render

    render()


if __name__ == "__main__":
    main()
