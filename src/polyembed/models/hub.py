"""`push_to_hub`: publish a model folder polyembed wrote on the Hugging Face Hub (`polyembed push`).

Why: sentence-transformers users expect `model.push_to_hub`; a polyembed folder needs more than a plain upload.
Its card is written again for the repository first (`card_for_hub`: the evaluation rows as the Hub's
`model-index`, a `base_model` the Hub knows, the usage examples loading the repository), and polyembed's own
local records are left out. Kept: `.polyembed-outputs.json`, an export's checksum record, without which a
downloaded export does not load (`verify_export`), and `polyembed_conversion.json`-style records that say
where a model came from. Left out (`LOCAL_RECORDS`): the folder lock, half-written staging folders, and the
record of which files `--overwrite` may replace here, which mean nothing in another copy.

Everything that can be checked is checked before any network call: the repository id (huggingface_hub's
`validate_repo_id`), that the folder holds a model, and that the Hub may be used (HF_HUB_OFFLINE).
`dry_run=True` stops there and says what would be uploaded.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyembed.errors import PolyembedError
from polyembed.models.cards import CARD_FILE, card_for_hub, split_front_matter
from polyembed.models.saving import MODEL_MARKERS, is_model_dir

logger = logging.getLogger(__name__)

LOCAL_RECORDS = (".polyembed.lock", ".polyembed-files.json", ".polyembed-run.json", ".polyembed-staging-*")
"""polyembed's hidden files that only make sense on this machine: never uploaded (at any depth)."""
IGNORE_PATTERNS = [pattern for name in LOCAL_RECORDS for pattern in (name, f"*/{name}")]
"""`LOCAL_RECORDS` as upload_folder's ignore patterns (fnmatch: `*` matches `/` too)."""


class HubPushError(PolyembedError):
    """A push that cannot be done (a bad repository id, a folder that is no model, offline); nothing was sent."""


@dataclass
class PushResult:
    """What a push uploaded (or, dry, would upload): the files with their sizes in bytes, and the card."""

    repo_id: str
    folder: str
    private: bool
    revision: str | None
    files: list[tuple[str, int]]
    left_out: list[str]
    card: str | None
    """The README.md uploaded: the folder's card written again for the repository (None: the folder has none)."""
    dry_run: bool
    url: str | None = None
    front_matter: dict[str, Any] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self.files)

    @property
    def front_matter_text(self) -> str:
        """The card's YAML block with its `---` fences, as uploaded ('' without a card or front matter)."""
        if self.card is None:
            return ""
        body = split_front_matter(self.card)[1]
        return self.card[:len(self.card) - len(body)]


def check_repo_id(repo_id: str) -> str:
    """The repository id as huggingface_hub accepts it ('owner/name', or 'name' for your own namespace), or an
    error that says the rules."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise HubPushError(f"repository id '{repo_id}' is not valid: {err} (expected OWNER/NAME: letters, "
                           "digits, '-', '_' and '.', at most 96 characters)") from None
    return repo_id


def check_model_folder(folder: str | Path) -> Path:
    """The folder, when it holds a model polyembed can publish; a clear error otherwise (a run folder names
    its model/ folder)."""
    path = Path(folder).expanduser()
    if not path.exists():
        raise HubPushError(f"{path}: no such folder")
    if not path.is_dir():
        raise HubPushError(f"{path} is a file; a model is a folder")
    if not is_model_dir(path):
        hint = (f"; a training run's model is in {path / 'model'}" if is_model_dir(path / "model") else "")
        raise HubPushError(f"{path} has no {' or '.join(MODEL_MARKERS)}: not a model folder{hint}")
    return path.resolve()


def upload_files(folder: Path) -> tuple[list[tuple[str, int]], list[str]]:
    """(files upload_folder sends, with sizes; polyembed records left out), listed as upload_folder lists them
    (every file below the folder, sorted, filtered by the same patterns)."""
    from huggingface_hub.hf_api import DEFAULT_IGNORE_PATTERNS
    from huggingface_hub.utils import filter_repo_objects

    names = [path.relative_to(folder).as_posix() for path in sorted(folder.glob("**/*")) if path.is_file()]
    sent = list(filter_repo_objects(names, ignore_patterns=[*IGNORE_PATTERNS, *DEFAULT_IGNORE_PATTERNS]))
    kept = set(sent)
    return [(name, (folder / name).stat().st_size) for name in sent], [name for name in names if name not in kept]


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}


def push_to_hub(folder: str | Path, repo_id: str, *, private: bool = True, revision: str | None = None,
                commit_message: str | None = None, token: str | None = None, dry_run: bool = False) -> PushResult:
    """Upload the model in `folder` to the Hub repository `repo_id` (created when missing, private unless
    `private=False`; `revision`: a branch, created when missing). Its card is written again first, into the
    folder too, so the folder and the repository say the same (`card_for_hub`). `dry_run`: check and list
    only, with no network call and nothing written."""
    check_repo_id(repo_id)
    path = check_model_folder(folder)
    if not dry_run and _offline():
        raise HubPushError("HF_HUB_OFFLINE=1 is set: a push needs the Hugging Face Hub; unset it to push, or "
                           "use --dry-run (dry_run=True) to see what would be uploaded")
    card = card_for_hub(path, repo_id)
    files, left_out = upload_files(path)
    if card is not None and CARD_FILE not in {name for name, _ in files}:
        files = sorted([*files, (CARD_FILE, len(card.encode("utf-8")))])
    elif card is not None:
        files = [(name, len(card.encode("utf-8")) if name == CARD_FILE else size) for name, size in files]
    result = PushResult(repo_id=repo_id, folder=str(path), private=private, revision=revision, files=files,
                        left_out=left_out, card=card, dry_run=dry_run,
                        front_matter=(split_front_matter(card)[0] or {}) if card is not None else {})
    if dry_run:
        return result
    if card is None:
        logger.warning(f"{path} has no {CARD_FILE}: the repository gets no model card")
    else:
        _write_card(path / CARD_FILE, card)
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    url = api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
    if revision:
        api.create_branch(repo_id, branch=revision, exist_ok=True, repo_type="model")
    logger.info(f"uploading {len(files)} files from {path} to {repo_id}")
    api.upload_folder(repo_id=repo_id, folder_path=str(path), repo_type="model", revision=revision,
                      commit_message=commit_message or f"Upload {path.name} with polyembed push",
                      ignore_patterns=list(IGNORE_PATTERNS))
    result.url = str(url)
    return result


def _write_card(path: Path, card: str) -> None:
    """The card the repository gets, in the folder too; an unchanged card is not written (an export's card is
    covered by its checksum record)."""
    from polyembed.outputs import atomic_write

    if path.is_file() and path.read_text(encoding="utf-8") == card:
        return
    with atomic_write(path) as handle:
        handle.write(card)
