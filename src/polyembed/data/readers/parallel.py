"""Readers for bilingual (X, English) test sets: LASER Tatoeba, Tatoeba-Challenge, TICO-19, MAFAND-MT, MUSE.

Every reader returns a `ParallelText` whose *source* is the non-English side and whose *target* is English
(MUSE dictionaries are the exception: English word -> foreign word, as the dictionaries are meant to be read).
Folder layouts that differ between datasets (``ara-eng`` vs ``eng-kaz``) are hidden here, so tasks never
need to know which side a file name puts first.
"""

from __future__ import annotations

from pathlib import Path

from polyembed.data.io import read_lines, read_parallel
from polyembed.data.registry import TATOEBA_LANGUAGES
from polyembed.data.types import ParallelText
from polyembed.errors import DataError, PolyembedError, UnknownLanguageError

TATOEBA_CHALLENGE_PREFIX = "tatoeba-test-v2021-08-07"
TICO19_PREFIX = "tico19-test"
MAFAND_SPLITS = ("train", "dev", "test")
MUSE_SEPARATOR = " @ "

# Tatoeba-Challenge codes whose LASER Tatoeba counterpart has another code.
CHALLENGE_TO_LASER = {"cmn_Hans": "cmn", "swa": "swh"}


def _unknown(dataset: str, language: str, valid: list[str] | tuple[str, ...]) -> UnknownLanguageError:
    return UnknownLanguageError(f"{dataset} has no language '{language}' (has: {', '.join(valid)})")


def read_tatoeba(folder: Path, language: str) -> ParallelText:
    """LASER Tatoeba test pairs `tatoeba.XXX-eng.{XXX,eng}` as X -> eng (the similarity-search benchmark)."""
    if language not in TATOEBA_LANGUAGES:
        raise _unknown("LASER Tatoeba", language, TATOEBA_LANGUAGES)
    folder = Path(folder)
    stem = folder / f"tatoeba.{language}-eng"
    source, target = read_parallel(stem.with_name(f"{stem.name}.{language}"), stem.with_name(f"{stem.name}.eng"))
    return ParallelText(source, target, language, "eng")


def tatoeba_challenge_languages(folder: Path) -> list[str]:
    """Non-English codes of the `X-eng` / `eng-X` pair folders present under `folder`."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(folder, None, "not a directory (expected Tatoeba-Challenge pair folders)")
    codes: list[str] = []
    for path in sorted(folder.iterdir()):
        parts = path.name.split("-")
        if path.is_dir() and len(parts) == 2 and "eng" in parts and parts[0] != parts[1]:
            codes.append(parts[0] if parts[1] == "eng" else parts[1])
    return codes


def _challenge_folder(folder: Path, language: str) -> Path:
    for name in (f"{language}-eng", f"eng-{language}"):
        if (folder / name).is_dir():
            return folder / name
    raise _unknown("Tatoeba-Challenge", language, tatoeba_challenge_languages(folder))


def read_tatoeba_challenge(
    folder: Path,
    language: str,
    exclude_laser_test: bool = False,
    laser_folder: Path | None = None,
) -> ParallelText:
    """Tatoeba-Challenge v2021-08-07 test pairs, always X -> eng whatever order the folder name uses.

    With `exclude_laser_test`, every row whose exact (X, eng) pair also occurs in the LASER Tatoeba test set
    is dropped, so the set can serve as training data without leaking the LASER test. `laser_folder`
    defaults to the sibling `tatoeba/` folder under the same data root. Codes map to LASER's where they
    differ (cmn_Hans -> cmn, swa -> swh). Measured overlaps (rows dropped): ara 295, aze 641, deu 35,
    cmn_Hans 64, fra 27, hin 482, ita 20, jpn 48, kaz 259, kor 475, nld 100, rus 15, spa 44, swa 341,
    tat 248, tuk 53, tur 11, uig 350, uzb 328.
    """
    folder = Path(folder)
    pair_folder = _challenge_folder(folder, language)
    source, target = read_parallel(
        pair_folder / f"{TATOEBA_CHALLENGE_PREFIX}.{language}", pair_folder / f"{TATOEBA_CHALLENGE_PREFIX}.eng"
    )
    if exclude_laser_test:
        laser_root = Path(laser_folder) if laser_folder is not None else folder.parent / "tatoeba"
        laser_code = CHALLENGE_TO_LASER.get(language, language)
        if laser_code not in TATOEBA_LANGUAGES:
            raise PolyembedError(
                f"cannot exclude the LASER Tatoeba test for '{language}': LASER Tatoeba has no '{laser_code}'"
            )
        laser = read_tatoeba(laser_root, laser_code)
        test_pairs = set(zip(laser.source, laser.target, strict=True))
        kept = [(s, t) for s, t in zip(source, target, strict=True) if (s, t) not in test_pairs]
        source = [s for s, _ in kept]
        target = [t for _, t in kept]
    return ParallelText(source, target, language, "eng")


def _en_x_languages(folder: Path, dataset: str) -> list[str]:
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(folder, None, f"not a directory (expected {dataset} en-X folders)")
    return [p.name[3:] for p in sorted(folder.iterdir()) if p.is_dir() and p.name.startswith("en-")]


def tico19_languages(folder: Path) -> list[str]:
    """Non-English codes of the `en-X` folders of TICO-19."""
    return _en_x_languages(folder, "TICO-19")


def read_tico19(folder: Path, language: str) -> ParallelText:
    """TICO-19 test set of one `en-X` folder, returned X -> en (2,100 COVID-domain sentences)."""
    folder = Path(folder)
    pair_folder = folder / f"en-{language}"
    if language == "en" or not pair_folder.is_dir():
        raise _unknown("TICO-19", language, tico19_languages(folder))
    source, target = read_parallel(pair_folder / f"{TICO19_PREFIX}.{language}", pair_folder / f"{TICO19_PREFIX}.en")
    return ParallelText(source, target, language, "en")


def read_mafand(folder: Path, language: str, split: str = "test") -> ParallelText:
    """MAFAND-MT news translations of one `en-X` folder and split, returned X -> en (CC BY-NC data)."""
    folder = Path(folder)
    if split not in MAFAND_SPLITS:
        raise PolyembedError(f"MAFAND-MT has no split '{split}' (splits: {', '.join(MAFAND_SPLITS)})")
    pair_folder = folder / f"en-{language}"
    if language == "en" or not pair_folder.is_dir():
        raise _unknown("MAFAND-MT", language, _en_x_languages(folder, "MAFAND-MT"))
    source_path, target_path = pair_folder / f"{split}.{language}", pair_folder / f"{split}.en"
    if not source_path.is_file() and not target_path.is_file():
        present = [s for s in MAFAND_SPLITS if (pair_folder / f"{s}.{language}").is_file()]
        raise DataError(pair_folder, None, f"no '{split}' split for en-{language} (present: {', '.join(present)})")
    source, target = read_parallel(source_path, target_path)
    return ParallelText(source, target, language, "en")


def read_muse_dictionary(folder: Path, language: str) -> ParallelText:
    """A MUSE full dictionary `en-X.dict` as (English word -> X word) pairs.

    The files store `X_word @ en_word` (reversed for hunalign); we swap back. Words may contain '@'
    (e.g. `c@h`), so exactly one ' @ ' separator is required per line.
    """
    folder = Path(folder)
    path = folder / f"en-{language}.dict"
    if language == "en" or not path.is_file():
        valid = sorted(p.name[3:].removesuffix(".dict") for p in folder.glob("en-*.dict")) if folder.is_dir() else []
        raise _unknown("MUSE dictionaries", language, valid)
    english: list[str] = []
    foreign: list[str] = []
    for number, line in enumerate(read_lines(path), start=1):
        parts = line.split(MUSE_SEPARATOR)
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise DataError(path, number, f"expected 'target @ source' with one ' @ ' separator, got {line!r}")
        foreign.append(parts[0].strip())
        english.append(parts[1].strip())
    return ParallelText(english, foreign, "en", language)
