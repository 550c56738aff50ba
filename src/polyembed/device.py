"""Which device a model runs on. As in sentence-transformers: the one asked for (`device=` in Python,
`--device` on the command line), else the accelerator there is (CUDA, then Apple's MPS), else the CPU. Why one
place: a GPU user trains on the GPU (the trainer picks it) and should evaluate, encode, mine and serve there too,
without naming it on every call.

`using_device` is how a command's `--device` reaches every model the command loads (a teacher, a student, the
model of an evaluation) without threading it through each function: `load_model(device=None)` reads it.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator

from polyembed.errors import PolyembedError, argument

DEVICE_HELP = "Device to run the model on: cpu, cuda, cuda:N or mps. Default: the accelerator there is (cuda, then " \
    "mps), else cpu."
CPU = "cpu"
"""Where a model runs without an accelerator, and where exported ONNX / OpenVINO graphs always run (their int8
graphs are made for CPUs)."""
_CHOSEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("polyembed_device", default=None)
_FORM = re.compile(r"cpu|mps|cuda(:\d+)?")


def accelerator() -> str | None:
    """'cuda' or 'mps' when torch sees one, else None."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return None


def resolve_device(device: str | None = None, option: str | None = None) -> str:
    """The device to load a model on: `device`, else the one the command chose (`using_device`), else the
    accelerator, else the CPU. A device this machine does not have is an error naming the option."""
    import torch

    device = device or _CHOSEN.get()
    if device in (None, "auto"):
        return accelerator() or CPU
    flag = option or argument("--device")
    if not _FORM.fullmatch(device):
        raise PolyembedError(f"{flag} {device}: expected cpu, cuda, cuda:N or mps")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise PolyembedError(f"{flag} {device}: torch sees no CUDA device here (torch {torch.__version__}"
                                 f"{', built without CUDA' if torch.version.cuda is None else ''})")
        index = int(device.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise PolyembedError(f"{flag} {device}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                                 f"numbered from 0")
    if device == "mps" and accelerator() != "mps":
        raise PolyembedError(f"{flag} mps: torch sees no Apple MPS device here")
    return device


def chosen_device() -> str | None:
    """The device the running command asked for (None: pick the accelerator), for worker processes to load on."""
    return _CHOSEN.get()


def choose_device(device: str | None, option: str = "--device") -> None:
    """A command's `--device`: checked now (before any work), then used by every model the command loads. The
    CLI runs each command in a context of its own, so the choice ends with the command."""
    _CHOSEN.set(resolve_device(device, option) if device else None)


@contextlib.contextmanager
def using_device(device: str | None, option: str = "--device") -> Iterator[None]:
    """Within the block, models load on `device` (checked now, before any work; None: the accelerator)."""
    token = _CHOSEN.set(resolve_device(device, option) if device else None)
    try:
        yield
    finally:
        _CHOSEN.reset(token)
