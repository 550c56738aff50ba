"""STS/STR readers: format quirks of each set, error paths with file:line, and a few real-data checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.data.readers.sts import (
    read_kardes_sts,
    read_semrel,
    read_sts2017,
    read_stsb_multi_mt,
    read_stsbenchmark,
    split_semrel_text,
    sts2017_track,
)
from polyembed.data.registry import get_dataset
from polyembed.errors import DataError, PolyembedError, UnknownLanguageError

# ----------------------------------------------------------------------------------------------- STS2017


def _sts2017(root: Path, track: str, pair: str, inputs: list[str], gold: list[str]) -> Path:
    (root / "STS2017.eval.v1.1").mkdir(parents=True, exist_ok=True)
    (root / "STS2017.gs").mkdir(parents=True, exist_ok=True)
    (root / "STS2017.eval.v1.1" / f"STS.input.track{track}.{pair}.txt").write_text(
        "".join(line + "\n" for line in inputs), encoding="utf-8"
    )
    gold_path = root / "STS2017.gs" / f"STS.gs.track{track}.{pair}.txt"
    gold_path.write_text("".join(line + "\n" for line in gold), encoding="utf-8")
    return gold_path


def test_sts2017_reads_pairs_and_scores(tmp_path: Path) -> None:
    _sts2017(tmp_path, "3", "es-es", ["Un perro.\tUn gato.", "Hola.\tAdiós."], ["4.0", "1.5"])
    pairs = read_sts2017(tmp_path, "es-es")
    assert pairs.sentences1 == ["Un perro.", "Hola."]
    assert pairs.sentences2 == ["Un gato.", "Adiós."]
    assert pairs.scores == [4.0, 1.5]
    assert (pairs.language1, pairs.language2) == ("es", "es")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("ar-en", ("en", "ar")), ("tr-en", ("en", "tr")), ("es-en", ("es", "en")), ("es-en-wmt", ("en", "es"))],
)
def test_sts2017_languages_follow_column_order(name: str, expected: tuple[str, str]) -> None:
    info = sts2017_track(name)
    assert (info.language1, info.language2) == expected


def test_sts2017_track_aliases_and_unknown() -> None:
    assert sts2017_track("4b").subset == "es-en-wmt"
    assert sts2017_track("track2").subset == "ar-en"
    with pytest.raises(UnknownLanguageError, match="ar-ar, ar-en, es-es"):
        sts2017_track("de-en")


def test_sts2017_track6_uses_first_half_when_input_is_double(tmp_path: Path) -> None:
    inputs = [f"English {i}.\tTürkçe {i}." for i in range(4)]
    _sts2017(tmp_path, "6", "tr-en", inputs, ["1", "2"])
    pairs = read_sts2017(tmp_path, "tr-en")
    assert pairs.sentences1 == ["English 0.", "English 1."]
    assert pairs.sentences2 == ["Türkçe 0.", "Türkçe 1."]
    assert (pairs.language1, pairs.language2) == ("en", "tr")


def test_sts2017_track6_other_mismatch_is_an_error(tmp_path: Path) -> None:
    _sts2017(tmp_path, "6", "tr-en", [f"a {i}\tb {i}" for i in range(3)], ["1", "2"])
    with pytest.raises(DataError, match="2 gold scores for 3 input lines") as info:
        read_sts2017(tmp_path, "tr-en")
    assert info.value.line == 3


def test_sts2017_mismatch_on_other_track_is_an_error(tmp_path: Path) -> None:
    _sts2017(tmp_path, "1", "ar-ar", [f"a {i}\tb {i}" for i in range(4)], ["1", "2"])
    with pytest.raises(DataError, match="2 gold scores for 4 input lines"):
        read_sts2017(tmp_path, "ar-ar")


def test_sts2017_bad_score_names_file_and_line(tmp_path: Path) -> None:
    gold = _sts2017(tmp_path, "5", "en-en", ["a\tb", "c\td"], ["1.0", "high"])
    with pytest.raises(DataError) as info:
        read_sts2017(tmp_path, "en-en")
    assert str(info.value).startswith(f"{gold}:2:")
    assert "'high'" in str(info.value)


def test_sts2017_non_finite_score_is_an_error(tmp_path: Path) -> None:
    _sts2017(tmp_path, "5", "en-en", ["a\tb", "c\td"], ["1.0", "nan"])
    with pytest.raises(DataError, match="not a finite number"):
        read_sts2017(tmp_path, "en-en")


def test_sts2017_wrong_field_count_and_empty_sentence(tmp_path: Path) -> None:
    _sts2017(tmp_path, "5", "en-en", ["a\tb", "c\td\te"], ["1", "2"])
    with pytest.raises(DataError, match="found 3 fields") as info:
        read_sts2017(tmp_path, "en-en")
    assert info.value.line == 2
    _sts2017(tmp_path, "5", "en-en", [" \tb", "c\td"], ["1", "2"])
    with pytest.raises(DataError, match="empty first sentence"):
        read_sts2017(tmp_path, "en-en")


def test_sts2017_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="file not found"):
        read_sts2017(tmp_path, "en-en")


# ----------------------------------------------------------------------------------------------- STS-B


def test_stsbenchmark_tsv_extra_fields_and_literal_quotes(tmp_path: Path) -> None:
    (tmp_path / "sts-dev.csv").write_text(
        'main-news\tfile\t2012\t0001\t2.5\tHe said "no.\tShe said no.\n'
        "main-forums\tanswer\t2016\t0002\t4\tA, b.\tC d.\tsource note 1\tsource note 2\n",
        encoding="utf-8",
    )
    pairs = read_stsbenchmark(tmp_path, "dev")
    assert pairs.sentences1 == ['He said "no.', "A, b."]
    assert pairs.sentences2 == ["She said no.", "C d."]
    assert pairs.scores == [2.5, 4.0]
    assert (pairs.language1, pairs.language2) == ("en", "en")


def test_stsbenchmark_errors(tmp_path: Path) -> None:
    path = tmp_path / "sts-test.csv"
    path.write_text("g\tf\t2012\t1\t2.5\ta\tb\ng\tf\t2012\t2\t3.0\tonly one\n", encoding="utf-8")
    with pytest.raises(DataError, match="at least 7") as info:
        read_stsbenchmark(tmp_path)
    assert info.value.line == 2
    path.write_text("g\tf\t2012\t1\tfive\ta\tb\n", encoding="utf-8")
    with pytest.raises(DataError, match="'five'") as info:
        read_stsbenchmark(tmp_path)
    assert (info.value.path, info.value.line) == (str(path), 1)
    with pytest.raises(PolyembedError, match="no split 'validation'"):
        read_stsbenchmark(tmp_path, "validation")


# ----------------------------------------------------------------------------------------------- stsb-multi-mt


def _multi_mt(root: Path, language: str, text: str, split: str = "test") -> Path:
    path = root / f"stsb-{language}-{split}.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_stsb_multi_mt_quoting_and_cross_pairs(tmp_path: Path) -> None:
    _multi_mt(tmp_path, "en", '"A man, smiling.",A man.,4.2\nA dog.,"Two ""big"" cats.",0.4\n')
    _multi_mt(tmp_path, "de", '"Ein Mann, lächelnd.",Ein Mann.,4.2\nEin Hund.,"Zwei ""große"" Katzen.",0.4\n')
    mono = read_stsb_multi_mt(tmp_path, "en")
    assert mono.sentences1 == ["A man, smiling.", "A dog."]
    assert mono.sentences2 == ["A man.", 'Two "big" cats.']
    cross = read_stsb_multi_mt(tmp_path, "en", "test", "de")
    assert cross.sentences1 == ["A man, smiling.", "A dog."]
    assert cross.sentences2 == ["Ein Mann.", 'Zwei "große" Katzen.']
    assert (cross.language1, cross.language2, cross.scores) == ("en", "de", [4.2, 0.4])
    back = read_stsb_multi_mt(tmp_path, "de", "test", "en")
    assert back.sentences1 == ["Ein Mann, lächelnd.", "Ein Hund."]
    assert back.sentences2 == ["A man.", 'Two "big" cats.']


def test_stsb_multi_mt_misaligned_files(tmp_path: Path) -> None:
    _multi_mt(tmp_path, "en", 'a,b,1.0\n"multi\nline",d,2.0\ne,f,3.0\n')
    de = _multi_mt(tmp_path, "de", 'a,b,1.0\n"multi\nline",d,2.0\ne,f,3.5\n')
    with pytest.raises(DataError, match="differs from 3.0") as info:
        read_stsb_multi_mt(tmp_path, "en", "test", "de")
    assert (info.value.path, info.value.line) == (str(de), 4)  # a record spanning lines 2-3 comes before
    _multi_mt(tmp_path, "de", "a,b,1.0\nc,d,2.0\n")
    with pytest.raises(DataError, match="2 rows but stsb-en-test.csv has 3"):
        read_stsb_multi_mt(tmp_path, "en", "test", "de")


def test_stsb_multi_mt_bad_rows_and_language(tmp_path: Path) -> None:
    path = _multi_mt(tmp_path, "fr", "a,b,1.0\nc,d\n")
    with pytest.raises(DataError, match="expected 3") as info:
        read_stsb_multi_mt(tmp_path, "fr")
    assert info.value.line == 2
    path.write_text("a,b,x1\n", encoding="utf-8")
    with pytest.raises(DataError, match="'x1'"):
        read_stsb_multi_mt(tmp_path, "fr")
    with pytest.raises(UnknownLanguageError, match="en, de, es"):
        read_stsb_multi_mt(tmp_path, "sv")


# ----------------------------------------------------------------------------------------------- Kardes-NLU

_KARDES_HEADER = "sentence1,sentence2,score,s1_translation,s2_translation"


def _kardes(root: Path, folder: str, code: str, rows: list[str], *, bom: bool, index_name: str = "") -> Path:
    path = root / folder / f"sts.test.{code}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"{index_name},{_KARDES_HEADER}\r\n" + "".join(row + "\r\n" for row in rows)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def _kardes_pair(root: Path) -> None:
    _kardes(root, "azeri", "az", ["5,A cat.,A dog.,1.8,Pişik.,İt.", "9,Rain.,Sun.,0.5,Yağış.,Günəş."], bom=True)
    _kardes(
        root,
        "kazakh",
        "kk",
        ["5,A cat.,A dog.,1.8,Мысық.,Ит.", "9,Rain.,Sun.,0.500000001,Жаңбыр.,Күн."],
        bom=False,
        index_name="Unnamed: 0",
    )


def test_kardes_mono_and_cross_pairs_with_bom(tmp_path: Path) -> None:
    _kardes_pair(tmp_path)
    english = read_kardes_sts(tmp_path, "en")
    assert english.sentences1 == ["A cat.", "Rain."]
    assert (english.language1, english.language2, english.scores) == ("en", "en", [1.8, 0.5])
    azeri = read_kardes_sts(tmp_path, "az")
    assert azeri.sentences1 == ["Pişik.", "Yağış."] and azeri.sentences2 == ["İt.", "Günəş."]
    en_kk = read_kardes_sts(tmp_path, "en", "kk")
    assert en_kk.sentences1 == ["A cat.", "Rain."] and en_kk.sentences2 == ["Ит.", "Күн."]
    kk_en = read_kardes_sts(tmp_path, "kk", "en")
    assert kk_en.sentences1 == ["Мысық.", "Жаңбыр."] and kk_en.sentences2 == ["A dog.", "Sun."]
    az_kk = read_kardes_sts(tmp_path, "az", "kk")
    assert az_kk.sentences1 == ["Pişik.", "Yağış."] and az_kk.sentences2 == ["Ит.", "Күн."]
    assert (az_kk.language1, az_kk.language2) == ("az", "kk")


def test_kardes_misaligned_index_and_bad_score(tmp_path: Path) -> None:
    _kardes_pair(tmp_path)
    kk = _kardes(tmp_path, "kazakh", "kk", ["5,A cat.,A dog.,1.8,Мысық.,Ит.", "8,Rain.,Sun.,0.5,Ж.,К."], bom=False)
    with pytest.raises(DataError, match="index '8'") as info:
        read_kardes_sts(tmp_path, "az", "kk")
    assert (info.value.path, info.value.line) == (str(kk), 3)
    _kardes(tmp_path, "kazakh", "kk", ["5,A cat.,A dog.,one,Мысық.,Ит."], bom=False)
    with pytest.raises(DataError, match="'one'") as info:
        read_kardes_sts(tmp_path, "kk")
    assert info.value.line == 2
    with pytest.raises(UnknownLanguageError, match="en, az, kk"):
        read_kardes_sts(tmp_path, "tr")


# ----------------------------------------------------------------------------------------------- SemRel


def _semrel(root: Path, language: str, text: str, *, track: str = "a", split: str = "test") -> Path:
    name = {"test": "test_with_labels", "dev": "dev_with_labels", "train": "train"}[split]
    path = root / f"track_{track}" / language / f"{language}_{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_semrel_newline_and_tab_separators(tmp_path: Path) -> None:
    _semrel(tmp_path, "eng", 'PairID,Text,Score\nE-1,"A cat.\nA dog.",0.7\nE-2,"Rain, sun.\tSnow.",0.25\n')
    pairs = read_semrel(tmp_path, "eng")
    assert pairs.sentences1 == ["A cat.", "Rain, sun."]
    assert pairs.sentences2 == ["A dog.", "Snow."]
    assert (pairs.scores, pairs.language1) == ([0.7, 0.25], "eng")


def test_semrel_columns_by_header_name(tmp_path: Path) -> None:
    _semrel(tmp_path, "pan", 'Text,Score,PairID\n"a\nb",0.5,P-1\n', track="b")
    _semrel(tmp_path, "afr", 'PairID,Text,score\nA-1,"c\nd",0.1\n', track="b", split="dev")
    assert read_semrel(tmp_path, "pan", track="b").scores == [0.5]
    assert read_semrel(tmp_path, "afr", "dev", track="b").sentences2 == ["d"]


def test_semrel_errors(tmp_path: Path) -> None:
    path = _semrel(tmp_path, "amh", 'PairID,Text,Score\nA-1,"a\nb",0.5\nA-2,"one sentence",0.5\n')
    with pytest.raises(DataError, match="found 1 part") as info:
        read_semrel(tmp_path, "amh")
    assert (info.value.path, info.value.line) == (str(path), 4)
    _semrel(tmp_path, "amh", 'PairID,Text,Score\nA-1,"a\nb",big\n')
    with pytest.raises(DataError, match="'big'") as info:
        read_semrel(tmp_path, "amh")
    assert info.value.line == 2
    _semrel(tmp_path, "amh", "PairID,Sentences,Score\n")
    with pytest.raises(DataError, match="missing column"):
        read_semrel(tmp_path, "amh")
    with pytest.raises(DataError, match="no labelled 'test' split"):
        read_semrel(tmp_path, "esp")
    with pytest.raises(UnknownLanguageError, match="eng, amh"):
        read_semrel(tmp_path, "deu")
    with pytest.raises(DataError, match="found 3 part"):
        split_semrel_text(path, 7, "a\nb\nc")


# ----------------------------------------------------------------------------------------------- real data


def test_real_sts2017_tracks(shared_data: Path) -> None:
    info = get_dataset("sts2017")
    for subset in ("ar-ar", "ar-en", "es-es", "es-en", "es-en-wmt", "en-en", "tr-en"):
        assert len(info.load(subset, root=shared_data)) == 250
    tr_en = info.load("tr-en", root=shared_data)
    assert tr_en.sentences1[1] == "The lady is blonde." and tr_en.sentences2[1] == "Kadın sarışın."
    ar_en = info.load("ar-en", root=shared_data)
    assert ar_en.sentences1[0] == "two men are crying"


def test_real_stsb_and_multi_mt_are_row_aligned(shared_data: Path) -> None:
    original = get_dataset("stsbenchmark").load("test", root=shared_data)
    assert len(original) == 1379
    assert len(get_dataset("stsbenchmark").load("train", root=shared_data)) == 5749
    cross = get_dataset("stsb-multi-mt").load("de", "test", "en", root=shared_data)
    assert cross.scores == pytest.approx(original.scores)
    assert cross.sentences2 == get_dataset("stsb-multi-mt").load("en", root=shared_data).sentences2
    assert cross.sentences1[0] == "Ein Mädchen frisiert ihr Haar."


def test_real_kardes_and_semrel(shared_data: Path) -> None:
    kardes = get_dataset("kardes-nlu")
    assert len(kardes.load("en", root=shared_data)) == 800
    assert len(kardes.load("ug", "ky", split="dev", root=shared_data)) == 200
    semrel = get_dataset("semrel2024")
    counts = {"eng": 2600, "amh": 171, "hau": 603, "kin": 222, "mar": 298, "tel": 297, "arq": 583, "ary": 426}
    for language, count in counts.items():
        pairs = semrel.load(language, root=shared_data)
        assert len(pairs) == count
        assert all(0.0 <= score <= 1.0 for score in pairs.scores)
    assert len(semrel.load("pan", "dev", track="b", root=shared_data)) == 242
    assert len(semrel.load("afr", "test", track="b", root=shared_data)) == 375
