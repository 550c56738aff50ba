"""The WACSE step-profile renderer on stored results (tests/benchmarks/fixtures/wacse-profile: the run of
2026-11-26): each part's seconds and its share of a full step, AWP as the difference, byte-stable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import docs_kept_without, rendered_twice, stored_report


def test_the_profile_renders_from_stored_results_and_again_byte_for_byte(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report("benchmarks.wacse.render_profile", "wacse-profile",
                                    "# Benchmarks\n\n<!-- wacse-profile:start -->\n"
                                    "<!-- wacse-profile:end -->\n\nNotes\n",
                                    tmp_path / "benchmarks.md", tmp_path, monkeypatch)
    first = rendered_twice(module, docs)
    assert "(3.64 eflomal links per pair kept)" in first and "encodes 230 masked copies" in first
    assert "| TR + AWP + WTR, `awp_links: all` (one masked copy per link) | 11.30 | 95 % |" in first  # + AdamW
    assert "| AWP with `awp_links: all` (the difference) | 9.59 | 81 % |" in first  # all three minus TR + WTR
    assert "over all 250,037 tokens" in first and "| 1.37 | 12 % |" in first
    assert first.endswith("<!-- wacse-profile:end -->\n\nNotes\n")


def test_without_a_stored_profile_the_docs_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = ("# Benchmarks\n\n<!-- wacse-profile:start -->\n`python benchmarks/wacse_profile.py run`\n"
            "<!-- wacse-profile:end -->\n")
    docs_kept_without("benchmarks.wacse.render_profile", "wacse-profile", text, "profile.json", tmp_path, monkeypatch)
