"""`polyembed serve` as a real process on a loopback port, shared by the serve tests that need a socket."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serving(folder: Path, *options: str, env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen, str]]:
    """`polyembed serve` on a free loopback port, started and waited for; yields (process, base URL). Its output
    goes to pipes: a server that lives for many requests should run with --no-access-log. `env`: variables added
    to the server's environment."""
    import httpx

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "polyembed", "serve", "-m", str(folder), "--port", str(port), *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"server did not start: {server.stderr.read().decode()[-2000:]}")
            time.sleep(0.5)
        yield server, f"http://127.0.0.1:{port}"
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(timeout=30)
