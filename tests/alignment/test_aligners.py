"""The link-picking rules on hand-made score matrices, the embedding aligner on a tiny model and on me5-small
(real gold data), eflomal with symmetrisation, and `polyembed align`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from polyembed.alignment import EmbeddingAligner, alignment_error_rate, eflomal_align, read_links, read_sentence_pairs
from polyembed.alignment.similarity import argmax_links, itermax_links, match_links
from polyembed.alignment.statistical import grow_diag_final_and
from polyembed.cli import app
from polyembed.errors import PolyembedError
from tests.helpers import tiny_sentence_transformer

GOLD = "word-alignment-gold/awesome-align-examples"


def _links(matrix: np.ndarray) -> set[tuple[int, int]]:
    return {(int(i), int(j)) for i, j in np.argwhere(matrix)}


def test_argmax_keeps_mutual_best_matches_and_itermax_aligns_the_leftover_word() -> None:
    scores = np.array([[0.9, 0.1, 0.1],
                       [0.8, 0.2, 0.1],  # row 1's best is column 0, taken by row 0: argmax leaves it out
                       [0.1, 0.1, 0.9]])
    assert _links(argmax_links(scores)) == {(0, 0), (2, 2)}
    # round 2: row 1 and column 1 are free; (1, 1) competes at full score, (1, 0) at 0.9 x 0.8 = 0.72 > 0.2
    assert _links(itermax_links(scores)) == {(0, 0), (2, 2), (1, 0)}
    assert _links(itermax_links(scores, rounds=1)) == {(0, 0), (2, 2)}
    assert _links(match_links(scores)) == {(0, 0), (1, 1), (2, 2)}  # one link per word, best total


def test_grow_diag_final_and_grows_from_the_intersection() -> None:
    forward = {(0, 0), (1, 1), (2, 3)}
    reverse = {(0, 0), (1, 1), (1, 2), (3, 3)}
    # (1, 2) neighbours (1, 1) and its target is unaligned: grown; (2, 3) then neighbours (1, 2): grown;
    # (3, 3) has target 3 aligned by then, and its source 3 is unaligned: grown as well (one word unaligned)
    assert grow_diag_final_and(forward, reverse) == {(0, 0), (1, 1), (1, 2), (2, 3), (3, 3)}


def test_the_embedding_aligner_on_a_tiny_model(tmp_path: Path) -> None:
    from polyembed.alignment import SentencePair

    model = tiny_sentence_transformer(tmp_path / "tiny", seed=0)
    aligner = EmbeddingAligner(str(model), layer=2, method="itermax")
    pairs = [SentencePair("a dog sees the sea".split(), "der hund sieht das meer".split()),
             SentencePair(["hello"], ["hallo", "welt"])]
    out = aligner.align(pairs)
    assert len(out) == 2 and out[1].links() <= {(0, 0), (0, 1)}
    for alignment, pair in zip(out, pairs, strict=True):
        assert alignment.scores and all(0 <= s <= 1 for s in alignment.scores.values())
        assert all(i < len(pair.source) and j < len(pair.target) for i, j in alignment.scores)
    assert out[0].links(threshold=1.01) == set()
    with pytest.raises(PolyembedError, match="hidden states 0 .* to 2"):
        EmbeddingAligner(str(model), layer=5)
    with pytest.raises(PolyembedError, match="choose from argmax, itermax, match"):
        EmbeddingAligner(str(model), method="best")


@pytest.mark.realdata
def test_me5_small_aligns_english_french_gold_well(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = shared_data / GOLD
    pairs = read_sentence_pairs(folder / "enfr.src-tgt")
    gold = read_links(folder / "enfr.gold", one_indexed=True, pairs=pairs)
    out = EmbeddingAligner("me5-small", layer=8, method="argmax").align(pairs[:60])
    assert alignment_error_rate([a.links() for a in out], gold[:60]).aer < 0.15  # 7.2 % on the first 150


@pytest.mark.realdata
def test_eflomal_learns_from_the_corpus(shared_data: Path) -> None:
    folder = shared_data / GOLD
    pairs = read_sentence_pairs(folder / "enfr.src-tgt")
    gold = read_links(folder / "enfr.gold", one_indexed=True, pairs=pairs)
    out = eflomal_align(pairs)
    assert {score for a in out for score in a.scores.values()} == {0.5, 1.0}  # one direction / both
    assert alignment_error_rate([a.links() for a in out], gold).aer < 0.3  # 17.9 % from 447 pairs alone
    both = [{link for link, score in a.scores.items() if score == 1.0} for a in out]
    confident, everything = alignment_error_rate(both, gold), alignment_error_rate([a.links() for a in out], gold)
    assert confident.precision > everything.precision  # the agreement of both directions is a confidence


def test_the_align_command_writes_pharaoh_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny_sentence_transformer(tmp_path / "tiny", seed=0)
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("a dog ||| der hund\nthe sea ||| das meer\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["align", str(pairs), "-o", str(tmp_path / "out.txt"), "-m", str(model),
                                      "--aligner-layer", "1", "--scores"])
    assert result.exit_code == 0, result.output
    lines = (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all(":" in link and "-" in link for line in lines for link in line.split())
    bad = tmp_path / "bad.txt"
    bad.write_text("a dog ||| der hund\nno separator\n", encoding="utf-8")
    failed = CliRunner().invoke(app, ["align", str(bad), "-o", str(tmp_path / "bad-out.txt"), "-m", str(model)])
    assert failed.exit_code == 2 and "bad.txt:2" in failed.output and not (tmp_path / "bad-out.txt").exists()
