"""polyembed's benchmarks, one package per study, run as modules from the repository root:

    python -m benchmarks.<study>.run <subcommand> ...     # measure, store JSON under results/bench/<folder>/
    python -m benchmarks.render_all                       # every docs/benchmarks.md section from stored JSON

Each study's run modules measure and store; its render modules read stored JSON only and never import a run
module (tests/benchmarks/test_import_graph.py checks it), so a section renders on a machine that cannot measure.
Shared pieces (paths, JSON, tables, docs sections, the command line) are in `benchmarks.common`.
"""
