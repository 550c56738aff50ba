"""Property-based fuzzing of every data reader: random bytes and mutated lines either give a valid result or a
clean `PolyembedError`; any other exception (IndexError, ValueError, UnicodeDecodeError, csv.Error, ...) is a
bug that Hypothesis shrinks to a minimal file.

Every test runs with `derandomize=True` (a seed fixed per test) and no example database, so CI sees the same
examples on every run and never flakes; 40 examples per reader keep the whole file to seconds on 2 cores. For a
deeper search set FUZZ_EXAMPLES (e.g. 2000) and keep what it finds as a regression test at the end of the file.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyembed.config import read_yaml_mapping
from polyembed.data.io import iter_csv, parse_float, read_bytes, read_lines, read_parallel, read_text
from polyembed.data.parallel_sources import (
    ParallelFileSpec,
    ParallelSource,
    read_parallel_file,
    read_parallel_tsv,
)
from polyembed.data.readers.alignment import AlignmentExample, read_alignment_gold
from polyembed.data.readers.kardes import read_kardes_rows
from polyembed.data.readers.mcqa import read_belebele, read_kardes_xcopa, read_xcopa
from polyembed.data.readers.multiway import line_aligned_files, read_line_aligned_directory, read_multi30k
from polyembed.data.readers.parallel import (
    read_mafand,
    read_muse_dictionary,
    read_tatoeba,
    read_tatoeba_challenge,
    read_tico19,
    tatoeba_challenge_languages,
    tico19_languages,
)
from polyembed.data.readers.sts import (
    read_kardes_multiway,
    read_kardes_sts,
    read_semrel,
    read_sts2017,
    read_stsb_multi_mt,
    read_stsbenchmark,
    split_semrel_text,
)
from polyembed.data.types import MultipleChoiceItem, MultiwayText, ParallelText, ScoredPairs
from polyembed.errors import DataError, PolyembedError

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
"""Shared settings: a fixed seed per test (no CI flakes), no timing deadline (slow CI disks), few examples."""

# ------------------------------------------------------------------------------------------ strategies

NASTY = (
    "",
    " ",
    "nan",
    "NaN",
    "inf",
    "-Infinity",
    "1e999",
    "-0",
    "9" * 400,
    "1" * 5000,
    "0x1F",
    "abc",
    "1,5",
    "\u0663",  # ARABIC-INDIC DIGIT THREE: a Unicode decimal
    "\u00b2",  # SUPERSCRIPT TWO: isdigit() but not int()-able
    '"',
    '""',
    "\x00",
    "\u2028",
    "\x85",
    "\ufeff",
    "null",
    "true",
    "[",
    "{",
    "}",
    "-1",
    "3-",
    "1p",
    " ||| ",
    " @ ",
    "\t",
    ",",
    "\r",
    "\\",
)
"""Field values parsers tend to mishandle: non-numbers, non-finite and huge numbers, separators, quotes."""

BAD_BYTES = (b"\xff", b"\xfe", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\x00", b"\xef\xbb\xbf", b"\r")
"""Byte strings spliced into otherwise valid UTF-8: truncated sequences, surrogates, overlong forms, NUL, BOM."""

LINE_OPS = ("drop", "duplicate", "swap", "field", "number", "insert", "truncate", "tab", "cr", "quote")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


@st.composite
def mutated_line(draw: st.DrawFn, line: str, sep: str, max_mutations: int = 3) -> str:
    """A valid line with up to `max_mutations` edits: fields dropped/duplicated/swapped/replaced, numbers
    replaced by text/NaN/inf/huge values, tabs, carriage returns and quotes inserted, the line truncated."""
    for _ in range(draw(st.integers(0, max_mutations))):
        op = draw(st.sampled_from(LINE_OPS))
        fields = line.split(sep)
        i, j = draw(st.integers(0, len(fields) - 1)), draw(st.integers(0, len(fields) - 1))
        position = draw(st.integers(0, len(line)))
        piece = draw(st.one_of(st.sampled_from(NASTY), st.text(max_size=4)))
        if op == "drop":
            del fields[i]
        elif op == "duplicate":
            fields.insert(i, fields[i])
        elif op == "swap":
            fields[i], fields[j] = fields[j], fields[i]
        elif op == "field":
            fields[i] = piece
        if op in ("drop", "duplicate", "swap", "field"):
            line = sep.join(fields)
            continue
        if op == "number":
            numbers = list(_NUMBER.finditer(line))
            if numbers:
                match = numbers[draw(st.integers(0, len(numbers) - 1))]
                line = line[: match.start()] + piece + line[match.end() :]
            continue
        inserted = {"insert": piece, "tab": "\t", "cr": "\r", "quote": '"'}.get(op)
        line = line[:position] if inserted is None else line[:position] + inserted + line[position:]
    return line


@dataclass(frozen=True)
class FileSpec:
    """One file of a reader's layout: where it lives, valid example rows and the separator of its fields."""

    path: str
    rows: tuple[str, ...]
    sep: str = " "
    header: str | None = None
    gz: bool = False
    scale: int = 1  # line count relative to the other files (STS2017 track 6 ships twice the input lines)

    def lines(self, n: int) -> list[str]:
        """n * scale valid rows (in order, cycling), after the header if the format has one."""
        rows = [self.rows[i % len(self.rows)] for i in range(n * self.scale)]
        return rows if self.header is None else [self.header, *rows]


def _encode(lines: Sequence[str], newline: str = "\n", trailing: bool = True, bom: bool = False) -> bytes:
    text = newline.join(lines) + (newline if trailing and lines else "")
    return (("\ufeff" if bom else "") + text).encode("utf-8", "surrogatepass")


def valid_bytes(spec: FileSpec, n: int) -> bytes:
    """The file with `n` valid rows."""
    return _encode(spec.lines(n))


@st.composite
def malformed_file(draw: st.DrawFn, spec: FileSpec, n: int) -> bytes:
    """`n` mutated rows (header mutated only now and then), then file-level damage: empty or duplicated or
    dropped lines, CRLF, BOM, no final newline, and invalid UTF-8 bytes spliced in."""
    lines = [draw(mutated_line(row, spec.sep)) for row in spec.lines(n)[spec.header is not None :]]
    if spec.header is not None:
        lines.insert(0, draw(mutated_line(spec.header, spec.sep, max_mutations=draw(st.sampled_from([0, 0, 1])))))
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(("empty", "blank", "duplicate", "drop", "none")))
        index = draw(st.integers(0, len(lines)))
        if op in ("empty", "blank"):
            lines.insert(index, "" if op == "empty" else " \t ")
        elif op in ("duplicate", "drop") and index < len(lines):
            if op == "drop":
                del lines[index]
            else:
                lines.insert(index, lines[index])
    data = _encode(
        lines,
        newline=draw(st.sampled_from(("\n", "\n", "\r\n"))),
        trailing=draw(st.booleans()),
        bom=draw(st.booleans()),
    )
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.sampled_from(BAD_BYTES)) + data[cut:]
    return data


def malformed_text(examples: Sequence[str], sep: str) -> st.SearchStrategy[str]:
    """A mutated example string (for readers that take text rather than a file)."""
    return st.sampled_from(examples).flatmap(lambda text: mutated_line(text, sep, max_mutations=4))


random_text = st.binary(max_size=200).map(lambda raw: raw.decode("utf-8", "surrogateescape"))
"""Random bytes as Python presents undecodable command-line or file-name bytes (surrogate escapes)."""


@contextmanager
def temp_folder() -> Iterator[Path]:
    """A fresh folder, for the few tests whose layout changes from one example to the next."""
    with tempfile.TemporaryDirectory(prefix="polyembed-fuzz-") as name:
        yield Path(name)


@pytest.fixture(scope="module")
def fuzz_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One folder for the whole module, in RAM where the machine has /dev/shm: thousands of tiny writes cost
    milliseconds each on some CI disks. A fixed layout is rewritten file by file for every example, which
    leaves exactly what a fresh folder would hold, without a mkdir/rmdir per example."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(prefix="polyembed-fuzz-", dir=shm) as name:
            yield Path(name)
    else:
        yield tmp_path_factory.mktemp("fuzz")


def write_layout(folder: Path, files: Sequence[FileSpec], contents: Sequence[bytes]) -> None:
    """Every file of the layout, overwritten (gzipped where the real files are)."""
    for spec, data in zip(files, contents, strict=True):
        path = folder / spec.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(data, mtime=0) if spec.gz else data)


# --------------------------------------------------------------------------------------- result checks


def check_scored_pairs(pairs: ScoredPairs) -> None:
    """Equal-length lists, finite float scores, non-empty stripped sentences (STS2017 may return no pairs)."""
    assert len(pairs.sentences1) == len(pairs.sentences2) == len(pairs.scores)
    assert all(isinstance(s, float) and math.isfinite(s) for s in pairs.scores)
    for text in pairs.sentences1 + pairs.sentences2:
        assert text and text == text.strip()


def check_lines(lines: Sequence[str], allow_empty: bool = True) -> None:
    """Lines never contain a newline; without allow_empty none is blank."""
    assert all(isinstance(line, str) and "\n" not in line for line in lines)
    assert allow_empty or all(line.strip() for line in lines)


def check_parallel(text: ParallelText) -> None:
    """Aligned sides of non-blank single lines (the readers refuse empty sentences)."""
    assert len(text.source) == len(text.target)
    check_lines(text.source, allow_empty=False)
    check_lines(text.target, allow_empty=False)


def check_multiway(text: MultiwayText) -> None:
    """Every language has the same number of non-blank single lines."""
    assert len({len(lines) for lines in text.texts.values()}) <= 1
    for lines in text.texts.values():
        check_lines(lines, allow_empty=False)


def check_choices(items: Sequence[MultipleChoiceItem]) -> None:
    """At least one item; each label points at a candidate; every text is a non-empty string."""
    assert items
    for item in items:
        assert 0 <= item.label < len(item.candidates)
        assert all(isinstance(c, str) and c.strip() for c in [item.context, *item.candidates])


def check_alignment(examples: Sequence[AlignmentExample], mode: str) -> None:
    """0-based links, sure within possible, and the out-of-range policy honoured."""
    for example in examples:
        assert example.sure <= example.possible
        outside = {
            (i, j)
            for i, j in example.possible
            if i >= len(example.source_tokens) or j >= len(example.target_tokens)
        }
        assert all(i >= 0 and j >= 0 for i, j in example.possible)
        if mode == "keep":
            assert example.out_of_range == outside
        else:
            assert not outside and not example.out_of_range


def check_csv_rows(rows: Sequence[tuple[int, list[str]]]) -> None:
    """Record line numbers are 1-based and strictly increasing (a quoted record may span lines)."""
    numbers = [number for number, _ in rows]
    assert numbers == sorted(set(numbers)) and all(n >= 1 for n in numbers)
    assert all(isinstance(f, str) for _, fields in rows for f in fields)


def check_source(source: ParallelSource) -> None:
    """A bitext with at least one pair and no blank side."""
    assert len(source.english) == len(source.other) > 0
    assert all(e.strip() for e in source.english) and all(o.strip() for o in source.other)


def check_config_mapping(result: tuple[dict[str, Any], Any]) -> None:
    """String keys (YAML allows any scalar), and every recorded key and item line is a 1-based line."""
    values, origin = result
    assert all(isinstance(key, str) for key in values)
    lines = [*origin.key_lines.values(), *(n for items in origin.item_lines.values() for n in items)]
    assert all(isinstance(n, int) and n >= 1 for n in lines)


# ------------------------------------------------------------------------------------------ the readers

STS_ES = (
    FileSpec(
        "STS2017.eval.v1.1/STS.input.track3.es-es.txt", ("Un perro corre.\tUn gato duerme.", "Hola.\tAdiós."), "\t"
    ),
    FileSpec("STS2017.gs/STS.gs.track3.es-es.txt", ("4.0", "1.5", "5.000", "0")),
)
STS_TR = (
    FileSpec("STS2017.eval.v1.1/STS.input.track6.tr-en.txt", ("A man runs.\tBir adam koşuyor.",), "\t", scale=2),
    FileSpec("STS2017.gs/STS.gs.track6.tr-en.txt", ("3.8", "0.2")),
)
STSB = FileSpec(
    "sts-test.csv",
    (
        "main-captions\tMSRvid\t2012test\t0000\t5.000\tA man is dancing.\tA man dances.",
        "main-news\theadlines\t2013\t0001\t0.25\tSome \"quoted text.\tOther text.\tsource-note\tmore",
    ),
    "\t",
)
STSB_MULTI = tuple(
    FileSpec(f"stsb-{lang}-test.csv", (f'{a},"{b}, too",2.5', f"{a} x.,{b} y.,3.6", "x,y,0"), ",")
    for lang, a, b in (("en", "A girl.", "A girl brushes"), ("de", "Ein Mädchen.", "Ein Mädchen bürstet"))
)
KARDES_STS_HEADER = "sentence1,sentence2,score,s1_translation,s2_translation"
KARDES_STS = tuple(
    FileSpec(
        f"{folder}/sts.test.{code}.csv",
        ("10,People play.,Men play.,3.2,İnsanlar oynayır.,Kişilər.", '32,"A, b.",C d.,4.6,Fil.,"Fil, sürü."'),
        ",",
        header=f"{index},{KARDES_STS_HEADER}",
    )
    for folder, code, index in (("azeri", "az", "Unnamed: 0"), ("kazakh", "kk", ""))
)
SEMREL = FileSpec(
    "track_a/eng/eng_test_with_labels.csv",
    ('ENG-0,"The story is gripping.\nIt is a story.",0.64', "ENG-1,A cat.\tA dog.,0.2", 'ENG-2,"One.\nTwo.",1'),
    ",",
    header="PairID,Text,Score",
)
DEU = ("Ich bin hier.", "Danke!", "Wie geht's?")
ENG = ("I am here.", "Thanks!", "How are you?")
CHALLENGE = (
    FileSpec("challenge/deu-eng/tatoeba-test-v2021-08-07.deu", DEU),
    FileSpec("challenge/deu-eng/tatoeba-test-v2021-08-07.eng", ENG),
    FileSpec("tatoeba/tatoeba.deu-eng.deu", DEU[1:]),
    FileSpec("tatoeba/tatoeba.deu-eng.eng", ENG[1:]),
)
BELEBELE = FileSpec(
    "eng_Latn.jsonl",
    (
        json.dumps(
            {
                "text": "A passage.",
                "items": [
                    {
                        "question": "What?",
                        "answers": [{"text": "a", "correct": False}, {"text": "b", "correct": True}],
                    }
                ],
            }
        ),
    ),
    ", ",
)
XCOPA = FileSpec(
    "et/test.et.jsonl",
    (
        json.dumps({"premise": "Mees keeras.", "choice1": "Täitus.", "choice2": "Voolas.", "question": "effect",
                    "label": 1, "idx": 0}),
        json.dumps({"premise": "P.", "choice1": "A.", "choice2": "B.", "question": "cause", "label": 0}),
    ),
    ", ",
)
KARDES_XCOPA = FileSpec(
    "azeri/xcopa.test.az.csv",
    ("401,effect,2,The man.,The toilet.,Water.,Kişi.,Tualet.,Su.", '402,cause,1,"A, b.",C.,D.,E.,F.,G.'),
    ",",
    header="id,asks-for,most-plausible-alternative,p,a1,a2,p_translation,a1_translation,a2_translation",
)
KARDES_XNLI = FileSpec(
    "kazakh/xnli.test.kk.csv",
    ('5,contradiction,"A, b.",C d.,Е ф.,Г х.', "6,entailment,X.,Y.,Z.,W."),
    ",",
    header=",gold_label,sentence1,sentence2,s1_translation,s2_translation",
)
AWESOME = (
    FileSpec(
        "awesome-align-examples/roen.src-tgt",
        ("ajunge !   ||| that 's enough !  ", "de Cornel ||| by Cornel", "a b c ||| d e"),
        " ||| ",
    ),
    FileSpec("awesome-align-examples/roen.gold", ("1-1 2p2 1-3 3-9", "2-2 1-1", "1p1 9-9")),
)
NAACL = (
    FileSpec("bicici-de-en-europarl/test.de", ("das ist gut .", "ja", "ein haus")),
    FileSpec("bicici-de-en-europarl/test.en", ("that is good .", "yes", "a house")),
    FileSpec("bicici-de-en-europarl/de-en.ref.wa", ("1 12 16 S", "1 0 0 S ", "1 1 1 P", "2 0 0", "3 1 1 S 0.9")),
)
SIMALIGN = (
    FileSpec("simalign-samples/sample_eng.txt", ("0\tWe do not .", "1\tBut this .", "2\tYes .", "3\tNo ."), "\t"),
    FileSpec("simalign-samples/sample_deu.txt", ("0\tWir nicht .", "1\tAber das .", "2\tJa .", "3\tNein ."), "\t"),
    FileSpec("simalign-samples/sample_eng_deu.gold", ("0\t0-0 1-1 2p2 9-9", "1\t1-0 2-1", "2\t0-0", "3\t0p0")),
)
PLAIN = FileSpec("plain.txt", ("Hello world.", "Zweite Zeile ", "x\ty"))
COMMA_CSV = FileSpec("table.csv", ('a,"b, c",1.5', '"multi\nline",x', "x,y", '"open'), ",")
TAB_CSV = FileSpec("table.tsv", ("a\tb\t1", '"q"\tr', "x\t\ty"), "\t")
BITEXT = FileSpec("bitext.tsv", ("Hello.\tHallo.", "Yes\tJa", '"quoted\t"zitat"'), "\t")
CONFIG = FileSpec(
    "config.yaml",
    (
        "batch_size: 8",
        "languages:\n  - de\n  - kk",
        "learning_rate: 2e-5",
        "epochs: 1.5",
        "max_steps: null",
        "projection: auto",
        "datasets: [muse-dictionaries, multi30k]",
        "seed: 3",
    ),
    ": ",
)


def _multi30k_file(lang: str, rows: tuple[str, ...]) -> FileSpec:
    return FileSpec(f"raw/test_2016_flickr.{lang}.gz", rows, gz=True)


def _build_config(path: Path) -> Any:
    from polyembed.config import build_config
    from polyembed.methods.distill.config import DistillConfig  # heavy import (torch): only when needed

    config, _ = build_config(DistillConfig, path)
    assert isinstance(config, DistillConfig) and config.batch_size >= 1
    return config


@dataclass(frozen=True)
class Case:
    """A reader under test: its file layout, how to call it (with one drawn option) and what a result must be."""

    name: str
    files: tuple[FileSpec, ...]
    call: Callable[[Path, Any], Any]
    options: tuple[Any, ...] = (None,)
    check: Callable[[Any, Any], None] = lambda result, option: None


CASES = (
    # io.py
    Case("read_lines", (PLAIN,), lambda f, empty: read_lines(f / PLAIN.path, allow_empty=empty), (True, False),
         lambda r, empty: check_lines(r, allow_empty=empty)),
    Case("read_text", (PLAIN,), lambda f, _: read_text(f / PLAIN.path),
         check=lambda r, _: check_lines([r.replace("\n", "")])),
    Case("read_parallel", (FileSpec("a.txt", DEU), FileSpec("b.txt", ENG)),
         lambda f, _: read_parallel(f / "a.txt", f / "b.txt"),
         check=lambda r, _: check_parallel(ParallelText(r[0], r[1], "de", "en"))),
    Case("iter_csv_comma", (COMMA_CSV,), lambda f, _: list(iter_csv(f / COMMA_CSV.path)),
         check=lambda r, _: check_csv_rows(r)),
    Case("iter_csv_tab", (TAB_CSV,),
         lambda f, quoting: list(iter_csv(f / TAB_CSV.path, delimiter="\t", quoting=quoting)),
         (csv.QUOTE_NONE, csv.QUOTE_MINIMAL), lambda r, _: check_csv_rows(r)),
    # readers/sts.py
    Case("read_sts2017", STS_ES, lambda f, _: read_sts2017(f, "es-es"), check=lambda r, _: check_scored_pairs(r)),
    Case("read_sts2017_track6", STS_TR, lambda f, _: read_sts2017(f, "6"), check=lambda r, _: check_scored_pairs(r)),
    Case("read_stsbenchmark", (STSB,), lambda f, _: read_stsbenchmark(f, "test"),
         check=lambda r, _: check_scored_pairs(r)),
    Case("read_stsb_multi_mt", STSB_MULTI, lambda f, second: read_stsb_multi_mt(f, "en", "test", second),
         (None, "de"), lambda r, _: check_scored_pairs(r)),
    Case("read_kardes_sts", KARDES_STS, lambda f, langs: read_kardes_sts(f, *langs, split="test"),
         (("az", "kk"), ("en", "kk"), ("az", None), ("en", "en")), lambda r, _: check_scored_pairs(r)),
    Case("read_kardes_multiway", KARDES_STS, lambda f, langs: read_kardes_multiway(f, langs, "test"),
         (["en", "az", "kk"], ["kk", "az"], ["en"]), lambda r, _: check_multiway(r)),
    Case("read_semrel", (SEMREL,), lambda f, _: read_semrel(f, "eng", "test"),
         check=lambda r, _: check_scored_pairs(r)),
    # readers/parallel.py
    Case("read_tatoeba", CHALLENGE[2:], lambda f, _: read_tatoeba(f / "tatoeba", "deu"),
         check=lambda r, _: check_parallel(r)),
    Case("read_tatoeba_challenge", CHALLENGE,
         lambda f, exclude: read_tatoeba_challenge(f / "challenge", "deu", exclude, f / "tatoeba"), (False, True),
         lambda r, _: check_parallel(r)),
    Case("read_tico19", (FileSpec("en-fr/tico19-test.fr", DEU), FileSpec("en-fr/tico19-test.en", ENG)),
         lambda f, _: read_tico19(f, "fr"), check=lambda r, _: check_parallel(r)),
    Case("read_mafand", (FileSpec("en-hau/test.hau", DEU), FileSpec("en-hau/test.en", ENG)),
         lambda f, _: read_mafand(f, "hau", "test"), check=lambda r, _: check_parallel(r)),
    Case("read_muse_dictionary", (FileSpec("en-de.dict", ("die @ the", "c@h @ c@h", "Haus @ house"), " @ "),),
         lambda f, _: read_muse_dictionary(f, "de"), check=lambda r, _: check_parallel(r)),
    # readers/mcqa.py and kardes.py
    Case("read_belebele", (BELEBELE,), lambda f, _: read_belebele(f, "eng"), check=lambda r, _: check_choices(r)),
    Case("read_xcopa", (XCOPA,), lambda f, _: read_xcopa(f, "et", "test"), check=lambda r, _: check_choices(r)),
    Case("read_kardes_xcopa", (KARDES_XCOPA,), lambda f, lang: read_kardes_xcopa(f, lang, "test"), ("az", "en"),
         lambda r, _: check_choices(r)),
    Case("read_kardes_rows", (KARDES_XNLI,), lambda f, _: read_kardes_rows(f, "xnli", "kk", "test"),
         check=lambda r, _: all(row["gold_label"].strip() for _, row in r)),
    # readers/multiway.py
    Case("read_line_aligned_directory", (FileSpec("para/test.en", ENG), FileSpec("para/test.de", DEU)),
         lambda f, prefix: read_line_aligned_directory(f / "para", prefix), (None, "test"),
         lambda r, _: check_multiway(r)),
    Case("read_multi30k", (_multi30k_file("en", ENG), _multi30k_file("de", DEU), _multi30k_file("fr", ENG)),
         lambda f, langs: read_multi30k(f, "test_2016_flickr", langs), (None, ["de", "en"]),
         lambda r, _: check_multiway(r)),
    # readers/alignment.py
    Case("read_alignment_gold_awesome", AWESOME, lambda f, mode: read_alignment_gold(f, "ro-en", mode),
         ("keep", "drop", "error"), check_alignment),
    Case("read_alignment_gold_naacl", NAACL, lambda f, mode: read_alignment_gold(f, "de-en", mode),
         ("keep", "drop", "error"), check_alignment),
    Case("read_alignment_gold_simalign", SIMALIGN, lambda f, mode: read_alignment_gold(f, "simalign-en-de", mode),
         ("keep", "drop", "error"), check_alignment),
    # parallel_sources.py
    Case("read_parallel_tsv", (BITEXT,), lambda f, _: read_parallel_tsv(f / BITEXT.path),
         check=lambda r, _: check_source(ParallelSource("t", "de", r[0], r[1], "t"))),
    Case("read_parallel_file", (BITEXT, FileSpec("en.txt", ENG), FileSpec("de.txt", DEU)),
         lambda f, spec: read_parallel_file(ParallelFileSpec.parse(spec.format(f))),
         ("de={0}/bitext.tsv", "de={0}/en.txt,{0}/de.txt"), lambda r, _: check_source(r)),
    # config.py
    Case("read_yaml_mapping", (CONFIG,), lambda f, _: read_yaml_mapping(f / CONFIG.path),
         check=lambda r, _: check_config_mapping(r)),
    Case("build_config", (CONFIG,), lambda f, _: _build_config(f / CONFIG.path)),
)


def run_reader(folder: Path, case: Case, contents: Sequence[bytes], option: Any) -> None:
    """Write the layout, call the reader: a PolyembedError is a pass, a result must pass the case's check, and
    any other exception propagates so Hypothesis shrinks it."""
    folder = folder / case.name
    write_layout(folder, case.files, contents)
    try:
        result = case.call(folder, option)
    except PolyembedError:
        return
    case.check(result, option)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
@FUZZ
@given(data=st.data())
def test_reader_on_random_bytes(fuzz_root: Path, case: Case, data: st.DataObject) -> None:
    """One file of the layout is random bytes, the others valid: the reader fails cleanly or returns sense."""
    n = data.draw(st.integers(0, 4), label="rows")
    fuzzed = data.draw(st.integers(0, len(case.files) - 1), label="fuzzed file")
    contents = [
        data.draw(st.binary(max_size=300), label=spec.path) if index == fuzzed else valid_bytes(spec, n)
        for index, spec in enumerate(case.files)
    ]
    run_reader(fuzz_root, case, contents, data.draw(st.sampled_from(case.options), label="option"))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
@FUZZ
@given(data=st.data())
def test_reader_on_malformed_lines(fuzz_root: Path, case: Case, data: st.DataObject) -> None:
    """Every file of the layout is a mutated valid file with a shared row count (so aligned files line up
    often enough to reach the per-row checks): the reader fails cleanly or returns sense."""
    n = data.draw(st.integers(0, 4), label="rows")
    contents = [data.draw(malformed_file(spec, n), label=spec.path) for spec in case.files]
    run_reader(fuzz_root, case, contents, data.draw(st.sampled_from(case.options), label="option"))


def test_valid_layouts_read() -> None:
    """The unmutated example files are valid for every reader, so the fuzzing starts from real successes
    (the alignment golds hold an out-of-range link, as the official ones do: strict mode refuses it)."""
    for case in CASES:
        for option in case.options:
            with temp_folder() as folder:
                write_layout(folder, case.files, [valid_bytes(spec, 2) for spec in case.files])
                if option == "error":
                    with pytest.raises(DataError, match="past the sentence end"):
                        case.call(folder, option)
                    continue
                case.check(case.call(folder, option), option)


# ------------------------------------------------------------------------------ gzip, text-only readers

corrupted_gzip = st.tuples(
    st.binary(max_size=60), st.lists(st.tuples(st.integers(0, 200), st.integers(1, 255)), max_size=3),
    st.integers(0, 200),
).map(
    lambda t: bytes(
        b ^ dict(t[1]).get(i, 0) for i, b in enumerate(gzip.compress(t[0], mtime=0))
    )[: len(gzip.compress(t[0], mtime=0)) - t[2] % 8]
)
"""A real gzip stream with a few bytes flipped (header, deflate blocks or trailer) and the tail maybe cut."""


@FUZZ
@given(raw=st.one_of(st.binary(max_size=300), corrupted_gzip))
def test_read_bytes_gz(fuzz_root: Path, raw: bytes) -> None:
    """`.gz` files are random bytes or damaged gzip streams: decompressed bytes or a DataError, never zlib.error."""
    path = fuzz_root / "captions.en.gz"
    path.write_bytes(raw)
    try:
        data = read_bytes(path)
        lines = read_lines(path, allow_empty=True)
    except PolyembedError:
        return
    assert isinstance(data, bytes)
    check_lines(lines)


@FUZZ
@given(value=st.one_of(random_text, malformed_text(["2.5", "-0.75", "1e-3", "5.000"], ".")))
def test_parse_float(value: str) -> None:
    try:
        number = parse_float("gold.txt", 3, value)
    except DataError as err:
        assert (err.path, err.line) == ("gold.txt", 3)
        return
    assert isinstance(number, float)


@FUZZ
@given(text=st.one_of(random_text, malformed_text(["The cat.\nA dog.", "One.\tTwo."], " ")))
def test_split_semrel_text(text: str) -> None:
    try:
        first, second = split_semrel_text(Path("eng_test.csv"), 2, text)
    except DataError as err:
        assert err.line == 2
        return
    assert first and second and first == first.strip() and second == second.strip()


@FUZZ
@given(spec=st.one_of(random_text, malformed_text(["de=bitext.tsv", "fr=en.txt,fr.txt", "kk = ~/a.tsv"], "=")))
def test_parallel_file_spec_parse(spec: str) -> None:
    """Random --parallel-file values parse into 1-2 paths and a language, or fail with a PolyembedError."""
    try:
        parsed = ParallelFileSpec.parse(spec)
    except PolyembedError:
        return
    assert parsed.language and parsed.language == parsed.language.strip()
    assert 1 <= len(parsed.paths) <= 2


path_part = st.one_of(
    random_text,
    st.text(max_size=20),
    st.text("ab~= ", min_size=256, max_size=300),
    st.sampled_from(["bitext.tsv", "~x"]),
).filter(lambda part: ".." not in part)
"""Parts of a --parallel-file path: random (surrogate-escaped) text, names too long for the file system, '~'."""


@FUZZ
@given(parts=st.lists(path_part, min_size=1, max_size=3), language=st.sampled_from(["de", "", " kk", "=", "~"]))
def test_read_parallel_file_on_random_paths(fuzz_root: Path, parts: list[str], language: str) -> None:
    """A --parallel-file value naming random files (inside the test folder) reads or fails with a PolyembedError;
    names too long for the file system made `Path.is_dir()` raise OSError."""
    (fuzz_root / "bitext.tsv").write_bytes(valid_bytes(BITEXT, 2))
    spec = f"{language}=" + ",".join(f"{fuzz_root}/{part}" for part in parts)
    try:
        source = read_parallel_file(ParallelFileSpec.parse(spec))
    except PolyembedError:
        return
    check_source(source)


file_name = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=16
).filter(lambda name: name not in (".", "..") and len(name.encode()) < 200)


@FUZZ
@given(
    names=st.lists(
        st.one_of(file_name, st.sampled_from(["deu-eng", "eng-kaz", "en-fr", "test.de", "test.en.gz", "x.md"])),
        max_size=6,
        unique=True,
    ),
    as_dirs=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_folder_listings(names: list[str], as_dirs: list[bool]) -> None:
    """Folders and files with random names: language listings return codes or raise a clean error."""
    with temp_folder() as folder:
        for name, is_dir in zip(names, as_dirs, strict=False):
            if is_dir:
                (folder / name).mkdir()
            else:
                (folder / name).write_text("Hello.\n", encoding="utf-8")
        for listing in (tatoeba_challenge_languages, tico19_languages):
            try:
                codes = listing(folder)
            except PolyembedError:
                continue
            assert all(isinstance(code, str) for code in codes)
        try:
            files = line_aligned_files(folder)
        except PolyembedError:
            return
        assert all(path.parent == folder for path in files.values())
        with suppress(PolyembedError):
            check_multiway(read_line_aligned_directory(folder))


# --------------------------------------------------------------------------------------- YAML-ish configs

YAML_KEYS = ("batch_size", "languages", "learning_rate", "epochs", "max_steps", "projection", "seed", "datasets",
             "teacher", "dropout", "unknown_key", "<<", "? x", "- ", "", "[a]", "2024-02-30")
YAML_VALUES = (
    "8", "0", "-1", "2e-5", "1.5", "null", "~", "yes", "auto", "de", "[de, fr]", "{a: 1}", "[", "{", "}", "]",
    "9" * 400, "1" + "0" * 5000, "0x" + "f" * 300, "0b" + "1" * 15000, ".inf", "-.inf", ".nan", "1e999",
    "2024-02-30", "2001-12-14t21:59:43.10+25:00", "2024-13-01", "&a [1, 2]", "*a", "*b", "&a",
    "!!python/object:os.system", "!!binary xyz", "!!int abc", "!!float x", "!!timestamp 2024-99-99", "!!set [1]",
    "!!omap 5", "|", ">", "'open",
    '"\\x"', '"\\ud800"', "190:20:30", "<<: *a", "- de", "-", "? [a]", ": x", "!tag x", "%YAML 1.1", "---", "...",
)
YAML_NOISE = ("\x00", "\x07", "\x1b", "\x7f", "\x85", "\u2028", "\ufeff", "\ud800", "\t", "\r", "'", '"', "#", "&", "*")


GOOD_YAML = {
    "batch_size": ("8", "64"),
    "languages": ("[de, fr]", "\n  - de\n  - kk"),
    "learning_rate": ("2e-5", "0.001"),
    "epochs": ("1.5", "2"),
    "max_steps": ("null", "10"),
    "projection": ("auto", "never"),
    "seed": ("0", "4294967295"),
    "datasets": ("[multi30k]", "[]"),
    "teacher": ("minilm-en",),
    "dropout": ("0.1", "~"),
}
"""Valid DistillConfig keys and values: most examples start from a valid config, so damage to one value or one
line reaches the type and range checks of `build_config` instead of stopping at an unknown key."""


@st.composite
def yamlish(draw: st.DrawFn) -> bytes:
    """Config-like YAML: a valid config, then a few values replaced by bad, huge or tricky ones, lines added
    (unknown keys, list items, anchors and aliases, random text), control characters and bad indentation."""
    keys = draw(st.lists(st.sampled_from(sorted(GOOD_YAML)), max_size=5, unique=True))
    lines = [f"{key}: {draw(st.sampled_from(GOOD_YAML[key]))}" for key in keys]
    value = st.one_of(st.sampled_from(YAML_VALUES), st.text(max_size=6))
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(("value", "value", "pair", "item", "text", "noise", "indent")))
        index = draw(st.integers(0, len(lines)))
        if kind == "value" and index < len(lines):
            lines[index] = f"{lines[index].split(':')[0]}: {draw(value)}"
        elif kind in ("pair", "item", "text"):
            line = {
                "pair": lambda: f"{draw(st.sampled_from(YAML_KEYS))}: {draw(value)}",
                "item": lambda: f"- {draw(value)}",
                "text": lambda: draw(st.text(max_size=12)),
            }[kind]()
            lines.insert(index, line)
        elif kind == "noise" and index < len(lines):
            cut = draw(st.integers(0, len(lines[index])))
            lines[index] = lines[index][:cut] + draw(st.sampled_from(YAML_NOISE)) + lines[index][cut:]
        elif kind == "indent" and index < len(lines):
            lines[index] = draw(st.sampled_from(("  ", "\t", " "))) + lines[index]
    return _encode(lines).replace(b"\n", draw(st.sampled_from([b"\n", b"\r\n"])))


@pytest.mark.parametrize("reader", [read_yaml_mapping, _build_config], ids=["read_yaml_mapping", "build_config"])
@settings(FUZZ, max_examples=2 * FUZZ.max_examples)
@given(raw=st.one_of(st.binary(max_size=200), yamlish()))
def test_config_on_yamlish_text(fuzz_root: Path, reader: Callable[[Path], Any], raw: bytes) -> None:
    """A config file of random bytes or YAML-ish text loads or raises a PolyembedError (DataError with file)."""
    path = fuzz_root / "config.yaml"
    path.write_bytes(raw)
    try:
        result = reader(path)
    except DataError as err:
        assert err.path == str(path)
        return
    except PolyembedError:
        return
    if reader is read_yaml_mapping:
        check_config_mapping(result)


# ------------------------------------------------------------------- regressions: inputs fuzzing found

DAMAGED_GZIP = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00\x02\x01"
"""A good gzip header, then a deflate block that refers back past the start: zlib.error, not OSError."""


def test_damaged_gzip_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "test_2016_flickr.en.gz"
    path.write_bytes(DAMAGED_GZIP)
    with pytest.raises(DataError, match="not a readable gzip file") as caught:
        read_bytes(path)
    assert caught.value.path == str(path)


@pytest.mark.parametrize(
    ("bad", "message"),
    [("1" * 5000, "Exceeds the limit"), ('{"label": ' + "1" * 5000 + "}", "Exceeds the limit"),
     ("[" * 100_000, "nested too deeply")],
    ids=["huge-int", "huge-label", "deep-nesting"],
)
@pytest.mark.parametrize("reader", ["belebele", "xcopa"])
def test_json_lines_beyond_python_limits_are_data_errors(tmp_path: Path, reader: str, bad: str, message: str) -> None:
    """json.loads raises a plain ValueError past 4300 digits and RecursionError on deep nesting."""
    valid = {"belebele": BELEBELE, "xcopa": XCOPA}[reader]
    path = tmp_path / valid.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(valid.rows[0] + "\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=message) as caught:
        read_belebele(tmp_path, "eng") if reader == "belebele" else read_xcopa(tmp_path, "et", "test")
    assert (caught.value.path, caught.value.line) == (str(path), 2)


@pytest.mark.parametrize(
    ("files", "name", "bad_line"),
    [
        (AWESOME, "ro-en", "1-" + "1" * 5000),
        (SIMALIGN, "simalign-en-de", "1\t0-" + "1" * 5000),
        (NAACL, "de-en", "\u00b2 0 0 S"),  # isdigit() is True, int() refuses it
        (NAACL, "de-en", "1 0 " + "1" * 5000),
    ],
    ids=["awesome-huge-index", "simalign-huge-index", "naacl-superscript", "naacl-huge-index"],
)
def test_alignment_indices_int_refuses_are_data_errors(
    tmp_path: Path, files: tuple[FileSpec, ...], name: str, bad_line: str
) -> None:
    """Indices that pass the reader's digit checks but not int() name the gold file and line 2."""
    contents = [valid_bytes(spec, 2) for spec in files]
    rows = contents[-1].decode().splitlines()
    contents[-1] = _encode([rows[0], bad_line])
    write_layout(tmp_path, files, contents)
    with pytest.raises(DataError) as caught:
        read_alignment_gold(tmp_path, name)
    assert (caught.value.path, caught.value.line) == (str(tmp_path / files[-1].path), 2)


@pytest.mark.parametrize("spec", ["kk = ~ /a.tsv", "de=~no-such-user-polyembed/x.tsv"])
def test_parallel_file_spec_unknown_home_is_a_clean_error(spec: str) -> None:
    """Path.expanduser raises RuntimeError for '~name' of a user the machine does not have."""
    with pytest.raises(PolyembedError, match="cannot expand '~'"):
        ParallelFileSpec.parse(spec)


@pytest.mark.parametrize("reader", [read_bytes, read_lines, read_parallel_tsv, read_yaml_mapping])
def test_file_name_too_long_is_a_data_error(tmp_path: Path, reader: Callable[[Path], Any]) -> None:
    """`Path.is_dir()` raises OSError (ENAMETOOLONG) instead of returning False for a 300-byte name."""
    path = tmp_path / ("x" * 300 + ".tsv")
    with pytest.raises(DataError, match="cannot read it") as caught:
        reader(path)
    assert caught.value.path == str(path)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("batch_size: " + "9" * 400, 1),
        ("epochs: 1.5\nlearning_rate: 0x" + "f" * 300, 2),
        ("languages:\n  - de\n  - " + "1" * 310, 3),
        ("? 0b" + "1" * 15000 + "\n: 1", 1),  # as a key, str() of it would fail past 4300 digits
    ],
    ids=["decimal", "hex", "list-item", "binary-key"],
)
def test_config_integers_beyond_float_range_are_data_errors(tmp_path: Path, text: str, line: int) -> None:
    """Range checks call math.isfinite, which overflows on such integers: refused at their own line."""
    path = tmp_path / "config.yaml"
    path.write_text(text + "\n", encoding="utf-8")
    for reader in (read_yaml_mapping, _build_config):
        with pytest.raises(DataError, match="number too large") as caught:
            reader(path)
        assert (caught.value.path, caught.value.line) == (str(path), line)
