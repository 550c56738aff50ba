from pathlib import Path

import pytest

from polyembed.data.readers.multiway import line_aligned_files, read_line_aligned_directory, read_multi30k
from polyembed.errors import DataError, UnknownLanguageError


def _write(folder: Path, name: str, lines: list[str]) -> None:
    (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_directory_reader_ignores_docs_and_refuses_mixed_prefixes(tmp_path: Path) -> None:
    _write(tmp_path, "news.en", ["one", "two"])
    _write(tmp_path, "news.de", ["eins", "zwei"])
    _write(tmp_path, "README.md", ["# docs"])
    text = read_line_aligned_directory(tmp_path)
    assert text.languages == ["de", "en"] and text.pair("de", "en").target == ["one", "two"]
    _write(tmp_path, "train.de", ["a", "b", "c"])
    with pytest.raises(DataError, match="several prefixes"):
        line_aligned_files(tmp_path)
    assert set(line_aligned_files(tmp_path, prefix="news")) == {"de", "en"}


def test_directory_reader_errors(tmp_path: Path) -> None:
    _write(tmp_path, "x.en", ["one", "two"])
    _write(tmp_path, "x.fr", ["un"])
    with pytest.raises(DataError, match=r"x\.(en|fr):2"):
        read_line_aligned_directory(tmp_path)
    with pytest.raises(UnknownLanguageError, match="de"):
        read_line_aligned_directory(tmp_path, languages=["en", "de"])


def test_multi30k_is_four_way_parallel(shared_data: Path) -> None:
    text = read_multi30k(shared_data / "multi30k-task1", "test_2016_flickr")
    assert sorted(text.languages) == ["cs", "de", "en", "fr"] and len(text) == 1000
