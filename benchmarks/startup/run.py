"""How long the command line takes to answer `--help`: the first thing a user runs, and what every shell
completion waits for. Each command runs `--repeats` times in turn (the first run of all is a warm-up, not
counted: it fills the OS file cache and Python's bytecode cache); the median wall time is reported.

    python -m benchmarks.startup.run run [--repeats 7]

Results: results/bench/startup/results.json.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from benchmarks.common.results import RESULTS, machine, write_json
from benchmarks.common.script_cli import script_parser

OUT = RESULTS / "startup"
COMMANDS = (["--help"], ["train", "--help"], ["train", "distill", "--help"], ["encode", "--help"],
            ["serve", "--help"], ["eval", "--help"])
TARGETS = {"--help": 1.5, "train distill --help": 3.0}
"""The limits the project set itself, in seconds."""


def seconds(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "polyembed", *args], check=True, capture_output=True,
                   env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300)
    return time.perf_counter() - started


def main() -> None:
    parser, commands = script_parser(__doc__)
    runner = commands.add_parser("run", help="Time every command's --help.")
    runner.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    seconds(["--help"])  # warm-up
    times: dict[str, list[float]] = {" ".join(command): [] for command in COMMANDS}
    for _ in range(args.repeats):
        for command in COMMANDS:
            times[" ".join(command)].append(seconds(command))
    print("| command | median s | min s | max s | target s |\n|---|---|---|---|---|")
    for name, values in times.items():
        target = TARGETS.get(name)
        print(f"| polyembed {name} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} | "
              f"{'' if target is None else f'< {target}'} |")
    write_json(OUT / "results.json", {"machine": machine(), "repeats": args.repeats, "seconds": times})
    print(f"{machine()['cpu']}; stored in {OUT / 'results.json'}")


if __name__ == "__main__":
    main()
