"""Encoding on several devices at once (`--device cuda:0,cuda:1`, `load_model(..., device=[...])`):
sentence-transformers' multi-process pool, one process per device, each with the whole model. The input goes out
in chunks to whichever process is free, and the rows come back in input order.

Why a start of our own: sentence-transformers' `start_multi_process_pool` runs its workers as they are, so the
autocast a caller encodes under (bf16 or fp16, `AutocastEncoder`) would not reach them, and CPU workers would
each take every core. Here each process runs sentence-transformers' own worker loop inside the caller's autocast,
CPU processes share the cores, and the pool is the dictionary sentence-transformers makes, used through its
public `encode(pool=...)` and `stop_multi_process_pool`. The pool starts on the first encode (seconds: each
process imports torch and receives the model) and serves the next ones; its processes stop at exit or on
`close()`.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Sequence
from typing import Any, Literal

from polyembed.device import CPU
from polyembed.errors import PolyembedError, argument
from polyembed.models.encoder import SentenceTransformerEncoder

logger = logging.getLogger(__name__)

_WORKER_LOOPS = ("_multi_process_worker", "_encode_multi_process_worker")
"""sentence-transformers' worker loop, by its name in 6.x and in 5.x (same arguments)."""

Pool = dict[Literal["input", "output", "processes"], Any]
"""sentence-transformers' process pool: the input and output queues and the processes."""


def _autocast_dtype(kind: str) -> str | None:
    """The dtype ('bfloat16', 'float16') of the autocast this thread is under for `kind` devices; None: none."""
    import torch

    if not torch.is_autocast_enabled(kind):
        return None
    return str(torch.get_autocast_dtype(kind)).removeprefix("torch.")


def _work(device: str, model: Any, inputs: Any, outputs: Any, dtype: str | None, threads: int | None) -> None:
    """One pool process: sentence-transformers' worker loop for `device`, under `dtype` autocast where given."""
    import threading

    import torch
    from tqdm import tqdm

    # The worker's batch loop makes a tqdm bar (hidden); its default lock is a multiprocessing one, which a process
    # stopped by terminate() cannot release: the resource tracker would report it leaked at exit.
    tqdm.set_lock(threading.RLock())
    if threads is not None:
        torch.set_num_threads(threads)
    loop = next(getattr(type(model), name) for name in _WORKER_LOOPS if hasattr(type(model), name))
    autocast = (torch.autocast(device.partition(":")[0], dtype=getattr(torch, dtype)) if dtype is not None
                else contextlib.nullcontext())
    with autocast:
        loop(device, model, inputs, outputs)


def start_pool(model: Any, devices: Sequence[str], dtype: str | None = None) -> Pool:
    """sentence-transformers' pool over `devices` for `model`, each process under `dtype` autocast (None: float32).
    Like its `start_multi_process_pool`, it leaves `model` on the CPU, its weights in shared memory."""
    import torch
    import torch.multiprocessing as mp

    if not any(hasattr(type(model), name) for name in _WORKER_LOOPS):
        raise PolyembedError(f"{argument('--device')} {','.join(devices)}: this sentence-transformers "
                             "has no multi-process worker polyembed knows; encode on one device")
    model.to(CPU)
    model.share_memory()
    threads = max(1, torch.get_num_threads() // len(devices)) if devices[0] == CPU else None
    context = mp.get_context("spawn")
    inputs, outputs = context.Queue(), context.Queue()
    processes = [context.Process(target=_work, args=(device, model, inputs, outputs, dtype, threads), daemon=True)
                 for device in devices]
    for process in processes:
        process.start()
    return {"input": inputs, "output": outputs, "processes": processes}


def _stop(pool: Pool) -> None:
    from sentence_transformers import SentenceTransformer

    SentenceTransformer.stop_multi_process_pool(pool)


class DevicePool:
    """The pool of one model over `devices`, started when first needed and kept: a start costs seconds. Started
    again under another autocast (a float32 pool cannot encode in bf16), or after a process died."""

    def __init__(self, devices: Sequence[str]) -> None:
        self.devices = list(devices)
        self.kind = self.devices[0].partition(":")[0]
        self._pool: Pool | None = None
        self._dtype: str | None = None
        self._stop: weakref.finalize | None = None

    def processes(self, model: Any) -> Pool:
        """The running pool for `model`, under the autocast the caller is in."""
        dtype = _autocast_dtype(self.kind)
        if self._pool is not None and dtype == self._dtype and all(p.is_alive() for p in self._pool["processes"]):
            return self._pool
        self.close()
        logger.info("encoding on %s, one process each (%s); starting them takes a few seconds",
                    ", ".join(self.devices), dtype or "float32")
        self._pool = start_pool(model, self.devices, dtype)
        self._dtype = dtype
        self._stop = weakref.finalize(self, _stop, self._pool)
        return self._pool

    @property
    def workers(self) -> list[Any]:
        """The running processes (none before the first encode, or after `close`)."""
        return self._pool["processes"] if self._pool is not None else []

    def close(self) -> None:
        """Stop the processes (a later encode starts them again)."""
        if self._stop is not None:
            self._stop()
        self._pool = self._stop = None

    def __repr__(self) -> str:
        return f"DevicePool({self.devices!r}, {'running' if self._pool is not None else 'stopped'})"


def on_devices(encoder: Any, devices: Sequence[str]) -> SentenceTransformerEncoder:
    """`encoder` encoding through a pool over `devices`. Only a plain sentence-transformers model can: a kind that
    encodes its own way (language embeddings, a bundle, an export) runs in one process, so several devices are an
    error that says so, before any work."""
    if not isinstance(encoder, SentenceTransformerEncoder) or (
            type(encoder)._encode_group is not SentenceTransformerEncoder._encode_group):
        raise several_devices_refused(str(getattr(encoder, "name", encoder)), type(encoder).__name__, devices)
    encoder.pool = DevicePool(devices)
    return encoder


def several_devices_refused(name: str, kind: str, devices: Sequence[str]) -> PolyembedError:
    """The error for a model that encodes in one process only."""
    return PolyembedError(f"{argument('--device')} {','.join(devices)}: {name} is a {kind}, which encodes in one "
                          "process; several devices need a sentence-transformers model (give one device)")
