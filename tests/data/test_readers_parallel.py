"""Parallel-data readers: synthetic error paths plus a few checks against the real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.data.readers.parallel import (
    read_mafand,
    read_muse_dictionary,
    read_tatoeba,
    read_tatoeba_challenge,
    read_tico19,
    tatoeba_challenge_languages,
)
from polyembed.data.registry import get_dataset
from polyembed.errors import DataError, PolyembedError, UnknownLanguageError
from tests.helpers import write_lines


def test_tatoeba_reads_x_to_eng(tmp_path: Path) -> None:
    write_lines(tmp_path / "tatoeba.deu-eng.deu", ["Hallo.", "Danke."])
    write_lines(tmp_path / "tatoeba.deu-eng.eng", ["Hello.", "Thanks."])
    pair = read_tatoeba(tmp_path, "deu")
    assert (pair.source, pair.target) == (["Hallo.", "Danke."], ["Hello.", "Thanks."])
    assert (pair.source_language, pair.target_language) == ("deu", "eng")


def test_tatoeba_unknown_language_lists_valid_codes(tmp_path: Path) -> None:
    with pytest.raises(UnknownLanguageError, match="deu"):
        read_tatoeba(tmp_path, "xx")


def test_tatoeba_length_mismatch_names_file_and_line(tmp_path: Path) -> None:
    write_lines(tmp_path / "tatoeba.deu-eng.deu", ["a", "b", "c"])
    write_lines(tmp_path / "tatoeba.deu-eng.eng", ["a", "b"])
    with pytest.raises(DataError) as info:
        read_tatoeba(tmp_path, "deu")
    assert info.value.line == 3 and info.value.path.endswith("tatoeba.deu-eng.deu")


def test_tatoeba_empty_line_is_an_error(tmp_path: Path) -> None:
    write_lines(tmp_path / "tatoeba.deu-eng.deu", ["a", "", "c"])
    write_lines(tmp_path / "tatoeba.deu-eng.eng", ["a", "b", "c"])
    with pytest.raises(DataError) as info:
        read_tatoeba(tmp_path, "deu")
    assert info.value.line == 2


def _challenge(tmp_path: Path) -> Path:
    root = tmp_path / "tatoeba-challenge-v2021-08-07"
    write_lines(root / "deu-eng" / "tatoeba-test-v2021-08-07.deu", ["Ja.", "Nein.", "Vielleicht."])
    write_lines(root / "deu-eng" / "tatoeba-test-v2021-08-07.eng", ["Yes.", "No.", "Maybe."])
    write_lines(root / "eng-kaz" / "tatoeba-test-v2021-08-07.eng", ["One.", "Two."])
    write_lines(root / "eng-kaz" / "tatoeba-test-v2021-08-07.kaz", ["Бір.", "Екі."])
    write_lines(tmp_path / "tatoeba" / "tatoeba.deu-eng.deu", ["Nein.", "Ja."])
    write_lines(tmp_path / "tatoeba" / "tatoeba.deu-eng.eng", ["No.", "Yes!"])
    return root


def test_tatoeba_challenge_is_always_x_to_eng(tmp_path: Path) -> None:
    root = _challenge(tmp_path)
    assert tatoeba_challenge_languages(root) == ["deu", "kaz"]
    kaz = read_tatoeba_challenge(root, "kaz")
    assert (kaz.source, kaz.target, kaz.source_language) == (["Бір.", "Екі."], ["One.", "Two."], "kaz")
    deu = read_tatoeba_challenge(root, "deu")
    assert deu.source == ["Ja.", "Nein.", "Vielleicht."] and deu.target[0] == "Yes."


def test_tatoeba_challenge_excludes_exact_laser_pairs_only(tmp_path: Path) -> None:
    root = _challenge(tmp_path)
    kept = read_tatoeba_challenge(root, "deu", exclude_laser_test=True)
    # ("Nein.", "No.") is in LASER; ("Ja.", "Yes.") is not ("Yes!" differs), so only one row goes
    assert kept.source == ["Ja.", "Vielleicht."] and kept.target == ["Yes.", "Maybe."]
    explicit = read_tatoeba_challenge(root, "deu", exclude_laser_test=True, laser_folder=tmp_path / "tatoeba")
    assert explicit.source == kept.source


def test_tatoeba_challenge_unknown_language(tmp_path: Path) -> None:
    root = _challenge(tmp_path)
    with pytest.raises(UnknownLanguageError, match="deu, kaz"):
        read_tatoeba_challenge(root, "fra")


def test_tico19_and_mafand_errors(tmp_path: Path) -> None:
    write_lines(tmp_path / "tico" / "en-fr" / "tico19-test.en", ["Wash hands."])
    write_lines(tmp_path / "tico" / "en-fr" / "tico19-test.fr", ["Lavez les mains."])
    pair = read_tico19(tmp_path / "tico", "fr")
    assert (pair.source, pair.target, pair.target_language) == (["Lavez les mains."], ["Wash hands."], "en")
    with pytest.raises(UnknownLanguageError, match="fr"):
        read_tico19(tmp_path / "tico", "de")
    write_lines(tmp_path / "mafand" / "en-swa" / "dev.en", ["Hello."])
    write_lines(tmp_path / "mafand" / "en-swa" / "dev.swa", ["Habari."])
    assert read_mafand(tmp_path / "mafand", "swa", "dev").source == ["Habari."]
    with pytest.raises(DataError, match="present: dev"):
        read_mafand(tmp_path / "mafand", "swa", "train")
    with pytest.raises(PolyembedError, match="no split"):
        read_mafand(tmp_path / "mafand", "swa", "validation")
    with pytest.raises(UnknownLanguageError, match="swa"):
        read_mafand(tmp_path / "mafand", "yor", "dev")


def test_muse_swaps_columns_and_reports_bad_lines(tmp_path: Path) -> None:
    write_lines(tmp_path / "en-de.dict", ["die @ the", "c@h @ c@h", "Haus @ house"])
    pair = read_muse_dictionary(tmp_path, "de")
    assert pair.source == ["the", "c@h", "house"] and pair.target == ["die", "c@h", "Haus"]
    assert (pair.source_language, pair.target_language) == ("en", "de")
    write_lines(tmp_path / "en-fr.dict", ["le @ the", "maison house"])
    with pytest.raises(DataError) as info:
        read_muse_dictionary(tmp_path, "fr")
    assert info.value.line == 2
    with pytest.raises(UnknownLanguageError, match="de, fr"):
        read_muse_dictionary(tmp_path, "ru")


@pytest.mark.realdata
def test_real_tatoeba_sizes(shared_data: Path) -> None:
    tatoeba = get_dataset("tatoeba")
    assert len(tatoeba.load("deu", root=shared_data)) == 1000
    assert len(tatoeba.load("amh", root=shared_data)) == 168


@pytest.mark.realdata
@pytest.mark.parametrize(("language", "overlap"), [("deu", 35), ("tur", 11), ("ara", 295), ("uig", 350), ("kaz", 259)])
def test_real_tatoeba_challenge_laser_overlap_matches_readme(shared_data: Path, language: str, overlap: int) -> None:
    challenge = get_dataset("tatoeba-challenge")
    full = challenge.load(language, root=shared_data)
    clean = challenge.load(language, root=shared_data, exclude_laser_test=True)
    assert len(full) - len(clean) == overlap
    assert full.target_language == "eng"


@pytest.mark.realdata
def test_real_tico_mafand_muse(shared_data: Path) -> None:
    tico = get_dataset("tico19").load("es_LA", root=shared_data)
    assert len(tico) == 2100 and tico.target_language == "en"
    assert len(get_dataset("mafand-mt").load("hau", "train", root=shared_data)) == 3098
    muse = get_dataset("muse-dictionaries").load("de", root=shared_data)
    assert len(muse) == 101931 and (muse.source[0], muse.target[0]) == ("the", "die")
