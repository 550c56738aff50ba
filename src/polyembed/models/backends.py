"""Which runtime encodes: torch (the model as trained) or onnxruntime on an fp32 or int8 ONNX export.

Why: serving and bulk encoding on CPUs are faster on the int8 export at nearly the same scores
(docs/benchmarks.md, export), but users should not have to run `polyembed export` and juggle two folders. A
torch model asked for with an ONNX backend is exported once into the cache (keyed by the model's fingerprint:
name and weight files) and reused by every later call.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from polyembed.errors import PolyembedError, argument
from polyembed.models.cache import cache_dir
from polyembed.models.encoder import SentenceEncoder

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "torch", "onnx", "onnx-int8")
"""'auto': an ONNX export runs its own default graph (int8 where it has one), any other model runs on torch."""
EXPORTS_FOLDER = "onnx-exports"


def load_with_backend(model: str, backend: str = "auto", option: str = "--backend") -> SentenceEncoder:
    """`model` (name, folder or export) on `backend` (one of BACKENDS)."""
    from polyembed.models.loading import load_model
    from polyembed.models.onnx_export import FP32_FILE, INT8_FILE, is_onnx_export, load_onnx

    if backend not in BACKENDS:
        raise PolyembedError(f"{argument(option, 'backend')} '{backend}': expected one of {', '.join(BACKENDS)}")
    if is_onnx_export(model):
        if backend == "torch":
            raise PolyembedError(f"{argument(option, 'backend')} torch: {model} is an ONNX export; give the model "
                                 "it was made from")
        folder = Path(model).parent if Path(model).suffix == ".onnx" else Path(model)
        return _export_graph(folder, backend) if backend != "auto" else load_onnx(model)
    encoder = load_model(model)
    if backend in ("auto", "torch"):
        return encoder
    folder = _cached_export(encoder, model)
    graph = _export_graph(folder, backend)
    logger.info("serving %s on onnxruntime (%s, %s)", model, backend, INT8_FILE if backend == "onnx-int8"
                else FP32_FILE)
    return graph


def _export_graph(folder: Path, backend: str) -> SentenceEncoder:
    from polyembed.models.onnx_export import FP32_FILE, INT8_FILE, load_onnx

    name = INT8_FILE if backend == "onnx-int8" else FP32_FILE
    if not (folder / name).is_file():
        raise PolyembedError(f"{argument('--backend', 'backend')} {backend}: the export {folder} has no {name} "
                             "(export again with quantisation)")
    return load_onnx(folder / name)


def _cached_export(encoder: Any, model: str) -> Path:
    """The cache's ONNX export of `encoder` (fp32 and int8), made on first use."""
    from polyembed.models.embedding_cache import encoder_fingerprint
    from polyembed.models.onnx_export import export_onnx, is_onnx_export

    folder = cache_dir() / EXPORTS_FOLDER / encoder_fingerprint(encoder)
    if is_onnx_export(folder):
        return folder
    logger.info("exporting %s to ONNX once (fp32 and int8) into %s", model, folder)
    try:
        export_onnx(encoder, folder, quantize=True)
    except PolyembedError:
        if not is_onnx_export(folder):  # another process may have finished the same export first
            raise
    return folder
