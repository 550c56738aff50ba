"""Training bitext: user files with file:line errors, language checks, source loading, capping, dev split."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.data.parallel_sources import (
    ParallelFileSpec,
    ParallelSource,
    check_language,
    covered_sources,
    load_parallel_sources,
    read_parallel_file,
    read_parallel_tsv,
    split_dev,
)
from polyembed.errors import DataError, NoTrainingDataError, PolyembedError, UnknownLanguageError
from tests.helpers import write_lines


def tsv(path: Path, n: int, prefix: str = "") -> Path:
    return write_lines(path, [f"{prefix}english {i}\t{prefix}andere {i}" for i in range(n)])


# --- read_parallel_tsv -------------------------------------------------------------------------------------------


def test_read_parallel_tsv_reads_english_then_other(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "pairs.tsv", ["Hello.\tHallo.", 'He said "hi".\tEr sagte "hallo".', "Thanks\tDanke"])
    english, other = read_parallel_tsv(path)
    assert english == ["Hello.", 'He said "hi".', "Thanks"]  # quotes are text (QUOTE_NONE)
    assert other == ["Hallo.", 'Er sagte "hallo".', "Danke"]


@pytest.mark.parametrize("bad_line", ["only english", "a\tb\tc"])
def test_read_parallel_tsv_wrong_column_count_names_file_and_line(tmp_path: Path, bad_line: str) -> None:
    path = write_lines(tmp_path / "bad.tsv", ["Hello.\tHallo.", "Yes\tJa", bad_line, "No\tNein"])
    with pytest.raises(DataError) as info:
        read_parallel_tsv(path)
    assert info.value.line == 3
    assert "bad.tsv:3:" in str(info.value)
    assert "expected 2 tab-separated columns" in str(info.value)
    assert f"found {len(bad_line.split(chr(9)))}" in str(info.value)


@pytest.mark.parametrize(("line", "side"), [(" \tHallo.", "English"), ("Hello.\t  ", "other")])
def test_read_parallel_tsv_empty_side_names_line(tmp_path: Path, line: str, side: str) -> None:
    path = write_lines(tmp_path / "side.tsv", ["Yes\tJa", line])
    with pytest.raises(DataError, match=rf"side\.tsv:2: empty {side} side"):
        read_parallel_tsv(path)


def test_read_parallel_tsv_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.tsv"
    path.write_text("", encoding="utf-8")
    with pytest.raises(DataError, match="no sentence pairs") as info:
        read_parallel_tsv(path)
    assert info.value.line is None and "empty.tsv" in str(info.value)


# --- ParallelFileSpec ----------------------------------------------------------------------------------------------


def test_file_spec_parse_tsv_and_pair() -> None:
    spec = ParallelFileSpec.parse("de=a.tsv")
    assert spec.language == "de" and spec.paths == (Path("a.tsv"),)
    pair = ParallelFileSpec.parse(" de = a.en , a.de ")
    assert pair.language == "de" and pair.paths == (Path("a.en"), Path("a.de"))
    assert str(pair) == "de=a.en,a.de"
    assert ParallelFileSpec.parse(str(pair)) == pair


@pytest.mark.parametrize("spec", ["a.tsv", "de=", "=a.tsv", "de=a,b,c"])
def test_file_spec_parse_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(PolyembedError, match="parallel file"):
        ParallelFileSpec.parse(spec)


# --- read_parallel_file --------------------------------------------------------------------------------------------


def test_read_parallel_file_tsv_and_line_aligned(tmp_path: Path) -> None:
    source = read_parallel_file(ParallelFileSpec("de", (tsv(tmp_path / "news.tsv", 3),)))
    assert source.name == "file:news" and source.language == "de" and len(source) == 3
    assert source.english[0] == "english 0" and source.other[2] == "andere 2"
    english = write_lines(tmp_path / "talks.en", ["One", "Two"])
    other = write_lines(tmp_path / "talks.de", ["Eins", "Zwei"])
    pair = read_parallel_file(ParallelFileSpec("de", (english, other)))
    assert pair.name == "file:talks" and pair.english == ["One", "Two"] and pair.other == ["Eins", "Zwei"]
    assert pair.origin == f"de={english},{other}"


def test_read_parallel_file_unequal_lengths_names_longer_file(tmp_path: Path) -> None:
    english = write_lines(tmp_path / "long.en", ["One", "Two", "Three", "Four"])
    other = write_lines(tmp_path / "short.de", ["Eins", "Zwei"])
    with pytest.raises(DataError) as info:
        read_parallel_file(ParallelFileSpec("de", (english, other)))
    assert info.value.path == str(english) and info.value.line == 3
    assert f"{english}:3:" in str(info.value)
    # and the other way round
    with pytest.raises(DataError) as info:
        read_parallel_file(ParallelFileSpec("de", (other, english)))
    assert info.value.path == str(english) and info.value.line == 3


def test_read_parallel_file_empty_line_names_it(tmp_path: Path) -> None:
    english = write_lines(tmp_path / "a.en", ["One", "Two", "Three"])
    other = write_lines(tmp_path / "a.de", ["Eins", "", "Drei"])
    with pytest.raises(DataError, match=r"a\.de:2: empty line") as info:
        read_parallel_file(ParallelFileSpec("de", (english, other)))
    assert info.value.line == 2


def test_read_parallel_file_two_empty_files(tmp_path: Path) -> None:
    english = write_lines(tmp_path / "e.en", [])
    other = write_lines(tmp_path / "e.de", [])
    with pytest.raises(DataError, match="no sentence pairs"):
        read_parallel_file(ParallelFileSpec("de", (english, other)))


# --- check_language ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("code", "normalized"), [("de", "de"), ("deu", "de"), ("cmn_Hans", "zh"), ("DE", "de")])
def test_check_language_normalizes(code: str, normalized: str) -> None:
    assert check_language(code) == normalized


@pytest.mark.parametrize("code", ["xx", "germn"])
def test_check_language_rejects_unknown_with_where(code: str) -> None:
    with pytest.raises(UnknownLanguageError) as info:
        check_language(code, "run.yaml:7")
    assert f"'{code}'" in str(info.value) and "(run.yaml:7)" in str(info.value)


# --- load_parallel_sources (user files only) -----------------------------------------------------------------------


def test_load_user_files_only(tmp_path: Path) -> None:
    spec_de = ParallelFileSpec("deu", (tsv(tmp_path / "de.tsv", 5),))
    spec_fr = ParallelFileSpec("fr", (tsv(tmp_path / "fr.tsv", 4, "fr "),))
    sources = load_parallel_sources(["de"], [], tmp_path, files=[spec_de, spec_fr])
    # the de file answers the requested language (its code normalized); the extra fr file is kept too
    assert [(s.name, s.language, len(s)) for s in sources] == [("file:de", "de", 5), ("file:fr", "fr", 4)]


def test_load_language_without_data_is_an_error(tmp_path: Path) -> None:
    spec = ParallelFileSpec("de", (tsv(tmp_path / "de.tsv", 5),))
    with pytest.raises(UnknownLanguageError, match="no training data for language 'fr'"):
        load_parallel_sources(["de", "fr"], [], tmp_path, files=[spec])
    with pytest.raises(UnknownLanguageError) as info:
        load_parallel_sources(["de", "fr"], [], tmp_path, files=[spec], language_origin=lambda i: f"cfg.yaml:{i + 4}")
    assert "(cfg.yaml:5)" in str(info.value)


def test_load_unknown_language_code_uses_language_origin(tmp_path: Path) -> None:
    with pytest.raises(UnknownLanguageError, match=r"'germn' \(cfg\.yaml:9\)"):
        load_parallel_sources(["de", "germn"], [], tmp_path, language_origin=lambda i: f"cfg.yaml:{i + 8}")


def test_load_unknown_dataset_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PolyembedError, match="'wikipedia' is not a training dataset") as info:
        load_parallel_sources(["de"], ["wikipedia"], tmp_path)
    assert "tatoeba-challenge" in str(info.value)


def test_load_bad_user_file_stops_with_its_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "broken.tsv", ["a\tb", "c"])
    with pytest.raises(DataError, match=r"broken\.tsv:2:"):
        load_parallel_sources(["de"], [], tmp_path, files=[ParallelFileSpec("de", (path,))])


def test_max_pairs_per_source_caps_deterministically(tmp_path: Path) -> None:
    spec = ParallelFileSpec("de", (tsv(tmp_path / "big.tsv", 200),))
    small = ParallelFileSpec("fr", (tsv(tmp_path / "small.tsv", 10, "fr "),))

    def load(seed: int) -> list[ParallelSource]:
        return load_parallel_sources(
            ["de", "fr"], [], tmp_path, files=[spec, small], max_pairs_per_source=30, seed=seed
        )

    first, again, other = load(0), load(0), load(1)
    assert [len(s) for s in first] == [30, 10]  # the small source is untouched
    assert first == again
    assert first[0].english != other[0].english
    capped = first[0]
    # pairs stay aligned and keep file order
    assert [e.replace("english", "andere") for e in capped.english] == capped.other
    indices = [int(e.split()[-1]) for e in capped.english]
    assert indices == sorted(indices) and len(set(indices)) == 30
    assert first[1].english == [f"fr english {i}" for i in range(10)]


# --- split_dev -----------------------------------------------------------------------------------------------------


def make_source(name: str, n: int) -> ParallelSource:
    return ParallelSource(name, "de", [f"{name} en {i}" for i in range(n)], [f"{name} de {i}" for i in range(n)], name)


def test_split_dev_holds_out_min_k_and_a_fifth() -> None:
    sources = [make_source("big", 100), make_source("mid", 20), make_source("tiny", 4)]
    train, dev = split_dev(sources, 10, seed=3)
    assert [len(t) for t in train] == [90, 16, 4]
    assert [(d.name, len(d)) for d in dev] == [("big", 10), ("mid", 4)]  # tiny: 4 // 5 == 0 held out, no dev source
    for source, tr, dv in zip(sources[:2], train[:2], dev, strict=True):
        assert not set(tr.english) & set(dv.english)
        assert tr.english == sorted(tr.english, key=source.english.index)  # train keeps source order
        assert sorted(tr.english + dv.english) == sorted(source.english)
        assert [e.replace(" en ", " de ") for e in dv.english] == dv.other  # alignment kept


def test_split_dev_is_deterministic_per_seed() -> None:
    sources = [make_source("big", 100)]
    first = split_dev(sources, 10, seed=0)
    assert split_dev(sources, 10, seed=0) == first
    assert split_dev(sources, 10, seed=1)[1][0].english != first[1][0].english


# --- real data -----------------------------------------------------------------------------------------------------


@pytest.mark.realdata
def test_load_registry_sources(shared_data: Path) -> None:
    datasets = ["tatoeba-challenge", "multi30k", "mafand-mt", "muse-dictionaries"]
    sources = load_parallel_sources(["de", "ha"], datasets, shared_data, max_pairs_per_source=100)
    assert [(s.name, s.language) for s in sources] == [
        ("tatoeba-challenge", "de"),
        ("multi30k", "de"),
        ("muse-dictionaries", "de"),
        ("mafand-mt", "ha"),
    ]
    english_words = {"the", "a", "is", "to", "and", "of", "in", "i", "you"}
    for source in sources:
        assert len(source) == len(source.other) == 100, source.name
        assert all(e.strip() and o.strip() for e, o in zip(source.english, source.other, strict=True))
        if source.name != "muse-dictionaries":
            tokens = {w.strip(".,!?\"'").lower() for text in source.english for w in text.split()}
            assert len(tokens & english_words) >= 4, source.name
    muse = sources[2]
    assert all(" " not in word for word in muse.english)  # single words
    assert sum(e.isascii() for e in muse.english) >= 90
    assert muse.english != muse.other


@pytest.mark.realdata
def test_tatoeba_challenge_source_excludes_laser_test(shared_data: Path) -> None:
    from polyembed.data.readers.parallel import read_tatoeba, read_tatoeba_challenge

    laser = read_tatoeba(shared_data / "tatoeba", "deu")
    test_pairs = set(zip(laser.source, laser.target, strict=True))  # (deu, eng)
    raw = read_tatoeba_challenge(shared_data / "tatoeba-challenge-v2021-08-07", "deu")
    leaked = sum(pair in test_pairs for pair in zip(raw.source, raw.target, strict=True))
    assert leaked > 0  # the raw set does overlap the LASER test, so the check below is not vacuous
    (source,) = load_parallel_sources(["de"], ["tatoeba-challenge"], shared_data, max_pairs_per_source=None)
    assert source.name == "tatoeba-challenge" and len(source) > 1000
    pairs = set(zip(source.other, source.english, strict=True))
    assert not pairs & test_pairs
    assert len(source) == len(raw.source) - leaked


def _stsb_rows(path: Path, rows: list[tuple[str, str, str]]) -> None:
    write_lines(path, [f'"{a}","{b}",{score}' for a, b, score in rows])


def test_stsb_multi_mt_source_pairs_both_columns_and_holds_out_eval_sentences(tmp_path: Path) -> None:
    folder = tmp_path / "stsb-multi-mt"
    english = [("A dog runs.", "A cat sleeps.", "1.0"), ("A dog runs.", "Test sentence.", "2.0")]
    german = [("Ein Hund rennt.", "Eine Katze schläft.", "1.0"), ("Ein Hund rennt.", "Testsatz.", "2.0")]
    _stsb_rows(folder / "stsb-en-train.csv", english)
    _stsb_rows(folder / "stsb-de-train.csv", german)
    for split in ("dev", "test"):
        _stsb_rows(folder / f"stsb-en-{split}.csv", [("Test sentence.", "Another one.", "3.0")])
    (source,) = load_parallel_sources(["de"], ["stsb-multi-mt"], tmp_path)
    assert (source.name, source.language) == ("stsb-multi-mt", "de")
    # each distinct English sentence once; the one that is also in the test split is dropped
    assert list(zip(source.english, source.other, strict=True)) == [
        ("A dog runs.", "Ein Hund rennt."),
        ("A cat sleeps.", "Eine Katze schläft."),
    ]


def test_stsb_multi_mt_source_misaligned_files_name_the_line(tmp_path: Path) -> None:
    folder = tmp_path / "stsb-multi-mt"
    _stsb_rows(folder / "stsb-en-train.csv", [("A dog runs.", "A cat sleeps.", "1.0"), ("B.", "C.", "2.0")])
    _stsb_rows(folder / "stsb-de-train.csv", [("Ein Hund rennt.", "Eine Katze.", "1.0"), ("B.", "C.", "4.0")])
    for split in ("dev", "test"):
        _stsb_rows(folder / f"stsb-en-{split}.csv", [("X.", "Y.", "3.0")])
    with pytest.raises(DataError, match=r"stsb-de-train.csv.*2.*differs"):
        load_parallel_sources(["de"], ["stsb-multi-mt"], tmp_path)


@pytest.mark.realdata
def test_stsb_multi_mt_source_never_holds_a_benchmark_sentence(shared_data: Path) -> None:
    from polyembed.data.readers.sts import STS2017_TRACKS, read_sts2017, read_stsb_multi_mt

    (source,) = load_parallel_sources(["zh"], ["stsb-multi-mt"], shared_data)
    assert len(source) > 9000 and len(set(source.english)) == len(source)
    scored = [read_stsb_multi_mt(shared_data / "stsb-multi-mt", "en", "test")]
    scored += [read_sts2017(shared_data / "sts2017", track) for track in STS2017_TRACKS]
    benchmark = {text for pairs in scored for text in pairs.sentences1 + pairs.sentences2}
    raw = read_stsb_multi_mt(shared_data / "stsb-multi-mt", "en", "train")
    assert set(raw.sentences1 + raw.sentences2) & benchmark  # the raw split overlaps, so the check is not vacuous
    assert not set(source.english) & benchmark


@pytest.mark.parametrize("spec", ["de=a.en,", "de=,a.de"])
def test_parse_rejects_empty_file_names(spec: str) -> None:
    with pytest.raises(PolyembedError, match="empty file name"):
        ParallelFileSpec.parse(spec)


@pytest.mark.realdata
def test_kardes_xnli_source_pairs_each_english_sentence_once_with_its_translation(shared_data: Path) -> None:
    (kazakh,) = load_parallel_sources(["kk"], ["kardes-xnli"], shared_data)
    assert 3000 < len(kazakh) <= 4000 and len(set(kazakh.english)) == len(kazakh)
    assert kazakh.english[0].startswith("And I thought that was a privilege")
    assert kazakh.other[0].startswith("Мен бұл артықшылық")
    with pytest.raises(NoTrainingDataError):
        load_parallel_sources(["de"], ["kardes-xnli"], shared_data)


def test_covered_sources_skip_a_language_the_dataset_lacks(shared_data: Path) -> None:
    """Extra text (WACSE's `aligner_datasets`): Kardes XNLI has Kazakh, not German, and that is no error."""
    sources = covered_sources(["kk", "de"], ["kardes-xnli"], shared_data)
    assert [(s.name, s.language) for s in sources] == [("kardes-xnli", "kk")] and len(sources[0]) > 1000
    with pytest.raises(PolyembedError, match="'kardes' is not a training dataset"):
        covered_sources(["kk"], ["kardes"], shared_data)
