"""Shared fixtures: the real data root (skip when absent), a deterministic tiny encoder, the offline models."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    # `make test` runs the suite in one pytest-xdist worker per core: each worker's torch (and the processes its
    # tests start, which inherit this) takes its share of the cores, not all of them, so no thread waits on a
    # core another worker holds. Set before torch is imported; a value the user set wins.
    _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    _share = max(1, _cores // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, str(_share))


class HashingEncoder:
    """A deterministic bag-of-character-trigram encoder for fast task tests (no model download).

    It is a real (weak) encoder: texts sharing trigrams get similar vectors, so tasks produce
    meaningful, reproducible scores without loading a transformer.
    """

    routes_by_language = False

    def __init__(self, dimension: int = 256, name: str = "hashing-test") -> None:
        self.dimension = dimension
        self.name = name
        self.calls: list[int] = []

    def encode(
        self,
        sentences: Sequence[str],
        language: str | None = None,
        *,
        batch_size: int = 64,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        self.calls.append(len(sentences))
        out = np.zeros((len(sentences), self.dimension), dtype=np.float32)
        for row, text in enumerate(sentences):
            padded = f"  {text.lower()}  "
            for i in range(len(padded) - 2):
                digest = hashlib.md5(padded[i : i + 3].encode("utf-8")).digest()
                out[row, int.from_bytes(digest[:4], "little") % self.dimension] += 1.0
        return out



@pytest.fixture
def offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run that must not touch the Hub or the user's cache: HF_HUB_OFFLINE=1 and a cache of the test's own
    (`pytestmark = pytest.mark.usefixtures("offline_cache")` in a module that trains)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("POLYEMBED_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache

@pytest.fixture
def hashing_encoder() -> HashingEncoder:
    return HashingEncoder()


@pytest.fixture
def no_data_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine with no data root at all: no $POLYEMBED_DATA, no set_data_root, no ../shared/data anywhere."""
    from polyembed.data import root

    monkeypatch.delenv(root.ENV_VAR, raising=False)
    monkeypatch.setattr(root, "_override", None)
    monkeypatch.setattr(root, "_default_candidates", lambda: [tmp_path / "no-shared" / "data"])


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data root (../shared/data or $POLYEMBED_DATA); tests needing it skip when absent."""
    from polyembed.data.root import data_root
    from polyembed.errors import PolyembedError

    try:
        return data_root()
    except PolyembedError:
        pytest.skip("real data root not found")


@pytest.fixture(scope="session")
def minilm():
    from polyembed.models import load_model

    return load_model("minilm-en")


@pytest.fixture(scope="session")
def unwritable_dir(tmp_path_factory: pytest.TempPathFactory):
    """A folder nobody can write in, root included: a read-only tmpfs mount where mounting is allowed,
    else /sys (permission denied even for root); skipped where neither is unwritable."""
    import shutil
    import subprocess
    import tempfile

    folder = tmp_path_factory.mktemp("read-only")
    mounted = shutil.which("mount") is not None and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(folder)], capture_output=True
    ).returncode == 0
    candidates = [folder] if mounted else [Path("/sys")]
    try:
        for candidate in candidates:
            try:
                fd, probe = tempfile.mkstemp(dir=candidate)
            except OSError:
                yield candidate
                return
            os.close(fd)
            os.unlink(probe)
        pytest.skip("no unwritable folder on this machine")
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], capture_output=True)
