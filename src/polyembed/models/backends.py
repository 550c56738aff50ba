"""Which runtime encodes: torch (the model as trained), or onnxruntime or OpenVINO on an fp32 or int8 ONNX
export.

Why: serving and bulk encoding on CPUs are faster on the int8 export at nearly the same scores
(docs/benchmarks.md, export), but users should not have to run `polyembed export` and juggle two folders. A
torch model asked for with an ONNX backend is exported once into the cache (keyed by the model's fingerprint:
name and weight files, and the export's recipe version) and reused by every later call; a cached export that
fails its checksums is made again.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polyembed.errors import PolyembedError, argument
from polyembed.models.cache import cache_dir
from polyembed.models.encoder import SentenceEncoder

if TYPE_CHECKING:
    from polyembed.models.onnx_export import OnnxEncoder

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "torch", "onnx", "onnx-int8", "openvino", "openvino-int8")
"""'auto': an ONNX export runs its own default graph (int8 where it has one), any other model runs on torch.
onnx*: onnxruntime; openvino*: OpenVINO on the same graphs."""
EXPORTS_FOLDER = "onnx-exports"


def load_with_backend(model: str, backend: str = "auto", option: str = "--backend") -> SentenceEncoder:
    """`model` (name, folder or export) on `backend` (one of BACKENDS)."""
    from polyembed.models.loading import load_model
    from polyembed.models.onnx_export import ExportIntegrityError, export_folder, is_onnx_export, load_onnx

    if backend not in BACKENDS:
        raise PolyembedError(f"{argument(option, 'backend')} '{backend}': expected one of {', '.join(BACKENDS)}")
    local = Path(model).expanduser()
    if is_onnx_export(local):
        if backend == "torch":
            raise PolyembedError(f"{argument(option, 'backend')} torch: {model} is an ONNX export; give the model "
                                 "it was made from")
        if backend == "auto":
            return load_onnx(local, name=model)
        return _graph_of(export_folder(local), backend, model, option)
    encoder = load_model(model)
    if backend in ("auto", "torch"):
        return encoder
    folder = _cached_export(encoder, model)
    try:
        graph = _graph_of(folder, backend, model, option)
    except ExportIntegrityError as err:  # the cache's own copy, damaged or cut short: made again, once
        logger.warning("%s; the cache's export of %s is made again", err, model)
        shutil.rmtree(folder, ignore_errors=True)
        graph = _graph_of(_cached_export(encoder, model), backend, model, option)
    logger.debug("serving %s on %s (%s)", model, graph.runtime, graph.graph_file)  # the server logs its own line
    return graph


def _graph_of(folder: Path, backend: str, name: str, option: str) -> OnnxEncoder:
    """The export's fp32 or int8 graph, named as the user named the model; OpenVINO reads the export's IR of
    that graph where it has one (`polyembed export --openvino`), else the ONNX graph itself. For int8 on OpenVINO
    the statically quantised IR comes first (`export --openvino --static-int8`): OpenVINO runs it on its int8
    kernels, while the dynamic graph runs there in float (the scale-out benchmarks measure both)."""
    from polyembed.models.export_files import OPENVINO_STATIC_INT8_FILE
    from polyembed.models.onnx_export import (
        FP32_FILE,
        INT8_FILE,
        OPENVINO_FP32_FILE,
        OPENVINO_INT8_FILE,
        load_onnx,
        present_graph,
    )

    int8, openvino = backend.endswith("-int8"), backend.startswith("openvino")
    graph = present_graph(folder, INT8_FILE if int8 else FP32_FILE)
    if not (folder / graph).is_file():
        raise PolyembedError(f"{argument(option, 'backend')} {backend}: the export {folder} has no {graph} "
                             "(export again with quantisation)")
    if openvino and int8 and (folder / OPENVINO_STATIC_INT8_FILE).is_file():
        return load_onnx(folder / OPENVINO_STATIC_INT8_FILE, name=name)
    ir = folder / (OPENVINO_INT8_FILE if int8 else OPENVINO_FP32_FILE)
    if openvino and ir.is_file():
        return load_onnx(ir, name=name)
    return load_onnx(folder / graph, name=name, runtime="openvino" if openvino else "onnxruntime")


def _cached_export(encoder: Any, model: str) -> Path:
    """The cache's ONNX export of `encoder` (fp32 and int8), made on first use; an export cut off while it was
    published (no manifest yet) is made again."""
    from polyembed.models.onnx_export import export_onnx
    from polyembed.outputs import MANIFEST_FILE

    folder = cache_dir() / EXPORTS_FOLDER / _source_key(encoder)
    if (folder / MANIFEST_FILE).is_file():  # written last, once every file is in place
        return folder
    logger.info("exporting %s to ONNX once (fp32 and int8) into %s", model, folder)
    try:
        export_onnx(encoder, folder, quantize=True, overwrite=True)
    except PolyembedError:
        if not (folder / MANIFEST_FILE).is_file():  # another process may have finished the same export first
            raise
    return folder


def _source_key(encoder: Any) -> str:
    """The model's fingerprint (name, weight files), the export's recipe and the bytes of its other files
    (configs, tokenizer, prompts), which change what the export embeds without touching the weights."""
    from polyembed.integrity import new_hash
    from polyembed.models.embedding_cache import encoder_fingerprint
    from polyembed.models.onnx_export import EXPORT_RECIPE

    hasher = new_hash()
    hasher.update(encoder_fingerprint(encoder).encode() + f"\0recipe {EXPORT_RECIPE}".encode())
    folder = Path(encoder.path) if encoder.path else None
    if folder is not None and folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix in (".json", ".txt", ".model"):
                hasher.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return hasher.hexdigest()[:16]
