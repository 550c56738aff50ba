"""docs/benchmarks.md is generated as a whole: the text around its sections comes from benchmarks/common/page.py,
so the committed page is what assembling it gives (a hand edit outside the sections fails here), and a section
the page does not declare, or a declared one missing, stops the assembly with its name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.common import page
from benchmarks.common.results import DOCS


def _shown() -> str:
    return DOCS.read_text(encoding="utf-8")


def test_the_committed_page_is_what_assembling_it_gives() -> None:
    shown = _shown()
    assert page.assemble(shown) == shown, ("docs/benchmarks.md differs from benchmarks/common/page.py outside its "
                                           "sections: edit page.py (or a renderer), then `make render`")


def test_every_heading_in_a_section_sits_below_its_studys_heading() -> None:
    """Each study is a `##` heading of the page; what a renderer writes starts at `###`."""
    for name, block in page.sections(_shown()).items():
        headings = re.findall(r"(?m)^(#+) ", block)
        assert all(len(level) >= 3 for level in headings), f"{name}: {headings}"


def test_a_section_the_page_does_not_declare_stops_the_assembly() -> None:
    shown = _shown() + "\n<!-- stray-study:start -->\nhand-made\n<!-- stray-study:end -->\n"
    with pytest.raises(SystemExit, match="stray-study"):
        page.assemble(shown)


def test_a_declared_section_missing_from_the_page_stops_the_assembly() -> None:
    shown = re.sub(r"<!-- langid:start -->.*?<!-- langid:end -->", "", _shown(), flags=re.S)
    with pytest.raises(SystemExit, match="langid"):
        page.assemble(shown)


@pytest.mark.parametrize(("text", "problem"), [
    ("<!-- a:start -->\n<!-- b:start -->\n<!-- b:end -->\n<!-- a:end -->\n", "'b' starts inside 'a'"),
    ("<!-- a:start -->\n", "'a' has no end marker"),
    ("<!-- a:end -->\n", "'a' ends without its start marker"),
    ("<!-- a:start -->\n<!-- a:end -->\n<!-- a:start -->\n<!-- a:end -->\n", "'a' appears twice"),
])
def test_broken_markers_are_named(text: str, problem: str) -> None:
    with pytest.raises(SystemExit, match=problem):
        page.sections(text)


def test_render_all_assembles_the_page_after_the_renderers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Text around the sections edited by hand goes; the sections, moved or not, come back in the declared order."""
    from benchmarks import render_all
    from benchmarks.common import results

    shown = _shown()
    first, second = page.STUDIES[0].sections[0], page.STUDIES[1].sections[0]
    blocks = page.sections(shown)
    edited = shown.replace("## " + page.STUDIES[0].heading, "## Edited by hand", 1)
    edited = edited.replace(blocks[first], "").replace(blocks[second], blocks[second] + "\n\n" + blocks[first])
    docs = tmp_path / "benchmarks.md"
    docs.write_text(edited, encoding="utf-8")
    monkeypatch.setattr(results, "DOCS", docs)
    monkeypatch.setattr(render_all, "RENDERERS", ())
    render_all.main()
    assert docs.read_text(encoding="utf-8") == shown
    render_all.main()
    assert docs.read_text(encoding="utf-8") == shown  # a second run changes nothing
