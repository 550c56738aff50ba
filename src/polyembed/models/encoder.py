"""The one interface every evaluation and training step relies on: `encode(sentences, language=...)`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import DTypeLike

from polyembed.errors import PolyembedError

logger = logging.getLogger(__name__)

Language = TypeVar("Language", bound=str | None)
"""A routing key: a language code, or None where the model picks (or needs no language)."""

PRECISIONS = ("fp32", "bf16", "auto")
"""Inference precision: full float32, bf16 autocast, or 'auto' (bf16 where the CPU or GPU computes it natively)."""


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalised float32 copy, so inner product equals cosine (zero rows stay zero)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.ascontiguousarray(matrix / np.maximum(norms, 1e-12))


def encode_by_language(
    encode_group: Callable[[list[str], Language], np.ndarray],
    sentences: Sequence[str],
    languages: Sequence[Language],
    *,
    normalize: bool = False,
    dtype: DTypeLike = np.float32,
) -> np.ndarray:
    """Rows for mixed-language input, in input order, from one `encode_group(group, language)` call per
    distinct language (groups in order of first appearance).

    Why: a language-routed model must see each sentence with its own language, and one call per language
    rather than per sentence keeps its batches full. With `normalize`, each group's rows are L2-normalised
    (`normalize_rows`). Rows are stored as `dtype`; empty input gives a (0, 0) array (no group to tell the
    dimension) without calling `encode_group`.
    """
    if len(sentences) != len(languages):
        raise ValueError(f"{len(sentences)} sentences but {len(languages)} languages: give one per sentence")
    groups: dict[Language, list[int]] = {}
    for row, language in enumerate(languages):
        groups.setdefault(language, []).append(row)
    out: np.ndarray | None = None
    for language, rows in groups.items():
        logger.debug("encoding %d of %d sentences as language %s", len(rows), len(sentences), language)
        vectors = encode_group([sentences[row] for row in rows], language)
        if normalize:
            vectors = normalize_rows(vectors)
        if out is None:
            out = np.zeros((len(sentences), vectors.shape[1]), dtype=dtype)
        out[rows] = vectors
    return out if out is not None else np.zeros((0, 0), dtype=dtype)


@runtime_checkable
class SentenceEncoder(Protocol):
    """Anything that maps sentences (optionally with their language) to vectors.

    Language-routed models use `language`; single multilingual models ignore it.
    `routes_by_language` tells caches whether the same text in two languages may embed differently.
    """

    name: str
    routes_by_language: bool

    def encode(
        self,
        sentences: Sequence[str],
        language: str | None = None,
        *,
        batch_size: int = 64,
        show_progress_bar: bool = False,
    ) -> np.ndarray: ...


class SentenceTransformerEncoder:
    """A sentence-transformers model behind the SentenceEncoder interface.

    The model's own metadata (`prompts` + `default_prompt_name` in config_sentence_transformers.json)
    supplies input prefixes such as e5's "query: ", so every caller encodes the way the model expects.
    """

    routes_by_language = False

    def __init__(self, model: object, name: str, path: str | Path | None = None) -> None:
        self.model = model
        self.name = name
        self.path = str(path) if path is not None else None

    @property
    def dimension(self) -> int:
        """Output dimension of the sentence embeddings."""
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def prompt(self) -> str:
        """The prefix the model prepends by default ('' when none)."""
        name = getattr(self.model, "default_prompt_name", None)
        return self.model.prompts.get(name, "") if name else ""

    def encode(
        self,
        sentences: Sequence[str],
        language: str | None = None,
        *,
        batch_size: int = 64,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """Embed sentences as float32 rows (not normalised: callers normalise where cosine is wanted)."""
        if len(sentences) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            list(sentences),
            batch_size=batch_size,
            show_progress_bar=show_progress_bar,
            convert_to_numpy=True,
        )
        return np.asarray(vectors, dtype=np.float32)

    def save(self, path: str | Path) -> None:
        """Save as a standard sentence-transformers folder."""
        self.model.save(str(path))

    def __repr__(self) -> str:
        return f"SentenceTransformerEncoder(name={self.name!r}, path={self.path!r})"


def token_level_model(encoder: Any, language: str | None = None) -> Any:
    """The sentence-transformers model behind an encoder, for tasks that need token embeddings (word
    alignment): through embedding stores and wrappers, a bundle's encoder for `language` (with its adapters as
    the bundle's mode sets them). Encoders without one (an ONNX export) raise a PolyembedError."""
    from polyembed.errors import PolyembedError

    seen = encoder
    while True:
        if hasattr(seen, "language_encoder"):
            return seen.language_encoder(language)
        if isinstance(seen, SentenceTransformerEncoder):
            return seen.model
        if hasattr(seen, "encoder") and seen.encoder is not seen:
            seen = seen.encoder
            continue
        raise PolyembedError(f"{getattr(encoder, 'name', type(encoder).__name__)}: no token embeddings to align "
                             "words with (an ONNX export has sentence vectors only; use the model folder)")


def bf16_available() -> bool:
    """Whether bf16 autocast is fast here: a GPU with bf16, or a CPU with AVX512-BF16 or AMX (elsewhere the CPU
    emulates bf16 and it is slower than float32)."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="ignore")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_precision(precision: str, option: str = "--precision") -> str:
    """'fp32' or 'bf16' for a requested precision ('auto': bf16 only where it is native)."""
    if precision not in PRECISIONS:
        raise PolyembedError(f"{option} {precision}: choose one of {', '.join(PRECISIONS)}")
    if precision == "auto":
        return "bf16" if bf16_available() else "fp32"
    return precision


def _runs_on_torch(encoder: Any) -> bool:
    """A sentence-transformers model, or a wrapper / bundle of them (an ONNX export is not)."""
    seen = encoder
    while True:
        if isinstance(seen, SentenceTransformerEncoder) or hasattr(seen, "language_encoder"):
            return True
        inner = getattr(seen, "encoder", None)
        if inner is None or inner is seen:
            return False
        seen = inner


class Bf16Encoder:
    """Any torch-based encoder run under bf16 autocast: matrix products in bf16, sums and norms in float32.

    Why: on CPUs with native bf16 it encodes much faster, and evaluation is nearly all encoding. Scores
    move slightly (docs/benchmarks.md, "Inference precision", measures by how much), so this is opt-in
    (`precision="bf16"` or "auto"), and its name (so its embedding-store fingerprint) differs from the float32
    model's: stored float32 vectors are never served as bf16 ones, nor the other way round.
    """

    def __init__(self, encoder: Any) -> None:
        if not _runs_on_torch(encoder):
            raise PolyembedError(f"{getattr(encoder, 'name', type(encoder).__name__)}: bf16 needs a torch model "
                                 "(an ONNX export runs in the precision it was exported in)")
        self.encoder = encoder
        self.name = f"{encoder.name} (bf16)"
        self.routes_by_language = encoder.routes_by_language
        self.path = getattr(encoder, "path", None)

    def __getattr__(self, attribute: str) -> Any:  # dimension, prompt, with_mode ... are the encoder's own
        return getattr(self.__dict__["encoder"], attribute)

    def _device_type(self) -> str:
        device = getattr(getattr(self.encoder, "model", None), "device", None)
        return getattr(device, "type", "cpu") if device is not None else "cpu"

    def encode(self, sentences: Sequence[str], language: str | None = None, **kwargs: Any) -> np.ndarray:
        import torch

        with torch.autocast(self._device_type(), dtype=torch.bfloat16):
            vectors = self.encoder.encode(sentences, language, **kwargs)
        return np.asarray(vectors, dtype=np.float32)


def with_precision(encoder: Any, precision: str, option: str = "--precision") -> Any:
    """`encoder` as is for float32, wrapped in `Bf16Encoder` for bf16 ('auto' resolved here)."""
    return Bf16Encoder(encoder) if resolve_precision(precision, option) == "bf16" else encoder
