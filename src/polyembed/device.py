"""Which device a model runs on. As in sentence-transformers: the one asked for (`device=` in Python,
`--device` on the command line), else the accelerator there is (CUDA, then Apple's MPS), else the CPU. Why one
place: a GPU user trains on the GPU (the trainer picks it) and should evaluate, encode, mine and serve there too,
without naming it on every call.

Several devices (`cuda:0,cuda:1`) make a sentence-transformers model encode in one process per device
(`polyembed.models.pool`); `load_model` refuses them for a model that encodes its own way (a bundle, an export),
and code that places a model on one device itself (`resolve_device`: translation) takes the first.

`using_device` is how a command's `--device` reaches every model the command loads (a teacher, a student, the
model of an evaluation) without threading it through each function: `load_model(device=None)` reads it.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator, Sequence

from polyembed.errors import PolyembedError, argument

DEVICE_HELP = "Device to run the model on: cpu, cuda, cuda:N or mps; several, comma-separated (cuda:0,cuda:1), " \
    "encode in one process per device. Default: the accelerator there is (cuda, then mps), else cpu."
CPU = "cpu"
"""Where a model runs without an accelerator, and where exported ONNX / OpenVINO graphs always run (their int8
graphs are made for CPUs)."""
_CHOSEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("polyembed_device", default=None)
_FORM = re.compile(r"cpu|mps|cuda(:\d+)?")
Devices = str | Sequence[str]
"""One device ('cuda:1'), several as one string ('cuda:0,cuda:1'), or a list of them."""


def accelerator() -> str | None:
    """'cuda' or 'mps' when torch sees one, else None."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return None


def _check(device: str, flag: str) -> str:
    """`device` when it is well formed and this machine has it; else an error naming the option."""
    import torch

    if not _FORM.fullmatch(device):
        raise PolyembedError(f"{flag} {device}: expected cpu, cuda, cuda:N or mps (or several, comma-separated)")
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


def resolve_devices(device: Devices | None = None, option: str | None = None) -> list[str]:
    """The devices to load a model for: `device`, else the ones the command chose (`using_device`), else the
    accelerator, else the CPU. One device for most runs; several encode in one process each
    (`polyembed.models.pool`), and must be of one kind (a precision such as bf16 is chosen per kind). A device this
    machine does not have is an error naming the option."""
    chosen = device or _CHOSEN.get()
    if chosen is None or chosen == "auto":
        return [accelerator() or CPU]
    flag = option or argument("--device")
    names = chosen.split(",") if isinstance(chosen, str) else [str(name) for name in chosen]
    devices = [_check(name.strip(), flag) for name in names]
    if len({name.partition(":")[0] for name in devices}) > 1:
        raise PolyembedError(f"{flag} {','.join(devices)}: several devices must be of one kind "
                             "(cuda:0,cuda:1 or cpu,cpu)")
    return devices


def resolve_device(device: Devices | None = None, option: str | None = None) -> str:
    """The one device to load a model on (`resolve_devices`): the first of several, for what runs in one process."""
    return resolve_devices(device, option)[0]


def chosen_device() -> str | None:
    """The device(s) the running command asked for, comma-separated (None: pick the accelerator), for worker
    processes to load on."""
    return _CHOSEN.get()


def choose_device(device: Devices | None, option: str = "--device") -> None:
    """A command's `--device`: checked now (before any work), then used by every model the command loads. The
    CLI runs each command in a context of its own, so the choice ends with the command."""
    _CHOSEN.set(",".join(resolve_devices(device, option)) if device else None)


@contextlib.contextmanager
def using_device(device: Devices | None, option: str = "--device") -> Iterator[None]:
    """Within the block, models load on `device` (checked now, before any work; None: the accelerator)."""
    token = _CHOSEN.set(",".join(resolve_devices(device, option)) if device else None)
    try:
        yield
    finally:
        _CHOSEN.reset(token)
