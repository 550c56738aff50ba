"""Rewrite every generated section of docs/benchmarks.md from the stored results (results/bench/):
`python benchmarks/render_all.py`, or `make render`.

A section whose tables have no stored JSON on this machine is left as it is (each renderer says so), so running
this never drops a measured table."""

from __future__ import annotations

import importlib

RENDERERS = ("eval_suites", "alignment", "distill_report", "emmax_report", "modular", "modular_cla_ablation",
             "modular_la", "precision", "scale_report", "vocabulary_transfer", "wacse", "wacse_profile", "language_id",
             "serve")
"""The modules whose `render()` rewrites a docs section from stored JSON (scripts and their *_report modules)."""


def main() -> None:
    from polyembed.messages import show_messages

    show_messages()
    for name in RENDERERS:
        print(f"== {name}", flush=True)
        try:
            importlib.import_module(name).render()
        except SystemExit as stop:  # a renderer with nothing stored says what to run first
            print(stop, flush=True)


if __name__ == "__main__":
    main()
