from pathlib import Path

import pytest

from polyembed.data.io import iter_csv, parse_float, read_lines, read_parallel
from polyembed.errors import DataError


def test_read_lines_strips_bom_and_reports_empty_line(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes("\ufeffeins\nzwei\n".encode())
    assert read_lines(path) == ["eins", "zwei"]
    path.write_text("eins\n\ndrei\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"a.txt:2: empty line"):
        read_lines(path)


def test_read_lines_reports_bad_utf8_with_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\nalso ok\nbroken \xff here\n")
    with pytest.raises(DataError, match=r"bad.txt:3: not valid UTF-8"):
        read_lines(path)


def test_read_parallel_length_mismatch_names_both_files(tmp_path: Path) -> None:
    (tmp_path / "x.de").write_text("a\nb\nc\n", encoding="utf-8")
    (tmp_path / "x.en").write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_parallel(tmp_path / "x.de", tmp_path / "x.en")
    assert info.value.line == 3 and "x.de" in str(info.value) and "x.en" in str(info.value)


def test_iter_csv_line_numbers_follow_multiline_records(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('h1,h2\n"two\nlines",x\nlast,y\n', encoding="utf-8")
    rows = list(iter_csv(path))
    assert [line for line, _ in rows] == [1, 2, 4]
    assert rows[1][1] == ["two\nlines", "x"]


def test_parse_float_error_names_file_and_line() -> None:
    assert parse_float("f.txt", 3, " 4.5 ") == 4.5
    with pytest.raises(DataError, match=r"f.txt:7: cannot parse score 'abc'"):
        parse_float("f.txt", 7, "abc")


def test_iter_csv_stray_carriage_return_is_reported_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b'a,b\n"x\ry",1\nplain\r,2\n')
    rows = iter_csv(path)
    assert next(rows) == (1, ["a", "b"])
    assert next(rows) == (2, ["x\ry", "1"])
    with pytest.raises(DataError, match=r"t.csv:3: malformed CSV"):
        next(rows)
