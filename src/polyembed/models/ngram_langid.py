"""A character n-gram language identifier trained on the text the data layer holds.

langid.py knows 97 languages and none of Hausa, Igbo or Yoruba; the offline identifiers on PyPI miss others
(docs/benchmarks.md, "Language identification"). This one is a multinomial naive Bayes over hashed character
1-3-grams (word-bounded, as fastText and langid.py use sub-word n-grams), trained once per data root on the
training rows of every set that names its language (`TRAINING_SOURCES`) and stored in the cache with a
checksum: a damaged cached copy is trained again, never used. Held-out rows of the same sets measure it
(`benchmarks/language_id.py`); nothing is shipped inside the package, so the non-commercial MAFAND-MT text
never leaves the user's machine.
"""

from __future__ import annotations

import hashlib
import json
import logging
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from polyembed.data import DATASETS, data_root
from polyembed.data.readers.kardes import read_kardes_xnli
from polyembed.data.readers.parallel import (
    read_mafand,
    read_tatoeba,
    read_tatoeba_challenge,
    read_tico19,
    tatoeba_challenge_languages,
    tico19_languages,
)
from polyembed.data.registry import TATOEBA_LANGUAGES
from polyembed.errors import PolyembedError
from polyembed.integrity import ALGORITHM, file_digest, read_record
from polyembed.languages import normalize_language
from polyembed.models.cache import cache_dir
from polyembed.outputs import atomic_write

logger = logging.getLogger(__name__)

VERSION = 2
"""2: the description records the checksum of the .npz (a cache of version 1 is trained again)."""
N_FEATURES = 2**18
NGRAMS = (1, 3)
HELD_OUT_EVERY = 4
"""Row i of a set without its own test split is held out when i % 4 == 3 (a quarter, spread over the file)."""
MAX_TRAINING_ROWS = 5000
"""Training sentences kept per language and set (evenly spaced): more adds training time, not accuracy."""
MAX_CHARACTERS = 2000
"""Texts are cut to this many characters before hashing: longer texts add cost and no evidence."""


@dataclass(frozen=True)
class LabelledText:
    """Sentences of one language from one set, each tagged `short` (Tatoeba-like) or `long` (news, TICO-19)."""

    language: str
    source: str
    length: str
    texts: list[str]


def _split(rows: list[str], part: str) -> list[str]:
    held_out = part == "test"
    return [text for i, text in enumerate(rows) if (i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1) == held_out]


def _tatoeba(root: Path, part: str) -> list[LabelledText]:
    folder = root / DATASETS["tatoeba"].folder
    out, english = [], []
    for code in TATOEBA_LANGUAGES:
        pairs = read_tatoeba(folder, code)
        out.append(LabelledText(normalize_language(code) or code, "tatoeba", "short", _split(pairs.source, part)))
        english.extend(_split(pairs.target, part))
    out.append(LabelledText("en", "tatoeba", "short", english))
    return out


def _tatoeba_challenge(root: Path, part: str) -> list[LabelledText]:
    """Training text only: its rows that are in the LASER test set are dropped (both sets come from tatoeba.org)."""
    if part == "test":
        return []
    folder = root / DATASETS["tatoeba-challenge"].folder
    out = []
    for code in tatoeba_challenge_languages(folder):
        pairs = read_tatoeba_challenge(folder, code, exclude_laser_test=True, laser_folder=root / "tatoeba")
        out.append(LabelledText(normalize_language(code.split("_")[0]) or code, "tatoeba-challenge", "short",
                                pairs.source))
    return out


def _tico19(root: Path, part: str) -> list[LabelledText]:
    folder = root / DATASETS["tico19"].folder
    out: list[LabelledText] = []
    english: list[str] = []
    for code in tico19_languages(folder):
        pairs = read_tico19(folder, code)
        out.append(LabelledText(normalize_language(code.split("_")[0]) or code, "tico19", "long",
                                _split(pairs.source, part)))
        if not english:
            english = _split(pairs.target, part)
    out.append(LabelledText("en", "tico19", "long", english))
    return out


def _mafand(root: Path, part: str) -> list[LabelledText]:
    """Train and dev rows to train on, the test split held out (MAFAND-MT is CC BY-NC: used, never shipped)."""
    folder = root / DATASETS["mafand-mt"].folder
    out = []
    for pair in sorted(p for p in folder.iterdir() if p.is_dir() and p.name.startswith("en-")):
        code = pair.name[3:]
        splits = ["test"] if part == "test" else [s for s in ("train", "dev") if (pair / f"{s}.{code}").is_file()]
        texts = [text for split in splits for text in read_mafand(folder, code, split).source]
        out.append(LabelledText(normalize_language(code) or code, "mafand-mt", "long", texts))
    return out


def _kardes(root: Path, part: str) -> list[LabelledText]:
    folder = root / DATASETS["kardes-xnli"].folder
    out = []
    for code in DATASETS["kardes-xnli"].languages:
        if code == "en":
            continue
        rows = read_kardes_xnli(folder, code)
        texts = [row[column] for row in rows for column in ("s1_translation", "s2_translation")]
        out.append(LabelledText(code, "kardes-xnli", "short", _split(texts, part)))
    return out


TRAINING_SOURCES: dict[str, Callable[[Path, str], list[LabelledText]]] = {
    "tatoeba": _tatoeba,
    "tatoeba-challenge": _tatoeba_challenge,
    "tico19": _tico19,
    "mafand-mt": _mafand,
    "kardes-xnli": _kardes,
}
"""Dataset name -> reader of its rows for `part` ("train" or "test"); a set missing from the data root is skipped."""


def labelled_text(part: str, root: str | Path | None = None) -> list[LabelledText]:
    """Every source's rows for `part`, from the data root; sets not present are left out (logged)."""
    resolved = data_root(root)
    out: list[LabelledText] = []
    for name, reader in TRAINING_SOURCES.items():
        if not DATASETS[name].available(resolved):
            logger.info("language identifier: %s is not under %s, left out", name, resolved)
            continue
        out.extend(item for item in reader(resolved, part) if item.texts)
    return out


def training_text(root: str | Path | None = None) -> list[LabelledText]:
    """The training rows, less any sentence that is also a held-out row of any set (Tatoeba-Challenge and LASER
    Tatoeba share sentences under other English sides), at most `MAX_TRAINING_ROWS` per language and set."""
    held_out = {text for item in labelled_text("test", root) for text in item.texts}
    out = []
    for item in labelled_text("train", root):
        texts = [text for text in item.texts if text not in held_out]
        step = max(1, -(-len(texts) // MAX_TRAINING_ROWS))
        out.append(LabelledText(item.language, item.source, item.length, texts[::step]))
    return out


def _vectorizer():  # noqa: ANN202 - sklearn has no types
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(analyzer="char_wb", ngram_range=NGRAMS, n_features=N_FEATURES, alternate_sign=False,
                             norm=None, lowercase=True, preprocessor=lambda text: text[:MAX_CHARACTERS].lower())


class NgramIdentifier:
    """Naive Bayes over hashed character n-grams; `languages` are ISO 639-1 codes where one exists."""

    def __init__(self, languages: Sequence[str], log_probabilities: np.ndarray, sources: dict[str, str]) -> None:
        self.languages = list(languages)
        self.log_probabilities = log_probabilities  # (languages, N_FEATURES), float32
        self.sources = sources  # dataset -> licence, for the record
        self._index = {code: i for i, code in enumerate(self.languages)}

    @classmethod
    def fit(cls, items: Sequence[LabelledText], alpha: float = 0.01) -> NgramIdentifier:
        """Count n-grams per language over `items`; every language gets the same prior (the sets differ in size
        by 100x, and the prior would then decide short texts)."""
        by_language: dict[str, list[str]] = {}
        for item in items:
            by_language.setdefault(item.language, []).extend(item.texts)
        languages = sorted(by_language)
        vectorizer = _vectorizer()
        counts = np.zeros((len(languages), N_FEATURES), dtype=np.float64)
        for row, code in enumerate(languages):
            counts[row] = np.asarray(vectorizer.transform(by_language[code]).sum(axis=0)).ravel()
        smoothed = counts + alpha
        log_probabilities = (np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True))).astype(np.float32)
        sources = {item.source: DATASETS[item.source].licence for item in items}
        return cls(languages, log_probabilities, sources)

    def knows(self, language: str) -> bool:
        return language in self._index

    def scores(self, texts: Sequence[str], candidates: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
        """Log-likelihood of each text under each candidate language (all known ones by default)."""
        codes = [code for code in (candidates or self.languages) if code in self._index]
        if not codes:
            raise PolyembedError(f"the n-gram language identifier knows none of {', '.join(candidates or [])}")
        rows = [self._index[code] for code in codes]
        features = _vectorizer().transform(list(texts))
        return codes, np.asarray(features @ self.log_probabilities[rows].T)

    def identify(self, texts: Sequence[str], candidates: Sequence[str] | None = None) -> list[str]:
        """The most likely language of each text among `candidates` (all known ones by default)."""
        if not texts:
            return []
        codes, scores = self.scores(texts, candidates)
        return [codes[i] for i in scores.argmax(axis=1)]

    def save(self, path: Path) -> None:
        """One .npz (float16 log-probabilities), then its .json description with the .npz's checksum, each
        written atomically: the description comes last and vouches for the .npz (`load` checks it)."""
        npz = path.with_suffix(".npz")
        with atomic_write(npz, "wb") as handle:
            np.savez_compressed(handle, log_probabilities=self.log_probabilities.astype(np.float16))
        description = {"version": VERSION, "languages": self.languages, "sources": self.sources,
                       "n_features": N_FEATURES, "ngrams": list(NGRAMS), "algorithm": ALGORITHM,
                       "checksum": file_digest(npz)}
        with atomic_write(path.with_suffix(".json")) as handle:
            handle.write(json.dumps(description, indent=1))

    @classmethod
    def load(cls, path: Path) -> NgramIdentifier:
        """The identifier `save` wrote at `path`; `CachedIdentifierError` when the description is missing,
        unreadable or of another version, or the .npz is not the one it describes (truncated, overwritten)."""
        npz = path.with_suffix(".npz")
        description = read_record(path.with_suffix(".json"))
        if description is None or description.get("version") != VERSION:
            raise CachedIdentifierError(f"{path.with_suffix('.json')}: missing, unreadable or of another version")
        languages, sources = description.get("languages"), description.get("sources")
        if not (isinstance(languages, list) and languages and all(isinstance(c, str) for c in languages)
                and isinstance(sources, dict)):
            raise CachedIdentifierError(f"{path.with_suffix('.json')}: no list of languages and sources")
        try:
            intact = file_digest(npz) == description.get("checksum")
        except OSError as err:
            raise CachedIdentifierError(f"{npz}: cannot be read ({err.strerror})") from None
        if not intact:
            raise CachedIdentifierError(f"{npz}: checksum mismatch (changed or cut short since it was written)")
        try:
            with np.load(npz) as stored:
                log_probabilities = stored["log_probabilities"].astype(np.float32)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            raise CachedIdentifierError(f"{npz}: not readable ({err})") from None
        if log_probabilities.shape != (len(languages), N_FEATURES):
            raise CachedIdentifierError(f"{npz}: shape {log_probabilities.shape}, expected "
                                        f"({len(languages)}, {N_FEATURES})")
        return cls(languages, log_probabilities, sources)


class CachedIdentifierError(PolyembedError):
    """A cached identifier cannot be used (missing part, damaged, another version): it is trained again."""


def _cache_path(root: Path) -> Path:
    present = sorted(name for name in TRAINING_SOURCES if DATASETS[name].available(root))
    settings = [VERSION, N_FEATURES, list(NGRAMS), HELD_OUT_EVERY, MAX_TRAINING_ROWS, MAX_CHARACTERS]
    key = hashlib.sha256(json.dumps([settings, str(root.resolve()), present]).encode()).hexdigest()[:12]
    return cache_dir() / "langid" / f"ngram-{key}"


def ngram_identifier(root: str | None = None) -> NgramIdentifier | None:
    """The identifier for this data root: from the cache, else trained once (about a minute) and cached; None
    when the data root holds none of its sources (callers then use langid.py alone). Resolved on every call, so
    a process that moves its data root (`set_data_root`) gets that root's identifier."""
    try:
        resolved = data_root(root)
    except PolyembedError:
        return None
    if not any(DATASETS[name].available(resolved) for name in TRAINING_SOURCES):
        return None
    return _identifier_at(_cache_path(resolved), resolved)


@lru_cache(maxsize=4)
def _identifier_at(path: Path, resolved: Path) -> NgramIdentifier:
    """Loaded or trained once per process for each (cache file, data root); a cached one that fails its check
    (garbage, truncated, a part missing) is trained again and replaced, which costs only time."""
    if path.with_suffix(".json").exists() or path.with_suffix(".npz").exists():
        try:
            return NgramIdentifier.load(path)
        except CachedIdentifierError as err:
            logger.warning("the cached language identifier is not usable (%s); training it again", err)
    logger.info("training the n-gram language identifier on %s (once; cached in %s)", resolved, path.parent)
    identifier = NgramIdentifier.fit(training_text(resolved))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        identifier.save(path)
    except OSError as err:  # a read-only cache costs the next process the training, nothing else
        logger.warning("the language identifier could not be cached in %s (%s)", path.parent, err)
    return identifier
