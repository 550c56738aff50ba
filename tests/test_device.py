"""The device a model runs on: `--device` / `device=` when given, else the accelerator (cuda, then mps), else the
CPU, as in sentence-transformers; the precision 'auto' picks there; several devices encoding in a process each.
CI has no GPU, so a fake accelerator check shows the choice reaching the model, and two CPU processes stand in for
two GPUs."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from polyembed.cli import app
from polyembed.device import chosen_device, resolve_device, resolve_devices, using_device
from polyembed.errors import PolyembedError
from polyembed.models.encoder import Fp16Encoder, SentenceTransformerEncoder, with_precision
from polyembed.models.loading import load_model
from polyembed.models.pool import on_devices
from polyembed.models.precision import resolve_precision
from tests.helpers import tiny_sentence_transformer

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
                                                (["--device", "cpu"], "cpu"),
                                                (["--device", "cuda:0,cuda:1"], "cpu")])  # the pool moves it
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


def test_several_devices_are_checked_one_by_one_and_of_one_kind(fake_gpus: None) -> None:
    assert resolve_devices("cuda:0,cuda:1") == resolve_devices(["cuda:0", "cuda:1"]) == ["cuda:0", "cuda:1"]
    assert resolve_devices("cpu, cpu") == ["cpu", "cpu"]
    assert resolve_device("cuda:1,cuda:0") == "cuda:1"  # what runs in one process takes the first
    with using_device(["cuda:1", "cuda:0"]):
        assert chosen_device() == "cuda:1,cuda:0" and resolve_devices() == ["cuda:1", "cuda:0"]
    with pytest.raises(PolyembedError, match=r"cuda:2: this machine has 2 CUDA device\(s\)"):
        resolve_devices("cuda:0,cuda:2")
    with pytest.raises(PolyembedError, match="cuda:0,cpu: several devices must be of one kind"):
        resolve_devices("cuda:0,cpu")
    with pytest.raises(PolyembedError, match="device : expected cpu, cuda"):
        resolve_devices("cuda:0,,cuda:1")


def test_a_model_that_encodes_its_own_way_refuses_several_devices(hashing_encoder) -> None:
    class OwnLoop(SentenceTransformerEncoder):
        def _encode_group(self, sentences: list[str], language: str | None, batch_size: int,
                          show_progress_bar: bool) -> np.ndarray:
            raise AssertionError("not called")

    for encoder in (hashing_encoder, OwnLoop(None, name="own")):
        with pytest.raises(PolyembedError, match="cpu,cpu: .* encodes in one process; several devices need"):
            on_devices(encoder, ["cpu", "cpu"])


def test_auto_precision_on_a_cuda_gpu_is_bf16_where_native_else_fp16(
    fake_gpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)  # an A100
    assert resolve_precision("auto") == "bf16"  # on the accelerator models load on
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    assert resolve_precision("auto") == resolve_precision("auto", device="cuda:1") == "fp16"  # a T4: emulated only
    assert resolve_precision("bf16") == "bf16"  # asked for: emulated, slower, but it runs
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: False)
    with pytest.raises(PolyembedError, match="precision bf16: this CUDA GPU has no bf16"):
        resolve_precision("bf16")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_precision("auto", device="mps") == "fp16"


def test_on_a_gpu_without_bf16_auto_encodes_under_fp16_autocast(
    fake_gpus: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The model is moved to the GPU (a recorded move here), and `precision="auto"` puts its encode call under
    fp16 autocast on cuda (a recorded autocast: torch without CUDA would switch a real one off)."""
    from sentence_transformers import SentenceTransformer

    folder = tiny_sentence_transformer(tmp_path / "tiny", seed=0)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    moves: list[str] = []
    move = SentenceTransformer.to

    def recorded_move(self: SentenceTransformer, *args: object, **kwargs: object) -> SentenceTransformer:
        target = args[0] if args else kwargs.get("device")
        if isinstance(target, str) and target.startswith("cuda"):
            moves.append(target)
            return self
        return move(self, *args, **kwargs)

    monkeypatch.setattr(SentenceTransformer, "to", recorded_move)
    encoder = load_model(str(folder))
    assert moves == ["cuda"]
    monkeypatch.setattr(SentenceTransformer, "device", property(lambda self: torch.device("cuda")))
    active: list[tuple[str, torch.dtype]] = []

    class RecordedAutocast:
        def __init__(self, device_type: str, dtype: torch.dtype) -> None:
            self.entry = (device_type, dtype)

        def __enter__(self) -> None:
            active.append(self.entry)

        def __exit__(self, *exc: object) -> None:
            active.remove(self.entry)

    seen: list[list[tuple[str, torch.dtype]]] = []

    def encode(sentences: list[str], **options: object) -> np.ndarray:
        seen.append(list(active))
        return np.ones((len(sentences), 32), dtype=np.float32)

    monkeypatch.setattr(torch, "autocast", RecordedAutocast)
    monkeypatch.setattr(encoder.model, "encode", encode)
    half = with_precision(encoder, "auto")
    assert isinstance(half, Fp16Encoder) and half.name == f"{folder} (fp16)"
    assert half.encode(["the cat", "a dog"]).shape == (2, 32)
    assert seen == [[("cuda", torch.float16)]] and active == []


def test_several_devices_encode_in_a_process_each_under_the_caller_s_precision(tmp_path: Path) -> None:
    """Two CPU processes stand in for two GPUs: the rows are those of one process, in input order, and bf16
    autocast reaches the processes (their rows are bf16's, not float32's)."""
    from tests.helpers import PAIRS

    folder = tiny_sentence_transformer(tmp_path / "tiny", seed=0)
    sentences = [english for english, _ in PAIRS[:6]]
    single = load_model(str(folder), device="cpu")
    pooled = load_model(str(folder), device="cpu,cpu")
    assert pooled.pool.devices == ["cpu", "cpu"] and pooled.device_kind == "cpu"
    try:
        half = with_precision(pooled, "bf16")
        rows = half.encode(sentences)
        processes = pooled.pool.workers
        again = half.encode(sentences[:2])  # the same processes: a start costs seconds
        assert pooled.pool.workers is processes and len(processes) == 2
    finally:
        pooled.close()
    assert pooled.pool.workers == []
    one_by_one = np.stack([with_precision(single, "bf16").encode(sentence) for sentence in sentences])
    exact = single.encode(sentences)
    assert rows.shape == exact.shape and np.allclose(again, rows[:2])
    assert np.abs(rows - one_by_one).max() < np.abs(exact - one_by_one).max() / 10, (
        np.abs(rows - one_by_one).max(), np.abs(exact - one_by_one).max())
