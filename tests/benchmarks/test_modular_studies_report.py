"""The modular studies' docs renderers on stored results (tests/benchmarks/fixtures/modular-studies: the real
seed-0 runs of `benchmarks.modular.run_cla run` and `benchmarks.modular.run_la run`, 2026-11-25)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import rendered_twice, stored_report, stored_results

SECTIONS = ("# Benchmarks\n\n<!-- modular-cla:start -->\n<!-- modular-cla:end -->\n\n"
            "<!-- modular-genres:start -->\n<!-- modular-genres:end -->\n\n"
            "<!-- modular-la:start -->\n<!-- modular-la:end -->\n")


@pytest.mark.parametrize("name", ["benchmarks.modular.render_cla", "benchmarks.modular.render_la"])
def test_each_study_renders_its_section_and_again_byte_for_byte(name: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    module, docs, _ = stored_report(name, "modular-studies", SECTIONS, tmp_path / "benchmarks.md", tmp_path,
                                    monkeypatch)
    first = rendered_twice(module, docs)
    if name == "benchmarks.modular.render_cla":
        assert "\n#### Choosing the CLA learning rate" in first
        assert "<!-- modular-la:start -->\n<!-- modular-la:end" in first
        assert "Best mean en-X dev STS:" in first
        # seed 0's en-ru genres: CLA gains on test captions, hardly moves the mean cosine
        assert "| test | captions | 625 | 68.0 (0.772) -> 78.1 (0.772) | +10.2 |" in first
        assert "| dev | forums | 375 | 60.4 (0.761) -> 59.1 (0.723) | -1.2 |" in first
    else:
        # the dev choice per language: no LA for de and ru, LA at 5e-5 for kk
        assert "| de | no LA: after SE | 83.7 | 77.5 | 97.2 | 80.2 | 69.2 | 98.0 | yes |" in first
        assert "| kk | LA at 5e-5: after SE | 76.8 | 68.6 | 98.5 | 79.6 | 58.1 | 78.7 | yes |" in first
        assert "<!-- modular-cla:start -->\n<!-- modular-cla:end" in first


@pytest.mark.parametrize(("name", "shown"), [
    ("benchmarks.modular.render_cla", "python benchmarks/modular_cla_ablation.py run"),  # as rendered before
    ("benchmarks.modular.render_cla", "python -m benchmarks.modular.run_cla run"),
    ("benchmarks.modular.render_la", "python benchmarks/modular_la.py run"),
    ("benchmarks.modular.render_la", "python -m benchmarks.modular.run_la run")])
def test_a_study_without_its_results_leaves_the_shown_section_alone(name: str, shown: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    text = SECTIONS.replace("<!-- modular-cla:end -->", f"`{shown}`\n<!-- modular-cla:end -->").replace(
        "<!-- modular-la:end -->", f"`{shown}`\n<!-- modular-la:end -->")
    module, docs, results = stored_report(name, "modular-studies", text, tmp_path / "benchmarks.md", tmp_path,
                                          monkeypatch)
    import shutil

    shutil.rmtree(results / ("cla-ablation" if name == "benchmarks.modular.render_cla" else "la-study"))
    text = text.replace("<!-- modular-genres:end -->", "`modular_cla_ablation.py genres`\n<!-- modular-genres:end -->")
    docs.write_text(text, encoding="utf-8")
    module.render()
    assert docs.read_text(encoding="utf-8") == text
    assert "left alone" in capsys.readouterr().out


def test_rows_of_another_pipeline_are_set_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rerun of the seed's pipeline makes the stored rows (and their 'no CLA' row) another pipeline's: they move
    to results-<fingerprint>.json and the rows start afresh; rows of the current pipeline are kept."""
    import json

    module, results = stored_results("benchmarks.modular.run_cla", "modular-studies", tmp_path, monkeypatch)
    pipeline = results / "seed-0" / "pipeline" / "pipeline.json"
    pipeline.parent.mkdir(parents=True)
    pipeline.write_text('{"run": 1}', encoding="utf-8")
    stored = results / "cla-ablation" / "seed-0"
    fresh = module._results_of_pipeline(0, 100)  # the fixture has no fingerprint: an unknown pipeline
    assert fresh["languages"] == {} and fresh["pipeline"] == module._pipeline_fingerprint(0)
    assert (stored / "results-unknown.json").is_file() and not (stored / "results.json").exists()
    fresh["languages"]["de"] = {"no-cla": {"cross": 1.0}}
    (stored / "results.json").write_text(json.dumps(fresh), encoding="utf-8")
    assert module._results_of_pipeline(0, 100)["languages"] == {"de": {"no-cla": {"cross": 1.0}}}
    pipeline.write_text('{"run": 2}', encoding="utf-8")
    assert module._results_of_pipeline(0, 100)["languages"] == {}
    assert (stored / f"results-{fresh['pipeline']}.json").is_file()
