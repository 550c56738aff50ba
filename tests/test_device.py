"""The device a model runs on: `--device` / `device=` when given, else the accelerator (cuda, then mps), else the
CPU, as in sentence-transformers. CI has no GPU, so a fake accelerator check shows the choice reaching the model."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from polyembed.cli import app
from polyembed.device import resolve_device, using_device
from polyembed.errors import PolyembedError

SOURCE = Path(__file__).resolve().parent.parent / "src" / "polyembed"


@pytest.fixture
def fake_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch believes in two CUDA devices."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


@pytest.fixture
def no_accelerator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def test_auto_picks_the_accelerator_else_the_cpu(no_accelerator: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_device() == resolve_device("auto") == "cpu"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device() == "mps"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device() == "cuda"  # cuda before mps


def test_a_device_this_machine_lacks_is_a_clear_error(fake_gpus: None) -> None:
    assert resolve_device("cuda:1") == "cuda:1" and resolve_device("cpu") == "cpu"
    with pytest.raises(PolyembedError, match=r"cuda:2: this machine has 2 CUDA device\(s\)"):
        resolve_device("cuda:2")
    with pytest.raises(PolyembedError, match="tpu: expected cpu, cuda, cuda:N or mps"):
        resolve_device("tpu")


def test_no_cuda_is_named(no_accelerator: None) -> None:
    with pytest.raises(PolyembedError, match="torch sees no CUDA device here"):
        resolve_device("cuda")
    with pytest.raises(PolyembedError, match="no Apple MPS device"):
        resolve_device("mps")


class _Recorded(PolyembedError):
    """Stops the load once the device it was given is known."""


@pytest.fixture
def recorded_device(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The `device` every SentenceTransformer is built with (the load stops there)."""
    import sentence_transformers

    seen: list[str] = []

    def spy(*args: object, device: str | None = None, **kwargs: object) -> None:
        seen.append(str(device))
        raise _Recorded

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", spy)
    return seen


@pytest.mark.parametrize(("flag", "expected"), [([], "cuda"), (["--device", "cuda:1"], "cuda:1"),
                                                (["--device", "cpu"], "cpu")])
def test_the_device_flows_from_the_command_into_the_model(
    fake_gpus: None, recorded_device: list[str], tmp_path: Path, flag: list[str], expected: str
) -> None:
    (tmp_path / "a.txt").write_text("Hello world.\n")
    result = CliRunner().invoke(app, ["encode", str(tmp_path / "a.txt"), "-m", "minilm-en", "--language", "en",
                                      "-o", str(tmp_path / "v.npy"), *flag])
    assert result.exit_code == 2, result.output  # the spy stopped the load
    assert recorded_device == [expected]


def test_the_python_api_takes_a_device_and_a_command_s_choice_ends_with_it(
    fake_gpus: None, recorded_device: list[str]
) -> None:
    from polyembed.models.loading import load_model

    for device in ("cuda:1", None):
        with pytest.raises(_Recorded):
            load_model("minilm-en", device=device)
    with using_device("cpu"), pytest.raises(_Recorded):
        load_model("minilm-en")
    assert recorded_device == ["cuda:1", "cuda", "cpu"]


def test_nothing_in_the_package_fixes_the_cpu() -> None:
    """Only the auto-detection names the CPU (as its fallback); `hasattr(x, "cpu")` asks for a method."""
    fixed = []
    for file in SOURCE.rglob("*.py"):
        if file.name == "device.py" and file.parent == SOURCE:
            continue
        tree = ast.parse(file.read_text(encoding="utf-8"))
        allowed = {id(call.args[1]) for call in ast.walk(tree) if isinstance(call, ast.Call)
                   and getattr(call.func, "id", None) == "hasattr" and len(call.args) == 2}
        fixed += [f"{file.relative_to(SOURCE)}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and node.value == "cpu" and id(node) not in allowed]
    assert fixed == []
