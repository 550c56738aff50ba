"""Training bitext for teacher-student methods: registry datasets and user files, one `ParallelSource` each.

A source is one (dataset, language) unit of (English, other) pairs — the unit the multilingual distillation
paper balances in every mini-batch. Everything is read and validated before any model is loaded, so a bad
file (unequal line counts, an empty side) or an unknown language stops the run with its file and line.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from polyembed.data.io import iter_csv, read_parallel
from polyembed.data.readers.kardes import KARDES_FOLDERS, read_kardes_xnli
from polyembed.data.readers.multiway import read_multi30k
from polyembed.data.readers.parallel import (
    _en_x_languages,
    read_mafand,
    read_muse_dictionary,
    read_tatoeba_challenge,
    tatoeba_challenge_languages,
)
from polyembed.data.readers.sts import STS2017_TRACKS, read_sts2017, read_stsb_multi_mt
from polyembed.data.registry import get_dataset
from polyembed.errors import DataError, NoTrainingDataError, PolyembedError, UnknownLanguageError
from polyembed.languages import is_known_language, normalize_language

# Registry datasets usable as training bitext, with what they hold.
TRAINING_DATASETS = {
    "tatoeba-challenge": "Tatoeba-Challenge X-eng pairs, LASER Tatoeba test pairs removed",
    "multi30k": "Multi30k train captions (en-de, en-fr, en-cs)",
    "mafand-mt": "MAFAND-MT train split (en-hau, en-ibo, en-yor, en-zul; CC BY-NC)",
    "muse-dictionaries": "MUSE bilingual dictionaries as word pairs (CC BY-NC)",
    "stsb-multi-mt": "STS-B train sentences with their DeepL translations (no STS-B dev/test or STS2017 sentence)",
    "kardes-xnli": "Kardes-NLU XNLI sentences with their translations (az, kk, ky, ug, uz)",
}


@dataclass
class ParallelSource:
    """One unit of training bitext: english[i] translates other[i]; `origin` says where it came from."""

    name: str
    language: str
    english: list[str]
    other: list[str]
    origin: str

    def __len__(self) -> int:
        return len(self.english)


@dataclass
class ParallelFileSpec:
    """A user bitext: a two-column TSV (English<TAB>other) or two line-aligned files (English first)."""

    language: str
    paths: tuple[Path, ...]

    @classmethod
    def parse(cls, spec: str) -> ParallelFileSpec:
        """`LANG=FILE.tsv` or `LANG=ENGLISH_FILE,OTHER_FILE` (the CLI's --parallel-file syntax)."""
        language, sep, files = spec.partition("=")
        if not sep or not language.strip() or not files.strip():
            raise PolyembedError(f"parallel file '{spec}': expected LANG=FILE.tsv or LANG=ENGLISH_FILE,OTHER_FILE")
        parts = [part.strip() for part in files.split(",")]
        if not all(parts):
            raise PolyembedError(f"parallel file '{spec}': empty file name")
        try:
            paths = tuple(Path(part).expanduser() for part in parts)
        except RuntimeError:  # '~name/...' for a user this machine does not have
            raise PolyembedError(f"parallel file '{spec}': cannot expand '~' (no such user's home)") from None
        if len(paths) > 2:
            raise PolyembedError(f"parallel file '{spec}': at most two files (English first, then the other side)")
        return cls(language.strip(), paths)

    def __str__(self) -> str:
        return f"{self.language}={','.join(str(p) for p in self.paths)}"


def read_parallel_tsv(path: str | Path) -> tuple[list[str], list[str]]:
    """A two-column `english<TAB>other` file; a wrong column count or an empty side names its line."""
    english: list[str] = []
    other: list[str] = []
    for line, row in iter_csv(path, delimiter="\t", quoting=3):  # csv.QUOTE_NONE: quotes are text
        if len(row) != 2:
            raise DataError(path, line, f"expected 2 tab-separated columns (English, other), found {len(row)}")
        for side, text in zip(("English", "other"), row, strict=True):
            if not text.strip():
                raise DataError(path, line, f"empty {side} side")
        english.append(row[0])
        other.append(row[1])
    if not english:
        raise DataError(path, None, "no sentence pairs")
    return english, other


def read_parallel_file(spec: ParallelFileSpec) -> ParallelSource:
    """Read and validate one user bitext."""
    if len(spec.paths) == 1:
        english, other = read_parallel_tsv(spec.paths[0])
    else:
        english, other = read_parallel(*spec.paths)
        if not english:
            raise DataError(spec.paths[0], None, "no sentence pairs")
    name = spec.paths[0].stem if len(spec.paths) == 1 else spec.paths[1].stem
    return ParallelSource(f"file:{name}", spec.language, english, other, str(spec))


def _codes(available: Sequence[str]) -> dict[str, str]:
    """Normalized language -> the dataset's own code."""
    return {normalize_language(code) or code: code for code in available}


def _tatoeba_challenge(folder: Path, language: str) -> ParallelSource | None:
    code = _codes(tatoeba_challenge_languages(folder)).get(language)
    if code is None:
        return None
    pairs = read_tatoeba_challenge(folder, code, exclude_laser_test=True)
    return ParallelSource("tatoeba-challenge", language, pairs.target, pairs.source, str(folder / code))


def _multi30k(folder: Path, language: str) -> ParallelSource | None:
    if language not in ("de", "fr", "cs"):
        return None
    text = read_multi30k(folder, "train", ["en", language])
    return ParallelSource("multi30k", language, text.texts["en"], text.texts[language], str(folder / "raw"))


def _mafand(folder: Path, language: str) -> ParallelSource | None:
    code = _codes(_en_x_languages(folder, "MAFAND-MT")).get(language)
    if code is None or not (folder / f"en-{code}" / f"train.{code}").is_file():
        return None  # en-swa, en-amh, ... ship without a train split
    pairs = read_mafand(folder, code, "train")
    return ParallelSource("mafand-mt", language, pairs.target, pairs.source, str(folder / f"en-{code}"))


def _muse(folder: Path, language: str) -> ParallelSource | None:
    if not (folder / f"en-{language}.dict").is_file():
        return None
    pairs = read_muse_dictionary(folder, language)  # English word -> foreign word
    return ParallelSource("muse-dictionaries", language, pairs.source, pairs.target, str(folder / f"en-{language}"))


@functools.cache
def _sts_benchmark_sentences(stsb_folder: Path) -> frozenset[str]:
    """Every sentence of the STS-B dev/test splits and of STS2017 (sibling folder, when present); read once
    per data root, not once per training language."""
    sentences: set[str] = set()
    for split in ("dev", "test"):
        pairs = read_stsb_multi_mt(stsb_folder, "en", split)
        sentences.update(pairs.sentences1 + pairs.sentences2)
    sts2017 = stsb_folder.parent / get_dataset("sts2017").folder
    if sts2017.is_dir():
        for track in STS2017_TRACKS:
            pairs = read_sts2017(sts2017, track)
            sentences.update(pairs.sentences1 + pairs.sentences2)
    return frozenset(sentences)


def _stsb_multi_mt(folder: Path, language: str) -> ParallelSource | None:
    """Both sentences of every STS-B train row with their translation, one pair per distinct English sentence.

    Evaluation text is held out: an English sentence that is also in the STS-B dev or test split or in any
    STS2017 track (read from the sibling `sts2017` folder when the data root has it) is dropped, with its
    translation, so training never sees a sentence the STS benchmarks score.
    """
    if language == "en" or not (folder / f"stsb-{language}-train.csv").is_file():
        return None
    held_out = _sts_benchmark_sentences(folder)
    # Cross-lingual reads check that the files are row-aligned: (en s1, X s2) and (X s1, en s2).
    en_first = read_stsb_multi_mt(folder, "en", "train", language)
    other_first = read_stsb_multi_mt(folder, language, "train", "en")
    english: list[str] = []
    other: list[str] = []
    seen: set[str] = set()
    for en_pair, x_pair in (
        (en_first.sentences1, other_first.sentences1),
        (other_first.sentences2, en_first.sentences2),
    ):
        for en_text, x_text in zip(en_pair, x_pair, strict=True):
            if en_text not in seen and en_text not in held_out:
                seen.add(en_text)
                english.append(en_text)
                other.append(x_text)
    return ParallelSource("stsb-multi-mt", language, english, other, str(folder / f"stsb-{language}-train.csv"))


def _kardes_xnli(folder: Path, language: str) -> ParallelSource | None:
    """Both sentences of every Kardes XNLI row with their translation, one pair per distinct English sentence."""
    if language not in KARDES_FOLDERS:
        return None
    pairs: dict[str, str] = {}
    for row in read_kardes_xnli(folder, language):
        pairs.setdefault(row["sentence1"], row["s1_translation"])
        pairs.setdefault(row["sentence2"], row["s2_translation"])
    return ParallelSource("kardes-xnli", language, list(pairs), list(pairs.values()),
                          str(folder / KARDES_FOLDERS[language]))


_READERS: dict[str, Callable[[Path, str], ParallelSource | None]] = {
    "tatoeba-challenge": _tatoeba_challenge,
    "multi30k": _multi30k,
    "mafand-mt": _mafand,
    "muse-dictionaries": _muse,
    "stsb-multi-mt": _stsb_multi_mt,
    "kardes-xnli": _kardes_xnli,
}


def check_language(code: str, where: str = "") -> str:
    """The normalized code of a training language, or an UnknownLanguageError saying where it was given."""
    normalized = normalize_language(code)
    if not normalized or not is_known_language(normalized):
        place = f" ({where})" if where else ""
        raise UnknownLanguageError(
            f"unknown language '{code}'{place}: use an ISO 639-1 or 639-3 code such as de or deu"
        )
    return normalized


def load_parallel_sources(
    languages: Sequence[str],
    datasets: Sequence[str],
    root: Path | None,
    *,
    files: Sequence[ParallelFileSpec] = (),
    max_pairs_per_source: int | None = None,
    seed: int = 0,
    language_origin: Callable[[int], str] | None = None,
) -> list[ParallelSource]:
    """Every (dataset, language) source of bitext for `languages`, plus user files, validated and capped.

    Sources larger than `max_pairs_per_source` keep a seeded random sample (MUSE has 100k entries).
    A language with no data in any selected dataset or file is an error, as is an unknown dataset.
    `language_origin(i)` says where the i-th language was given (config file and line) for messages.
    """
    check_training_datasets(datasets)
    if datasets and root is None:
        raise PolyembedError(f"datasets {', '.join(datasets)} need a data root (set $POLYEMBED_DATA or --data-root)")
    wanted = [check_language(code, language_origin(i) if language_origin else "") for i, code in enumerate(languages)]
    file_sources = [read_parallel_file(ParallelFileSpec(check_language(f.language, str(f)), f.paths)) for f in files]
    sources: list[ParallelSource] = []
    for index, language in enumerate(wanted):
        found = [s for s in file_sources if s.language == language]
        for name in datasets:
            assert root is not None  # refused above when datasets are given
            info = get_dataset(name)
            source = _READERS[name](Path(root) / info.folder, language)
            if source is not None:
                found.append(source)
        if not found:
            place = f" ({language_origin(index)})" if language_origin else ""
            raise NoTrainingDataError(
                f"no training data for language '{languages[index]}'{place} in datasets "
                f"{', '.join(datasets) or '(none)'} or the given parallel files"
            )
        sources.extend(s for s in found if s not in sources)
    sources.extend(s for s in file_sources if s not in sources)
    if max_pairs_per_source is not None:
        sources = [_cap(source, max_pairs_per_source, seed) for source in sources]
    return sources


def covered_sources(languages: Sequence[str], datasets: Sequence[str], root: Path) -> list[ParallelSource]:
    """The (dataset, language) sources of `datasets` that exist for `languages`, where a language a dataset does
    not cover is skipped rather than an error: extra text for a purpose such as learning word alignments."""
    check_training_datasets(datasets)
    found = [_READERS[name](Path(root) / get_dataset(name).folder, check_language(code))
             for code in languages for name in datasets]
    return [source for source in found if source is not None]


def check_training_datasets(datasets: Sequence[str]) -> None:
    """A dataset name that has no bitext reader is an error, before any data root is needed."""
    for name in datasets:
        if name not in _READERS:
            raise PolyembedError(f"'{name}' is not a training dataset (choose from: {', '.join(TRAINING_DATASETS)})")


def _cap(source: ParallelSource, limit: int, seed: int) -> ParallelSource:
    if len(source) <= limit:
        return source
    rows = sorted(random.Random(f"{seed}:{source.name}:{source.language}").sample(range(len(source)), limit))
    return ParallelSource(
        source.name, source.language, [source.english[i] for i in rows], [source.other[i] for i in rows], source.origin
    )


def split_dev(
    sources: Sequence[ParallelSource], pairs_per_source: int, seed: int
) -> tuple[list[ParallelSource], list[ParallelSource]]:
    """Hold out `pairs_per_source` pairs of every source (at most a fifth of it) as the dev set (paper, §3)."""
    train: list[ParallelSource] = []
    dev: list[ParallelSource] = []
    for source in sources:
        held = min(pairs_per_source, len(source) // 5)
        rng = random.Random(f"dev:{seed}:{source.name}:{source.language}")
        rows = list(range(len(source)))
        rng.shuffle(rows)
        dev_rows, train_rows = sorted(rows[:held]), sorted(rows[held:])
        for rows_, out in ((train_rows, train), (dev_rows, dev)):
            out.append(
                ParallelSource(
                    source.name,
                    source.language,
                    [source.english[i] for i in rows_],
                    [source.other[i] for i in rows_],
                    source.origin,
                )
            )
    return train, [d for d in dev if len(d)]
