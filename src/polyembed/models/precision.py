"""Inference precision: which half precision a device computes natively, and what a requested precision
('fp32', 'bf16', 'fp16', 'auto') means on it. Apart from the encoders (`polyembed.models.encoder` applies it as
autocast) so that training and reports can ask without loading a model."""

from __future__ import annotations

from pathlib import Path

from polyembed.errors import PolyembedError, argument

PRECISIONS = ("fp32", "bf16", "fp16", "auto")
"""Inference precision: full float32, bf16 or fp16 autocast, or 'auto': the half precision the device computes
natively (bf16 on a CUDA GPU that has it, else fp16; fp16 on MPS; bf16 on a CPU with AVX512-BF16 or AMX, else
fp32)."""
HALF_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
"""The torch dtype of each half precision, by name (torch is imported only when a model runs)."""


def device_kind(device: str | None) -> str:
    """'cuda', 'mps' or the CPU's name for a device ('cuda:1' is cuda); None: the command's device or the
    accelerator (`polyembed.device`)."""
    from polyembed.device import resolve_device

    return (device or resolve_device()).partition(":")[0]


def bf16_available(device: str | None = None) -> bool:
    """Whether bf16 is native on `device` (None: the one models load on): a CUDA GPU with bf16 units (Ampere or
    newer; torch emulates it on older ones, more slowly than fp16), or a CPU with AVX512-BF16 or AMX (elsewhere
    the CPU emulates bf16 and it is slower than float32). MPS: no (fp16 is its half precision)."""
    import torch

    kind = device_kind(device)
    if kind == "cuda":
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    if kind == "mps":
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="ignore")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def auto_precision(device: str | None = None) -> str:
    """What 'auto' means on `device`: bf16 where native, else fp16 on a GPU (every CUDA GPU and MPS computes it
    natively), else fp32 (a CPU without bf16 would emulate either half precision, slower than float32)."""
    if bf16_available(device):
        return "bf16"
    return "fp16" if device_kind(device) in ("cuda", "mps") else "fp32"


def resolve_precision(precision: str, option: str | None = None, device: str | None = None) -> str:
    """'fp32', 'bf16' or 'fp16' for a requested precision on `device` (None: the one models load on; 'auto' is
    `auto_precision`). bf16 on a CUDA GPU that cannot even emulate it is an error here, not deep inside torch."""
    flag = option or argument("--precision")
    if precision not in PRECISIONS:
        raise PolyembedError(f"{flag} {precision}: choose one of {', '.join(PRECISIONS)}")
    if precision == "auto":
        return auto_precision(device)
    if precision == "bf16" and device_kind(device) == "cuda":
        import torch

        if not torch.cuda.is_bf16_supported():
            raise PolyembedError(f"{flag} bf16: this CUDA GPU has no bf16 (choose fp16 or auto)")
    return precision
