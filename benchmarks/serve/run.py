"""Serving under load (issue 39): polyembed serve and Infinity side by side -> results/bench/serve, docs.

  python -m benchmarks.serve.run selftest                      # the load generator's own ceiling (stub server)
  python -m benchmarks.serve.run run --models minilm-en me5-small --backends torch onnx-int8 \\
      [--infinity /path/to/infinity-venv --infinity-engines torch optimum] [--rates 50 100 200 400 800]
  python -m benchmarks.serve.run queue [--models minilm-en] [--limits 1.0] [--targets 0 0.25] [--resumes 1 0.25]
      [--repeats 2] [--sizes 1]
  python -m benchmarks.serve.run malformed [--models minilm-en me5-small] [--backend onnx-int8]
  python -m benchmarks.serve.run render

Every server runs on core 0 with one torch / onnxruntime thread (held there by a cpuset cgroup where the
machine lets us make one, else by `taskset`) and no line logged per request (`--no-access-log`; Infinity
`--log-level warning`), the load generator on core 1 (`taskset`). Per server and request
size (1 and 16 sentences): the open loop at each offered rate (requests of
16 sentences at a 16th of it: the same sentences per second; `loadgen`: latency from the scheduled send
time; the grid, lowest rate first, stops after two rates in a row that miss the bound), the sustainable rate (the
highest offered rate whose requests all got a 200 with p99 <= 500 ms in the grid's 10 s and whose 1.1x kept p99
<= 400 ms, over the run and in each 10 s, for as long as the recovery phase below: otherwise the next lower one), an
overload at twice that rate for 10 s followed by the sustainable rate for long enough that 100 requests leave after its
first 10 s (40-120 s; statuses; recovery: the p99 of those requests, and of each 10 s), the control (the same
phase once more with no overload before it: near capacity, p99 varies between runs on one machine), and wrk's
closed loop with 200 connections. Each phase after an overloaded one waits until the server answers a request
sent alone within the bound (`load._drain`): a server that queues without bound is otherwise still working for
clients that have given up. The open loop sends the 512 STS-B test sentences in turn (one or 16 per
request; wrk repeats the first request), Infinity's with the model's default prompt in front, since it applies
none: both servers embed the same token sequences.
Beside them, the raw `encode` ceiling of the same model and backend on the same core (batch 64). Infinity
(`infinity-emb`, which needs numpy < 2 and sentence-transformers < 4) runs from its own virtual environment.

Modules: `server` (the servers, pinned), `sampling` (the open loop and the server's account), `load` (`run`,
`queue`, `selftest`), `calls`, `malformed`; `render` and `render_tables` write the docs section from serve.json.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from benchmarks.serve.calls import call_costs, call_costs_here
from benchmarks.serve.load import queue_limits, run, selftest
from benchmarks.serve.malformed import malformed
from benchmarks.serve.render import render

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run")
    one.add_argument("--models", nargs="+", default=["minilm-en", "me5-small"])
    one.add_argument("--backends", nargs="*", default=["torch", "onnx-int8", "openvino"])
    one.add_argument("--infinity", type=Path, help="an infinity-emb virtual environment")
    one.add_argument("--infinity-engines", nargs="+", default=["torch", "optimum"])
    one.add_argument("--rates", nargs="+", type=float, default=[50, 100, 200, 400, 800])
    costs = sub.add_parser("calls", help="the fixed cost of a model call, and what cutting batches by length gives")
    costs.add_argument("--models", nargs="+", default=["minilm-en", "me5-small"])
    costs.add_argument("--backends", nargs="+", default=["torch", "onnx-int8", "openvino"])
    inner = sub.add_parser("calls-inner", help=argparse.SUPPRESS)
    inner.add_argument("model")
    inner.add_argument("backend")
    queue = sub.add_parser("queue", help="overload and recovery per --max-queue-seconds and --queue-target-seconds")
    queue.add_argument("--models", nargs="+", default=["minilm-en", "me5-small"])
    queue.add_argument("--backend", default="onnx-int8")
    queue.add_argument("--limits", nargs="+", type=float, default=[1.0])
    queue.add_argument("--targets", nargs="+", type=float, default=[0.0, 0.25])
    queue.add_argument("--resumes", nargs="+", type=float, default=[0.25],
                       help="--resume-queue-seconds values (at or above the limit: no drain after a refusal)")
    queue.add_argument("--repeats", type=int, default=2)
    queue.add_argument("--rates", nargs="+", type=float, default=[100, 140, 200, 280, 400])
    queue.add_argument("--sizes", nargs="+", type=int, default=[1], help="sentences per request")
    bad = sub.add_parser("malformed", help="bad requests among concurrent good ones, a burst over the limits")
    bad.add_argument("--models", nargs="+", default=["minilm-en", "me5-small"])
    bad.add_argument("--backend", default="onnx-int8")
    sub.add_parser("selftest")
    sub.add_parser("render")
    args = parser.parse_args()
    if args.command == "run":
        run(args.models, args.backends, args.infinity, args.infinity_engines, args.rates)
    elif args.command == "queue":
        queue_limits(args.models, args.backend, args.limits, args.targets, args.repeats, args.rates,
                     tuple(args.sizes), tuple(args.resumes))
    elif args.command == "malformed":
        malformed(args.models, args.backend)
    elif args.command == "calls":
        call_costs(args.models, args.backends)
    elif args.command == "calls-inner":
        print(json.dumps(call_costs_here(args.model, args.backend)))
    elif args.command == "selftest":
        selftest()
    else:
        render()
