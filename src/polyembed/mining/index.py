"""Which faiss index mines a pool of a given size, and how it is built: trained on a bounded, seeded sample of
the pool, then filled block by block.

Why: exact search costs (queries x pool) inner products and holds the pool as float32 (1.5 GB per million
384-d rows); past some tens of thousands of sentences an inverted-file (IVF) index answers in a fraction of
the time at nearly the same recall, and past a few million rows only a compressed index (product quantisation,
64 bytes a row) fits in memory. The size rules follow stopes (the NLLB mining pipeline: OPQ + IVF-PQ for large
corpora) and LASER; the sizes where `auto` switches are constants here, their cost is measured in the docs.

'auto', per side (each direction searches an index over the other side, chosen by that side's size):

- below `EXACT_SEARCH_LIMIT` rows: the exact flat index (no training, the reference result);
- below `COMPRESSED_LIMIT`: IVF-Flat (about 4 sqrt(n) cells, 16 probed); IVF-SQ8 (one byte per dimension)
  when the float32 rows would take more than `MEMORY_SHARE` of the available memory;
- beyond: OPQ + IVF-PQ (64 sub-quantizers where the dimension allows, 8-bit codes, 64 cells probed; an explicit
  'pq' on a pool too small to train 8-bit codes gets fewer bits and no OPQ).

Candidates of every approximate index are rescored with exact cosines (`polyembed.mining.search`), so an index
only decides which k neighbours are looked at, never the scores.
"""

from __future__ import annotations

import logging
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from polyembed.errors import PolyembedError

logger = logging.getLogger(__name__)

EXACT_SEARCH_LIMIT = 50_000
"""Pools up to this size get the exact flat index ('auto')."""
COMPRESSED_LIMIT = 4_000_000
"""Pools from this size get OPQ + IVF-PQ ('auto'): a row in 64 bytes instead of 4 x dimension."""
MEMORY_SHARE = 0.5
"""IVF-Flat while its float32 rows take at most this share of the available memory, else IVF-SQ8."""
INDEX_KINDS = ("auto", "flat", "ivf", "ivf-sq8", "pq", "hnsw")
TRAIN_SAMPLE_MIN = 65_536
TRAIN_SAMPLE_MAX = 500_000
"""An index is trained on at most this many rows (64 per IVF cell, at least TRAIN_SAMPLE_MIN): k-means and PQ
training subsample anyway, and the sample is held as float32 while it trains."""
TRAIN_SEED = 0
ADD_BLOCK = 65_536
"""Rows added to an index at a time: memory for the rows being added stays at ADD_BLOCK x dimension floats."""


@dataclass(frozen=True)
class IndexChoice:
    """A faiss index for one pool: factory string (None = exact flat) and search parameters."""

    factory: str | None
    search_parameters: str | None

    @property
    def label(self) -> str:
        return "exact flat" if self.factory is None else f"{self.factory} ({self.search_parameters or 'default'})"


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux MemAvailable; else free pages), None if unknown."""
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _cells(pool_size: int) -> int:
    """About 4 sqrt(n) IVF cells, at least 39 rows each (faiss's k-means wants that many per centroid)."""
    return max(1, min(65_536, int(4 * math.sqrt(pool_size)), pool_size // 39))


def _subquantizers(dimension: int | None) -> int:
    """The most PQ sub-quantizers up to 64 that divide the dimension (PQ needs d % M == 0)."""
    if dimension is None:
        return 64
    return next(m for m in (64, 48, 32, 24, 16, 12, 8, 6, 4, 3, 2, 1) if dimension % m == 0)


def choose_index(pool_size: int, kind: str = "auto", dimension: int | None = None,
                 memory: int | None = None) -> IndexChoice:
    """faiss index for a pool of `pool_size` rows of `dimension`: 'flat' (exact), 'ivf' (IVF-Flat, about
    4 sqrt(n) cells, 16 probed), 'ivf-sq8' (the same with 8-bit scalar-quantised rows), 'pq' (OPQ + IVF-PQ,
    64 cells probed), 'hnsw' (HNSW32, efSearch 128), 'auto' (see the module docstring; `memory`: bytes
    available, default what the machine has now), or any faiss factory string ("IVF4096,PQ32")."""
    if kind == "auto":
        if pool_size <= EXACT_SEARCH_LIMIT:
            kind = "flat"
        elif pool_size >= COMPRESSED_LIMIT:
            kind = "pq"
        else:
            memory = available_memory() if memory is None else memory
            needed = pool_size * (dimension or 0) * 4
            kind = "ivf" if memory is None or needed <= MEMORY_SHARE * memory else "ivf-sq8"
            if memory is not None and kind == "ivf-sq8":
                logger.info("IVF-SQ8 index: %d float32 rows would take %.1f GB of %.1f GB available",
                            pool_size, needed / 1e9, memory / 1e9)
    cells = _cells(pool_size)
    if kind == "flat":
        return IndexChoice(None, None)
    if kind == "ivf":
        return IndexChoice(f"IVF{cells},Flat", f"nprobe={min(16, cells)}")
    if kind == "ivf-sq8":
        return IndexChoice(f"IVF{cells},SQ8", f"nprobe={min(16, cells)}")
    if kind == "pq":  # k-means wants 39 rows per centroid: 8-bit codes (256 centroids) and OPQ from 9,984 rows
        m, bits = _subquantizers(dimension), min(8, max(1, int(math.log2(max(2, pool_size // 39)))))
        codes = f"OPQ{m},IVF{cells},PQ{m}" if bits == 8 else f"IVF{cells},PQ{m}x{bits}"
        return IndexChoice(codes, f"nprobe={min(64, cells)}")
    if kind == "hnsw":
        return IndexChoice("HNSW32", "efSearch=128")
    return IndexChoice(kind, None)


def faiss_message(err: BaseException) -> str:
    """faiss's C++ exception text without its source location ('Error in ... at file.cpp:12: ')."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    text = re.sub(r"^Error in .*? at \S+:\d+: ", "", text)
    return re.sub(r"^Error: '.*?' failed: ", "", text)


def ivf_cells(index: Any) -> int:
    """The number of inverted lists of an IVF index (inside any pre-transform), 0 for other indexes."""
    import faiss

    try:
        return int(faiss.extract_index_ivf(index).nlist)
    except (RuntimeError, AttributeError):
        return 0


def empty_index(choice: IndexChoice, dimension: int, pool_size: int, index_term: str, kind: str,
                parameters_term: str) -> Any:
    """The untrained, empty faiss index of `choice` with its search parameters set; a PolyembedError naming the
    option (`index_term` with the user's `kind`, or `parameters_term`) when faiss refuses it or the pool is too
    small to train it. Cheap: run before any work, so a wrong option costs nothing."""
    import faiss

    if choice.factory is None:
        if choice.search_parameters:
            raise PolyembedError(f"{parameters_term} {choice.search_parameters}: the exact flat index has no search "
                                 f"parameters (choose an approximate {index_term})")
        return faiss.IndexFlatIP(dimension)
    try:
        index = faiss.index_factory(dimension, choice.factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        known = ", ".join(INDEX_KINDS)
        raise PolyembedError(f"{index_term} {kind}: not one of {known} nor a faiss factory string faiss can build "
                             f"for {dimension}-dimensional rows ({faiss_message(err)})") from None
    if choice.search_parameters:
        try:
            # faiss's stubs declare this string form without @overload: mypy sees only the int (cno) one
            faiss.ParameterSpace().set_index_parameters(index, choice.search_parameters)  # type: ignore[arg-type]
        except RuntimeError as err:
            raise PolyembedError(f"{parameters_term} {choice.search_parameters}: {faiss_message(err)}") from None
    cells = ivf_cells(index)
    if cells > pool_size:
        raise PolyembedError(f"{index_term} {kind}: {choice.factory} has {cells} cells, more than the {pool_size} "
                             "sentences it would be trained on; choose fewer cells or the exact flat index")
    return index


def train_sample_size(index: Any, pool_size: int) -> int:
    """Rows an index is trained on: 64 per IVF cell, at least TRAIN_SAMPLE_MIN, at most TRAIN_SAMPLE_MAX."""
    return min(pool_size, max(64 * ivf_cells(index), TRAIN_SAMPLE_MIN), TRAIN_SAMPLE_MAX)


def sample_rows(pool_size: int, count: int, seed: int = TRAIN_SEED) -> np.ndarray:
    """`count` distinct row numbers of a pool, sorted (reads in file order), the same for the same seed."""
    if count >= pool_size:
        return np.arange(pool_size, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(pool_size, size=count, replace=False)).astype(np.int64)
