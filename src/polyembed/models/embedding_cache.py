"""A persistent sentence -> embedding store for a teacher, so its targets are computed once per sentence.

Distillation runs, resumed runs and seeds share the English side of the bitext; the teacher is the
costly half of building the targets, so every embedding it makes is kept on disk and reused. Keys are
the exact sentence strings; the store is rewritten atomically (temp file, then rename) after additions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from polyembed.models.cache import cache_dir
from polyembed.models.encoder import SentenceEncoder
from polyembed.outputs import atomic_write


def encoder_fingerprint(encoder: SentenceEncoder) -> str:
    """A key that changes when the encoder's weights change: its name, plus the weight files' sizes and
    modification times for models loaded from a folder."""
    parts = [str(getattr(encoder, "name", type(encoder).__name__))]
    path = getattr(encoder, "path", None)
    if path and Path(path).is_dir():
        for weights in sorted(Path(path).rglob("*.safetensors")) + sorted(Path(path).rglob("*.bin")):
            stat = weights.stat()
            parts.append(f"{weights.relative_to(path)}:{stat.st_size}:{int(stat.st_mtime)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


class EmbeddingStore:
    """Embeddings of one encoder, keyed by sentence, in `<directory>/{sentences.json,embeddings.npy}`.

    `encode()` has the SentenceEncoder signature, so the store can stand in for the teacher wherever a
    sentence-transformers evaluator asks a teacher model to encode (e.g. MSEEvaluator).
    """

    def __init__(self, encoder: SentenceEncoder, directory: str | Path | None = None, batch_size: int = 128) -> None:
        self.encoder = encoder
        self.batch_size = batch_size
        self.directory = Path(directory) if directory else cache_dir() / "embeddings" / encoder_fingerprint(encoder)
        self._index: dict[str, int] = {}
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        sentences_file, vectors_file = self.directory / "sentences.json", self.directory / "embeddings.npy"
        if sentences_file.is_file() and vectors_file.is_file():
            sentences = json.loads(sentences_file.read_text(encoding="utf-8"))
            vectors = np.load(vectors_file)
            if len(sentences) == len(vectors):  # a mismatch means an interrupted write: start over
                self._index = {s: i for i, s in enumerate(sentences)}
                self._vectors = vectors

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, sentence: object) -> bool:
        return sentence in self._index

    def embed(self, sentences: Sequence[str], show_progress_bar: bool = True) -> np.ndarray:
        """Embeddings of `sentences` in order, computing (and storing) only the unseen ones."""
        missing = list(dict.fromkeys(s for s in sentences if s not in self._index))
        if missing:
            new = np.asarray(
                self.encoder.encode(missing, batch_size=self.batch_size, show_progress_bar=show_progress_bar),
                dtype=np.float32,
            )
            start = len(self._index)
            self._vectors = new if start == 0 else np.concatenate([self._vectors, new])
            self._index.update({s: start + i for i, s in enumerate(missing)})
            self._save()
        return self._vectors[[self._index[s] for s in sentences]] if sentences else self._vectors[:0]

    def encode(self, sentences: str | Sequence[str], **kwargs: Any) -> np.ndarray:
        """SentenceEncoder-compatible lookup (extra keyword arguments are accepted and ignored)."""
        if isinstance(sentences, str):
            return self.embed([sentences], show_progress_bar=False)[0]
        return self.embed(list(sentences), show_progress_bar=bool(kwargs.get("show_progress_bar", False)))

    def _save(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        order = sorted(self._index, key=self._index.__getitem__)
        with atomic_write(self.directory / "embeddings.npy", "wb") as handle:
            np.save(handle, self._vectors)
        with atomic_write(self.directory / "sentences.json") as handle:
            handle.write(json.dumps(order, ensure_ascii=False))
