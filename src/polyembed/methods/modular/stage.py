"""What the stages share: checking where a stage starts."""

from __future__ import annotations


def check_stage_start(folder: str, language: str, stage: str, previous: str, where: str) -> None:
    """A stage that starts from a folder (the previous stage's model) fails before anything loads when the folder
    or its tokenizer is missing, naming the language and the step to run first. Built-in and Hub names pass."""
    from pathlib import Path

    from polyembed.errors import PolyembedError

    path = Path(folder).expanduser()
    looks_like_folder = path.is_absolute() or folder.startswith(".") or len(path.parts) > 2
    if not path.exists():
        if looks_like_folder:
            raise PolyembedError(f"language '{language}', stage {stage}: {where} {folder} does not exist "
                                 f"(run {previous} for '{language}' first)")
        return
    if (path / "modules.json").is_file() and not any(path.glob("tokenizer*.json")) \
            and not any(path.glob("*/tokenizer*.json")):
        raise PolyembedError(f"language '{language}', stage {stage}: {where} {folder} has no tokenizer (each "
                             f"language encoder carries its own: run {previous} for '{language}' first)")
