"""An ONNX export's files: where the layout keeps each one, and the check that they are the ones `polyembed
export` wrote (its checksum record). Apart from `onnx_export`, which makes and runs exports, because both the
exporter and every reader of an export (the encoder, the serving backends) need it."""

from __future__ import annotations

from pathlib import Path

from polyembed.errors import PolyembedError

CONFIG_FILE = "polyembed_onnx.json"
FP32_FILE = "onnx/model.onnx"
INT8_FILE = "onnx/model_qint8.onnx"
OPENVINO_FP32_FILE = "openvino/openvino_model.xml"
OPENVINO_INT8_FILE = "openvino/openvino_model_qint8.xml"
STATIC_INT8_FILE = "onnx/model_qint8_static.onnx"
"""int8 with calibrated (static) activation ranges, QDQ, for onnxruntime (`export --static-int8`)."""
OPENVINO_STATIC_INT8_FILE = "openvino/openvino_model_qint8_quantized.xml"
"""OpenVINO's static int8 graph (NNCF), under the name sentence-transformers gives it
(`export_static_quantized_openvino_model`'s default suffix `qint8_quantized`)."""
GRAPH_FOLDERS = ("onnx", "openvino")
LEGACY_FILES = {FP32_FILE: "model.onnx", INT8_FILE: "model.int8.onnx"}
"""Where exports before 2026-11-26 kept the two graphs (the export folder's top level)."""


def present_graph(folder: Path, graph: str) -> str:
    """`graph` (a path in the export folder), or where an export before 2026-11-26 kept it."""
    legacy = LEGACY_FILES.get(graph)
    if not (folder / graph).is_file() and legacy and (folder / legacy).is_file():
        return legacy
    return graph


def _is_graph_file(name: str) -> bool:
    """A graph of the export (ONNX, or IR with its weights), wherever the layout keeps it."""
    parts = name.split("/")
    return (len(parts) == 1 and name.endswith(".onnx")) or (
        len(parts) == 2 and parts[0] in GRAPH_FOLDERS and Path(name).suffix in (".onnx", ".xml", ".bin"))


class ExportIntegrityError(PolyembedError):
    """An export's files cannot be shown to be the ones `polyembed export` wrote: no checksum record, or a file
    that differs from it."""


TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json", "vocab.txt", "vocab.json", "merges.txt", "sentencepiece.bpe.model",
                   "spiece.model", "tokenizer.model")
"""Files the tokenizer loader reads when they are there: one the record does not list (planted beside the
export's own) would change the tokens, so it is refused like a changed one."""


def verify_export(folder: Path, graph: str) -> None:
    """Check the files this encoder reads against the checksums `export_onnx` recorded in the folder's manifest.

    Why here and not only `polyembed.outputs.verify_published`: that one passes a folder without checksums
    (nothing to compare with), and a copy made with `cp -r export/* copy/` drops the hidden manifest, so a
    damaged graph would load and give wrong vectors. An export without its record is refused; so are the
    graph loaded and the settings when the record does not list them, and tokenizer files it does not list."""
    from polyembed.integrity import mismatched_files, read_record
    from polyembed.outputs import MANIFEST_FILE

    manifest = read_record(folder / MANIFEST_FILE) or {}
    checksums = manifest.get("checksums")
    if not isinstance(checksums, dict) or not all(isinstance(v, str) for v in checksums.values()):
        raise ExportIntegrityError(
            f"{folder}: no checksum record ({MANIFEST_FILE}, a hidden file), so its graph cannot be checked; copy "
            f"the folder itself (`cp -r {folder} NEW`, not its visible files only) or export it again with "
            "`polyembed export`")
    expected: dict[str, str] = {}
    for name in _files_to_verify(folder, graph):
        recorded = _recorded_name(name, checksums)
        if recorded is not None:
            expected[name] = checksums[recorded]
        elif _is_graph_file(name) or name == CONFIG_FILE or name in TOKENIZER_FILES:
            raise ExportIntegrityError(
                f"{folder / name}: not listed in the export's checksum record ({MANIFEST_FILE}): not written by "
                "`polyembed export`; remove it or export again")
    bad = mismatched_files(folder, expected)
    if bad:
        raise ExportIntegrityError(
            f"{folder / bad[0]}: checksum mismatch (the file changed after `polyembed export` wrote it, or is "
            f"missing); export {folder} again")


def _recorded_name(name: str, checksums: dict[str, str]) -> str | None:
    """The manifest's name for `name`: itself, or for a graph renamed between the two layouts (exports before
    2026-11-26 kept them at the top) the other layout's name, whose bytes are the same."""
    if name in checksums:
        return name
    other = {**LEGACY_FILES, **{legacy: current for current, legacy in LEGACY_FILES.items()}}.get(name)
    return other if other in checksums else None


def _files_to_verify(folder: Path, graph: str) -> list[str]:
    """Every file of the folder except the graphs this encoder does not read (a changed fp32 graph does not stop
    the int8 one from loading)."""
    own = {graph, str(Path(graph).with_suffix(".bin").as_posix())} if graph.endswith(".xml") else {graph}
    names = (path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
    return [name for name in names if not _is_graph_file(name) or name in own]


def export_folder(path: str | Path) -> Path:
    """The export folder `path` is in: itself, or the folder of a graph file at its top (exports before
    2026-11-26) or in its `onnx/` or `openvino/` folder."""
    path = Path(path)
    if path.suffix not in (".onnx", ".xml"):
        return path
    return path.parent.parent if path.parent.name in GRAPH_FOLDERS else path.parent
