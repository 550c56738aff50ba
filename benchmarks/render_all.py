"""Rewrite docs/benchmarks.md from the stored results (results/bench/): `python -m benchmarks.render_all`, or
`make render`. Every renderer rewrites its sections, then the page is assembled around them from
benchmarks/common/page.py (title, intro, one heading and its links per study), so nothing on the page is kept by
hand.

A section whose tables have no stored JSON here is left as it is (each renderer says so), so running this never
drops a measured table. Only render modules are imported: nothing here can start a measurement.
"""

from __future__ import annotations

import importlib

RENDERERS = ("benchmarks.eval_suites.render", "benchmarks.alignment.render", "benchmarks.distill.render",
             "benchmarks.emmax.render", "benchmarks.modular.render", "benchmarks.modular.render_cla",
             "benchmarks.modular.render_la", "benchmarks.precision.render", "benchmarks.scale.render",
             "benchmarks.vocabulary_transfer.render", "benchmarks.wacse.render", "benchmarks.wacse.render_profile",
             "benchmarks.language_id.render", "benchmarks.serve.render", "benchmarks.new_language.render",
             "benchmarks.training_throughput.render", "benchmarks.test_suite.render")
"""The modules whose `render()` rewrites docs sections from stored JSON (where the page shows them is
benchmarks/common/page.py's business, not this order's)."""


def main() -> None:
    from benchmarks.common.page import write_page
    from benchmarks.common.results import DOCS
    from polyembed.messages import show_messages

    show_messages()
    for name in RENDERERS:
        print(f"== {name}", flush=True)
        try:
            importlib.import_module(name).render()
        except SystemExit as stop:  # a renderer with nothing stored says what to run first
            print(stop, flush=True)
    changed = write_page(DOCS)
    print(f"== {DOCS}: " + ("the text around the sections rewritten from benchmarks/common/page.py" if changed
                            else "the text around the sections as benchmarks/common/page.py declares it"))


if __name__ == "__main__":
    main()
