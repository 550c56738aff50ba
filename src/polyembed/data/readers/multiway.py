"""Line-aligned directories (`<prefix>.<lang>[.gz]`): the generic multi-way parallel reader, and Multi30k."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from polyembed.data.io import read_lines
from polyembed.data.types import MultiwayText
from polyembed.errors import DataError, UnknownLanguageError

NOT_LANGUAGES = frozenset({"md", "txt", "rst", "json", "jsonl", "csv", "tsv", "out", "gold", "py", "sh", "yaml"})
"""File suffixes that are documentation or other formats, never a language code."""


def line_aligned_files(directory: Path, prefix: str | None = None) -> dict[str, Path]:
    """Map language -> file for files named `<prefix>.<lang>` or `<prefix>.<lang>.gz` in `directory`.

    Without `prefix` every file must share one prefix; two prefixes (e.g. train.de and test.de) are an
    error that asks for `prefix=`, so splits are never mixed silently.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(directory, None, "not a directory of line-aligned files")
    found: dict[str, Path] = {}
    prefixes: set[str] = set()
    pattern = re.compile(r"^(?P<prefix>.+)\.(?P<lang>[A-Za-z_]{2,12})$")
    for path in sorted(directory.iterdir()):
        match = pattern.match(path.name.removesuffix(".gz"))
        if not path.is_file() or not match or match["lang"].lower() in NOT_LANGUAGES:
            continue
        if prefix is not None and match["prefix"] != prefix:
            continue
        prefixes.add(match["prefix"])
        found[match["lang"]] = path
    if prefix is None and len(prefixes) > 1:
        raise DataError(
            directory, None, f"files with several prefixes ({', '.join(sorted(prefixes))}): pass prefix=... to pick one"
        )
    return found


def read_line_aligned_directory(
    directory: Path, prefix: str | None = None, languages: Sequence[str] | None = None
) -> MultiwayText:
    """Read `<prefix>.<lang>` files as one multi-way parallel text; line counts must agree."""
    files = line_aligned_files(directory, prefix)
    if languages is not None:
        unknown = [lang for lang in languages if lang not in files]
        if unknown:
            raise UnknownLanguageError(
                f"{directory}: no file for language(s) {', '.join(unknown)} (found: {', '.join(files) or 'none'})"
            )
        files = {lang: files[lang] for lang in languages}
    if len(files) < 2:
        raise DataError(directory, None, f"need at least two line-aligned files, found {sorted(files)}")
    texts = {lang: read_lines(path) for lang, path in files.items()}
    reference_lang, reference = next(iter(texts.items()))
    for lang, lines in texts.items():
        if len(lines) != len(reference):
            raise DataError(
                files[lang],
                min(len(lines), len(reference)) + 1,
                f"{len(lines)} lines but {files[reference_lang].name} has {len(reference)}: files are not aligned",
            )
    return MultiwayText(texts)


def read_multi30k(
    folder: Path, split: str = "test_2016_flickr", languages: Sequence[str] | None = None
) -> MultiwayText:
    """Multi30k task 1 captions of one split, multi-way parallel across languages (raw/<split>.<lang>.gz)."""
    return read_line_aligned_directory(Path(folder) / "raw", prefix=split, languages=languages)
