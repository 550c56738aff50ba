"""Word-alignment gold standards in three file formats, all returned with 0-indexed links.

Formats handled (folder `word-alignment-gold/`):

* awesome-align examples (`en-fr`, `ro-en`, `ja-en`, `zh-en`): `NAME.src-tgt` holds `source ||| target`
  (pre-tokenised), `NAME.gold` holds **1-indexed** `i-j` (sure) and `ipj` (possible) links per line.
* Bicici Europarl (`de-en`): `test.de`, `test.en` and `de-en.ref.wa` in the NAACL-2003 layout
  `sentId srcIdx tgtIdx [S|P]` with 1-based sentence ids and **0-based** token indices.
* simalign samples (`simalign-en-de`): `sample_{eng,deu}.txt` as `id<TAB>sentence` and
  `sample_eng_deu.gold` as `id<TAB>` 0-indexed `i-j` / `ipj` links.

Links are (source index, target index). `possible` always contains `sure` (S is a subset of P), which is
what the AER formula of Och & Ney expects.

Out-of-range links: the official gold files contain a few links whose index is past the sentence end
(ja-en lines 351, 354, 355, 356: 6 links; de-en sentence 63: link 12-16 on a 13-token English side).
They are part of the published gold, so by default they are **kept** and listed in `out_of_range`;
`out_of_range="drop"` removes them and `out_of_range="error"` (strict mode) raises a DataError instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from polyembed.data.io import read_lines
from polyembed.errors import DataError, UnknownLanguageError

Link = tuple[int, int]
OutOfRange = Literal["keep", "drop", "error"]

AWESOME_ALIGN_SETS = {"en-fr": "enfr", "ro-en": "roen", "ja-en": "jaen", "zh-en": "zhen"}
ALIGNMENT_SETS: dict[str, str] = {
    "en-fr": "awesome-align-examples: NAACL-2003 Hansards English-French, 447 sentence pairs",
    "ro-en": "awesome-align-examples: WPT-2003/05 Romanian-English, 248 sentence pairs",
    "ja-en": "awesome-align-examples: KFTT Japanese-English, 582 sentence pairs",
    "zh-en": "awesome-align-examples: Tsinghua Chinese-English, 450 sentence pairs",
    "de-en": "bicici-de-en-europarl: 100 Europarl German-English sentences (lowercased)",
    "simalign-en-de": "simalign-samples: 5 English-German sentences (smoke test only)",
}

_LINK = re.compile(r"^(\d+)([-p])(\d+)$")


@dataclass(frozen=True)
class AlignmentExample:
    """One gold-aligned sentence pair: tokens of both sides and 0-indexed sure/possible links.

    `line` is the 1-based line (awesome-align, simalign) or sentence id (Europarl) in the gold file, so
    results can be traced back. `out_of_range` lists links kept although an index is past the sentence end.
    """

    source_tokens: tuple[str, ...]
    target_tokens: tuple[str, ...]
    sure: frozenset[Link]
    possible: frozenset[Link]
    line: int
    out_of_range: frozenset[Link] = field(default_factory=frozenset)


def parse_link_tokens(path: Path, line: int, text: str, offset: int) -> tuple[set[Link], set[Link]]:
    """`i-j` / `ipj` tokens -> (sure, possible-only) sets, subtracting `offset` from each index."""
    sure: set[Link] = set()
    possible: set[Link] = set()
    for item in text.split():
        match = _LINK.match(item)
        if not match:
            raise DataError(path, line, f"bad alignment link {item!r} (expected i-j or ipj)")
        try:
            i, j = int(match[1]) - offset, int(match[3]) - offset
        except ValueError:  # more than 4300 digits: Python's int conversion limit
            raise DataError(path, line, f"alignment link index too large in {item[:40]!r}...") from None
        if i < 0 or j < 0:
            raise DataError(path, line, f"link {item!r} has index 0 but this file is {offset}-indexed")
        (sure if match[2] == "-" else possible).add((i, j))
    return sure, possible


def _example(
    path: Path,
    line: int,
    source: list[str],
    target: list[str],
    sure: set[Link],
    possible: set[Link],
    out_of_range: OutOfRange,
) -> AlignmentExample:
    """Apply the out-of-range policy and build the record (possible includes sure)."""
    outside = {(i, j) for i, j in sure | possible if i >= len(source) or j >= len(target)}
    if outside:
        if out_of_range == "error":
            shown = ", ".join(f"{i}-{j}" for i, j in sorted(outside))
            raise DataError(
                path,
                line,
                f"link(s) {shown} (0-indexed) past the sentence end "
                f"({len(source)} source, {len(target)} target tokens)",
            )
        if out_of_range == "drop":
            sure, possible = sure - outside, possible - outside
            outside = set()
    return AlignmentExample(
        source_tokens=tuple(source),
        target_tokens=tuple(target),
        sure=frozenset(sure),
        possible=frozenset(sure | possible),
        line=line,
        out_of_range=frozenset(outside),
    )


def _read_awesome_align(folder: Path, stem: str, out_of_range: OutOfRange) -> list[AlignmentExample]:
    text_path, gold_path = folder / f"{stem}.src-tgt", folder / f"{stem}.gold"
    texts = read_lines(text_path)
    golds = read_lines(gold_path, allow_empty=True)
    if len(texts) != len(golds):
        raise DataError(
            gold_path,
            min(len(texts), len(golds)) + 1,
            f"{len(golds)} gold lines but {text_path.name} has {len(texts)} sentence pairs",
        )
    examples: list[AlignmentExample] = []
    for number, (text, gold) in enumerate(zip(texts, golds, strict=True), start=1):
        sides = text.split(" ||| ")
        if len(sides) != 2 or not sides[0].split() or not sides[1].split():
            raise DataError(text_path, number, "expected 'source tokens ||| target tokens'")
        sure, possible = parse_link_tokens(gold_path, number, gold, offset=1)
        examples.append(_example(gold_path, number, sides[0].split(), sides[1].split(), sure, possible, out_of_range))
    return examples


def _read_naacl(folder: Path, out_of_range: OutOfRange) -> list[AlignmentExample]:
    """Bicici Europarl: tokens from test.de/test.en, links from the NAACL-format de-en.ref.wa."""
    de_path, en_path, gold_path = folder / "test.de", folder / "test.en", folder / "de-en.ref.wa"
    source = read_lines(de_path)
    target = read_lines(en_path)
    if len(source) != len(target):
        raise DataError(
            en_path, min(len(source), len(target)) + 1, f"{len(target)} lines but {de_path.name} has {len(source)}"
        )
    sure: list[set[Link]] = [set() for _ in source]
    possible: list[set[Link]] = [set() for _ in source]
    for number, line in enumerate(read_lines(gold_path, allow_empty=True), start=1):
        fields = line.split()
        if not fields:
            continue
        # isdecimal, not isdigit: int() refuses digits such as '²' that isdigit accepts
        if len(fields) not in (3, 4, 5) or not all(f.isdecimal() for f in fields[:3]):
            raise DataError(gold_path, number, f"expected 'sentId srcIdx tgtIdx [S|P] [confidence]', got {line!r}")
        try:
            sentence, i, j = (int(f) for f in fields[:3])
        except ValueError:  # more than 4300 digits: Python's int conversion limit
            raise DataError(gold_path, number, f"number too large in {line[:40]!r}...") from None
        kind = fields[3] if len(fields) > 3 else "S"
        if kind not in ("S", "P"):
            raise DataError(gold_path, number, f"link type must be S or P, got {kind!r}")
        if not 1 <= sentence <= len(source):
            raise DataError(gold_path, number, f"sentence id {sentence} outside 1..{len(source)}")
        (sure if kind == "S" else possible)[sentence - 1].add((i, j))
    return [
        _example(gold_path, n + 1, source[n].split(), target[n].split(), sure[n], possible[n], out_of_range)
        for n in range(len(source))
    ]


def _read_id_tab(path: Path, allow_empty: bool = False) -> dict[str, tuple[int, str]]:
    """`id<TAB>text` lines -> {id: (line number, text)}; duplicate ids are an error."""
    out: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(read_lines(path, allow_empty=allow_empty), start=1):
        if not line.strip():
            continue
        key, sep, text = line.partition("\t")
        key = key.strip()
        if not sep:
            raise DataError(path, number, "expected 'id<TAB>text'")
        if key in out:
            raise DataError(path, number, f"duplicate id {key!r} (first on line {out[key][0]})")
        out[key] = (number, text)
    return out


def _read_simalign(folder: Path, out_of_range: OutOfRange) -> list[AlignmentExample]:
    eng_path, deu_path, gold_path = folder / "sample_eng.txt", folder / "sample_deu.txt", folder / "sample_eng_deu.gold"
    eng, deu, gold = _read_id_tab(eng_path), _read_id_tab(deu_path), _read_id_tab(gold_path, allow_empty=True)
    examples: list[AlignmentExample] = []
    for key, (number, links) in gold.items():
        for path, side in ((eng_path, eng), (deu_path, deu)):
            if key not in side:
                raise DataError(gold_path, number, f"sentence id {key!r} not found in {path.name}")
        sure, possible = parse_link_tokens(gold_path, number, links, offset=0)
        examples.append(
            _example(gold_path, number, eng[key][1].split(), deu[key][1].split(), sure, possible, out_of_range)
        )
    return examples


def read_alignment_gold(folder: Path, name: str, out_of_range: OutOfRange = "keep") -> list[AlignmentExample]:
    """Read one word-alignment gold set (see ALIGNMENT_SETS) as 0-indexed records, in file order.

    `out_of_range` decides what happens to links past a sentence end: "keep" (default; they are in the
    official gold and listed in `AlignmentExample.out_of_range`), "drop", or "error" (strict DataError).
    """
    if out_of_range not in ("keep", "drop", "error"):
        raise ValueError(f"out_of_range must be 'keep', 'drop' or 'error', not {out_of_range!r}")
    folder = Path(folder)
    if name in AWESOME_ALIGN_SETS:
        return _read_awesome_align(folder / "awesome-align-examples", AWESOME_ALIGN_SETS[name], out_of_range)
    if name == "de-en":
        return _read_naacl(folder / "bicici-de-en-europarl", out_of_range)
    if name == "simalign-en-de":
        return _read_simalign(folder / "simalign-samples", out_of_range)
    raise UnknownLanguageError(f"no word-alignment gold set '{name}' (has: {', '.join(ALIGNMENT_SETS)})")
