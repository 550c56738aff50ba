"""Pharaoh files and AER: clear errors for bad input, and our AER of awesome-align's shipped predictions equal
to an independent count written out here from the raw files."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.alignment import alignment_error_rate, format_links, read_links, read_sentence_pairs
from polyembed.errors import DataError

GOLD = "word-alignment-gold/awesome-align-examples"


def test_pairs_from_a_joint_file_or_two_files(tmp_path: Path) -> None:
    joint = tmp_path / "pairs.txt"
    joint.write_text("the house ||| das haus\ni see ||| ich sehe\n", encoding="utf-8")
    pairs = read_sentence_pairs(joint)
    assert [(p.source, p.target) for p in pairs] == [(["the", "house"], ["das", "haus"]), (["i", "see"], ["ich",
                                                                                                      "sehe"])]
    (tmp_path / "en.txt").write_text("the house\ni see\n", encoding="utf-8")
    (tmp_path / "de.txt").write_text("das haus\nich sehe\n", encoding="utf-8")
    assert read_sentence_pairs(tmp_path / "en.txt", tmp_path / "de.txt") == pairs


@pytest.mark.parametrize(("content", "message"), [
    ("the house ||| das haus\nno separator here\n", "pairs.txt:2: expected 'source tokens ||| target tokens'"),
    ("the house |||  \n", "pairs.txt:1: empty target side"),
])
def test_bad_pair_files_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "pairs.txt").write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message.replace("|", r"\|")):
        read_sentence_pairs(tmp_path / "pairs.txt")


def test_misaligned_line_counts_name_the_longer_file(tmp_path: Path) -> None:
    (tmp_path / "en.txt").write_text("a\nb\nc\n", encoding="utf-8")
    (tmp_path / "de.txt").write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"en.txt:3: 3 source lines but 2 target lines"):
        read_sentence_pairs(tmp_path / "en.txt", tmp_path / "de.txt")


def test_links_sure_possible_one_indexed_and_past_the_sentence(tmp_path: Path) -> None:
    pairs = read_sentence_pairs(_write(tmp_path / "p.txt", "a b c ||| x y\n"))
    (gold,) = read_links(_write(tmp_path / "g.txt", "1-1 2p2 3-2\n"), one_indexed=True, pairs=pairs)
    assert gold.sure == {(0, 0), (2, 1)} and gold.possible == {(0, 0), (1, 1), (2, 1)}
    with pytest.raises(DataError, match=r"bad.txt:1: link 3-0 \(0-indexed\) points past the sentence \(3 source"):
        read_links(_write(tmp_path / "bad.txt", "1-1 4-1\n"), one_indexed=True, pairs=pairs)
    with pytest.raises(DataError, match=r"odd.txt:1: bad alignment link 'a-b'"):
        read_links(_write(tmp_path / "odd.txt", "a-b\n"))
    (kept,) = read_links(tmp_path / "bad.txt", one_indexed=True, pairs=pairs, skip_out_of_range=True)
    assert kept.sure == {(0, 0)}
    assert format_links({(1, 0), (0, 1)}, {(1, 0): 0.5, (0, 1): 0.25}) == "0-1:0.250 1-0:0.500"


def test_aer_counts_sure_and_possible_links() -> None:
    from polyembed.alignment import GoldAlignment

    gold = [GoldAlignment(sure={(0, 0)}, possible={(0, 0), (1, 1)})]
    scores = alignment_error_rate([{(0, 0), (1, 1), (2, 2)}], gold)
    # |A&S| = 1, |A&P| = 2, |A| = 3, |S| = 1: 1 - 3/4
    assert scores.aer == pytest.approx(0.25) and scores.precision == pytest.approx(2 / 3) and scores.recall == 1.0


@pytest.mark.realdata
@pytest.mark.parametrize("pair", ["enfr", "roen", "zhen", "jaen"])
def test_aer_of_awesome_align_predictions_matches_an_independent_count(shared_data: Path, pair: str) -> None:
    folder = shared_data / GOLD
    pairs = read_sentence_pairs(folder / f"{pair}.src-tgt")
    gold = read_links(folder / f"{pair}.gold", one_indexed=True, pairs=pairs, skip_out_of_range=True)
    predicted = [g.sure for g in read_links(folder / f"{pair}.awesome-align.out", pairs=pairs)]
    ours = alignment_error_rate(predicted, gold)

    a_and_s = a_and_p = size_a = size_s = 0  # the same formula, straight from the raw text
    gold_lines = (folder / f"{pair}.gold").read_text(encoding="utf-8").splitlines()
    out_lines = (folder / f"{pair}.awesome-align.out").read_text(encoding="utf-8").splitlines()
    for gold_line, out_line, sentence in zip(gold_lines, out_lines, pairs, strict=True):
        sure, possible = set(), set()
        for token in gold_line.split():
            sep = "-" if "-" in token else "p"
            i, j = (int(x) - 1 for x in token.split(sep))
            if i < len(sentence.source) and j < len(sentence.target):
                possible.add((i, j))
                if sep == "-":
                    sure.add((i, j))
        links = {tuple(int(x) for x in token.split("-")) for token in out_line.split()}
        a_and_s += len(links & sure)
        a_and_p += len(links & possible)
        size_a += len(links)
        size_s += len(sure)
    assert ours.aer == pytest.approx(1 - (a_and_s + a_and_p) / (size_a + size_s), abs=1e-12)
    assert ours.aer < 0.5  # awesome-align is a good aligner on all four (its paper: 4-14 % AER)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
