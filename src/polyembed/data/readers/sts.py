"""Readers for scored sentence pairs (STS / STR): STS2017, STS-B, STSb-multi-mt, Kardes-NLU STS, SemRel 2024.

Each reader returns `ScoredPairs` whose `language1`/`language2` follow the real column order of the file,
so language-routed encoders see every sentence with its own language. The format quirks listed in the
data README are handled here, once, and any other irregularity is a `DataError` with file and line.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from polyembed.data.io import iter_csv, parse_float, read_lines
from polyembed.data.readers.kardes import KARDES_FOLDERS, kardes_file, read_kardes_rows
from polyembed.data.registry import get_dataset
from polyembed.data.types import MultiwayText, ScoredPairs
from polyembed.errors import DataError, PolyembedError, UnknownLanguageError

SCORE_TOLERANCE = 1e-6
"""Gold scores of row-aligned files (translations of one set) must agree to this precision."""


def _score(path: Path, line: int, value: str) -> float:
    """A finite gold score, or a DataError naming file and line."""
    score = parse_float(path, line, value.strip())
    if not math.isfinite(score):
        raise DataError(path, line, f"score {value!r} is not a finite number")
    return score


def _sentence(path: Path, line: int, value: str, what: str) -> str:
    """A non-empty sentence, or a DataError naming file and line."""
    text = value.strip()
    if not text:
        raise DataError(path, line, f"empty {what}")
    return text


def _check_split(dataset: str, split: str, splits: tuple[str, ...]) -> None:
    if split not in splits:
        raise PolyembedError(f"{dataset} has no split '{split}' (has {', '.join(splits)})")


# --------------------------------------------------------------------------------------------- STS2017


@dataclass(frozen=True)
class Sts2017Track:
    """One STS2017 track: its file id and the language of each column (in file order)."""

    subset: str
    track: str
    file_pair: str
    language1: str
    language2: str
    description: str


STS2017_TRACKS: dict[str, Sts2017Track] = {
    track.subset: track
    for track in (
        Sts2017Track("ar-ar", "1", "ar-ar", "ar", "ar", "Arabic-Arabic (SNLI)"),
        Sts2017Track("ar-en", "2", "ar-en", "en", "ar", "Arabic-English (SNLI); English is the first column"),
        Sts2017Track("es-es", "3", "es-es", "es", "es", "Spanish-Spanish (SNLI)"),
        Sts2017Track("es-en", "4a", "es-en", "es", "en", "Spanish-English (SNLI), track 4a"),
        Sts2017Track(
            "es-en-wmt",
            "4b",
            "es-en",
            "en",
            "es",
            "Spanish-English (WMT news), track 4b; English is the first column; gold bunches at 5",
        ),
        Sts2017Track("en-en", "5", "en-en", "en", "en", "English-English (SNLI)"),
        Sts2017Track("tr-en", "6", "tr-en", "en", "tr", "Turkish-English (SNLI); English is the first column"),
    )
}
"""Subset name -> track. Column order was checked on the files: tracks 2, 4b and 6 put English first."""

_TRACK_ALIASES = {f"track{t.track}": t.subset for t in STS2017_TRACKS.values()} | {
    t.track: t.subset for t in STS2017_TRACKS.values()
}


def sts2017_track(name: str) -> Sts2017Track:
    """Look a track up by subset ('ar-en', 'es-en-wmt') or track id ('2', 'track4b')."""
    subset = name if name in STS2017_TRACKS else _TRACK_ALIASES.get(name)
    if subset is None:
        raise UnknownLanguageError(
            f"STS2017 has no track '{name}'; valid: {', '.join(STS2017_TRACKS)} "
            f"(or track ids {', '.join(t.track for t in STS2017_TRACKS.values())})"
        )
    return STS2017_TRACKS[subset]


def read_sts2017(folder: Path, track: str = "en-en") -> ScoredPairs:
    """One STS2017 track (`track` is a subset name such as 'ar-en' or a track id such as '4b').

    Inputs are `STS2017.eval.v1.1/STS.input.trackN.xx-yy.txt` (sent1 TAB sent2) and gold scores
    `STS2017.gs/STS.gs.trackN.xx-yy.txt`, aligned by line. Track 6 (tr-en) ships 500 input lines for
    250 gold scores; the gold matches input lines 1-250 (checked by hand, see the data README), so for
    track 6 only, when the input has exactly twice as many lines as the gold, lines 1-250 are used.
    Any other count mismatch is a DataError.
    """
    info = sts2017_track(track)
    folder = Path(folder)
    stem = f"track{info.track}.{info.file_pair}.txt"
    input_path = folder / "STS2017.eval.v1.1" / f"STS.input.{stem}"
    gold_path = folder / "STS2017.gs" / f"STS.gs.{stem}"
    lines = read_lines(input_path)
    gold_lines = read_lines(gold_path)
    if len(lines) != len(gold_lines):
        if info.track == "6" and len(lines) == 2 * len(gold_lines):
            lines = lines[: len(gold_lines)]  # documented track-6 quirk: the second half has no gold
        else:
            raise DataError(
                gold_path,
                min(len(lines), len(gold_lines)) + 1,
                f"{len(gold_lines)} gold scores for {len(lines)} input lines in {input_path.name}",
            )
    scores = [_score(gold_path, number, value) for number, value in enumerate(gold_lines, start=1)]
    sentences1: list[str] = []
    sentences2: list[str] = []
    for number, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(input_path, number, f"expected 2 TAB-separated sentences, found {len(fields)} fields")
        sentences1.append(_sentence(input_path, number, fields[0], "first sentence"))
        sentences2.append(_sentence(input_path, number, fields[1], "second sentence"))
    return ScoredPairs(sentences1, sentences2, scores, info.language1, info.language2)


# --------------------------------------------------------------------------------------------- STS-B

STSB_SPLITS = ("train", "dev", "test")


def read_stsbenchmark(folder: Path, split: str = "test") -> ScoredPairs:
    """English STS-B `sts-<split>.csv`: TAB-separated despite the name, fields
    genre, filename, year, id, score, sent1, sent2; extra trailing fields (source notes on 503 lines)
    are ignored. Quotes are literal text (some are unbalanced), so no CSV quoting is applied.
    """
    _check_split("stsbenchmark", split, STSB_SPLITS)
    path = Path(folder) / f"sts-{split}.csv"
    sentences1: list[str] = []
    sentences2: list[str] = []
    scores: list[float] = []
    for line, fields in iter_csv(path, delimiter="\t", quoting=csv.QUOTE_NONE):
        if len(fields) < 7:
            raise DataError(path, line, f"expected at least 7 TAB-separated fields, found {len(fields)}")
        scores.append(_score(path, line, fields[4]))
        sentences1.append(_sentence(path, line, fields[5], "sentence1"))
        sentences2.append(_sentence(path, line, fields[6], "sentence2"))
    if not scores:
        raise DataError(path, None, "no sentence pairs")
    return ScoredPairs(sentences1, sentences2, scores, "en", "en")


# --------------------------------------------------------------------------------------------- STSb-multi-mt

STSB_MULTI_MT_LANGUAGES = get_dataset("stsb-multi-mt").languages  # the registry holds the one list


def _read_stsb_multi_mt_file(folder: Path, language: str, split: str) -> tuple[Path, list[int], ScoredPairs]:
    """(path, 1-based line of each record, pairs) of `stsb-<language>-<split>.csv`."""
    if language not in STSB_MULTI_MT_LANGUAGES:
        raise UnknownLanguageError(
            f"stsb-multi-mt has no language '{language}' (has {', '.join(STSB_MULTI_MT_LANGUAGES)})"
        )
    _check_split("stsb-multi-mt", split, STSB_SPLITS)
    path = Path(folder) / f"stsb-{language}-{split}.csv"
    lines: list[int] = []
    sentences1: list[str] = []
    sentences2: list[str] = []
    scores: list[float] = []
    for line, fields in iter_csv(path):
        if len(fields) != 3:
            raise DataError(path, line, f"expected 3 comma-separated fields (s1, s2, score), found {len(fields)}")
        lines.append(line)
        sentences1.append(_sentence(path, line, fields[0], "sentence1"))
        sentences2.append(_sentence(path, line, fields[1], "sentence2"))
        scores.append(_score(path, line, fields[2]))
    if not scores:
        raise DataError(path, None, "no sentence pairs")
    return path, lines, ScoredPairs(sentences1, sentences2, scores, language, language)


def read_stsb_multi_mt(
    folder: Path, language: str = "en", split: str = "test", language2: str | None = None
) -> ScoredPairs:
    """STS-B machine-translated: comma CSV with quoting, no header, fields sentence1, sentence2, score.

    With `language2` (a different language) the pairs are cross-lingual, built row by row: sentence1
    from the `language` file with sentence2 from the `language2` file. Rows are aligned across languages
    (and with the English STS-B); a row count or gold score that disagrees is a DataError.
    """
    path1, _, first = _read_stsb_multi_mt_file(folder, language, split)
    if language2 is None or language2 == language:
        return first
    path2, lines2, second = _read_stsb_multi_mt_file(folder, language2, split)
    if len(first) != len(second):
        raise DataError(
            path2,
            lines2[len(first)] if len(second) > len(first) else None,
            f"{len(second)} rows but {path1.name} has {len(first)}: files are not row-aligned",
        )
    for row, (a, b) in enumerate(zip(first.scores, second.scores, strict=True)):
        if abs(a - b) > SCORE_TOLERANCE:
            raise DataError(path2, lines2[row], f"score {b} differs from {a} in {path1.name}: rows are not aligned")
    return ScoredPairs(first.sentences1, second.sentences2, first.scores, language, language2)


# --------------------------------------------------------------------------------------------- Kardes-NLU

KARDES_STS_LANGUAGES = ("en", *KARDES_FOLDERS)
KARDES_SPLITS = ("dev", "test")

_KARDES_COLUMNS = {"s1": "s1_translation", "s2": "s2_translation"}
_ENGLISH_COLUMNS = {"s1": "sentence1", "s2": "sentence2"}


@dataclass
class _KardesSts:
    path: Path
    lines: list[int]
    index: list[str]
    s1: list[str]
    s2: list[str]
    scores: list[float]


def _read_kardes_sts_file(folder: Path, file_language: str, text_language: str, split: str) -> _KardesSts:
    """Rows of `<file_language>/sts.<split>.csv`, taking the English or the translated sentences."""
    path = kardes_file(folder, "sts", file_language, split)
    rows = read_kardes_rows(folder, "sts", file_language, split)
    columns = _ENGLISH_COLUMNS if text_language == "en" else _KARDES_COLUMNS
    out = _KardesSts(path, [], [], [], [], [])
    for line, row in rows:
        index_column = next(iter(row))  # the unnamed (or 'Unnamed: 0') index column comes first
        out.lines.append(line)
        out.index.append(row[index_column].strip())
        out.s1.append(_sentence(path, line, row[columns["s1"]], columns["s1"]))
        out.s2.append(_sentence(path, line, row[columns["s2"]], columns["s2"]))
        out.scores.append(_score(path, line, row["score"]))
    if not out.scores:
        raise DataError(path, None, "no sentence pairs")
    return out


def read_kardes_sts(
    folder: Path, language1: str = "en", language2: str | None = None, split: str = "test", *, english_from: str = "az"
) -> ScoredPairs:
    """Kardes-NLU STS pairs: mono (`language2` None or equal) or cross-lingual, built row by row.

    Every file `<lang>/sts.<split>.<lang>.csv` (BOM and an index column; see `read_kardes_rows`) carries
    the English pair and its translation. Cross pairs take sentence1 in `language1` and sentence2 in
    `language2`; between two Turkic languages the two files are aligned by the index column (a mismatch,
    a different row count or a different gold score is a DataError). English text comes from the other
    language's file, or from `english_from` for English-English pairs. Uyghur is in Cyrillic script.
    """
    language2 = language1 if language2 is None else language2
    for code in (language1, language2):
        if code not in KARDES_STS_LANGUAGES:
            raise UnknownLanguageError(
                f"Kardes-NLU STS has no language '{code}' (has {', '.join(KARDES_STS_LANGUAGES)})"
            )
    if english_from not in KARDES_FOLDERS:
        raise UnknownLanguageError(
            f"english_from must name a Kardes-NLU file language ({', '.join(KARDES_FOLDERS)}), not '{english_from}'"
        )
    _check_split("kardes-nlu STS", split, KARDES_SPLITS)
    file1 = language1 if language1 != "en" else (language2 if language2 != "en" else english_from)
    file2 = language2 if language2 != "en" else file1
    first = _read_kardes_sts_file(folder, file1, language1, split)
    if (file2, language2) == (file1, language1):
        second = first
    else:
        second = _read_kardes_sts_file(folder, file2, language2, split)
    if file2 != file1:
        if len(first.index) != len(second.index):
            raise DataError(
                second.path,
                None,
                f"{len(second.index)} rows but {first.path.name} has {len(first.index)}: files are not aligned",
            )
        for row in range(len(first.index)):
            if first.index[row] != second.index[row]:
                raise DataError(
                    second.path,
                    second.lines[row],
                    f"index {second.index[row]!r} but {first.path.name} has {first.index[row]!r} in this row",
                )
            if abs(first.scores[row] - second.scores[row]) > SCORE_TOLERANCE:
                raise DataError(
                    second.path,
                    second.lines[row],
                    f"score {second.scores[row]} differs from {first.scores[row]} in {first.path.name}",
                )
    return ScoredPairs(first.s1, second.s2, first.scores, language1, language2)


def read_kardes_multiway(folder: Path, languages: Sequence[str], split: str = "test") -> MultiwayText:
    """sentence1 of every Kardes STS row in each language: a multi-way parallel text (geometry, retrieval).

    Each Turkic file is aligned to the first one by the index column and gold score (as for cross pairs);
    English comes from the first Turkic file (or `az` when only English is asked for).
    """
    turkic = [lang for lang in languages if lang != "en"]
    anchor = turkic[0] if turkic else "az"
    texts = {}
    for language in languages:
        if language == anchor:
            texts[language] = read_kardes_sts(folder, language, split=split).sentences1
        else:
            texts[language] = read_kardes_sts(folder, language, anchor, split=split).sentences1
    return MultiwayText(texts)


# --------------------------------------------------------------------------------------------- SemRel 2024

SEMREL_LANGUAGES = {
    "a": ("eng", "amh", "hau", "kin", "mar", "tel", "arq", "ary", "esp"),
    "b": ("afr", "arb", "hin", "ind", "pan"),
}
SEMREL_FILES = {"train": "{lang}_train.csv", "dev": "{lang}_dev_with_labels.csv", "test": "{lang}_test_with_labels.csv"}


def split_semrel_text(path: Path, line: int, text: str) -> tuple[str, str]:
    """Split SemRel's `Text` cell into its two sentences: one newline, or (when none) one tab."""
    separator = "\n" if "\n" in text else "\t"
    parts = text.split(separator)
    if len(parts) != 2:
        raise DataError(
            path,
            line,
            f"Text must hold two sentences separated by one newline (or one tab), found {len(parts)} part(s)",
        )
    return _sentence(path, line, parts[0], "first sentence"), _sentence(path, line, parts[1], "second sentence")


def read_semrel(folder: Path, language: str = "eng", split: str = "test", *, track: str = "a") -> ScoredPairs:
    """SemRel 2024 relatedness pairs of one language (`track_a/<lang>/<lang>_<split>...csv`), scores 0-1.

    Columns are found by header name, case-insensitively, because `pan` orders them Text, Score, PairID
    and `afr_dev` (track B) spells `score` in lowercase. The two sentences share the `Text` cell.
    """
    track = track.lower()
    if track not in SEMREL_LANGUAGES:
        raise PolyembedError(f"SemRel 2024 has no track '{track}' (has a, b)")
    if language not in SEMREL_LANGUAGES[track]:
        raise UnknownLanguageError(
            f"SemRel 2024 track {track.upper()} has no language '{language}' (has {', '.join(SEMREL_LANGUAGES[track])})"
        )
    _check_split("semrel2024", split, tuple(SEMREL_FILES))
    path = Path(folder) / f"track_{track}" / language / SEMREL_FILES[split].format(lang=language)
    if not path.is_file():
        raise DataError(path, None, f"file not found: SemRel 2024 {language} has no labelled '{split}' split here")
    rows = iter_csv(path)
    try:
        _, header = next(rows)
    except StopIteration:
        raise DataError(path, 1, "empty file (expected a header with Text and Score)") from None
    names = [name.strip().lower() for name in header]
    missing = [name for name in ("text", "score") if name not in names]
    if missing:
        raise DataError(path, 1, f"missing column(s) {', '.join(missing)} in header {header}")
    text_column, score_column = names.index("text"), names.index("score")
    sentences1: list[str] = []
    sentences2: list[str] = []
    scores: list[float] = []
    for line, fields in rows:
        if not any(field.strip() for field in fields):
            continue
        if len(fields) != len(header):
            raise DataError(path, line, f"expected {len(header)} fields, found {len(fields)}")
        first, second = split_semrel_text(path, line, fields[text_column])
        sentences1.append(first)
        sentences2.append(second)
        scores.append(_score(path, line, fields[score_column]))
    if not scores:
        raise DataError(path, None, "no sentence pairs")
    return ScoredPairs(sentences1, sentences2, scores, language, language)
