"""Writing a model folder all-or-nothing: staged in a temp folder beside the target, then renamed over it.

A folder is only ever replaced when it holds a model (sentence-transformers or Hugging Face files) and the
caller asked for it: polyembed never deletes a folder of someone else's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from polyembed.errors import PolyembedError
from polyembed.outputs import atomic_dir, check_output_dir

LANGUAGE_MODELS_INDEX = "polyembed_languages.json"
"""The index of a folder of per-language models (one sub-folder per language)."""
MODEL_MARKERS = ("modules.json", "config.json", LANGUAGE_MODELS_INDEX)


def is_model_dir(path: Path) -> bool:
    """Whether `path` holds a saved model (what `--overwrite` may replace)."""
    return any((path / name).is_file() for name in MODEL_MARKERS)


def check_model_output_dir(
    path: str | Path, overwrite: bool, option: str = "output folder", error: type[PolyembedError] = PolyembedError
) -> Path:
    """Before any work: the folder must be writable, and empty unless `overwrite` is given and it holds a
    model (a folder of other files is refused even then)."""
    target = check_output_dir(path, option)
    if target.is_dir() and any(target.iterdir()):
        if not overwrite:
            raise error(f"{option} {target} is not empty (--overwrite / overwrite=True replaces a model)")
        if not is_model_dir(target):
            raise error(
                f"{option} {target} holds files but no model ({' or '.join(MODEL_MARKERS)}): "
                "refusing to replace it; choose an empty or new folder"
            )
    return target


def save_model_atomically(
    model: Any, target: str | Path, extra_files: dict[str, str] | None = None, save: Any = None
) -> Path:
    """Save a SentenceTransformer (plus `extra_files`: name -> text, e.g. a report) to `target`, replacing
    what was there only once everything is written, so an interrupted save never leaves half a model.
    `save(model, folder)` writes the model instead of `model.save` (another layout)."""
    target = Path(target)
    with atomic_dir(target) as staging:
        if save is not None:
            save(model, staging)
        else:
            model.save(str(staging), create_model_card=False)
        for name, text in (extra_files or {}).items():
            (staging / name).write_text(text, encoding="utf-8")
    return target
