"""The modular encoder bundle (Huang et al. 2024): one sentence encoder per language, aligned to an English pivot.

Why a bundle: the modular method trains a specialised encoder per language (its own tokenizer and weights) and,
for every non-pivot language, a cross-lingual alignment (CLA) parallel adapter that maps it into the pivot's
space. A user wants one model: `encode(sentences, language=...)` routes to the language's encoder; `mode="mono"`
runs it without its adapter (the specialised monolingual space, bit-identical to the encoder before CLA),
`mode="cross"` with it (comparable across languages). Without a language, the language identifier routes each
sentence among the bundle's languages.

Folder layout (saved by `save_modular_bundle`, loaded by `polyembed.load_model(folder)`):

    bundle/
      polyembed_modular.json   {"pivot": "en", "languages": ["de", "en", "kk"], "default_mode": "cross",
                                "unknown_language": "error"}
      en/                      a sentence-transformers folder (the pivot: no adapter, unless all-pairs CLA gave it one)
      de/                      a sentence-transformers folder + parallel_adapter.{json,safetensors} (CLA)

The same folder is also a sentence-transformers model: `write_bundle` adds a `Router` over the language folders
(`modules.json`, `router_config.json` and `config_sentence_transformers.json` at the root, no weights copied), with
the language as the route and the bundle's default mode built in, and `polyembed_parallel_adapter.py`, the
self-contained module that loads a language's CLA adapter:

    SentenceTransformer("bundle", trust_remote_code=True).encode(["Сәлем"], task="kk")

What the Router cannot express stays with polyembed's loader: switching mono/cross per call (a plain user loads
`bundle/<language>/`, which is the encoder without its adapter, for mono), routing rows without a language by
the language identifier, and per-row languages in one call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from polyembed.errors import PolyembedError
from polyembed.languages import normalize_language
from polyembed.models.encoder import SentenceEncoder, register_encoder_kind

BUNDLE_FILE = "polyembed_modular.json"
ROUTER_TYPE = "sentence_transformers.base.modules.router.Router"
ADAPTER_MODULE_FILE = "polyembed_parallel_adapter.py"
ADAPTER_MODULE_TYPE = "polyembed_parallel_adapter.ParallelAdapterTransformer"
SHARED_SETTINGS = ("prompts", "default_prompt_name", "similarity_fn_name")
Mode = Literal["mono", "cross"]
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BundleConfig:
    """What the bundle file records."""

    pivot: str
    languages: list[str]
    default_mode: Mode = "cross"
    unknown_language: Literal["error", "pivot"] = "error"


def is_modular_bundle(path: str | Path) -> bool:
    return (Path(path) / BUNDLE_FILE).is_file()


@register_encoder_kind
class ModularEncoder(SentenceEncoder):
    """A SentenceEncoder over per-language encoders; see the module docstring."""

    @classmethod
    def can_load(cls, path: Path) -> bool:
        return is_modular_bundle(path)

    @classmethod
    def load(cls, path: Path, *, name: str, device: str | None) -> ModularEncoder:
        return cls(path, name=name, device=device)

    def __init__(self, folder: str | Path, name: str | None = None, device: str | None = None) -> None:
        from polyembed.device import resolve_device

        folder = Path(folder)
        path = folder / BUNDLE_FILE
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            self.config = BundleConfig(**raw)
        except (OSError, ValueError, TypeError) as err:
            raise PolyembedError(f"{path}: not a modular bundle file ({err})") from None
        if self.config.pivot not in self.config.languages:
            raise PolyembedError(f"{path}: the pivot '{self.config.pivot}' is not among its languages")
        if self.config.default_mode not in ("mono", "cross") or self.config.unknown_language not in ("error", "pivot"):
            raise PolyembedError(f"{path}: default_mode must be mono or cross, unknown_language error or pivot")
        for language in self.config.languages:
            if not (folder / language).is_dir():
                raise PolyembedError(f"{folder}: language '{language}' is listed but its folder {language}/ is missing")
        self.folder = folder
        self.path = str(folder)
        self.name = name or str(folder)
        self.device = resolve_device(device)
        self._encoders: dict[str, Any] = {}

    @property
    def languages(self) -> list[str]:
        return list(self.config.languages)

    @property
    def dimension(self) -> int:
        return int(self._encoder(self.config.pivot).get_embedding_dimension())

    @property
    def max_seq_length(self) -> int | None:
        """The pivot's (each language's encoder keeps its own; `language_encoder(code)` has it)."""
        return self._encoder(self.config.pivot).max_seq_length

    def _encoder(self, language: str) -> Any:
        """The language's SentenceTransformer, loaded on first use, with its CLA adapter when it has one."""
        if language not in self._encoders:
            from sentence_transformers import SentenceTransformer

            from polyembed.models.parallel_adapter import CONFIG_FILE, load_parallel_adapters

            folder = self.folder / language
            model = SentenceTransformer(str(folder), device=self.device, local_files_only=True)
            if (folder / CONFIG_FILE).is_file():  # the pivot has one only after all-pairs alignment with it
                load_parallel_adapters(model, folder)
            model.eval()
            self._encoders[language] = model
        return self._encoders[language]

    def language_encoder(self, language: str | None) -> Any:
        """The SentenceTransformer that encodes `language` (routing rules as for `encode`), its adapters set
        for the bundle's default mode: token-level tasks such as word alignment use it."""
        from polyembed.models.parallel_adapter import parallel_adapter_blocks, set_parallel_adapters_active

        model = self._encoder(self._route(language))
        if parallel_adapter_blocks(model):
            set_parallel_adapters_active(model, self.config.default_mode == "cross")
        return model

    def _route(self, language: str | None) -> str:
        code = normalize_language(language) if language else None
        if code in self.config.languages:
            return code
        if self.config.unknown_language == "pivot":
            logger.warning("modular bundle %s: no encoder for '%s', using the pivot '%s'", self.name, language,
                           self.config.pivot)
            return self.config.pivot
        raise PolyembedError(
            f"modular bundle {self.name}: no encoder for language '{language}' (it has "
            f"{', '.join(self.config.languages)}; unknown_language: pivot falls back to '{self.config.pivot}')"
        )

    def _encode_group(
        self, sentences: list[str], language: str | None, batch_size: int, show_progress_bar: bool
    ) -> np.ndarray:
        from polyembed.models.parallel_adapter import parallel_adapter_blocks, set_parallel_adapters_active

        model = self._encoder(self._route(language))
        if parallel_adapter_blocks(model):
            set_parallel_adapters_active(model, self.config.default_mode == "cross")
        vectors = model.encode(sentences, batch_size=batch_size, show_progress_bar=show_progress_bar,
                               convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32)

    def encode(self, sentences: str | Sequence[str], language: str | Sequence[str | None] | None = None, *,
               mode: Mode | None = None, **options: Any) -> np.ndarray:
        """`SentenceEncoder.encode`, each row through its language's encoder; `mode` mono / cross (default: the
        bundle's) sets the adapters."""
        if mode is not None and mode != self.config.default_mode:
            if mode not in ("mono", "cross"):
                raise PolyembedError(f"mode '{mode}': choose mono or cross")
            return self.with_mode(mode).encode(sentences, language, **options)
        return super().encode(sentences, language, **options)

    def with_mode(self, mode: Mode) -> ModularEncoder:
        """The same bundle (encoders shared) with another default mode, e.g. for monolingual evaluation."""
        other = object.__new__(ModularEncoder)
        other.__dict__.update(self.__dict__)
        other.config = BundleConfig(**{**asdict(self.config), "default_mode": mode})
        other.name = f"{self.name} [{mode}]"
        return other


def save_modular_bundle(
    folder: str | Path,
    encoders: dict[str, Any],
    pivot: str = "en",
    *,
    default_mode: Mode = "cross",
    unknown_language: Literal["error", "pivot"] = "error",
) -> Path:
    """Write a bundle: each language's SentenceTransformer (with its CLA adapter weights, if it has adapters)
    into `folder/<language>/`, then the bundle file; the folder appears whole or not at all."""
    from polyembed.outputs import atomic_dir

    with atomic_dir(folder) as staging:
        write_bundle(staging, encoders, pivot, default_mode=default_mode, unknown_language=unknown_language,
                     card_name=str(folder))
    return Path(folder)


def write_bundle(
    folder: Path,
    encoders: dict[str, Any],
    pivot: str = "en",
    *,
    default_mode: Mode = "cross",
    unknown_language: Literal["error", "pivot"] = "error",
    card_name: str | None = None,
) -> None:
    """The bundle's files into an existing (staging) folder, a model card (README.md) among them, which calls
    the bundle `card_name` (default: the folder's name); `save_modular_bundle` is the atomic form."""
    from polyembed.models.parallel_adapter import (
        parallel_adapter_blocks,
        parallel_adapters_off,
        save_with_parallel_adapters,
    )

    codes = {}
    for language in encoders:
        code = normalize_language(language)
        if not code:
            raise PolyembedError(f"modular bundle: unknown language code '{language}'")
        codes[language] = code
    if normalize_language(pivot) not in codes.values():
        raise PolyembedError(f"modular bundle: the pivot '{pivot}' has no encoder")
    for language, model in encoders.items():
        target = Path(folder) / codes[language]
        if parallel_adapter_blocks(model):
            with parallel_adapters_off(model):  # the encoder's own weights: adapters are saved apart
                save_with_parallel_adapters(model, target)
        else:
            model.save(str(target))
    config = BundleConfig(str(normalize_language(pivot)), sorted(codes.values()), default_mode, unknown_language)
    router = write_router(Path(folder), config)
    from polyembed.models.cards import CARD_FILE, bundle_card_text
    from polyembed.models.parallel_adapter import CONFIG_FILE

    adapters = {code: (Path(folder) / code / CONFIG_FILE).is_file() for code in config.languages}
    card = bundle_card_text(card_name or Path(folder).name, config.pivot, config.languages, config.default_mode,
                            config.unknown_language, adapters, router)
    (Path(folder) / CARD_FILE).write_text(card, encoding="utf-8")
    (Path(folder) / BUNDLE_FILE).write_text(json.dumps(asdict(config), indent=2), encoding="utf-8")


def write_router(folder: Path, config: BundleConfig) -> bool:
    """The sentence-transformers view of a bundle (module docstring): a Router whose route per language lists that
    language folder's own modules, its Transformer with the adapter in cross mode. Returns False (and logs why)
    when the languages disagree on prompts or similarity, which a Router model holds once for all routes."""
    import shutil

    from polyembed.models import polyembed_parallel_adapter
    from polyembed.models.parallel_adapter import CONFIG_FILE

    types: dict[str, str] = {}
    structure: dict[str, list[str]] = {}
    settings: dict[str, dict[str, Any]] = {}
    for language in config.languages:
        target = folder / language
        with_adapter = config.default_mode == "cross" and (target / CONFIG_FILE).is_file()
        structure[language] = []
        for entry in json.loads((target / "modules.json").read_text(encoding="utf-8")):
            module_id = f"{language}/{entry['path']}".rstrip("/")
            is_encoder = entry["type"].rsplit(".", 1)[-1] == "Transformer"
            types[module_id] = ADAPTER_MODULE_TYPE if with_adapter and is_encoder else entry["type"]
            structure[language].append(module_id)
        settings[language] = json.loads((target / "config_sentence_transformers.json").read_text(encoding="utf-8"))
    shared = {language: {key: values.get(key) for key in SHARED_SETTINGS} for language, values in settings.items()}
    if any(values != shared[config.pivot] for values in shared.values()):
        logger.warning("modular bundle %s: its languages differ in prompts or similarity, so it has no "
                       "sentence-transformers Router (polyembed.load_model loads it)", folder)
        return False
    router = {
        "types": types,
        "structure": structure,
        "parameters": {
            "default_route": config.pivot if config.unknown_language == "pivot" else None,
            "allow_empty_key": False,
            "route_mappings": {},
        },
    }
    (folder / "router_config.json").write_text(json.dumps(router, indent=2), encoding="utf-8")
    (folder / "modules.json").write_text(
        json.dumps([{"idx": 0, "name": "0", "path": "", "type": ROUTER_TYPE}], indent=2), encoding="utf-8"
    )
    (folder / "config_sentence_transformers.json").write_text(json.dumps(settings[config.pivot], indent=2),
                                                               encoding="utf-8")
    if ADAPTER_MODULE_TYPE in types.values():
        shutil.copyfile(polyembed_parallel_adapter.__file__, folder / ADAPTER_MODULE_FILE)
    return True
