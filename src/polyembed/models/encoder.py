"""The one interface every evaluation and training step relies on: `encode(sentences, language=...)`."""

from __future__ import annotations

import copy
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import DTypeLike

from polyembed.errors import PolyembedError, argument
from polyembed.languages import require_known_language
from polyembed.messages import hide_progress
from polyembed.models.precision import (  # noqa: F401 - importable from here as before
    HALF_DTYPES,
    PRECISIONS,
    auto_precision,
    bf16_available,
    device_kind,
    resolve_precision,
)

logger = logging.getLogger(__name__)

Language = TypeVar("Language", bound=Hashable)
"""A routing key: a language code, or None where the model picks (or needs no language); any hashable key
routes the same way (a token type id, say)."""


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


EncoderKind = TypeVar("EncoderKind", bound="type[SentenceEncoder]")


class SentenceEncoder(ABC):
    """What every encoder is: a name, a dimension, the languages it routes (None for one multilingual model),
    its maximum length and tokenizer where it has them, and `encode`.

    Why a base class: `encode` validates its arguments and routes rows by language here, once; an encoder
    kind implements `_encode_group` (one call for sentences that share a language) and `dimension`. Callers
    read the attributes directly. An object that only has `encode` (a user's own model) becomes one through
    `as_encoder`.
    """

    name: str = "encoder"
    path: str | None = None
    """The folder it was loaded from (embedding stores fingerprint its weights), None when not from one."""
    tokenizer: Any = None
    """The tokenizer that counts the model's input tokens (None where the model has none of its own)."""

    @classmethod
    def can_load(cls, path: Path) -> bool:
        """Whether a local file or folder holds a model of this kind (its marker file); `load_model` asks every
        registered kind in turn before it tries sentence-transformers."""
        return False

    @classmethod
    def load(cls, path: Path, *, name: str, device: str | None) -> SentenceEncoder:
        """The encoder saved at `path`, for a kind whose `can_load(path)` is true."""
        raise NotImplementedError(f"{cls.__name__} is not loaded from a folder")

    @property
    @abstractmethod
    def dimension(self) -> int | None:
        """Output dimension of the sentence embeddings."""

    @property
    def languages(self) -> list[str] | None:
        """The languages the model has its own route for; None: one model takes every language."""
        return None

    @property
    def routes_by_language(self) -> bool:
        """Whether the same text in two languages may embed differently (caches key on the language then)."""
        return self.languages is not None

    @property
    def max_seq_length(self) -> int | None:
        """Tokens per input beyond which the model truncates (None where unknown)."""
        return None

    @abstractmethod
    def _encode_group(
        self, sentences: list[str], language: str | None, batch_size: int, show_progress_bar: bool
    ) -> np.ndarray:
        """Rows for non-empty `sentences` that share `language` (a known code, or None for a model that does
        not route)."""

    def _identify(self, sentences: list[str]) -> list[str | None]:
        """Languages for rows given none, on a routed model: langid among the model's own languages."""
        from polyembed.models.langid import identify_among, identify_languages

        if self.languages is None:
            return list(identify_languages(sentences))
        return list(identify_among(sentences, self.languages, self.name))

    def encode(
        self,
        sentences: str | Sequence[str],
        language: str | Sequence[str | None] | None = None,
        *,
        batch_size: int = 64,
        normalize: bool = False,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """float32 rows for `sentences` in order (one vector for a single string).

        `language`: one ISO 639 code for all rows, one per row (None rows identified by langid on a routed
        model), or None. A model that does not route encodes everything in one call and ignores the codes,
        after checking them (a typo must fail here, not later on a routed model). `normalize` L2-normalises.
        """
        from polyembed.models.clipping import clip_texts

        single = isinstance(sentences, str)
        texts = clip_texts([sentences] if isinstance(sentences, str) else list(sentences), self.tokenizer,
                           self.max_seq_length)
        if batch_size < 1:
            raise PolyembedError(f"batch size {batch_size}: expected 1 or more")
        routes = self._routes(texts, language)
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        if len(set(routes)) == 1:
            vectors = np.asarray(self._encode_group(texts, routes[0], batch_size, show_progress_bar), np.float32)
            vectors = normalize_rows(vectors) if normalize else vectors
        else:
            vectors = encode_by_language(lambda group, code: self._encode_group(group, code, batch_size, False),
                                         texts, routes, normalize=normalize)
        return vectors[0] if single else vectors

    def _routes(self, texts: list[str], language: str | Sequence[str | None] | None) -> list[str | None]:
        """One checked route per row: None everywhere for a model that does not route."""
        if language is None or isinstance(language, str):
            codes: list[str | None] = [require_known_language(language) if language else None] * len(texts)
        else:
            codes = [require_known_language(code) if code else None for code in language]
            if len(codes) != len(texts):
                raise PolyembedError(f"{len(texts)} sentences but {len(codes)} languages: give one per sentence, "
                                     "or one code for all")
        if not self.routes_by_language:
            return [None] * len(texts)
        unknown = [row for row, code in enumerate(codes) if code is None]
        if unknown and texts:
            for row, code in zip(unknown, self._identify([texts[row] for row in unknown]), strict=True):
                codes[row] = code
        return codes

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, path={self.path!r})"


ENCODER_KINDS: list[type[SentenceEncoder]] = []
"""The encoder kinds `load_model` asks in turn, in registration order; a sentence-transformers folder or Hub id
is the fallback."""


def register_encoder_kind(kind: EncoderKind) -> EncoderKind:
    """Class decorator: make `load_model` ask this kind whether it can load a path (`can_load`), or, for a
    SentenceTransformerEncoder subclass, whether a loaded model is its kind (`can_wrap`)."""
    if kind not in ENCODER_KINDS:
        ENCODER_KINDS.append(kind)
    return kind


class WrappedEncoder(SentenceEncoder):
    """An encoder around another (precision, embedding store): the inner encoder's attributes are its own."""

    def __init__(self, encoder: SentenceEncoder) -> None:
        self.encoder = encoder
        self.path = encoder.path
        self.tokenizer = encoder.tokenizer

    @property
    def dimension(self) -> int | None:
        return self.encoder.dimension

    @property
    def languages(self) -> list[str] | None:
        return self.encoder.languages

    @property
    def routes_by_language(self) -> bool:
        return self.encoder.routes_by_language

    @property
    def max_seq_length(self) -> int | None:
        return self.encoder.max_seq_length

    def _identify(self, sentences: list[str]) -> list[str | None]:
        return self.encoder._identify(sentences)


class ForeignEncoder(SentenceEncoder):
    """A user's object with `encode(sentences, language=None, *, batch_size, show_progress_bar)` (and, where it
    has them, `name`, `dimension`, `routes_by_language`, `languages`) as a SentenceEncoder. A routed one
    receives None for rows given no language and identifies them itself."""

    def __init__(self, inner: Any) -> None:
        if not callable(getattr(inner, "encode", None)):
            raise PolyembedError(f"{type(inner).__name__}: not an encoder (it has no encode method); give a model "
                                 "name, a folder, or an object with encode(sentences, language=None)")
        self.inner = inner
        self.name = str(getattr(inner, "name", type(inner).__name__))
        self.path = getattr(inner, "path", None)
        self.tokenizer = getattr(inner, "tokenizer", None) or getattr(getattr(inner, "model", None), "tokenizer", None)

    @property
    def dimension(self) -> int | None:
        value = getattr(self.inner, "dimension", None)
        return int(value) if value else None

    @property
    def languages(self) -> list[str] | None:
        value = getattr(self.inner, "languages", None)
        return list(value) if value is not None and self.routes_by_language else None

    @property
    def routes_by_language(self) -> bool:
        return bool(getattr(self.inner, "routes_by_language", False))

    def _identify(self, sentences: list[str]) -> list[str | None]:
        return [None] * len(sentences)

    def _encode_group(
        self, sentences: list[str], language: str | None, batch_size: int, show_progress_bar: bool
    ) -> np.ndarray:
        routed = {"language": language} if language is not None else {}  # a model without the argument works
        return np.asarray(self.inner.encode(sentences, batch_size=batch_size, show_progress_bar=show_progress_bar,
                                            **routed), dtype=np.float32)

    def __getattr__(self, attribute: str) -> Any:  # the object's own extras (calls, prompt, ...)
        return getattr(self.__dict__["inner"], attribute)


class SentenceTransformerEncoder(SentenceEncoder):
    """A sentence-transformers model behind the SentenceEncoder interface.

    The model's own metadata (`prompts` + `default_prompt_name` in config_sentence_transformers.json)
    supplies input prefixes such as e5's "query: ", so every caller encodes the way the model expects.
    """

    prompt_name: str | None = None
    """The model's prompt to prepend (`with_prompt`); None: its default prompt."""
    pool: Any = None
    """A `polyembed.models.pool.DevicePool` when the model encodes on several devices (one process each; the
    model in this process then stays on the CPU), else None. Copies (`with_prompt`) share it."""

    def __init__(self, model: Any, name: str, path: str | Path | None = None) -> None:
        self.model = model
        self.name = name
        self.path = str(path) if path is not None else None
        self.tokenizer = getattr(model, "tokenizer", None)

    @classmethod
    def can_wrap(cls, model: Any) -> bool:
        """Whether a loaded sentence-transformers model is of this kind: `load_model` asks the registered
        subclasses (kinds told apart by their config, such as language embeddings) before the plain one."""
        return False

    @property
    def dimension(self) -> int:
        """Output dimension of the sentence embeddings."""
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def max_seq_length(self) -> int | None:
        return getattr(self.model, "max_seq_length", None)

    @property
    def device_kind(self) -> str:
        """'cuda', 'mps' or the CPU's name: where the model computes (its pool's devices when it has one)."""
        return self.pool.kind if self.pool is not None else str(self.model.device.type)

    @property
    def prompt(self) -> str:
        """The prefix the model prepends (its default prompt, or the one `with_prompt` chose; '' when none)."""
        name = self.prompt_name or getattr(self.model, "default_prompt_name", None)
        return self.model.prompts.get(name, "") if name else ""

    def _encode_group(
        self, sentences: list[str], language: str | None, batch_size: int, show_progress_bar: bool
    ) -> np.ndarray:
        """Rows as float32 (not normalised: `encode(normalize=True)` does that)."""
        chosen: dict[str, Any] = {"prompt_name": self.prompt_name} if self.prompt_name else {}
        if self.pool is not None:
            chosen["pool"] = self.pool.processes(self.model)
        vectors = self.model.encode(sentences, batch_size=batch_size,
                                    show_progress_bar=not hide_progress(show_progress_bar), convert_to_numpy=True,
                                    **chosen)
        return np.asarray(vectors, dtype=np.float32)

    def save(self, path: str | Path) -> None:
        """Save as a standard sentence-transformers folder."""
        self.model.save(str(path))

    def close(self) -> None:
        """Stop the encoding processes of several devices, if any (they stop at exit too)."""
        if self.pool is not None:
            self.pool.close()


def with_prompt(encoder: SentenceEncoder, prompt_name: str | None, option: str | None = None) -> SentenceEncoder:
    """`encoder` prepending the model's prompt `prompt_name` (e5's 'query' or 'passage', as sentence-transformers'
    `prompt_name`) instead of its default one. A copy: the loaded model keeps its default. Its name says which
    prompt, so an embedding store never serves one prompt's vectors for the other's."""
    if prompt_name is None:
        return encoder
    flag = option or argument("--prompt-name", "prompt_name")
    model = getattr(encoder, "model", None)
    prompts = dict(getattr(model, "prompts", None) or {}) if isinstance(encoder, SentenceTransformerEncoder) else {}
    if not isinstance(encoder, SentenceTransformerEncoder):
        default = getattr(getattr(encoder, "settings", None), "prompt", None)
        raise PolyembedError(f"{flag} {prompt_name}: {encoder.name} is not a sentence-transformers model, so its "
                             "prompt cannot be chosen" + (" (an ONNX export carries its default prompt only: "
                                                          "use the model folder)" if default is not None else ""))
    if prompt_name not in prompts:
        known = f"its prompts are {', '.join(sorted(prompts))}" if prompts else "it has no prompts"
        raise PolyembedError(f"{flag} {prompt_name}: not a prompt of {encoder.name} ({known})")
    if prompt_name == getattr(model, "default_prompt_name", None):
        return encoder
    chosen = copy.copy(encoder)
    chosen.prompt_name = prompt_name
    chosen.name = f"{encoder.name} (prompt {prompt_name})"
    return chosen


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


def runs_on_torch(encoder: Any) -> bool:
    """A sentence-transformers model, or a wrapper / bundle of them (an ONNX export is not)."""
    seen = encoder
    while True:
        if isinstance(seen, SentenceTransformerEncoder) or hasattr(seen, "language_encoder"):
            return True
        inner = getattr(seen, "encoder", None)
        if inner is None or inner is seen:
            return False
        seen = inner


def encoder_device_kind(encoder: Any) -> str:
    """The kind of device `encoder` computes on ('cuda', 'mps', the CPU's name), through wrappers: what its
    autocast and its 'auto' precision go by. A model encoding through a pool of processes computes on the
    pool's devices; one that says nothing, on the device models load on."""
    seen = encoder
    while True:
        if isinstance(seen, SentenceTransformerEncoder):
            return seen.device_kind
        if hasattr(seen, "language_encoder") and isinstance(getattr(seen, "device", None), str):  # a bundle
            return device_kind(seen.device)
        inner = getattr(seen, "encoder", None)
        if inner is None or inner is seen:
            return device_kind(None)
        seen = inner


class AutocastEncoder(WrappedEncoder):
    """Any torch-based encoder run under autocast at a half precision: matrix products in bf16 or fp16, sums and
    norms in float32.

    Why: on GPUs, and on CPUs with native bf16, it encodes much faster, and evaluation is nearly all encoding.
    Scores move slightly (docs/benchmarks.md, "Inference precision", measures by how much for bf16), so this is
    opt-in (`precision="bf16"`, "fp16" or "auto"), and its name (so its embedding-store fingerprint) differs from
    the float32 model's: stored float32 vectors are never served as half-precision ones, nor the other way round.
    A model encoding through a pool of processes (`polyembed.models.pool`) runs its processes under the same
    autocast.
    """

    precision = "bf16"
    """'bf16' or 'fp16' (a subclass each, so `isinstance` tells which)."""

    def __init__(self, encoder: SentenceEncoder) -> None:
        if not runs_on_torch(encoder):
            raise PolyembedError(f"{encoder.name}: {self.precision} needs a torch model "
                                 "(an ONNX export runs in the precision it was exported in)")
        super().__init__(encoder)
        self.name = f"{encoder.name} ({self.precision})"

    def __getattr__(self, attribute: str) -> Any:  # prompt, with_mode, model ... are the encoder's own
        return getattr(self.__dict__["encoder"], attribute)

    def _encode_group(
        self, sentences: list[str], language: str | None, batch_size: int, show_progress_bar: bool
    ) -> np.ndarray:
        import torch

        with torch.autocast(encoder_device_kind(self.encoder), dtype=getattr(torch, HALF_DTYPES[self.precision])):
            vectors = self.encoder.encode(sentences, language, batch_size=batch_size,
                                          show_progress_bar=show_progress_bar)
        return np.asarray(vectors, dtype=np.float32)


class Bf16Encoder(AutocastEncoder):
    """An encoder under bf16 autocast (`AutocastEncoder`)."""

    precision = "bf16"


class Fp16Encoder(AutocastEncoder):
    """An encoder under fp16 autocast (`AutocastEncoder`): the half precision of GPUs without bf16 and of MPS."""

    precision = "fp16"


def with_precision(encoder: SentenceEncoder, precision: str, option: str | None = None) -> SentenceEncoder:
    """`encoder` as is for float32, under bf16 or fp16 autocast otherwise. 'auto' is resolved for the device the
    encoder computes on, and leaves an encoder that does not run on torch (an ONNX export, a user's own) as it
    is: it has a precision of its own."""
    if precision == "auto" and not runs_on_torch(encoder):
        return encoder
    resolved = resolve_precision(precision, option, encoder_device_kind(encoder) if runs_on_torch(encoder) else None)
    wrapper = {"bf16": Bf16Encoder, "fp16": Fp16Encoder}.get(resolved)
    return wrapper(encoder) if wrapper is not None else encoder
