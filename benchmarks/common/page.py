"""docs/benchmarks.md as a whole: its title, its intro and, per study, a heading, the line(s) linking to the study's
notes and the study's generated sections, in order. Nothing on the page is written by hand: the renderers write
the sections (`docs_sections.publish`), and `assemble` puts everything around them (`python -m
benchmarks.render_all`, or `make render`, does both).

Every section on the page must be declared in `STUDIES`, and every declared section must be on the page: a
study's renderer appends a section it has never written to the end of the page, and the next assembly moves it
under its heading. So a new study is declared here and rendered once before the page is assembled; a section
found on the page but not declared, or declared but not found, stops the assembly with its name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from polyembed.outputs import atomic_write

TITLE = "Benchmarks"

INTRO = """\
Every table on this page is generated: a script under `benchmarks/` runs a measurement, stores its results and
rewrites its section here, between markers. Each table says the command that produced it and the CPU it ran on.
What a study measured, on what, and what its numbers mean is on the study's notes page, linked under each heading."""

_NOTES = "What was measured, on what, and what it shows: "


@dataclass(frozen=True)
class Study:
    """One `## heading` of the page: the heading, the text under it (links to its notes and guides) and the names
    of its generated sections (`<!-- NAME:start -->` ... `<!-- NAME:end -->`), in the order shown."""

    heading: str
    links: str
    sections: tuple[str, ...] = ()


STUDIES = (
    Study("Evaluation suites", "What the suites hold, how to run them on your own model and how to read their "
          "scores:\n[Evaluation](guide/evaluation.md).", ("eval-suites",)),
    Study("Distillation", _NOTES + "[distillation notes](benchmarks/distill.md).", ("distill",)),
    Study("Training throughput", "`polyembed train distill` against a plain sentence-transformers script on the same "
          "job; how the two are\nmade equal: `benchmarks/training_throughput/run.py`.", ("training-throughput",)),
    Study("Vocabulary transfer", _NOTES + "[vocabulary transfer notes](benchmarks/vocabulary.md).",
          ("vocabulary-auxiliary",)),
    Study("Scale-out", _NOTES + "[scale-out notes](benchmarks/scale.md) (export and int8, mining,\nstreaming, "
          "integrity checks).", ("scale",)),
    Study("A fresh machine", "Setup, the test suite and the demo timed from a fresh clone; earlier runs, timed by "
          "hand: [fresh-machine\nnotes](benchmarks/fresh-machine.md).", ("test-suite",)),
    Study("Inference precision", _NOTES + "[precision notes](benchmarks/precision.md).", ("precision",)),
    Study("Modular sentence encoders", _NOTES + "[modular notes](benchmarks/modular.md).",
          ("modular", "modular-vocabulary", "modular-cla", "modular-genres", "modular-la")),
    Study("EMMA-X", _NOTES + "[EMMA-X notes](benchmarks/emmax.md).", ("emmax-authors", "emmax-ablation")),
    Study("Word aligners", "What the aligners are and how to run them: [Mining bitext and aligning words]"
          "(guide/mining.md#word-alignment); what\ntheir links do to WACSE: [WACSE notes]"
          "(benchmarks/wacse.md#the-ablation).", ("alignment",)),
    Study("WACSE", _NOTES + "[WACSE notes](benchmarks/wacse.md).", ("wacse", "wacse-profile", "wacse-dev")),
    Study("Long sentences", _NOTES + "[long-sentence notes](benchmarks/long-sentences.md).",
          ("distill-long-sentences",)),
    Study("Serving", _NOTES + "[serving notes](benchmarks/serving.md).", ("serve-load",)),
    Study("Language identification", _NOTES + "[language identification notes](benchmarks/language-id.md).",
          ("langid",)),
    Study("Bringing a new language", "How it is run and how to read it: [new-language notes]"
          "(benchmarks/new-language.md); choosing a method:\n[Which method when](guide/which-method.md); the "
          "recipe it chose: [Bring a new language](guide/new-language.md).", ("new-language",)),
)
"""The studies in page order."""

_MARKER = re.compile(r"<!-- ([\w-]+):(start|end) -->")


def sections(text: str) -> dict[str, str]:
    """Each generated section of `text` by name, markers included. A marker without its partner, a section
    that appears twice and a section inside another are errors naming the section."""
    found: dict[str, str] = {}
    opened: tuple[str, int] | None = None
    for marker in _MARKER.finditer(text):
        name, kind = marker.groups()
        if kind == "start":
            if opened is not None:
                raise SystemExit(f"docs/benchmarks.md: the section {name!r} starts inside {opened[0]!r}")
            if name in found:
                raise SystemExit(f"docs/benchmarks.md: the section {name!r} appears twice")
            opened = (name, marker.start())
        elif opened is None or opened[0] != name:
            raise SystemExit(f"docs/benchmarks.md: the section {name!r} ends without its start marker")
        else:
            found[name] = text[opened[1]:marker.end()]
            opened = None
    if opened is not None:
        raise SystemExit(f"docs/benchmarks.md: the section {opened[0]!r} has no end marker")
    return found


def assemble(text: str) -> str:
    """The page: title, intro and the declared studies, each with its sections as `text` shows them."""
    shown = sections(text)
    declared = [name for study in STUDIES for name in study.sections]
    undeclared = [name for name in shown if name not in declared]
    if undeclared:
        raise SystemExit(f"docs/benchmarks.md shows section(s) {', '.join(undeclared)} that no study in "
                         "benchmarks/common/page.py declares: declare each under its study's heading there")
    missing = [name for name in declared if name not in shown]
    if missing:
        raise SystemExit(f"benchmarks/common/page.py declares section(s) {', '.join(missing)} that "
                         "docs/benchmarks.md does not show: render each once (its renderer appends it), or "
                         "restore it from git")
    parts = [f"# {TITLE}", INTRO]
    for study in STUDIES:
        parts += [f"## {study.heading}", study.links, *(shown[name] for name in study.sections)]
    return "\n\n".join(parts) + "\n"


def write_page(docs: Path) -> bool:
    """Rewrite `docs` as `assemble` gives it (atomically); whether anything outside the sections changed."""
    text = docs.read_text(encoding="utf-8")
    page = assemble(text)
    if page == text:
        return False
    with atomic_write(docs) as handle:
        handle.write(page)
    return True
