"""The k-NN search of mining in shards: bounded memory, progress, and a restart that picks up at the next shard.

Why: mining two news crawls searches for hours; a search that holds both sides, materialises nothing smaller
than n x n or starts over after a kill does not scale. Here each direction (source rows against an index of
the target side, then the other way) runs shard by shard: a shard of query rows is read (memory-mapped
files, `polyembed.mining.vectors`), searched, and its k neighbours (similarities and ids, n x k for the whole
side) written atomically to the run's work folder. Memory holds one index (trained on a bounded, seeded
sample, filled block by block: `polyembed.mining.index`), one shard of queries and the k-NN results.

The work folder (`OUTPUT.work/`, next to the TSV) records in `job.json` what the results were found for (both
sides' identity, k, the indexes, the shard size); a run with the same record skips every shard whose result
is there, a run with another record searches again (and says why). It also keeps each trained index, so a
restart does not train again. The folder goes when the TSV is written. One run at a time (`FolderLock`).

Exactness: the shard size is a multiple of faiss's query block (`faiss.cvar.distance_compute_blas_query_bs`,
4096) and every shard takes the code path one search over the whole side would (`_path_of_one_search`), so a
sharded exact search makes the same BLAS calls as one search, and mining with the flat index gives bit for bit
the pairs and scores of `polyembed.mining.margin.mine`. Approximate indexes
only choose the k candidates: each is rescored with its exact cosine (the neighbourhood means too).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from polyembed.errors import PolyembedError
from polyembed.integrity import FolderLock, read_record
from polyembed.messages import hide_progress
from polyembed.mining.index import ADD_BLOCK, IndexChoice, empty_index, faiss_message, sample_rows, train_sample_size
from polyembed.mining.margin import score_neighbours, selected_arrays
from polyembed.mining.vectors import PoolVectors
from polyembed.outputs import atomic_write, check_output_dir, make_dirs, remove_created_dirs

logger = logging.getLogger(__name__)

SHARD_SIZE = 65_536
"""Query rows searched per shard by default: a shard's result is what a restart keeps."""
WORK_SUFFIX = ".work"
JOB_FILE = "job.json"
ENCODED = ("source-shards", "target-shards")
"""Sub-folders where `mine --workers` encodes each side (`encode_to_shards`, resumable on its own)."""
OWN_FILE = re.compile(r"(forward|backward)-\d{5,}\.npz|index-(source|target)\.faiss|job\.json")
"""The files a work folder run writes: the only ones it replaces or removes."""
PARTIAL_FILE = re.compile(r"\.((forward|backward)-\d{5,}\.npz|index-(source|target)\.faiss|job\.json)\..+\.tmp")
"""`atomic_write`'s temp file of one of them, left by a run killed while writing it."""


@contextlib.contextmanager
def _path_of_one_search(queries: int, dimension: int) -> Iterator[None]:
    """Every exact search call inside takes the path (BLAS or plain loops) one call over all `queries` rows would:
    faiss picks it per call by size (`nx * d` against `distance_compute_blas_threshold` from faiss 1.14.2,
    `nx` before), and the two paths round differently. Sets faiss's global for the block (one search at a time)."""
    import faiss

    threshold = int(faiss.cvar.distance_compute_blas_threshold)
    version = tuple(int(part) for part in re.findall(r"\d+", faiss.__version__)[:3])
    size = queries * dimension if version >= (1, 14, 2) else queries
    faiss.cvar.distance_compute_blas_threshold = 0 if size >= threshold else 2**31 - 1
    try:
        yield
    finally:
        faiss.cvar.distance_compute_blas_threshold = threshold


def shard_rows(shard_size: int) -> int:
    """`shard_size` rounded up to a multiple of faiss's query block (see the module docstring)."""
    import faiss

    block = max(1, int(faiss.cvar.distance_compute_blas_query_bs))
    return -(-max(1, shard_size) // block) * block


@dataclass(frozen=True)
class IndexSpec:
    """The index of one side and how the user named it (for messages)."""

    choice: IndexChoice
    kind: str
    index_term: str = "index"
    parameters_term: str = "search_parameters"


class SearchWork:
    """A run's work folder (see the module docstring): `check` before any work, `open` creates and locks it,
    `start` clears the results of another job, `close` removes it after a finished run, or keeps what a restart
    can use."""

    def __init__(self, folder: Path, option: str) -> None:
        self.folder = folder
        self.job: dict[str, Any] = {}
        self.option = option
        self.lock = FolderLock(folder, option)
        self.created: list[Path] = []

    def check(self) -> None:
        """Before any work: the folder can be created or written (a clear error otherwise)."""
        self.folder = check_output_dir(self.folder, self.option)

    def open(self) -> None:
        """Create and lock the folder (one run at a time)."""
        self.created = make_dirs(self.folder)
        try:
            self.lock.acquire()
        except BaseException:
            remove_created_dirs(self.created)
            raise

    def start(self, job: dict[str, Any]) -> None:
        """Keep the results of the same `job` (a restart), remove those of another one."""
        self.job = json.loads(json.dumps(job))  # as it reads back from job.json (lists, not tuples)
        for path in self.folder.iterdir():
            if PARTIAL_FILE.fullmatch(path.name):
                path.unlink(missing_ok=True)
        saved = read_record(self.folder / JOB_FILE)
        if saved != self.job:
            stale = [path for path in self.folder.iterdir() if OWN_FILE.fullmatch(path.name)]
            if saved is not None and any(path.name != JOB_FILE for path in stale):
                logger.warning("%s: neighbours found for other inputs or options; searching again", self.folder)
            for path in stale:
                path.unlink(missing_ok=True)
            with atomic_write(self.folder / JOB_FILE) as handle:
                handle.write(json.dumps(self.job, indent=1) + "\n")

    def close(self, finished: bool) -> None:
        self.lock.release()
        reusable = [path for path in self.folder.iterdir() if path.name != JOB_FILE and (
            OWN_FILE.fullmatch(path.name) or path.name in ENCODED)] if self.folder.is_dir() else []
        if finished or not reusable:
            for path in self.folder.iterdir() if self.folder.is_dir() else []:
                if OWN_FILE.fullmatch(path.name):
                    path.unlink(missing_ok=True)
                elif finished and path.name in ENCODED and path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
            with contextlib.suppress(OSError):  # only when empty: a user's file there stays, and the folder
                self.folder.rmdir()
        else:
            logger.info("%s: kept for a restart (the same command picks up where this run stopped)", self.folder)

    def result(self, direction: str, shard: int, rows: int, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The saved neighbours of one shard, or None when missing or not of the expected shape."""
        path = self.folder / f"{direction}-{shard:05d}.npz"
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as saved:
                sims, ids = saved["sims"], saved["ids"]
        except (OSError, ValueError, KeyError, EOFError) as err:
            logger.warning("%s: unreadable (%s); searching this shard again", path, err)
            return None
        if sims.shape != (rows, k) or ids.shape != (rows, k) or sims.dtype != np.float32 or ids.dtype != np.int64:
            logger.warning("%s: not the neighbours of %d rows (k=%d); searching this shard again", path, rows, k)
            return None
        return sims, ids

    def save_result(self, direction: str, shard: int, sims: np.ndarray, ids: np.ndarray) -> None:
        with atomic_write(self.folder / f"{direction}-{shard:05d}.npz", "wb", encoding=None) as handle:
            np.savez(handle, sims=sims, ids=ids)

    def index_file(self, side: str) -> Path:
        return self.folder / f"index-{side}.faiss"


def _trained_index(database: PoolVectors, spec: IndexSpec, work: SearchWork | None, side: str) -> Any:
    """The empty index of `spec`, trained on a seeded sample of `database` (or read from the work folder)."""
    import faiss

    index = empty_index(spec.choice, database.dimension, database.rows, spec.index_term, spec.kind,
                        spec.parameters_term)
    if index.is_trained:
        return index
    saved = work.index_file(side) if work is not None else None
    if saved is not None and saved.is_file():
        try:
            index = faiss.deserialize_index(np.fromfile(saved, dtype=np.uint8))
            if spec.choice.search_parameters:
                faiss.ParameterSpace().set_index_parameters(index, spec.choice.search_parameters)  # type: ignore[arg-type]
            logger.info("%s: the trained %s index of an earlier run", saved, side)
            return index
        except RuntimeError as err:
            logger.warning("%s: unreadable (%s); training again", saved, faiss_message(err))
            index = empty_index(spec.choice, database.dimension, database.rows, spec.index_term, spec.kind,
                                spec.parameters_term)
    count = train_sample_size(index, database.rows)
    logger.info("training the %s index (%s) on %d of its %d rows", side, spec.choice.factory, count, database.rows)
    index.train(database.take(sample_rows(database.rows, count)))
    if saved is not None:
        with atomic_write(saved, "wb", encoding=None) as handle:
            handle.write(faiss.serialize_index(index).tobytes())
    return index


def _filled_index(database: PoolVectors, spec: IndexSpec, work: SearchWork | None, side: str,
                  show_progress: bool) -> Any:
    from tqdm import tqdm

    index = _trained_index(database, spec, work, side)
    with tqdm(total=database.rows, desc=f"mine: {side} index", unit=" sentences",
              disable=hide_progress(show_progress)) as progress:
        for _, rows in database.blocks(ADD_BLOCK):
            index.add(rows)
            progress.update(len(rows))
    return index


def _rescored(queries: np.ndarray, database: PoolVectors, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosines of every candidate, best first: an approximate index only picks the candidates. Rows are
    gathered a chunk at a time (about 32k neighbour rows), so memory stays flat in the shard size."""
    sims = np.empty(ids.shape, dtype=np.float32)
    chunk = max(1, 32_768 // max(1, ids.shape[1]))
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        neighbours = database.take(part.ravel()).reshape(*part.shape, database.dimension)
        sims[start : start + chunk] = np.einsum("id,ikd->ik", queries[start : start + chunk], neighbours)
    order = np.argsort(-sims, axis=1, kind="stable")
    return np.take_along_axis(sims, order, axis=1), np.take_along_axis(ids, order, axis=1)


def search(queries: PoolVectors, database: PoolVectors, k: int, spec: IndexSpec, *, work: SearchWork | None,
           direction: str, side: str, shard_size: int = SHARD_SIZE, show_progress: bool = True
           ) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest `database` rows of every `queries` row by cosine (similarities float32, ids int64; best
    first), shard by shard, each shard's result kept in `work` (skipped when already there)."""
    from tqdm import tqdm

    k = min(k, database.rows)
    step = shard_rows(shard_size)
    spans = [(start, min(start + step, queries.rows)) for start in range(0, queries.rows, step)]
    found = [work.result(direction, i, stop - start, k) if work is not None else None
             for i, (start, stop) in enumerate(spans)]
    todo = [i for i, result in enumerate(found) if result is None]
    if work is not None and len(todo) < len(spans):
        logger.info("%s: %d of %d %s shards already searched", work.folder, len(spans) - len(todo), len(spans),
                    direction)
    if todo:
        try:
            index = _filled_index(database, spec, work, side, show_progress)
        except RuntimeError as err:  # faiss: too few rows to train this index, ...
            raise PolyembedError(f"{spec.index_term} {spec.kind}: {faiss_message(err)}") from None
        done = sum(stop - start for i, (start, stop) in enumerate(spans) if found[i] is not None)
        exact = spec.choice.factory is None
        with tqdm(total=queries.rows, initial=done, desc=f"mine: {direction}", unit=" sentences",
                  disable=hide_progress(show_progress)) as progress, (
                _path_of_one_search(queries.rows, queries.dimension) if exact else contextlib.nullcontext()):
            for i in todo:
                start, stop = spans[i]
                rows = queries.block(start, stop)
                sims, ids = index.search(rows, k)
                if (ids < 0).any():
                    raise PolyembedError(
                        f"{spec.index_term} {spec.kind}: the index found fewer than {k} neighbours for some "
                        f"sentences; probe more cells ({spec.parameters_term} nprobe=64) or use the exact flat index")
                ids = ids.astype(np.int64)
                if not exact:
                    sims, ids = _rescored(rows, database, ids)
                found[i] = (sims, ids)
                if work is not None:
                    work.save_result(direction, i, sims, ids)
                progress.update(stop - start)
        del index
    results = [result for result in found if result is not None]
    return np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results])


def mine_vectors(source: PoolVectors, target: PoolVectors, *, k: int, margin: str, mode: str,
                 threshold: float | None, forward: IndexSpec, backward: IndexSpec, work: SearchWork | None = None,
                 shard_size: int = SHARD_SIZE, show_progress: bool = True
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Margin-mined pairs of two sides (source rows, target rows, scores; best first), as
    `polyembed.mining.margin.mine` finds them, searched shard by shard: `forward` indexes the target side,
    `backward` the source side."""
    fwd_sims, fwd_ids = search(source, target, k, forward, work=work, direction="forward", side="target",
                               shard_size=shard_size, show_progress=show_progress)
    bwd_sims, bwd_ids = search(target, source, k, backward, work=work, direction="backward", side="source",
                               shard_size=shard_size, show_progress=show_progress)
    candidates = score_neighbours(fwd_sims, fwd_ids, bwd_sims, bwd_ids, margin)
    src, tgt, score = selected_arrays(candidates, mode)
    if threshold is not None:
        keep = score >= threshold
        src, tgt, score = src[keep], tgt[keep], score[keep]
    return src, tgt, score
