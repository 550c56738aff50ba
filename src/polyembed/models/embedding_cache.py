"""A persistent (language, sentence) -> embedding store per encoder, shared by training, evaluation and mining.

Why: distillation runs, resumed runs and seeds share the teacher's English side; evaluating the same model twice
re-encodes the same benchmark sentences; mining re-encodes a corpus already seen. Every embedding an encoder
makes can be kept on disk and reused, keyed by the encoder's fingerprint (name + weight files) and the exact
text, plus the language for language-routed models (the same text may embed differently per route).

Storage is one SQLite file per encoder (`<cache>/embeddings/<fingerprint>/store.sqlite`): lookups and inserts
are transactions, so additions cost only the new rows, a killed process never leaves a half-written store, and
several processes may share it. A store written by earlier polyembed versions (`sentences.json` +
`embeddings.npy`) is imported on first use.

`EmbeddingStore` has the SentenceEncoder interface, so it stands in for its encoder anywhere: as a teacher in
sentence-transformers evaluators, in `polyembed.evaluate(..., cache=True)` and in `polyembed mine --cache`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from polyembed.models.cache import cache_dir
from polyembed.models.encoder import SentenceEncoder

STORE_FILE = "store.sqlite"
_LOOKUP_CHUNK = 500  # SQLite's host-parameter limit is 999 on older builds


def encoder_fingerprint(encoder: SentenceEncoder) -> str:
    """A key that changes when the encoder's weights change: its name, plus the weight files' sizes and
    modification times for models loaded from a folder."""
    parts = [str(getattr(encoder, "name", type(encoder).__name__))]
    path = getattr(encoder, "path", None)
    if path and Path(path).is_dir():
        patterns = ("*.safetensors", "*.bin", "*.onnx")
        for weights in sorted(w for pattern in patterns for w in Path(path).rglob(pattern)):
            stat = weights.stat()
            parts.append(f"{weights.relative_to(path)}:{stat.st_size}:{int(stat.st_mtime)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


class EmbeddingStore:
    """Embeddings of one encoder keyed by (language, sentence), in `<directory>/store.sqlite`.

    For an encoder that does not route by language the language is not part of the key. `encode()` has the
    SentenceEncoder signature and `name`, `routes_by_language` and `dimension` are the encoder's own.
    """

    def __init__(self, encoder: SentenceEncoder, directory: str | Path | None = None, batch_size: int = 128) -> None:
        self.encoder = encoder
        self.batch_size = batch_size
        self.name = getattr(encoder, "name", type(encoder).__name__)
        self.path = getattr(encoder, "path", None)
        self.routes_by_language = bool(getattr(encoder, "routes_by_language", False))
        self.directory = Path(directory) if directory else cache_dir() / "embeddings" / encoder_fingerprint(encoder)
        self.encoded = 0
        """Sentences this store had to encode (the rest were found on disk)."""
        self._connection: sqlite3.Connection | None = None

    @property
    def dimension(self) -> int | None:
        return getattr(self.encoder, "dimension", None)

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.directory / STORE_FILE, timeout=60)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS embeddings (language TEXT NOT NULL, sentence TEXT NOT NULL, "
                "vector BLOB NOT NULL, PRIMARY KEY (language, sentence))"
            )
            self._connection = connection
            self._import_legacy_files()
        return self._connection

    def _import_legacy_files(self) -> None:
        """Rows of the earlier `sentences.json` + `embeddings.npy` format (ignored when their lengths differ:
        an interrupted write)."""
        sentences_file, vectors_file = self.directory / "sentences.json", self.directory / "embeddings.npy"
        if not (sentences_file.is_file() and vectors_file.is_file()):
            return
        try:
            sentences = json.loads(sentences_file.read_text(encoding="utf-8"))
            vectors = np.load(vectors_file).astype(np.float32)
        except (OSError, ValueError):
            sentences, vectors = [], np.zeros((1, 0))
        if len(sentences) == len(vectors):
            self._insert("", sentences, vectors)
        sentences_file.unlink()
        vectors_file.unlink()

    def _key(self, language: str | None) -> str:
        return (language or "") if self.routes_by_language else ""

    def _lookup(self, language: str, sentences: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        database = self._db()
        for start in range(0, len(sentences), _LOOKUP_CHUNK):
            chunk = sentences[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = database.execute(
                f"SELECT sentence, vector FROM embeddings WHERE language = ? AND sentence IN ({marks})",
                [language, *chunk],
            )
            found.update((sentence, np.frombuffer(blob, dtype=np.float32)) for sentence, blob in rows)
        return found

    def _insert(self, language: str, sentences: Sequence[str], vectors: np.ndarray) -> None:
        database = self._db()
        with database:  # one transaction: all rows or none
            database.executemany(
                "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                [(language, s, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for s, v in
                 zip(sentences, vectors, strict=True)],
            )

    def __len__(self) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def __contains__(self, sentence: object) -> bool:
        return isinstance(sentence, str) and bool(self._lookup("", [sentence]))

    def embed(
        self, sentences: Sequence[str], show_progress_bar: bool = True, language: str | None = None
    ) -> np.ndarray:
        """Embeddings of `sentences` in order, computing (and storing) only the unseen ones."""
        key = self._key(language)
        unique = list(dict.fromkeys(sentences))
        found = self._lookup(key, unique)
        missing = [s for s in unique if s not in found]
        if missing:
            kwargs: dict[str, Any] = {"batch_size": self.batch_size, "show_progress_bar": show_progress_bar}
            if language is not None:
                kwargs["language"] = language
            new = np.asarray(self.encoder.encode(missing, **kwargs), dtype=np.float32)
            self._insert(key, missing, new)
            found.update(zip(missing, new, strict=True))
            self.encoded += len(missing)
        if not sentences:
            width = next(iter(found.values())).shape[0] if found else (self.dimension or 0)
            return np.zeros((0, width), dtype=np.float32)
        return np.stack([found[s] for s in sentences]).astype(np.float32, copy=False)

    def encode(self, sentences: str | Sequence[str], language: str | None = None, **kwargs: Any) -> np.ndarray:
        """SentenceEncoder-compatible lookup (batch size and other keyword arguments are accepted and ignored)."""
        if isinstance(sentences, str):
            return self.embed([sentences], show_progress_bar=False, language=language)[0]
        return self.embed(list(sentences), bool(kwargs.get("show_progress_bar", False)), language)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
