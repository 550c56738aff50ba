"""What the fresh-clone runner and its renderer share: where the JSON goes, the section's markers, the command
that makes it, the two ways the suite is run and the issue's threshold."""

from __future__ import annotations

from benchmarks.common.results import RESULTS

OUT = RESULTS / "test_suite"
RESULT_FILE = "results.json"
START, END = "<!-- test-suite:start -->", "<!-- test-suite:end -->"
COMMAND = "python -m benchmarks.test_suite.run run"
MODES = {
    "serial": "make test PYTEST_WORKERS='-p no:xdist'",
    "parallel": "make test",
}
"""The suite in one process, and as the README's `make test` runs it (one pytest-xdist worker per core)."""
ACCEPTANCE = 0.35
"""The parallel run's pytest time must be at least this share below the serial run's, on the same machine."""
