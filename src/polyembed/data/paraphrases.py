"""Monolingual paraphrase pairs per language: the SE stage's training data in the modular recipe.

The paper machine-translates English paraphrase data into each language. The data root offers three sources
of the same kind, each read here into (anchor, positive) pairs of one language:

- `stsb-multi-mt`: STS-B train pairs with gold score >= 4 (near paraphrases), DeepL-translated into 10 languages
  and row-aligned across them: multi-parallel, as the paper stresses. Rows whose English sentences are in the
  STS-B dev/test splits or STS2017 are dropped, so STS evaluation never scores a trained sentence.
- `tatoeba-challenge`: two different sentences of the language that translate the same English sentence
  (LASER Tatoeba test rows excluded, as for training bitext).
- `paraphrase-en` (English only): WikiAuto's (complex, simple) sentence pairs.
- `kardes-xnli`: XNLI entailment pairs (premise, hypothesis) translated into five Turkic languages, and their
  English originals: NLI entailment as paraphrase, as in SimCSE and sentence-transformers' NLI training. This
  is what gives low-resource Kazakh or Uzbek a few hundred pairs without an MT model.

Users give their own as `paraphrase_files`: a TSV of two tab-separated columns per line.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from polyembed.data.io import read_lines
from polyembed.data.parallel_sources import _codes, _sts_benchmark_sentences
from polyembed.data.readers.kardes import KARDES_FOLDERS, read_kardes_xnli
from polyembed.data.readers.parallel import read_tatoeba_challenge, tatoeba_challenge_languages
from polyembed.data.readers.sts import read_stsb_multi_mt
from polyembed.data.registry import get_dataset
from polyembed.errors import DataError

PARAPHRASE_DATASETS = {
    "stsb-multi-mt": "STS-B train pairs scored >= 4, machine-translated (de es fr it ja nl pl pt ru zh, and en)",
    "tatoeba-challenge": "two translations of the same English sentence (Tatoeba-Challenge languages)",
    "paraphrase-en": "WikiAuto complex/simple sentence pairs (English)",
    "kardes-xnli": "XNLI entailment pairs translated into az, kk, ky, ug, uz (and their English)",
}
CROSS_LINGUAL_PARAPHRASE_DATASETS = ("stsb-multi-mt", "kardes-xnli")
MIN_STS_SCORE = 4.0


@dataclass
class ParaphrasePairs:
    """(anchor, positive) paraphrase pairs of one language from one source."""

    name: str
    language: str
    anchors: list[str]
    positives: list[str]
    origin: str

    def __len__(self) -> int:
        return len(self.anchors)


def _stsb_multi_mt(folder: Path, language: str) -> ParaphrasePairs | None:
    if not (folder / f"stsb-{language}-train.csv").is_file():
        return None
    held_out = _sts_benchmark_sentences(folder)
    english = read_stsb_multi_mt(folder, "en", "train")
    pairs = english if language == "en" else read_stsb_multi_mt(folder, language, "train")
    rows = [
        (s1, s2) for s1, s2, score, en1, en2 in zip(
            pairs.sentences1, pairs.sentences2, pairs.scores, english.sentences1, english.sentences2, strict=True
        )
        if score >= MIN_STS_SCORE and s1 != s2 and en1 not in held_out and en2 not in held_out
    ]
    return ParaphrasePairs("stsb-multi-mt", language, [a for a, _ in rows], [b for _, b in rows],
                           str(folder / f"stsb-{language}-train.csv"))


def _tatoeba_challenge(folder: Path, language: str) -> ParaphrasePairs | None:
    code = _codes(tatoeba_challenge_languages(folder)).get(language)
    if code is None:
        return None
    text = read_tatoeba_challenge(folder, code, exclude_laser_test=True)
    by_english: dict[str, list[str]] = defaultdict(list)
    for other, english in zip(text.source, text.target, strict=True):
        if other not in by_english[english]:
            by_english[english].append(other)
    anchors, positives = [], []
    for group in by_english.values():  # consecutive translations of one English sentence, each sentence once
        for first, second in zip(group[::2], group[1::2], strict=False):
            anchors.append(first)
            positives.append(second)
    return ParaphrasePairs("tatoeba-challenge", language, anchors, positives, str(folder / code))


def _paraphrase_en(folder: Path, language: str) -> ParaphrasePairs | None:
    if language != "en":
        return None
    path = folder / "wiki-auto-gem2021" / "valid.tsv"
    rows = read_paraphrase_file(path)
    kept = [(a, b) for a, b in dict.fromkeys(rows) if a != b]  # first occurrences, in order
    return ParaphrasePairs("paraphrase-en", "en", [a for a, _ in kept], [b for _, b in kept], str(path))


def _entailment_rows(folder: Path, language: str) -> list[dict[str, str]]:
    """Kardes XNLI entailment rows; English reads the Azerbaijani file (every file carries the English)."""
    rows = read_kardes_xnli(folder, "az" if language == "en" else language)
    return [row for row in rows if row["gold_label"] == "entailment"]


def _kardes_xnli(folder: Path, language: str) -> ParaphrasePairs | None:
    if language != "en" and language not in KARDES_FOLDERS:
        return None
    first, second = ("sentence1", "sentence2") if language == "en" else ("s1_translation", "s2_translation")
    rows = [(row[first], row[second]) for row in _entailment_rows(folder, language) if row[first] != row[second]]
    origin = KARDES_FOLDERS["az" if language == "en" else language]
    return ParaphrasePairs("kardes-xnli", language, [a for a, _ in rows], [b for _, b in rows], str(folder / origin))


_READERS: dict[str, Callable[[Path, str], ParaphrasePairs | None]] = {
    "stsb-multi-mt": _stsb_multi_mt,
    "tatoeba-challenge": _tatoeba_challenge,
    "paraphrase-en": _paraphrase_en,
    "kardes-xnli": _kardes_xnli,
}


def cross_lingual_paraphrases(language: str, root: Path, datasets: Sequence[str] = ("stsb-multi-mt",)
                               ) -> list[ParaphrasePairs]:
    """Cross-lingual paraphrases (a sentence of `language`, an English paraphrase of it) from each dataset that
    has the language: for each stsb-multi-mt train pair scored >= 4 (STS test sentences out) or Kardes XNLI
    entailment pair, each translated sentence with the English of the other one (X s1 - en s2, X s2 - en s1)."""
    found = []
    for name in datasets:
        if name not in CROSS_LINGUAL_PARAPHRASE_DATASETS:
            raise KeyError(name)
        folder = Path(root) / get_dataset(name).folder
        if name == "stsb-multi-mt":
            pairs = _stsb_cross(folder, language)
        elif language in KARDES_FOLDERS:
            rows = _entailment_rows(folder, language)
            anchors = [x for row in rows for x in (row["s1_translation"], row["s2_translation"])]
            positives = [e for row in rows for e in (row["sentence2"], row["sentence1"])]
            pairs = ParaphrasePairs(name, language, anchors, positives, str(folder / KARDES_FOLDERS[language]))
        else:
            pairs = None
        if pairs is not None and len(pairs):
            found.append(pairs)
    return found


def paraphrases_between(first: str, second: str, root: Path,
                        datasets: Sequence[str] = CROSS_LINGUAL_PARAPHRASE_DATASETS) -> list[ParaphrasePairs]:
    """Cross-lingual paraphrases between two non-English languages, from the multi-parallel sources that have
    both (the modular recipe's all-pairs alignment): stsb-multi-mt pairs scored >= 4 (STS test sentences out) and
    Kardes XNLI entailment pairs, as (first s1, second s2) and (first s2, second s1). Rows pair up through their
    shared English source."""
    found = []
    for name in datasets:
        if name not in CROSS_LINGUAL_PARAPHRASE_DATASETS:
            raise KeyError(name)
        folder = Path(root) / get_dataset(name).folder
        rows: list[tuple[str, str, str, str]] = []  # first s1, first s2, second s1, second s2
        if name == "stsb-multi-mt":
            if not all((folder / f"stsb-{code}-train.csv").is_file() for code in (first, second)):
                continue
            held_out = _sts_benchmark_sentences(folder)
            english = read_stsb_multi_mt(folder, "en", "train")
            one, two = read_stsb_multi_mt(folder, first, "train"), read_stsb_multi_mt(folder, second, "train")
            rows = [(a1, a2, b1, b2) for a1, a2, b1, b2, en1, en2, score in zip(
                one.sentences1, one.sentences2, two.sentences1, two.sentences2, english.sentences1,
                english.sentences2, english.scores, strict=True)
                if score >= MIN_STS_SCORE and en1 != en2 and en1 not in held_out and en2 not in held_out]
            origin = str(folder / f"stsb-{first}-train.csv")
        elif first in KARDES_FOLDERS and second in KARDES_FOLDERS:
            other = {(r["sentence1"], r["sentence2"]): r for r in _entailment_rows(folder, second)}
            rows = [(r["s1_translation"], r["s2_translation"], o["s1_translation"], o["s2_translation"])
                    for r in _entailment_rows(folder, first) if (o := other.get((r["sentence1"], r["sentence2"])))]
            origin = str(folder / KARDES_FOLDERS[first])
        if rows:
            anchors = [a for a1, a2, _, _ in rows for a in (a1, a2)]
            positives = [b for _, _, b1, b2 in rows for b in (b2, b1)]
            found.append(ParaphrasePairs(name, f"{first}-{second}", anchors, positives, origin))
    return found


def _stsb_cross(folder: Path, language: str) -> ParaphrasePairs | None:
    if language == "en" or not (folder / f"stsb-{language}-train.csv").is_file():
        return None
    held_out = _sts_benchmark_sentences(folder)
    english = read_stsb_multi_mt(folder, "en", "train")
    other = read_stsb_multi_mt(folder, language, "train")
    anchors, positives = [], []
    for x1, x2, en1, en2, score in zip(other.sentences1, other.sentences2, english.sentences1, english.sentences2,
                                       english.scores, strict=True):
        if score >= MIN_STS_SCORE and en1 != en2 and en1 not in held_out and en2 not in held_out:
            anchors += [x1, x2]
            positives += [en2, en1]
    return ParaphrasePairs("stsb-multi-mt", language, anchors, positives, str(folder / f"stsb-{language}-train.csv"))


def read_paraphrase_file(path: str | Path) -> list[tuple[str, str]]:
    """A user's paraphrase TSV: `anchor<TAB>positive` per line; anything else names its file and line."""
    rows = []
    for number, line in enumerate(read_lines(Path(path)), start=1):
        columns = line.split("\t")
        if len(columns) != 2 or not columns[0].strip() or not columns[1].strip():
            raise DataError(path, number, f"expected two tab-separated non-empty columns "
                                          f"(anchor<TAB>paraphrase), found {len(columns)} column(s)")
        rows.append((columns[0].strip(), columns[1].strip()))
    return rows


def load_paraphrases(language: str, datasets: list[str], root: Path | None) -> list[ParaphrasePairs]:
    """The registry paraphrase sources that have `language` (an empty list when none has it)."""
    found = []
    for name in datasets:
        if name not in _READERS:
            raise KeyError(name)
        if root is None:
            continue
        pairs = _READERS[name](Path(root) / get_dataset(name).folder, language)
        if pairs is not None and len(pairs):
            found.append(pairs)
    return found
