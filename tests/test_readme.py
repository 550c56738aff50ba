"""The README's how-tos show the example files as they are: every ```python block that starts with a
`# tests/...` path line is that file, byte for byte (the tests next to each file run it)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LISTING = re.compile(r"```python\n# (tests/[\w/]+\.py)\n(.*?)```\n", re.DOTALL)


def test_every_listing_in_the_readme_is_the_file_it_names() -> None:
    listings = LISTING.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    names = [name for name, _ in listings]
    assert {"tests/methods/toy/__init__.py", "tests/eval/toy_task.py", "tests/models/toy_kind.py"} <= set(names)
    for name, text in listings:
        assert (ROOT / name).read_text(encoding="utf-8") == text, f"README.md's listing of {name} is out of date"
