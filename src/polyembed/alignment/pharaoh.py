"""Word-alignment files: sentence pairs in (`src ||| tgt` lines, or two line-aligned files) and Pharaoh links
out (`i-j`, 0-indexed; gold files may mark possible links `ipj` and be 1-indexed). Every problem names its file
and line, and links are checked against the sentence lengths."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from polyembed.data.io import read_lines
from polyembed.data.readers.alignment import parse_link_tokens
from polyembed.errors import DataError

Link = tuple[int, int]


@dataclass
class SentencePair:
    """Two pre-tokenised sentences (whitespace tokens are the words that links index)."""

    source: list[str]
    target: list[str]


@dataclass
class GoldAlignment:
    """Sure links and possible links (possible includes sure, as AER defines P)."""

    sure: set[Link] = field(default_factory=set)
    possible: set[Link] = field(default_factory=set)


def read_sentence_pairs(path: str | Path, target_path: str | Path | None = None) -> list[SentencePair]:
    """Pairs from a `source ||| target` file, or from two line-aligned files; a line count mismatch, a missing
    separator or an empty side names the file and line."""
    path = Path(path)
    lines = read_lines(path)
    if target_path is None:
        pairs = []
        for number, line in enumerate(lines, start=1):
            if line.count(" ||| ") != 1:
                raise DataError(path, number, "expected 'source tokens ||| target tokens'")
            source, target = line.split(" ||| ")
            pairs.append(_pair(source, target, path, number))
        return pairs
    target_path = Path(target_path)
    targets = read_lines(target_path)
    if len(targets) != len(lines):
        longer, shorter = (path, target_path) if len(lines) > len(targets) else (target_path, path)
        raise DataError(longer, min(len(lines), len(targets)) + 1,
                        f"{len(lines)} source lines but {len(targets)} target lines: this line has no partner in "
                        f"{shorter.name}")
    return [_pair(s, t, path, number) for number, (s, t) in enumerate(zip(lines, targets, strict=True), start=1)]


def _pair(source: str, target: str, path: Path, number: int) -> SentencePair:
    pair = SentencePair(source.split(), target.split())
    for side, words in (("source", pair.source), ("target", pair.target)):
        if not words:
            raise DataError(path, number, f"empty {side} side")
    return pair


def parse_links(line: str, path: Path, number: int, *, one_indexed: bool = False,
                lengths: tuple[int, int] | None = None) -> GoldAlignment:
    """One Pharaoh line: `i-j` sure links and `ipj` possible links (0-indexed unless `one_indexed`); with
    `lengths`, an index past either sentence is an error."""
    sure, possible_only = parse_link_tokens(path, number, line, 1 if one_indexed else 0)
    gold = GoldAlignment(sure, sure | possible_only)
    if lengths is not None:
        for i, j in sorted(gold.possible):
            if i >= lengths[0] or j >= lengths[1]:
                raise DataError(path, number, f"link {i}-{j} (0-indexed) points past the sentence ({lengths[0]} "
                                              f"source, {lengths[1]} target words)")
    return gold


def read_links(path: str | Path, *, one_indexed: bool = False, pairs: Sequence[SentencePair] | None = None,
               skip_out_of_range: bool = False) -> list[GoldAlignment]:
    """A Pharaoh file, one line per sentence pair (empty lines: no links). With `pairs`, the line count must
    match and links are checked against each pair's lengths; `skip_out_of_range` drops such links instead (the
    ja-en gold has four lines that index past their sentence)."""
    path = Path(path)
    lines = read_lines(path, allow_empty=True)
    if pairs is not None and len(lines) != len(pairs):
        raise DataError(path, None, f"{len(lines)} alignment lines for {len(pairs)} sentence pairs")
    out = []
    for number, line in enumerate(lines, start=1):
        lengths = (len(pairs[number - 1].source), len(pairs[number - 1].target)) if pairs is not None else None
        if skip_out_of_range and lengths is not None:
            gold = parse_links(line, path, number, one_indexed=one_indexed)
            gold.sure = {link for link in gold.sure if link[0] < lengths[0] and link[1] < lengths[1]}
            gold.possible = {link for link in gold.possible if link[0] < lengths[0] and link[1] < lengths[1]}
        else:
            gold = parse_links(line, path, number, one_indexed=one_indexed, lengths=lengths)
        out.append(gold)
    return out


def format_links(links: Iterable[Link], scores: dict[Link, float] | None = None) -> str:
    """`i-j` links in order (0-indexed); with `scores`, `i-j:score` (3 decimals)."""
    ordered = sorted(links)
    if scores is None:
        return " ".join(f"{i}-{j}" for i, j in ordered)
    return " ".join(f"{i}-{j}:{scores[(i, j)]:.3f}" for i, j in ordered)
