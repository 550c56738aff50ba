"""The documentation site builds: `mkdocs build --strict` (what `make docs` runs) fails on a broken link, a
missing anchor, a page left out of the navigation, a missing snippet (the changelog) or an API object that
mkdocstrings cannot find. The README is not part of the site, so its links into docs/ are checked against the
built pages here."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                                reason="mkdocs is not installed: pip install '.[docs]' (make setup installs it)")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                            str(ROOT / "mkdocs.yml"), "--site-dir", str(folder)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stdout + built.stderr
    return folder


def test_the_site_builds_strictly(site: Path) -> None:
    for page in ("index.html", "guide/which-method/index.html", "guide/glossary/index.html",
                 "methods/distill/index.html", "api/index.html", "contributing/training-method/index.html",
                 "changelog/index.html", "benchmarks/index.html"):
        assert (site / page).is_file(), page
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert 'id="polyembed.load_model"' in api and "Load a sentence encoder" in api  # from the docstring
    changelog = (site / "changelog" / "index.html").read_text(encoding="utf-8")
    first_heading = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").split("\n## ", 1)[1].splitlines()[0]
    assert first_heading in changelog  # CHANGELOG.md itself, included


def test_every_readme_link_resolves(site: Path) -> None:
    broken = []
    for target in LINK.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "#")):
            continue
        path, _, anchor = target.partition("#")
        if not (ROOT / path).exists():
            broken.append(f"{target}: no such file")
            continue
        if anchor:
            page = Path(path).relative_to("docs").with_suffix("")
            html = site / (page.parent if page.name == "index" else page) / "index.html"
            if f'id="{anchor}"' not in html.read_text(encoding="utf-8"):
                broken.append(f"{target}: no such anchor")
    assert not broken, broken


def test_the_api_reference_lists_every_public_name() -> None:
    """Every name of `polyembed.__all__` is documented in the API reference (a mkdocstrings block, or a heading for
    a plain value such as the version), so a name added to the public API cannot go undocumented."""
    import polyembed

    reference = "\n".join(page.read_text(encoding="utf-8") for page in (ROOT / "docs" / "api").glob("*.md"))
    missing = [name for name in polyembed.__all__
               if not re.search(rf"(::: polyembed(\.\w+)*\.{re.escape(name)}$|`polyembed\.{re.escape(name)}`)",
                                reference, re.MULTILINE)]
    assert not missing, f"not in docs/api/: {missing}"
