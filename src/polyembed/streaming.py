"""Streaming encode: a corpus of any size into `.npy` shards, memory flat in corpus size, resumable after a kill.

Why: `polyembed encode FILE -o X.npy` holds every sentence and vector in memory, which stops at a few million
lines. Here the input (a file, or stdin) is read one shard at a time; each shard is encoded and written
atomically as `shard-00000.npy` (float16 or float32 rows) beside `shard-00000.offsets.npy` (the byte offset of
each row's line in the input, so a row leads back to its text) and, when languages are known,
`shard-00000.languages.txt`. A finished shard is never encoded again: after a kill, the same command skips the
shards already on disk. `manifest.json` (written last) records the model, dtype, dimension, shard size, line
count and shard list. With `workers > 1`, shard i goes to worker i mod workers, each a process of its own with
its share of the CPU threads: local processes, or Ray tasks (`backend="ray"`, `ray_address` of a running
cluster for more than one machine; the input and the output folder must then be on a filesystem every node sees).

Languages per line: one for all (`language`), a TSV column (`language_column`, with the text in
`text_column`), or the language identifier when the model routes by language. Lines are grouped by language
within a shard, so a routed model gets one call per language.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np

from polyembed.errors import DataError, PolyembedError
from polyembed.outputs import atomic_write, check_output_dir

MANIFEST_FILE = "manifest.json"
DTYPES = {"float16": np.float16, "float32": np.float32}


@dataclass(frozen=True)
class StreamOptions:
    """How one corpus is cut, read and written."""

    shard_size: int = 100_000
    dtype: Literal["float16", "float32"] = "float16"
    language: str | None = None
    language_column: int | None = None
    text_column: int | None = None
    batch_size: int = 64
    normalize: bool = True
    workers: int = 1
    backend: Literal["processes", "ray"] = "processes"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        for name in ("shard_size", "batch_size", "workers"):
            if getattr(self, name) < 1:
                raise PolyembedError(f"--{name.replace('_', '-')}: expected 1 or more, got {getattr(self, name)}")
        if self.backend not in ("processes", "ray"):
            raise PolyembedError(f"--backend {self.backend}: choose processes or ray")
        if self.dtype not in DTYPES:
            raise PolyembedError(f"--dtype {self.dtype}: choose float16 or float32")
        for name in ("language_column", "text_column"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise PolyembedError(f"--{name.replace('_', '-')}: columns count from 1, got {value}")
        if self.language is not None and self.language_column is not None:
            raise PolyembedError("--language and --language-column: give one of them")
        if (self.language_column is None) != (self.text_column is None):
            raise PolyembedError("--language-column and --text-column go together (a TSV with both columns)")


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


def _shard_complete(folder: Path, index: int) -> bool:
    """A shard counts as done when its rows and offsets exist and agree (both are written atomically)."""
    rows, offsets = folder / f"{shard_name(index)}.npy", folder / f"{shard_name(index)}.offsets.npy"
    if not rows.is_file() or not offsets.is_file():
        return False
    try:
        return np.load(rows, mmap_mode="r").shape[0] == np.load(offsets, mmap_mode="r").shape[0]
    except (OSError, ValueError):
        return False


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
    handle: BinaryIO, name: str, options: StreamOptions
) -> Iterator[tuple[int, list[int], list[str], list[str | None]]]:
    """(shard index, byte offsets, texts, languages) per shard, reading one shard of lines at a time."""
    from polyembed.languages import is_known_language, normalize_language

    offset, index = 0, 0
    known: dict[str, str | None] = {}
    offsets: list[int] = []
    texts: list[str] = []
    languages: list[str | None] = []
    for number, raw in enumerate(handle, start=1):
        start, offset = offset, offset + len(raw)
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
            yield index, offsets, texts, languages
            index, offsets, texts, languages = index + 1, [], [], []
    if texts:
        yield index, offsets, texts, languages


def _encode_shard(model: Any, texts: list[str], languages: list[str | None], options: StreamOptions) -> np.ndarray:
    """Rows for one shard, one encode call per language."""
    from polyembed.api import encode
    from polyembed.models.langid import identify_languages

    routed = getattr(model, "routes_by_language", False)
    if routed and any(code is None for code in languages):
        detected = identify_languages([t for t, code in zip(texts, languages, strict=True) if code is None])
        found = iter(detected)
        languages[:] = [code if code is not None else next(found) for code in languages]
    groups: dict[str | None, list[int]] = {}
    for row, code in enumerate(languages):  # a single multilingual model needs no language: one call
        groups.setdefault(code if routed else None, []).append(row)
    out: np.ndarray | None = None
    for code, rows in groups.items():
        vectors = encode(model, [texts[r] for r in rows], code, batch_size=options.batch_size,
                         normalize=options.normalize)
        if out is None:
            out = np.empty((len(texts), vectors.shape[1]), dtype=DTYPES[options.dtype])
        out[rows] = vectors
    assert out is not None
    return out


def _write_shard(folder: Path, index: int, offsets: list[int], vectors: np.ndarray,
                 languages: list[str | None]) -> None:
    name = shard_name(index)
    folder.mkdir(parents=True, exist_ok=True)  # on the first shard: input that fails at once leaves nothing
    if any(code is not None for code in languages):
        with atomic_write(folder / f"{name}.languages.txt") as handle:
            handle.write("".join(f"{code or ''}\n" for code in languages))
    with atomic_write(folder / f"{name}.offsets.npy", "wb", encoding=None) as handle:
        np.save(handle, np.asarray(offsets, dtype=np.int64))
    with atomic_write(folder / f"{name}.npy", "wb", encoding=None) as handle:  # last: its presence means done
        np.save(handle, vectors)


def _check_manifest(folder: Path, expected: dict[str, Any]) -> None:
    """A resumed run must use the same model, dtype and shard size as the shards already there."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        return
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise DataError(path, None, f"not a polyembed shard manifest ({err})") from None
    for key, value in expected.items():
        if saved.get(key) != value:
            raise PolyembedError(
                f"{path}: the shards there were written with {key}={saved.get(key)!r}, this run has {value!r}; "
                "use another output folder"
            )


def _worker_run(model_name: str, source: str, folder: str, options: StreamOptions, worker: int,
                threads: int) -> tuple[int, int]:
    """One worker process: its own model, every shard i with i % workers == worker."""
    import torch

    from polyembed.models.loading import load_model

    torch.set_num_threads(threads)
    return _run_shards(load_model(model_name), source, Path(folder), options, worker, show_progress=False)[1:]


def _run_shards(model: Any, source: str | Path, folder: Path, options: StreamOptions, worker: int | None,
                show_progress: bool) -> tuple[int, int, int]:
    """(lines read, shards encoded, shards skipped) for this process's share of the shards."""
    from tqdm import tqdm

    handle, name = _open_input(source)
    lines = encoded = skipped = 0
    try:
        progress = tqdm(desc="encode", unit=" lines", disable=not show_progress)
        for index, offsets, texts, languages in _read_shards(handle, name, options):
            lines += len(texts)
            mine = worker is None or index % options.workers == worker
            if mine and _shard_complete(folder, index):
                skipped += 1
            elif mine:
                vectors = _encode_shard(model, texts, languages, options)
                _write_shard(folder, index, offsets, vectors, languages)
                encoded += 1
            progress.update(len(texts))
        progress.close()
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()
    return lines, encoded, skipped


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
    from polyembed.models.loading import load_model

    options = options or StreamOptions()
    if options.language is not None:
        options = StreamOptions(**{**asdict(options), "language": require_known_language(options.language,
                                                                                           "--language")})
    if options.workers > 1 and str(source) == "-":
        raise PolyembedError("--workers > 1 reads the input once per worker: give a file, not stdin")
    if options.workers > 1 and not isinstance(model, str):
        raise PolyembedError("--workers > 1 loads the model in each worker: pass its name or folder")
    folder = check_output_dir(output_dir, "--output")
    model_name = model if isinstance(model, str) else getattr(model, "name", type(model).__name__)
    identity = {"model": str(model_name), "dtype": options.dtype, "shard_size": options.shard_size,
                "normalize": options.normalize}
    _check_manifest(folder, identity)
    if options.workers == 1:
        encoder = load_model(model) if isinstance(model, str) else model
        lines, encoded, skipped = _run_shards(encoder, source, folder, options, None, show_progress)
    else:
        counts = _run_workers(str(model), str(source), folder, options)
        encoded, skipped = sum(c[0] for c in counts), sum(c[1] for c in counts)
        lines = _count_lines(source)
    shards = [shard_name(i) for i in range(_shard_count(lines, options.shard_size))]
    missing = [name for i, name in enumerate(shards) if not _shard_complete(folder, i)]
    if missing:  # pragma: no cover - a worker died without raising
        raise PolyembedError(f"{folder}: shards {', '.join(missing[:5])} were not written")
    dimension = int(np.load(folder / f"{shards[0]}.npy", mmap_mode="r").shape[1]) if shards else 0
    with atomic_write(folder / MANIFEST_FILE) as handle:
        handle.write(json.dumps({**identity, "source": str(source), "lines": lines, "dimension": dimension,
                                 "shards": shards}, indent=2))
    return StreamResult(folder, lines, shards, encoded, skipped)


def _run_workers(model: str, source: str, folder: Path, options: StreamOptions) -> list[tuple[int, int]]:
    """(encoded, skipped) per worker: `options.workers` local processes or Ray tasks, shard i on worker i mod n."""
    if options.backend == "ray":
        import ray

        if not ray.is_initialized():
            ray.init(address=options.ray_address, include_dashboard=False, log_to_driver=False,
                     **({} if options.ray_address else {"num_cpus": os.cpu_count() or 1}))
        cpus = max(1.0, float(ray.cluster_resources().get("CPU", 1)) / options.workers)
        task = ray.remote(num_cpus=min(cpus, 1.0))(_worker_run)
        threads = max(1, int(cpus))
        return ray.get([task.remote(model, source, str(folder), options, worker, threads)
                        for worker in range(options.workers)])
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    threads = max(1, (os.cpu_count() or 1) // options.workers)
    with ProcessPoolExecutor(options.workers, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_worker_run, model, source, str(folder), options, worker, threads)
                   for worker in range(options.workers)]
        return [future.result() for future in futures]


def _shard_count(lines: int, shard_size: int) -> int:
    return (lines + shard_size - 1) // shard_size


def _count_lines(source: str | Path) -> int:
    with Path(source).open("rb") as handle:
        return sum(1 for _ in handle)


def load_shards(folder: str | Path) -> np.ndarray:
    """Every row of a finished shard folder as one memory-mapped-then-stacked float32 matrix (for small corpora
    and tests; large ones are read shard by shard with `iter_shards`)."""
    return np.concatenate([rows.astype(np.float32) for rows in iter_shards(folder)])


def iter_shards(folder: str | Path) -> Iterator[np.ndarray]:
    """The rows of each shard in order, memory-mapped, after checking the manifest."""
    folder = Path(folder)
    path = folder / MANIFEST_FILE
    if not path.is_file():
        raise PolyembedError(f"{folder}: no {MANIFEST_FILE} (not a finished `polyembed encode --shard-size` folder)")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for name in manifest["shards"]:
        yield np.load(folder / f"{name}.npy", mmap_mode="r")
