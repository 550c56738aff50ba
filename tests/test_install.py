"""`pip install polyembed` without extras: the wheel built from this tree, installed with its core dependencies
only into a fresh virtual environment, runs `polyembed --help` and a real encode, and the commands that need an
extra say which one to install.

The core's packages come from uv's cache (filled by `make setup`), constrained to the lock's pins so nothing new
is resolved: offline where the cache holds the index pages too, else reading them from the index (the wheels
still come from the cache); without either, the test is skipped and says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from polyembed.environment import LOCK_FILE, canonical, read_lock

ROOT = Path(__file__).resolve().parents[1]
UV = Path(sys.executable).with_name("uv")
OPTIONAL_MODULES = ("fastapi", "uvicorn", "orjson", "prometheus_client", "onnx", "onnxruntime", "openvino", "ray",
                    "mteb", "eflomal", "gensim")
"""What the extras bring (serve, export, ray, mteb, alignment, fasttext): none of it in a core install."""


def _find_links() -> list[str]:
    """Where this machine keeps wheels the index lacks (the lock's CPU torch), as scripts/setup.sh passes them."""
    links = os.environ.get("PIP_FIND_LINKS", "").split()
    configured = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.find-links"],
                                capture_output=True, text=True)
    links += configured.stdout.split() if configured.returncode == 0 else []
    return [argument for link in links for argument in ("--find-links", link)]


def _environment(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "POLYEMBED_CACHE": str(home / "cache")}


@pytest.fixture(scope="module")
def core(tmp_path_factory) -> Path:
    """A fresh venv with polyembed's wheel and its core dependencies (the lock's versions), no extras."""
    if not UV.is_file():
        pytest.skip(f"{UV} not found (make setup installs it)")
    home = tmp_path_factory.mktemp("install")
    source = home / "source"  # a copy: building in the tree would leave build/ and egg-info behind
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
                    str(home / "dist"), str(source)], check=True, capture_output=True, text=True)
    [wheel] = (home / "dist").glob("polyembed-*.whl")
    venv = home / "venv"
    subprocess.run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True,
                   capture_output=True, text=True)
    install = [str(UV), "pip", "install", "--python", str(venv / "bin" / "python"), "-c", str(ROOT / LOCK_FILE),
               *_find_links(), str(wheel)]
    installed = subprocess.run([*install, "--offline"], capture_output=True, text=True, env=_environment(home))
    if installed.returncode != 0 and "network was disabled" in installed.stderr:
        # a cache filled by `uv pip sync` holds the wheels but not always the index pages an offline resolve
        # reads: ask the index for those (the wheels still come from the cache, at the lock's versions)
        installed = subprocess.run(install, capture_output=True, text=True, env=_environment(home), timeout=900)
        unreachable = ("Failed to fetch", "dns error", "error sending request", "Could not connect")
        if installed.returncode != 0 and any(text in installed.stderr for text in unreachable):
            pytest.skip(f"uv's cache lacks a locked package and the index is unreachable: {installed.stderr[-500:]}")
    assert installed.returncode == 0, installed.stderr
    return venv


def _run(venv: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    home = venv.parent
    return subprocess.run([str(venv / "bin" / args[0]), *args[1:]], capture_output=True, text=True, timeout=300,
                          cwd=cwd or home, env=_environment(home))


def test_core_install_is_the_locked_core_without_extras(core: Path) -> None:
    listed = subprocess.run([str(UV), "pip", "list", "--format", "json", "--python", str(core / "bin" / "python")],
                            capture_output=True, text=True, check=True).stdout
    versions = {canonical(row["name"]): row["version"] for row in json.loads(listed)}
    locked = read_lock(ROOT / LOCK_FILE)
    assert versions.pop("polyembed")
    assert {name: version for name, version in versions.items() if locked.get(name) != version} == {}
    for name in ("torch", "sentence-transformers", "transformers", "datasets", "accelerate", "faiss-cpu", "peft"):
        assert name in versions, f"{name} is core (training and evaluation need it)"
    present = [name for name in OPTIONAL_MODULES if _run(core, "python", "-c", f"import {name}").returncode == 0]
    assert present == [], f"a core install brought packages of an extra: {present}"
    refused = _run(core, "python", "-c", "import fastapi")
    assert "ModuleNotFoundError: No module named 'fastapi'" in refused.stderr


def test_core_install_runs_help_and_encodes(core: Path) -> None:
    shown = _run(core, "polyembed", "--help")
    assert shown.returncode == 0, shown.stderr
    assert "encode" in shown.stdout and "serve" in shown.stdout
    source = core.parent / "in.txt"
    source.write_text("hello world\nguten Morgen\n", encoding="utf-8")
    encoded = _run(core, "polyembed", "encode", str(source), "-m", "minilm-en", "-o", str(core.parent / "out.npy"))
    assert encoded.returncode == 0, encoded.stderr
    vectors = np.load(core.parent / "out.npy")
    assert vectors.shape == (2, 384) and np.isfinite(vectors).all()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


@pytest.mark.parametrize(("command", "line"), [
    (["serve", "-m", "minilm-en"],
     "polyembed serve needs the serve extra: pip install 'polyembed[serve]' (not installed: fastapi, uvicorn, "
     "httptools, orjson, prometheus-client)"),
    (["export", "-m", "minilm-en", "-o", "exported"],
     "polyembed export needs the export extra: pip install 'polyembed[export]' (not installed: onnx, onnxruntime)"),
])
def test_commands_that_need_an_extra_name_it(core: Path, command: list[str], line: str) -> None:
    result = _run(core, "polyembed", *command)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == f"error: {line}"
    assert not (core.parent / "exported").exists()


def test_doctor_reads_the_core_as_complete(core: Path) -> None:
    result = _run(core, "polyembed", "doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not installed (extra export)" in result.stdout and "not installed (extra mteb)" in result.stdout
    assert "not installed: alignment, export, fasttext, mteb, ray, serve" in result.stdout
    assert result.stdout.rstrip().endswith("problems: none found")
