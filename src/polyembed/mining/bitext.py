"""Mine bitext from two monolingual files: encode both sides, search with faiss, keep margin-scored pairs.

Why: users mine translation pairs from comparable corpora with LASER's tools today; this is the same protocol
(margin scoring of k nearest neighbours, forward / backward / intersect / max) over any polyembed model, with
the faiss index chosen by pool size: the exact flat index is fine up to about 100k sentences, beyond that an
inverted-file index answers in a fraction of the time at nearly the same recall.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from polyembed.config import ConfigOrigin, Options, option
from polyembed.errors import PolyembedError, argument
from polyembed.languages import normalize_language, require_known_language
from polyembed.mining.margin import MinedPair, mine
from polyembed.models.encoder import SentenceEncoder
from polyembed.outputs import check_output_file, write_output_file

EXACT_SEARCH_LIMIT = 100_000
"""Pools up to this size get the exact flat index ('auto'); larger ones an IVF index."""
INDEX_CHOICES = ("auto", "flat", "ivf", "hnsw")


@dataclass(frozen=True)
class IndexChoice:
    """A faiss index for one pool size: factory string (None = exact flat) and search parameters."""

    factory: str | None
    search_parameters: str | None

    @property
    def label(self) -> str:
        return "exact flat" if self.factory is None else f"{self.factory} ({self.search_parameters or 'default'})"


def choose_index(pool_size: int, kind: str = "auto") -> IndexChoice:
    """faiss index for a pool: 'flat' (exact), 'ivf' (IVF with about 4 sqrt(n) cells, 16 probed, trained on the
    pool), 'hnsw' (HNSW32, efSearch 128), 'auto' (flat up to EXACT_SEARCH_LIMIT sentences, else ivf), or any
    faiss factory string ("IVF4096,PQ32")."""
    if kind == "auto":
        kind = "flat" if pool_size <= EXACT_SEARCH_LIMIT else "ivf"
    if kind == "flat":
        return IndexChoice(None, None)
    if kind == "ivf":
        cells = max(1, min(65_536, int(4 * math.sqrt(pool_size)), pool_size // 39))  # faiss wants >= 39 per cell
        return IndexChoice(f"IVF{cells},Flat", f"nprobe={min(16, cells)}")
    if kind == "hnsw":
        return IndexChoice("HNSW32", "efSearch=128")
    return IndexChoice(kind, None)


@dataclass
class MiningResult:
    """What `mine_files` wrote and how it got there."""

    output: Path
    pairs: int
    source_sentences: int
    target_sentences: int
    index: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "output": str(self.output)}


def _encode_in_workers(model: str, text_file: str | Path, language: str | None, stream: Any) -> np.ndarray:
    """One side encoded by `polyembed encode`'s shard workers (local processes or Ray tasks) into a scratch
    folder, read back as float32 rows."""
    import tempfile

    from polyembed.streaming import encode_to_shards, load_shards

    with tempfile.TemporaryDirectory(prefix="polyembed-mine-") as scratch:
        encode_to_shards(model, text_file, scratch, replace(stream, language=language), show_progress=True)
        return load_shards(scratch)


def _embeddings(
    model: SentenceEncoder | None, sentences: list[str], language: str | None, embeddings: str | Path | None,
    batch_size: int, text: str | Path,
) -> np.ndarray:
    """Vectors for `sentences` (the lines of `text`): loaded from a .npy file or a shard folder (one finite,
    non-zero row per line, checked), or encoded."""
    if embeddings is None:
        assert model is not None, "a side without given embeddings is encoded"
        vectors = model.encode(sentences, language, batch_size=batch_size, normalize=True, show_progress_bar=True)
        check_rows(vectors, f"the embeddings of {text}")
        return vectors
    path = Path(embeddings)
    try:
        if path.is_dir():  # a folder of shards from `polyembed encode --shard-size`
            from polyembed.streaming import load_shards, read_manifest

            _check_shards_belong_to(path, read_manifest(path), text)
            matrix = load_shards(path)
        else:
            matrix = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, KeyError, EOFError) as err:
        raise PolyembedError(f"{path}: not a .npy embedding matrix or shard folder ({err or 'empty file'})") from None
    if matrix.ndim != 2 or matrix.shape[0] != len(sentences):
        raise PolyembedError(
            f"{path}: {matrix.shape[0] if matrix.ndim else 0} rows of shape {matrix.shape} for {len(sentences)} "
            "sentences; the matrix needs one row per line of its text file"
        )
    with np.errstate(over="ignore", invalid="ignore"):  # a float64 value past float32's range: check_rows names it
        vectors = np.asarray(matrix, dtype=np.float32)
    check_rows(vectors, str(path))
    return vectors


def check_rows(vectors: np.ndarray, where: str, chunk: int = 65_536) -> None:
    """Refuse a NaN / infinite or all-zero row, naming it (1-based, = the line of the text file): either has
    no direction, so every margin score involving it would be NaN. Checked in chunks: memory stays flat."""
    for start in range(0, len(vectors), chunk):
        block = vectors[start : start + chunk]
        for problem, bad in (("NaN or infinite values", ~np.isfinite(block).all(axis=1)),
                             ("all zeros", ~block.any(axis=1))):
            if bad.any():
                raise PolyembedError(f"{where}: row {start + int(bad.argmax()) + 1} has {problem} (an embedding "
                                     "without a direction cannot be scored)")


def _check_shards_belong_to(folder: Path, manifest: dict[str, Any], text: str | Path) -> None:
    """A shard folder records the content hash of the input it was encoded from: refuse it for other text."""
    from polyembed.integrity import ALGORITHM, file_digest

    recorded = (manifest.get("input") or {}).get(ALGORITHM)
    if recorded is not None and Path(text).is_file() and file_digest(text) != recorded:
        raise PolyembedError(f"{folder}: encoded from other text than {text} (its manifest records another content "
                             f"hash); encode {text} into a new folder")


@dataclass(frozen=True)
class MineOptions(Options):
    """How `mine_files` encodes and scores: LASER's mining options (`polyembed.mining.margin`) and how the two
    sides are encoded."""

    source_language: str | None = option(None, "Language of the source file (routed models).")
    target_language: str | None = option(None, "Language of the target file (routed models).")
    k: int = option(4, "Neighbours per sentence for the margin.", minimum=1)
    margin: Literal["ratio", "distance", "absolute"] = option("ratio", "Margin between a pair and its neighbours.")
    mode: Literal["forward", "backward", "intersect", "max"] = option("max", "Which pairs are kept (max: 1-1).")
    threshold: float | None = option(None, "Keep pairs scoring at least this.")
    index: str = option("auto", "faiss index: auto, flat, ivf, hnsw, or a faiss factory string.")
    batch_size: int = option(64, "Sentences encoded together.", minimum=1)
    cache: bool = option(False, "Keep embeddings in the persistent store (re-mining is free).")
    workers: int = option(1, "Encode each side with this many shard workers.", minimum=1)
    backend: Literal["processes", "ray"] = option("processes", "Shard workers as local processes or Ray tasks.")
    ray_address: str | None = option(None, "Ray cluster to encode on; default: local Ray.")

    def check(self, origin: ConfigOrigin) -> None:
        for key in ("source_language", "target_language"):
            code = getattr(self, key)
            if code is not None:
                require_known_language(code, origin.term(key))
        if self.cache and (self.workers > 1 or self.backend == "ray"):
            raise origin.error("cache", f"it keeps embeddings made in this process: drop {origin.term('cache')} or "
                                        f"{origin.term('workers')} / {origin.term('backend')}")


def mine_files(
    model: Any,
    source: str | Path,
    target: str | Path,
    output: str | Path,
    *,
    source_embeddings: str | Path | None = None,
    target_embeddings: str | Path | None = None,
    options: MineOptions | None = None,
    overwrite: bool = False,
    **settings: Any,
) -> MiningResult:
    """Mine `source` x `target` (one sentence per line) into a TSV of `score<TAB>source<TAB>target`, best first.

    `model` is a name, folder or encoder (loaded only when a side has no precomputed `.npy` embeddings);
    `settings` are `MineOptions`' fields (or pass `options`): k / margin / mode / threshold follow LASER's mining
    options (`polyembed.mining.margin`); `cache` keeps the embeddings in the persistent store, so mining the
    same corpus again costs no encoding. `workers` > 1 or `backend="ray"` encodes each side with `polyembed
    encode`'s shard workers (local processes, or Ray tasks on the cluster at `ray_address`); the kNN search and
    scoring then run in this process."""
    from polyembed.data.io import read_lines

    if options is not None and settings:
        raise PolyembedError(f"give options or {', '.join(settings)}, not both")
    options = options or MineOptions(**settings)
    k, margin, mode, threshold, index = options.k, options.margin, options.mode, options.threshold, options.index
    batch_size, workers = options.batch_size, options.workers
    output = check_output_file(output, argument("--output"),
                               inputs=[source, target, source_embeddings, target_embeddings], overwrite=overwrite)
    languages = [normalize_language(options.source_language), normalize_language(options.target_language)]
    stream = None
    if workers > 1 or options.backend == "ray":
        from polyembed.streaming import StreamOptions

        if not isinstance(model, str):
            raise PolyembedError(f"{argument('--workers')} > 1 / {argument('--backend')} ray load the model in each "
                                 "worker: pass its name or folder")
        stream = StreamOptions(dtype="float32", batch_size=batch_size, workers=workers, backend=options.backend,
                               ray_address=options.ray_address)
    source_lines, target_lines = read_lines(source), read_lines(target)
    for path, lines in ((source, source_lines), (target, target_lines)):
        if not lines:
            raise PolyembedError(f"{path}: no sentences to mine (the file is empty)")
    sides = ((source, source_lines, languages[0], source_embeddings),
             (target, target_lines, languages[1], target_embeddings))
    if stream is not None:  # shards of about a quarter of a worker's share, so progress shows and work evens out
        stream = replace(stream, shard_size=max(1, -(-max(len(source_lines), len(target_lines)) // (4 * workers))))
        source_vectors, target_vectors = (
            _encode_in_workers(model, path, language, stream) if given is None
            else _embeddings(None, lines, language, given, batch_size, path)
            for path, lines, language, given in sides
        )
    else:
        if source_embeddings is None or target_embeddings is None:
            from polyembed.models.loading import as_encoder

            model = as_encoder(model)
            if options.cache:
                from polyembed.models.embedding_cache import EmbeddingStore

                model = EmbeddingStore(model, batch_size=batch_size)
        source_vectors, target_vectors = (
            _embeddings(model, lines, language, given, batch_size, path) for path, lines, language, given in sides
        )
    if source_vectors.shape[1] != target_vectors.shape[1]:
        raise PolyembedError(
            f"the two sides have different dimensions ({source_vectors.shape[1]} and {target_vectors.shape[1]})"
        )
    choice = choose_index(max(len(source_lines), len(target_lines)), index)
    try:
        pairs: list[MinedPair] = mine(
            source_vectors, target_vectors, k, margin, mode, threshold=threshold,
            index_factory=choice.factory, search_parameters=choice.search_parameters,
        )
    except (RuntimeError, ValueError) as err:  # faiss refuses a factory string or finds too few neighbours
        raise PolyembedError(f"{argument('--index')} {index}: {err}") from None
    with write_output_file(output) as handle:  # a tab inside a sentence would shift the columns: written as a space
        for pair in pairs:
            src, tgt = (text.replace("\t", " ") for text in (source_lines[pair.source], target_lines[pair.target]))
            handle.write(f"{pair.score:.6f}\t{src}\t{tgt}\n")
    return MiningResult(output, len(pairs), len(source_lines), len(target_lines), choice.label)
