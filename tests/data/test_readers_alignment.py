"""Word-alignment gold readers: index conventions, sure/possible links, out-of-range policy, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.data.readers.alignment import ALIGNMENT_SETS, read_alignment_gold
from polyembed.data.registry import get_dataset
from polyembed.errors import DataError, UnknownLanguageError
from tests.helpers import write_lines


def awesome(tmp_path: Path, texts: list[str], golds: list[str]) -> Path:
    write_lines(tmp_path / "awesome-align-examples" / "enfr.src-tgt", texts)
    write_lines(tmp_path / "awesome-align-examples" / "enfr.gold", golds)
    return tmp_path


def test_awesome_align_is_converted_to_zero_indexed(tmp_path: Path) -> None:
    awesome(tmp_path, ["the house ||| la maison", "yes ||| oui"], ["1-1 2-2 1p2", ""])
    first, second = read_alignment_gold(tmp_path, "en-fr")
    assert first.source_tokens == ("the", "house") and first.target_tokens == ("la", "maison")
    assert first.sure == {(0, 0), (1, 1)}
    assert first.possible == {(0, 0), (1, 1), (0, 1)}  # possible includes sure
    assert first.line == 1 and not first.out_of_range
    assert second.sure == frozenset() and second.possible == frozenset()


def test_out_of_range_keep_drop_error(tmp_path: Path) -> None:
    awesome(tmp_path, ["a b ||| x y"], ["1-1 2-3"])
    kept = read_alignment_gold(tmp_path, "en-fr")[0]
    assert kept.sure == {(0, 0), (1, 2)} and kept.out_of_range == {(1, 2)}
    dropped = read_alignment_gold(tmp_path, "en-fr", out_of_range="drop")[0]
    assert dropped.sure == {(0, 0)} and dropped.out_of_range == frozenset()
    with pytest.raises(DataError) as info:
        read_alignment_gold(tmp_path, "en-fr", out_of_range="error")
    assert info.value.line == 1 and "1-2" in info.value.message
    with pytest.raises(ValueError):
        read_alignment_gold(tmp_path, "en-fr", out_of_range="ignore")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("texts", "golds", "line", "message"),
    [
        (["a ||| x", "b ||| y"], ["1-1", "1:1"], 2, "bad alignment link"),
        (["a ||| x"], ["0-1"], 1, "index 0"),
        (["a x"], ["1-1"], 1, "|||"),
        (["a ||| x", "b ||| y"], ["1-1"], 2, "gold lines"),
    ],
)
def test_awesome_align_errors(tmp_path: Path, texts: list[str], golds: list[str], line: int, message: str) -> None:
    awesome(tmp_path, texts, golds)
    with pytest.raises(DataError, match=message) as info:
        read_alignment_gold(tmp_path, "en-fr")
    assert info.value.line == line


def test_naacl_format(tmp_path: Path) -> None:
    folder = tmp_path / "bicici-de-en-europarl"
    write_lines(folder / "test.de", ["\ufeffdas haus", "ja"])
    write_lines(folder / "test.en", ["the house", "yes"])
    write_lines(folder / "de-en.ref.wa", ["1 0 0 S ", "1 1 1 P", "2 0 0"])
    first, second = read_alignment_gold(tmp_path, "de-en")
    assert first.source_tokens == ("das", "haus")  # BOM stripped
    assert first.sure == {(0, 0)} and first.possible == {(0, 0), (1, 1)}
    assert second.sure == {(0, 0)} and second.line == 2
    write_lines(folder / "de-en.ref.wa", ["1 0 0 S", "3 0 0 S"])
    with pytest.raises(DataError, match="outside 1..2") as info:
        read_alignment_gold(tmp_path, "de-en")
    assert info.value.line == 2
    write_lines(folder / "de-en.ref.wa", ["1 0 0 X"])
    with pytest.raises(DataError, match="S or P"):
        read_alignment_gold(tmp_path, "de-en")


def test_simalign_format_and_missing_id(tmp_path: Path) -> None:
    folder = tmp_path / "simalign-samples"
    write_lines(folder / "sample_eng.txt", ["0\tthe house", "1\tyes"])
    write_lines(folder / "sample_deu.txt", ["0\tdas Haus", "1\tja"])
    write_lines(folder / "sample_eng_deu.gold", ["0\t0-0 1p1", "1\t0-0"])
    first, second = read_alignment_gold(tmp_path, "simalign-en-de")
    assert first.sure == {(0, 0)} and first.possible == {(0, 0), (1, 1)} and second.target_tokens == ("ja",)
    write_lines(folder / "sample_eng_deu.gold", ["0\t0-0", "7\t0-0"])
    with pytest.raises(DataError, match="'7' not found") as info:
        read_alignment_gold(tmp_path, "simalign-en-de")
    assert info.value.line == 2


def test_unknown_set(tmp_path: Path) -> None:
    with pytest.raises(UnknownLanguageError, match="en-fr"):
        read_alignment_gold(tmp_path, "fr-en")


def _aer(examples, predictions: list[set[tuple[int, int]]]) -> float:
    hyp = sure = hit_sure = hit_possible = 0
    for example, predicted in zip(examples, predictions, strict=True):
        hyp += len(predicted)
        sure += len(example.sure)
        hit_sure += len(predicted & example.sure)
        hit_possible += len(predicted & example.possible)
    return 100 * (1 - (hit_sure + hit_possible) / (hyp + sure))


@pytest.mark.realdata
def test_real_gold_sets_and_reference_output(shared_data: Path) -> None:
    dataset = get_dataset("word-alignment-gold")
    sizes = {name: len(dataset.load(name, root=shared_data)) for name in ALIGNMENT_SETS}
    assert sizes == {"en-fr": 447, "ro-en": 248, "ja-en": 582, "zh-en": 450, "de-en": 100, "simalign-en-de": 5}
    jaen = dataset.load("ja-en", root=shared_data)
    assert [e.line for e in jaen if e.out_of_range] == [351, 354, 355, 356]
    assert sum(len(e.out_of_range) for e in jaen) == 6
    with pytest.raises(DataError):
        dataset.load("ja-en", root=shared_data, out_of_range="error")
    deen = dataset.load("de-en", root=shared_data)
    assert sum(len(e.sure) for e in deen) == 1233 and deen[62].out_of_range == {(12, 16)}
    # awesome-align's own 0-indexed output must score a low AER against our 0-indexed gold (~4 on en-fr);
    # misreading the gold as 0-indexed would ruin it.
    enfr = dataset.load("en-fr", root=shared_data)
    lines = (dataset.path(shared_data) / "awesome-align-examples" / "enfr.awesome-align.out").read_text().split("\n")
    predictions = [{tuple(map(int, link.split("-"))) for link in line.split()} for line in lines[: len(enfr)]]
    assert _aer(enfr, predictions) < 5.0
    shifted = [{(i + 1, j + 1) for i, j in links} for links in predictions]
    assert _aer(enfr, shifted) > 30.0  # measured 42.6
