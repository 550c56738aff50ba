"""Mine bitext from two monolingual files: encode both sides (or read their rows), search with faiss, keep
margin-scored pairs.

Why: users mine translation pairs from comparable corpora with LASER's tools today; this is the same protocol
(margin scoring of k nearest neighbours, forward / backward / intersect / max) over any polyembed model, at
the scale of news crawls: the faiss index is chosen by pool size (`polyembed.mining.index`: exact under
about fifty thousand sentences, IVF up to a few million, compressed IVF-PQ beyond), rows given as `.npy`
files or `encode --shard-size` folders are read memory-mapped (`polyembed.mining.vectors`), and the search
runs in shards whose results are kept in a work folder beside the output, so a killed run restarts at the
next shard (`polyembed.mining.search`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from polyembed.config import ConfigOrigin, Options, option
from polyembed.errors import PolyembedError, argument
from polyembed.languages import normalize_language, require_known_language
from polyembed.mining.index import EXACT_SEARCH_LIMIT, INDEX_KINDS, IndexChoice, choose_index
from polyembed.mining.lines import SideLines, count_lines
from polyembed.mining.search import (
    ENCODED,
    SHARD_SIZE,
    WORK_SUFFIX,
    IndexSpec,
    SearchWork,
    mine_vectors,
    shard_rows,
)
from polyembed.mining.vectors import PoolVectors, check_rows, check_same_dimension, in_memory, open_vectors
from polyembed.models.encoder import SentenceEncoder
from polyembed.outputs import check_output_file, write_output_file

logger = logging.getLogger(__name__)

__all__ = ["EXACT_SEARCH_LIMIT", "INDEX_KINDS", "IndexChoice", "MineOptions", "MiningResult", "check_rows",
           "choose_index", "mine_files"]


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


def _encoded(model: SentenceEncoder, lines: SideLines, language: str | None, batch_size: int,
             show_progress: bool) -> PoolVectors:
    """One side encoded in this process (its sentences are in memory anyway), checked row by row."""
    assert lines.lines is not None, "a side encoded here has its lines in memory"
    vectors = model.encode(lines.lines, language, batch_size=batch_size, normalize=True,
                           show_progress_bar=show_progress)
    check_rows(vectors, f"the embeddings of {lines.path}")
    return in_memory(vectors, f"the embeddings of {lines.path}")


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
    index: str = option("auto", "faiss index: auto (by pool size), flat, ivf, ivf-sq8, pq, hnsw, or a faiss "
                                "factory string.")
    search_parameters: str | None = option(None, "faiss search parameters of an approximate index ('nprobe=64'); "
                                                 "default: the index's own.")
    shard_size: int = option(SHARD_SIZE, "Sentences searched per resumable shard (rounded up to a multiple of "
                                         "faiss's query block).", minimum=1)
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
    show_progress: bool = True,
    **settings: Any,
) -> MiningResult:
    """Mine `source` x `target` (one sentence per line) into a TSV of `score<TAB>source<TAB>target`, best first.

    `model` is a name, folder or encoder (loaded only when a side has no precomputed embeddings: a `.npy` file
    or a shard folder of `encode --shard-size`, read memory-mapped); `settings` are `MineOptions`' fields (or
    pass `options`): k / margin / mode / threshold follow LASER's mining options (`polyembed.mining.margin`),
    index / search_parameters pick the faiss index (`polyembed.mining.index`), shard_size the rows searched
    per resumable shard. The k-NN results of each shard are kept in `OUTPUT.work/` until the TSV is written:
    the same call after a kill picks up at the next shard. `cache` keeps the embeddings in the persistent
    store, so mining the same corpus again costs no encoding. `workers` > 1 or `backend="ray"` encodes each
    side with `polyembed encode`'s shard workers (local processes, or Ray tasks on the cluster at
    `ray_address`) into the work folder; the search and scoring then run in this process."""
    from polyembed.data.io import read_lines
    from polyembed.mining.lines import in_memory as lines_in_memory

    if options is not None and settings:
        raise PolyembedError(f"give options or {', '.join(settings)}, not both")
    options = options or MineOptions(**settings)
    output = check_output_file(output, argument("--output"),
                               inputs=[source, target, source_embeddings, target_embeddings], overwrite=overwrite)
    work = SearchWork(output.with_name(output.name + WORK_SUFFIX), f"{argument('--output')}'s work folder")
    work.check()
    languages = [normalize_language(options.source_language), normalize_language(options.target_language)]
    stream = None
    if options.workers > 1 or options.backend == "ray":
        from polyembed.streaming import StreamOptions

        if not isinstance(model, str):
            raise PolyembedError(f"{argument('--workers')} > 1 / {argument('--backend')} ray load the model in each "
                                 "worker: pass its name or folder")
        stream = StreamOptions(dtype="float32", batch_size=options.batch_size, workers=options.workers,
                               backend=options.backend, ray_address=options.ray_address)
    given = (source_embeddings, target_embeddings)
    texts = [lines_in_memory(path, read_lines(path)) if embeddings is None and stream is None else count_lines(path)
             for path, embeddings in zip((source, target), given, strict=True)]
    for lines in texts:
        if not lines.count:
            raise PolyembedError(f"{lines.path}: no sentences to mine (the file is empty)")
    vectors: list[PoolVectors | None] = [None if embeddings is None else open_vectors(embeddings, lines.count,
                                                                                      lines.path)
                                         for lines, embeddings in zip(texts, given, strict=True)]
    if stream is None and None in vectors:
        from polyembed.models.loading import as_encoder

        model = as_encoder(model)
        if options.cache:
            from polyembed.models.embedding_cache import EmbeddingStore

            model = EmbeddingStore(model, batch_size=options.batch_size)
        vectors = [found if found is not None else _encoded(model, lines, language, options.batch_size, show_progress)
                   for found, lines, language in zip(vectors, texts, languages, strict=True)]
    specs = None if None in vectors else _index_specs(vectors[0], vectors[1], options)  # type: ignore[arg-type]
    work.open()
    finished = False
    try:
        if stream is not None:  # shards of about a quarter of a worker's share: progress shows, work evens out
            stream = replace(stream, shard_size=max(1, -(-max(t.count for t in texts) // (4 * options.workers))))
            vectors = [found if found is not None else _encoded_in_workers(model, lines, language, stream,
                                                                           work.folder / name, show_progress)
                       for found, lines, language, name in zip(vectors, texts, languages, ENCODED, strict=True)]
            specs = _index_specs(vectors[0], vectors[1], options)  # type: ignore[arg-type]
        source_vectors, target_vectors = vectors
        assert source_vectors is not None and target_vectors is not None and specs is not None
        work.start({"source": source_vectors.identity, "target": target_vectors.identity, "k": options.k,
                    "forward": specs[0].choice.label, "backward": specs[1].choice.label,
                    "shard_rows": shard_rows(options.shard_size)})
        src, tgt, score = mine_vectors(source_vectors, target_vectors, k=options.k, margin=options.margin,
                                       mode=options.mode, threshold=options.threshold, forward=specs[0],
                                       backward=specs[1], work=work, shard_size=options.shard_size,
                                       show_progress=show_progress)
        _write_pairs(output, texts, src, tgt, score)
        finished = True
    finally:
        work.close(finished)
    assert specs is not None
    label = specs[0].choice.label if specs[0].choice == specs[1].choice else (
        f"{specs[0].choice.label} over the target, {specs[1].choice.label} over the source")
    return MiningResult(output, len(src), texts[0].count, texts[1].count, label)


def _encoded_in_workers(model: str, lines: SideLines, language: str | None, stream: Any, folder: Path,
                        show_progress: bool) -> PoolVectors:
    """One side encoded by `polyembed encode`'s shard workers (local processes or Ray tasks) into the work
    folder (a restart keeps the finished shards), then read memory-mapped like any shard folder."""
    from polyembed.streaming import encode_to_shards

    encode_to_shards(model, lines.path, folder, replace(stream, language=language), show_progress=show_progress)
    return open_vectors(folder, lines.count, lines.path)


def _index_specs(source: PoolVectors, target: PoolVectors, options: MineOptions) -> tuple[IndexSpec, IndexSpec]:
    """The index over the target side (the forward search) and over the source side, each chosen by that side's
    size, and checked now: faiss refusing the index or its parameters is an error before any work."""
    from polyembed.mining.index import empty_index

    check_same_dimension(source, target)
    specs = []
    for side in (target, source):
        choice = choose_index(side.rows, options.index, side.dimension)
        if options.search_parameters is not None and not (choice.factory is None and options.index == "auto"):
            choice = IndexChoice(choice.factory, options.search_parameters)  # auto's exact index has none to set
        spec = IndexSpec(choice, options.index, argument("--index"), argument("--search-parameters"))
        empty_index(choice, side.dimension, side.rows, spec.index_term, spec.kind, spec.parameters_term)
        specs.append(spec)
    logger.info("mining %d x %d sentences with %s", source.rows, target.rows,
                " / ".join(dict.fromkeys(spec.choice.label for spec in specs)))
    return specs[0], specs[1]


def _write_pairs(output: Path, texts: list[SideLines], src: np.ndarray, tgt: np.ndarray, score: np.ndarray) -> None:
    """The TSV, each pair's lines read back by number (a tab inside a sentence would shift the columns: it is
    written as a space)."""
    with write_output_file(output) as handle, texts[0].reader() as source, texts[1].reader() as target:
        for s, t, value in zip(src.tolist(), tgt.tolist(), score.tolist(), strict=True):
            handle.write(f"{value:.6f}\t{source[s].replace(chr(9), ' ')}\t{target[t].replace(chr(9), ' ')}\n")
