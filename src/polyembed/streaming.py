"""Streaming encode: a corpus of any size into `.npy` shards, memory flat in corpus size, resumable after a kill.

Why: `polyembed encode FILE -o X.npy` holds every sentence and vector in memory, which stops at a few million
lines. Here the input (a file, or stdin) is read one shard at a time; each shard is encoded and written
atomically as `shard-00000.npy` (float16 or float32 rows) beside `shard-00000.offsets.npy` (the byte offset of
each row's line in the input, so a row leads back to its text) and, when languages are known,
`shard-00000.languages.txt`, then `shard-00000.check.json` (written last: its presence means done), which
records what the shard was made of: the byte range of its lines in the input, a BLAKE2b hash of those lines
(hashed while they are read, no second pass) and a checksum of each file as it was written. After a kill the
same command skips a shard only when its record matches the current input and options and its files still
have the bytes written; a shard of other text, a truncated or overwritten file is encoded again (and logged).
`manifest.json` (written last, removed while a run writes) records the model, options, dimension, line
count, the input (path, size, mtime, content hash) and every shard's record; `iter_shards` checks the
checksums before handing rows out. One run at a time writes a folder (`polyembed.integrity.FolderLock`).
With `workers > 1`, shard i goes to worker i mod workers, each a process of its own with its share of the CPU
threads: local processes, or Ray tasks (`backend="ray"`, `ray_address` of a running cluster for more than one
machine; the input and the output folder must then be on a filesystem every node sees).

Languages per line: one for all (`language`), a TSV column (`language_column`, with the text in
`text_column`), or the language identifier when the model routes by language. Lines are grouped by language
within a shard, so a routed model gets one call per language.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np

from polyembed.config import ConfigOrigin, Options, option
from polyembed.environment import require
from polyembed.errors import DataError, PolyembedError, argument
from polyembed.integrity import (
    ALGORITHM,
    FolderLock,
    HashingWriter,
    mismatched_files,
    new_hash,
    read_record,
    source_identity,
)
from polyembed.messages import hide_progress
from polyembed.models.encoder import SentenceEncoder
from polyembed.models.loading import as_encoder
from polyembed.outputs import atomic_write, check_output_dir, make_dirs, remove_created_dirs

logger = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
DTYPES = {"float16": np.float16, "float32": np.float32}
RECORD_SUFFIX = ".check.json"
SHARD_FILE = re.compile(r"shard-(\d{5,})(\.npy|\.offsets\.npy|\.languages\.txt|\.check\.json)")
"""The files a shard folder run writes: the only ones it replaces or removes."""


@dataclass(frozen=True)
class StreamOptions(Options):
    """How one corpus is cut, read and written."""

    shard_size: int = option(100_000, "Lines per shard.", minimum=1)
    dtype: Literal["float16", "float32"] = option("float16", "Stored precision of the vectors.")
    language: str | None = option(None, "The language of every line (ISO 639); a routed model needs it or langid.")
    language_column: int | None = option(None, "A TSV's column with each line's language (from 1).", minimum=1)
    text_column: int | None = option(None, "A TSV's column with the text (from 1).", minimum=1)
    batch_size: int = option(64, "Sentences encoded together.", minimum=1)
    normalize: bool = option(True, "L2-normalise the vectors.")
    workers: int = option(1, "Encoding processes (each with its share of cores).", minimum=1)
    backend: Literal["processes", "ray"] = option("processes", "Where the workers run.")
    ray_address: str | None = option(None, "A running Ray cluster (backend ray); default local.")

    def check(self, origin: ConfigOrigin) -> None:
        language, column, text = (origin.term(key) for key in ("language", "language_column", "text_column"))
        if self.language is not None and self.language_column is not None:
            raise origin.error("language_column", f"give {language} or {column}, not both")
        if (self.language_column is None) != (self.text_column is None):
            key = "text_column" if self.text_column is not None else "language_column"
            raise origin.error(key, f"{column} and {text} go together (a TSV with both columns)")
        if self.language_column is not None and self.language_column == self.text_column:
            raise origin.error("text_column", f"the columns must differ ({column} is {self.language_column} too)")


@dataclass
class StreamResult:
    """What one streaming run wrote."""

    output_dir: Path
    lines: int
    shards: list[str] = field(default_factory=list)
    encoded_shards: int = 0
    skipped_shards: int = 0


def shard_name(index: int) -> str:
    return f"shard-{index:05d}"


def _shard_status(folder: Path, index: int, expected: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(None, its record) when shard `index` on disk was made of exactly the lines and options in `expected`
    and its files still hold the bytes written; otherwise (why it must be encoded again, {})."""
    name = shard_name(index)
    record = read_record(folder / f"{name}{RECORD_SUFFIX}")
    if record is None:
        return ("unfinished" if (folder / f"{name}.npy").exists() else "missing"), {}
    for key in ("settings", "first_offset", "end_offset", "rows", "lines_blake2b"):
        if record.get(key) != expected[key]:
            return ("written with other options" if key == "settings" else "written from other lines of the input"), {}
    files = record.get("files")
    if not isinstance(files, dict) or f"{name}.npy" not in files:
        return "unfinished", {}
    bad = mismatched_files(folder, files)
    if bad:
        return f"{', '.join(bad)} changed after it was written (checksum mismatch)", {}
    return None, record


def _open_input(source: str | Path) -> tuple[BinaryIO, str]:
    if str(source) == "-":
        return sys.stdin.buffer, "<stdin>"
    path = Path(source)
    if path.is_dir():
        raise DataError(path, None, "is a folder, expected a file")
    if not path.is_file():
        raise DataError(path, None, "file not found")
    return path.open("rb"), str(path)


def _read_shards(
    handle: BinaryIO, name: str, options: StreamOptions, whole: Any
) -> Iterator[tuple[int, list[int], list[str], list[str | None], dict[str, Any]]]:
    """(shard index, byte offsets, texts, languages, what the shard is made of) per shard, reading one shard
    of lines at a time. The raw bytes of each shard's lines are hashed as they are read, and the whole input
    into `whole`: the proof of what a shard belongs to costs no second pass."""
    from polyembed.languages import is_known_language, normalize_language

    offset, index = 0, 0
    known: dict[str, str | None] = {}
    offsets: list[int] = []
    texts: list[str] = []
    languages: list[str | None] = []
    hasher = new_hash()
    for number, raw in enumerate(handle, start=1):
        start, offset = offset, offset + len(raw)
        hasher.update(raw)
        whole.update(raw)
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as err:
            raise DataError(name, number, f"not valid UTF-8 (byte {err.start})") from None
        if number == 1:
            line = line.removeprefix("\ufeff")
        language: str | None = options.language
        if options.text_column is not None and options.language_column is not None:
            columns = line.split("\t")
            needed = max(options.text_column, options.language_column)
            if len(columns) < needed:
                raise DataError(name, number, f"{len(columns)} tab-separated columns, expected at least {needed}")
            line, code = columns[options.text_column - 1], columns[options.language_column - 1].strip()
            if code not in known:
                known[code] = normalize_language(code) if is_known_language(code) else None
            language = known[code]
            if language is None:
                raise DataError(name, number, f"unknown language code '{code}' in column {options.language_column}")
        if not line.strip():
            raise DataError(name, number, "empty line where a sentence is required")
        offsets.append(start)
        texts.append(line)
        languages.append(language)
        if len(texts) == options.shard_size:
            yield index, offsets, texts, languages, _made_of(offsets, offset, hasher)
            index, offsets, texts, languages, hasher = index + 1, [], [], [], new_hash()
    if texts:
        yield index, offsets, texts, languages, _made_of(offsets, offset, hasher)


def _made_of(offsets: list[int], end: int, hasher: Any) -> dict[str, Any]:
    return {"first_offset": offsets[0], "end_offset": end, "rows": len(offsets), "lines_blake2b": hasher.hexdigest()}


def _encode_shard(encoder: SentenceEncoder, texts: list[str], languages: list[str | None],
                  options: StreamOptions) -> np.ndarray:
    """Rows for one shard, one encode call per language; rows given no language on a routed model get
    langid's (written back into `languages`, so the shard records them)."""
    from polyembed.models.langid import identify_languages

    if encoder.routes_by_language and any(code is None for code in languages):
        detected = identify_languages([t for t, code in zip(texts, languages, strict=True) if code is None])
        found = iter(detected)
        languages[:] = [code if code is not None else next(found) for code in languages]
    vectors = encoder.encode(texts, languages, batch_size=options.batch_size, normalize=options.normalize)
    return vectors.astype(DTYPES[options.dtype], copy=False)


def _write_shard(folder: Path, index: int, offsets: list[int], vectors: np.ndarray,
                 languages: list[str | None], record: dict[str, Any]) -> dict[str, Any]:
    """Write one shard's files atomically, each hashed as it is written, then its record (last: the record's
    presence and checksums mean done). Returns the record."""
    name = shard_name(index)
    (folder / f"{name}{RECORD_SUFFIX}").unlink(missing_ok=True)  # a kill below leaves the shard unfinished
    files: dict[str, str] = {}
    if any(code is not None for code in languages):
        data = "".join(f"{code or ''}\n" for code in languages).encode("utf-8")
        with atomic_write(folder / f"{name}.languages.txt", "wb", encoding=None) as handle:
            writer = HashingWriter(handle)
            writer.write(data)
        files[f"{name}.languages.txt"] = writer.hexdigest()
    else:  # an earlier run's languages would no longer belong to these rows
        (folder / f"{name}.languages.txt").unlink(missing_ok=True)
    for suffix, array in ((".offsets.npy", np.asarray(offsets, dtype=np.int64)), (".npy", vectors)):
        with atomic_write(folder / f"{name}{suffix}", "wb", encoding=None) as handle:
            writer = HashingWriter(handle)
            np.save(writer, array)
        files[f"{name}{suffix}"] = writer.hexdigest()
    record = {**record, "files": files}
    with atomic_write(folder / f"{name}{RECORD_SUFFIX}") as handle:
        handle.write(json.dumps(record, indent=1))
    return record


def _check_manifest(folder: Path, expected: dict[str, Any]) -> None:
    """A resumed run must use the same model, dtype and shard size as the shards already there."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        return
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise DataError(path, None, f"not a polyembed shard manifest ({err}); this folder holds other files: "
                                    "give a new output folder") from None
    if not isinstance(saved, dict) or not {"model", "shards"} <= saved.keys():
        # someone else's manifest.json: the run would replace it
        raise DataError(path, None, "not a polyembed shard manifest (no model and shards in it); this folder holds "
                                    "other files: give a new output folder")
    for key, value in expected.items():
        if saved.get(key) != value:
            raise PolyembedError(
                f"{path}: the shards there were written with {key}={saved.get(key)!r}, this run has {value!r}; "
                "use another output folder"
            )


def _worker_run(model_name: str, source: str, folder: str, options: StreamOptions, settings: dict[str, Any],
                worker: int, threads: int, device: str | None = None
                ) -> tuple[int, int, int, dict[int, dict[str, Any]], dict[str, Any]]:
    """One worker process: its own model (on `device`, the command's choice; None: this machine's accelerator),
    every shard i with i % workers == worker."""
    import torch

    from polyembed.models.loading import load_model

    torch.set_num_threads(threads)
    return _run_shards(load_model(model_name, device=device), source, Path(folder), options, settings, worker,
                       show_progress=False)


def _run_shards(model: Any, source: str | Path, folder: Path, options: StreamOptions, settings: dict[str, Any],
                worker: int | None, show_progress: bool
                ) -> tuple[int, int, int, dict[int, dict[str, Any]], dict[str, Any]]:
    """(lines read, shards encoded, shards skipped, the record of each of this process's shards, the input's
    identity) for this process's share of the shards. The input is read once; a shard on disk is kept only
    when `_shard_status` finds it made of the same lines and options, intact."""
    from tqdm import tqdm

    handle, name = _open_input(source)
    identity = source_identity(source) if name != "<stdin>" else {"path": name}
    whole = new_hash()
    lines = encoded = skipped = 0
    records: dict[int, dict[str, Any]] = {}
    try:
        progress = tqdm(desc="encode", unit=" lines", disable=hide_progress(show_progress))
        for index, offsets, texts, languages, made_of in _read_shards(handle, name, options, whole):
            lines += len(texts)
            if worker is None or index % options.workers == worker:
                expected = {"settings": settings, **made_of}
                reason, record = _shard_status(folder, index, expected)
                if reason is None:
                    records[index] = record
                    skipped += 1
                else:
                    if reason != "missing":
                        logger.warning("%s/%s: %s; encoding it again", folder, shard_name(index), reason)
                    vectors = _encode_shard(model, texts, languages, options)
                    records[index] = _write_shard(folder, index, offsets, vectors, languages, expected)
                    encoded += 1
            progress.update(len(texts))
        progress.close()
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()
    if name != "<stdin>" and source_identity(source) != identity:
        raise PolyembedError(f"{name}: changed while it was being encoded; run the command again")
    return lines, encoded, skipped, records, {**identity, "size": identity.get("size", _covered_size(records)),
                                              ALGORITHM: whole.hexdigest()}


def _covered_size(records: dict[int, dict[str, Any]]) -> int:
    """Bytes of input the shards cover (the size of stdin, which has no file to stat)."""
    return max((record["end_offset"] for record in records.values()), default=0)


def encode_to_shards(
    model: str | Any,
    source: str | Path,
    output_dir: str | Path,
    options: StreamOptions | None = None,
    *,
    show_progress: bool = True,
) -> StreamResult:
    """Encode `source` (a text file, or '-' for stdin) into shards in `output_dir`; see the module docstring."""
    from polyembed.languages import require_known_language

    options = options or StreamOptions()
    if options.language is not None:
        options = StreamOptions(**{**asdict(options), "language": require_known_language(options.language,
                                                                                           argument("--language"))})
    if options.workers > 1 and str(source) == "-":
        raise PolyembedError(f"{argument('--workers')} > 1 reads the input once per worker: give a file, not stdin")
    if options.workers > 1 and not isinstance(model, str):
        raise PolyembedError(f"{argument('--workers')} > 1 loads the model in each worker: pass its name or folder")
    if options.backend == "ray" and options.workers > 1:
        require(("ray",), f"{argument('--backend')} ray", extra="ray")
    folder = check_output_dir(output_dir, argument("--output", "output_dir"))
    if str(source) != "-":
        _open_input(source)[0].close()  # a missing input is refused before anything is created
    model_name = model if isinstance(model, str) else as_encoder(model).name
    identity = {"model": str(model_name), "dtype": options.dtype, "shard_size": options.shard_size,
                "normalize": options.normalize}
    settings = {**identity, "language": options.language, "language_column": options.language_column,
                "text_column": options.text_column}
    _check_manifest(folder, identity)
    created = make_dirs(folder)
    lock = FolderLock(folder, argument("--output", "output_dir"))
    try:
        lock.acquire()
    except BaseException:
        remove_created_dirs(created)
        raise
    try:
        (folder / MANIFEST_FILE).unlink(missing_ok=True)  # until this run ends, the folder is unfinished
        if options.workers == 1:
            encoder = as_encoder(model)
            lines, encoded, skipped, records, source_info = _run_shards(encoder, source, folder, options, settings,
                                                                        None, show_progress)
        else:
            lines, encoded, skipped, records, source_info = _merge(
                _run_workers(str(model), str(source), folder, options, settings), source)
        if lines == 0:
            raise DataError("<stdin>" if str(source) == "-" else source, None, "no lines to encode (the input is "
                            "empty)")
        shards = [shard_name(i) for i in range(_shard_count(lines, options.shard_size))]
        missing = [name for i, name in enumerate(shards) if i not in records]
        if missing:  # pragma: no cover - a worker died without raising
            raise PolyembedError(f"{folder}: shards {', '.join(missing[:5])} were not written")
        _remove_stale_shards(folder, len(shards))
        dimension = int(np.load(folder / f"{shards[0]}.npy", mmap_mode="r").shape[1])
        with atomic_write(folder / MANIFEST_FILE) as handle:
            handle.write(json.dumps({**settings, "source": str(source), "input": source_info, "lines": lines,
                                     "dimension": dimension, "shards": shards,
                                     "checksums": {shards[i]: records[i] for i in range(len(shards))}}, indent=2))
    except BaseException:
        lock.release()
        remove_created_dirs(created)  # only when still empty: finished shards stay for the next run
        raise
    lock.release()
    return StreamResult(folder, lines, shards, encoded, skipped)


def _merge(counts: list[tuple[int, int, int, dict[int, dict[str, Any]], dict[str, Any]]], source: str | Path
           ) -> tuple[int, int, int, dict[int, dict[str, Any]], dict[str, Any]]:
    """One result from the workers' (each read the whole input: they must agree on it)."""
    if len({(c[0], c[4][ALGORITHM]) for c in counts}) > 1:
        raise PolyembedError(f"{source}: changed while it was being encoded; run the command again")
    records = {index: record for c in counts for index, record in c[3].items()}
    return counts[0][0], sum(c[1] for c in counts), sum(c[2] for c in counts), records, counts[0][4]


def _remove_stale_shards(folder: Path, count: int) -> None:
    """Shards of an earlier, longer input: the run's own file names only, never anything else."""
    for path in folder.iterdir():
        match = SHARD_FILE.fullmatch(path.name)
        if match and int(match.group(1)) >= count:
            logger.info("%s: removed (the input now has %d shards)", path, count)
            path.unlink(missing_ok=True)


def _run_workers(model: str, source: str, folder: Path, options: StreamOptions, settings: dict[str, Any]
                 ) -> list[tuple[int, int, int, dict[int, dict[str, Any]], dict[str, Any]]]:
    """`_run_shards` results per worker: `options.workers` local processes or Ray tasks, shard i on worker i mod n."""
    from polyembed.device import chosen_device

    device = chosen_device()  # a worker is a process of its own: the command's --device goes with it
    if options.backend == "ray":
        import ray

        if not ray.is_initialized():
            ray.init(address=options.ray_address, include_dashboard=False, log_to_driver=False,
                     num_cpus=None if options.ray_address else os.cpu_count() or 1)
        cpus = max(1.0, float(ray.cluster_resources().get("CPU", 1)) / options.workers)
        task = ray.remote(num_cpus=min(cpus, 1.0))(_worker_run)
        threads = max(1, int(cpus))
        return ray.get([task.remote(model, source, str(folder), options, settings, worker, threads, device)
                        for worker in range(options.workers)])
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    threads = max(1, (os.cpu_count() or 1) // options.workers)
    with ProcessPoolExecutor(options.workers, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_worker_run, model, source, str(folder), options, settings, worker, threads, device)
                   for worker in range(options.workers)]
        return [future.result() for future in futures]


def _shard_count(lines: int, shard_size: int) -> int:
    return (lines + shard_size - 1) // shard_size


def load_shards(folder: str | Path) -> np.ndarray:
    """Every row of a finished shard folder as one memory-mapped-then-stacked float32 matrix (for small corpora
    and tests; large ones are read shard by shard with `iter_shards`)."""
    return np.concatenate([rows.astype(np.float32) for rows in iter_shards(folder)])


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The manifest of a finished shard folder; a clear error for an unfinished or foreign one."""
    folder = Path(folder)
    path = folder / MANIFEST_FILE
    if not path.is_file():
        raise PolyembedError(f"{folder}: no {MANIFEST_FILE} (not a finished `polyembed encode --shard-size` folder)")
    manifest = read_record(path)
    if manifest is None or not isinstance(manifest.get("shards"), list):
        raise DataError(path, None, "not a polyembed shard manifest (run the encode command again)")
    return manifest


def iter_shards(folder: str | Path, verify: bool = True) -> Iterator[np.ndarray]:
    """The rows of each shard in order, memory-mapped, after checking the manifest and (`verify`) that every
    shard file still has the checksum it was written with: a changed file is an error naming it, never
    wrong rows."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    checksums = manifest.get("checksums") or {}
    for name in manifest["shards"]:
        path = folder / f"{name}.npy"
        record = checksums.get(name)
        bad = mismatched_files(folder, record.get("files", {})) if verify and isinstance(record, dict) else []
        if bad:
            raise DataError(folder / bad[0], None, "checksum mismatch: the file changed after `polyembed encode` "
                            "wrote it (run the same encode command again to repair it)")
        try:
            rows = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as err:
            raise DataError(path, None, f"not a readable shard ({err or 'empty file'}); run the same encode "
                            "command again to repair it") from None
        if isinstance(record, dict) and (rows.ndim != 2 or rows.shape[0] != record.get("rows")):
            raise DataError(path, None, f"{rows.shape} rows where the manifest says {record.get('rows')}")
        yield rows
