"""A persistent (language, sentence) -> embedding store per encoder, shared by training, evaluation and mining.

Why: distillation runs, resumed runs and seeds share the teacher's English side; evaluating the same model twice
re-encodes the same benchmark sentences; mining re-encodes a corpus already seen. Every embedding an encoder
makes can be kept on disk and reused, keyed by the encoder's fingerprint (name + weight files) and the exact
text, plus the language for language-routed models (the same text may embed differently per route).

Storage is one SQLite file per encoder (`<cache>/embeddings/<fingerprint>/store.sqlite`): lookups and inserts
are transactions, so additions cost only the new rows, a killed process never leaves a half-written store, and
several processes may share it. Files of the format before SQLite (`sentences.json` + `embeddings.npy`) are
ignored (and logged): they carry no checksums, so nothing says their vectors belong to their sentences, and
imported rows would replace checksummed ones; their sentences are encoded again.

Integrity (issue 32): every row carries a BLAKE2b checksum of its key and vector bytes, checked on each read;
a row whose bytes changed on disk (SQLite's own integrity check does not look inside blobs) is encoded again,
replaced and logged, never served. Rows of stores from before checksums are encoded again once the same way.
A `meta` table records the encoder (name and fingerprint) the store belongs to; opening it for another
encoder is refused. A file SQLite cannot read (truncated, overwritten), cannot open (a folder in its place)
or cannot write (read-only, immutable) is a one-line error naming the store and what to do.

`EmbeddingStore` has the SentenceEncoder interface, so it stands in for its encoder anywhere: as a teacher in
sentence-transformers evaluators, in `polyembed.evaluate(..., cache=True)` and in `polyembed mine --cache`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from polyembed.errors import PolyembedError
from polyembed.integrity import new_hash
from polyembed.models.cache import cache_dir
from polyembed.models.encoder import WrappedEncoder
from polyembed.models.loading import as_encoder

logger = logging.getLogger(__name__)
T = TypeVar("T")

LOCK_WAIT = 60.0
"""Seconds a store operation waits for another process's lock before it gives up with a StoreError."""


def _waiting(operation: Callable[[], T]) -> T:
    """`operation()`, tried again while another process holds the store's lock. SQLite's own busy timeout does
    not cover every case: a WAL store being opened, switched to WAL or recovered by another process answers
    "database is locked" at once. Two runs sharing a store (a killed run and its rerun, two runs side by side)
    then wait for each other instead of failing."""
    deadline = time.monotonic() + LOCK_WAIT
    pause = 0.05
    while True:
        try:
            return operation()
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(1.0, pause * 2)


class StoreError(PolyembedError):
    """The store file cannot be read, opened or written: the message names it and what to do."""


STORE_FILE = "store.sqlite"
LEGACY_FILES = ("sentences.json", "embeddings.npy")
"""The store format before SQLite (no checksums): never read."""
STORE_FORMAT = "2"
"""2: a checksum per row and the `meta` table."""
_LOOKUP_CHUNK = 500  # SQLite's host-parameter limit is 999 on older builds


def encoder_fingerprint(encoder: Any) -> str:
    """A key that changes when the encoder's weights change: its name, plus the weight files' sizes and
    modification times for models loaded from a folder."""
    encoder = as_encoder(encoder)
    parts = [encoder.name]
    path = encoder.path
    if path and Path(path).is_dir():
        patterns = ("*.safetensors", "*.bin", "*.onnx")
        for weights in sorted(w for pattern in patterns for w in Path(path).rglob(pattern)):
            stat = weights.stat()
            parts.append(f"{weights.relative_to(path)}:{stat.st_size}:{int(stat.st_mtime)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def row_checksum(language: str, sentence: str, blob: bytes) -> bytes:
    """BLAKE2b of a row's key and vector bytes: a vector overwritten in place, or moved to another key, fails."""
    hasher = new_hash()
    for part in (language.encode("utf-8"), b"\0", sentence.encode("utf-8"), b"\0", blob):
        hasher.update(part)
    return hasher.digest()


class EmbeddingStore(WrappedEncoder):
    """Embeddings of one encoder keyed by (language, sentence), in `<directory>/store.sqlite`.

    For an encoder that does not route by language the language is not part of the key. It is a
    SentenceEncoder whose `name`, `languages` and `dimension` are the encoder's own; the encoder runs at the
    store's `batch_size`.
    """

    def __init__(self, encoder: Any, directory: str | Path | None = None, batch_size: int = 128) -> None:
        encoder = as_encoder(encoder)
        super().__init__(encoder)
        self.batch_size = batch_size
        self.name = encoder.name
        self.directory = Path(directory) if directory else cache_dir() / "embeddings" / encoder_fingerprint(encoder)
        self.encoded = 0
        """Sentences this store had to encode (the rest were found on disk)."""
        self._connection: sqlite3.Connection | None = None

    @property
    def file(self) -> Path:
        return self.directory / STORE_FILE

    @contextlib.contextmanager
    def _readable(self) -> Iterator[None]:
        """SQLite's errors as one line naming the store and what to do: "file is not a database" / "database
        disk image is malformed" say how to rebuild it (it is a cache: deleting it loses only time); "unable to
        open" / "readonly database" (a folder in its place, a read-only or immutable file or folder) say what
        is in the way."""
        try:
            yield
        except sqlite3.OperationalError as err:
            if self.file.is_dir():
                raise StoreError(f"{self.file}: is a folder, not an embedding store file; remove it or give "
                                 "another store folder") from None
            if "locked" in str(err):
                raise StoreError(f"{self.file}: another process kept the embedding store locked ({err}); run "
                                 "again when it is done, or give another store folder") from None
            raise StoreError(
                f"{self.file}: cannot use the embedding store ({err}); it needs to be a writable file in a "
                f"writable folder: fix the permissions of {self.directory} and its files, or give another "
                "store folder"
            ) from None
        except sqlite3.DatabaseError as err:
            raise StoreError(
                f"{self.file}: not a readable embedding store ({err}); it is only a cache: delete the folder "
                f"{self.directory} and run again to rebuild it"
            ) from None

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                why = "a file is in its place" if self.directory.is_file() else err.strerror
                raise StoreError(f"{self.directory}: cannot be the embedding store's folder ({why}); give a "
                                 "folder polyembed can create or write in") from None
            with self._readable():
                connection = sqlite3.connect(self.file, timeout=LOCK_WAIT)
            try:
                with self._readable():
                    _waiting(lambda: self._prepare(connection))
            except BaseException:
                connection.close()
                raise
            self._connection = connection
            self._log_legacy_files()
        return self._connection

    def _prepare(self, connection: sqlite3.Connection) -> None:
        """Create or upgrade the tables, and refuse a store another encoder wrote."""
        connection.execute("PRAGMA journal_mode=WAL")
        with connection:
            connection.execute(
                "CREATE TABLE IF NOT EXISTS embeddings (language TEXT NOT NULL, sentence TEXT NOT NULL, "
                "vector BLOB NOT NULL, checksum BLOB, PRIMARY KEY (language, sentence))"
            )
            columns = {row[1] for row in connection.execute("PRAGMA table_info(embeddings)")}
            if "checksum" not in columns:  # a store from before checksums: its rows are checked as missing
                connection.execute("ALTER TABLE embeddings ADD COLUMN checksum BLOB")
            connection.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
            fingerprint = encoder_fingerprint(self.encoder)
            if meta.get("fingerprint", fingerprint) != fingerprint:
                raise PolyembedError(
                    f"{self.file}: holds the embeddings of encoder {meta.get('encoder')!r} (fingerprint "
                    f"{meta['fingerprint']}), not of {self.name!r} ({fingerprint}); use another folder"
                )
            connection.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [
                ("format", STORE_FORMAT), ("encoder", str(self.name)), ("fingerprint", fingerprint)])

    def _log_legacy_files(self) -> None:
        """Note files of the format before SQLite, which are never read: without checksums nothing ties their
        vectors to their sentences, and importing them used to replace checksummed rows with planted ones."""
        legacy = [self.directory / name for name in LEGACY_FILES if (self.directory / name).exists()]
        if legacy:
            logger.info("%s: ignored (a store format without checksums; its sentences are encoded again); "
                        "delete %s to silence this", ", ".join(map(str, legacy)),
                        "them" if len(legacy) > 1 else "it")

    def _key(self, language: str | None) -> str:
        return (language or "") if self.routes_by_language else ""

    def _lookup(self, language: str, sentences: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors of `sentences` whose checksum holds; a row that fails it is left out (so encoded
        again and replaced) and counted in the log."""
        database = self._db()

        def read() -> tuple[dict[str, np.ndarray], int, int]:
            found: dict[str, np.ndarray] = {}
            corrupt = unchecked = 0
            for start in range(0, len(sentences), _LOOKUP_CHUNK):
                chunk = sentences[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = database.execute(
                    f"SELECT sentence, vector, checksum FROM embeddings WHERE language = ? AND sentence IN ({marks})",
                    [language, *chunk],
                )
                for sentence, blob, checksum in rows:
                    if checksum is None:
                        unchecked += 1
                    elif checksum != row_checksum(language, sentence, blob):
                        corrupt += 1
                    else:
                        found[sentence] = np.frombuffer(blob, dtype=np.float32)
            return found, corrupt, unchecked

        with self._readable():
            found, corrupt, unchecked = _waiting(read)
        if corrupt:
            logger.warning("%s: %d stored embeddings failed their checksum (changed on disk); encoding them again",
                           self.file, corrupt)
        if unchecked:
            logger.info("%s: %d embeddings stored before checksums; encoding them again", self.file, unchecked)
        return found

    def _insert(self, language: str, sentences: Sequence[str], vectors: np.ndarray) -> None:
        database = self._db()
        rows = []
        for sentence, vector in zip(sentences, vectors, strict=True):
            blob = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
            rows.append((language, sentence, blob, row_checksum(language, sentence, blob)))

        def write() -> None:
            with database:  # one transaction: all rows or none (rolled back before a retry)
                database.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)

        with self._readable():
            _waiting(write)

    def __len__(self) -> int:
        database = self._db()
        with self._readable():
            return _waiting(lambda: int(database.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]))

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
            new = self.encoder.encode(missing, language, batch_size=self.batch_size,
                                      show_progress_bar=show_progress_bar)
            self._insert(key, missing, new)
            found.update(zip(missing, new, strict=True))
            self.encoded += len(missing)
        if not sentences:
            width = next(iter(found.values())).shape[0] if found else (self.dimension or 0)
            return np.zeros((0, width), dtype=np.float32)
        return np.stack([found[s] for s in sentences]).astype(np.float32, copy=False)

    def _encode_group(
        self, sentences: list[str], language: str | None, batch_size: int, show_progress_bar: bool
    ) -> np.ndarray:
        return self.embed(sentences, show_progress_bar, language)

    def encode(self, sentences: str | Sequence[str], language: str | Sequence[str | None] | None = None,
               **kwargs: Any) -> np.ndarray:
        """`SentenceEncoder.encode` through the store; keyword arguments it does not take (sentence-transformers
        evaluators pass `convert_to_numpy` and the like to a teacher) are ignored."""
        options = {name: kwargs[name] for name in ("batch_size", "normalize", "show_progress_bar") if name in kwargs}
        return super().encode(sentences, language, **options)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
