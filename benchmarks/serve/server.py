"""The servers under load: polyembed serve or Infinity, started on the server's core with one thread (held there by a
cpuset cgroup where the machine lets us make one, else by `taskset`), ready before the load starts and stopped
after; the sentences every server gets; and the model folder Infinity loads."""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.serve.spec import ONE_THREAD, OUT, PORT, SERVER_CORE

CPUSET = Path("/sys/fs/cgroup/cpuset/polyembed-serve-bench")
"""A cgroup (v1 cpuset) holding the server's core only, where the machine lets us make one: `taskset` sets an
affinity the process may widen again, and onnxruntime does by default (a thread pinned to each physical core)."""


def sentences(count: int) -> list[str]:
    """STS-B test sentences of ordinary length (8-30 words), the same for every server, in SENTENCE_ORDER."""
    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root

    rows = (get_dataset("stsbenchmark").path(data_root()) / "sts-test.csv").read_text(encoding="utf-8").splitlines()
    texts = [row.split("\t")[5] for row in rows if row.count("\t") >= 6]
    picked = [t for t in texts if 8 <= len(t.split()) <= 30][:count]
    random.Random(0).shuffle(picked)
    return picked


def _server_cpuset() -> Path | None:
    """CPUSET, made with the server's core where cgroup v1's cpuset is mounted writable; None elsewhere."""
    try:
        CPUSET.mkdir(exist_ok=True)
        (CPUSET / "cpuset.cpus").write_text(SERVER_CORE)
        (CPUSET / "cpuset.mems").write_text((CPUSET.parent / "cpuset.mems").read_text().strip())
    except OSError:
        return None
    return CPUSET


def on_server_core(command: list[str]) -> list[str]:
    """`command` held to the server's core: inside `_server_cpuset` (no thread it starts can leave the core)
    where there is one, else by `taskset` alone."""
    cpuset = _server_cpuset()
    if cpuset is None:
        return ["taskset", "-c", SERVER_CORE, *command]
    return ["sh", "-c", f'echo $$ > {cpuset / "cgroup.procs"} && exec taskset -c {SERVER_CORE} "$@"', "sh", *command]


def isolation() -> str:
    """How the server is held to its core (recorded with each entry)."""
    return "cpuset" if _server_cpuset() is not None else "taskset"


def _wait_ready(process: subprocess.Popen, url: str, seconds: float = 600) -> None:
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}): {process.stderr.read().decode()[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(1)
    raise SystemExit(f"no ready answer from {url} within {seconds:.0f} s")


def _server_command(kind: str, model: str, setting: str, infinity: Path | None,
                    options: tuple[str, ...] = ()) -> tuple[list[str], str, str, str | None]:
    """(command, embeddings URL, readiness URL, working folder) of one server. Neither writes a line per request
    (uvicorn's access log), whose formatting and writing would take time from encoding on the one core. Infinity
    starts inside its model folder with the model id ".": its optimum engine names the ONNX file by the path it
    globbed, and the optimum-onnx it installs with finds only a path relative to the model folder."""
    base = f"http://127.0.0.1:{PORT}"
    if kind == "polyembed":
        return ([sys.executable, "-m", "polyembed", "serve", "-m", model, "--backend", setting, "--port", str(PORT),
                 "--no-access-log", *options],
                f"{base}/v1/embeddings", f"{base}/ready", None)
    path = _infinity_model(model, with_onnx=setting == "optimum")
    assert infinity is not None
    return ([str(infinity / "bin" / "infinity_emb"), "v2", "--model-id", ".", "--served-model-name", model,
             "--engine", setting, "--device", "cpu", "--batch-size", "64", "--port", str(PORT),
             "--log-level", "warning"],
            f"{base}/embeddings", f"{base}/health", path)


def default_prompt(model: str) -> str:
    """The text the model prepends by default ("query: " for e5). Infinity applies no prompt, so its requests carry
    it: both servers then embed the same token sequence, and Infinity's vectors are the model's."""
    from polyembed.models.backends import load_with_backend

    return load_with_backend(model, "torch").prompt  # a sentence-transformers model's own metadata


def _infinity_model(model: str, with_onnx: bool) -> str:
    """The model folder Infinity loads. Its optimum engine runs an ONNX file from the folder and does not export
    one, preferring a file named '*quantize*' on CPU: it gets polyembed's own export (fp32 as model.onnx, int8 as
    model_quantized.onnx, at the top: optimum-onnx matches the bare file name against the path Infinity found),
    so both servers run the same int8 graph on onnxruntime."""
    from polyembed.models.backends import load_with_backend
    from polyembed.models.loading import resolve_model_path
    from polyembed.models.onnx_export import FP32_FILE, INT8_FILE

    path, _ = resolve_model_path(model)
    modern = "sentence_transformers.base" in (Path(path) / "modules.json").read_text(encoding="utf-8")
    if not with_onnx and not modern:
        return path
    folder = OUT / "infinity-models" / model
    folder.mkdir(parents=True, exist_ok=True)
    rewritten = _classic_module_files(Path(path)) if modern else {}
    replaced = {name.split("/")[0] for name in rewritten}
    for item in Path(path).iterdir():
        link = folder / item.name
        if item.name in replaced or link.exists() or link.is_symlink() or item.suffix == ".onnx":
            continue
        link.symlink_to(item.resolve())
    for name, text in rewritten.items():  # real files: never written through a link into the model itself
        for part in (folder / name.split("/")[0], folder / name):
            if part.is_symlink():
                part.unlink()
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    if not with_onnx:
        return str(folder)
    export = Path(load_with_backend(model, "onnx").path)
    for source, name in ((FP32_FILE, "model.onnx"), (INT8_FILE, "model_quantized.onnx")):
        link = folder / name
        if not link.exists():
            link.symlink_to(export / source)
    return str(folder)


def _classic_module_files(path: Path) -> dict[str, str]:
    """The module files of a folder saved by sentence-transformers 6, rewritten as sentence-transformers 3 (which
    Infinity needs) reads them: classic module paths, and each module's config under its old keys. Same weights,
    same pooling; Infinity applies no prompt either way."""
    classic = {"Transformer": "sentence_transformers.models.Transformer",
               "Pooling": "sentence_transformers.models.Pooling",
               "Normalize": "sentence_transformers.models.Normalize"}
    modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
    for module in modules:
        module["type"] = classic[module["type"].rsplit(".", 1)[-1]]
    pooling = json.loads((path / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    mode = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens"}
    tokenizer = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
    if tokenizer.get("tokenizer_class") == "TokenizersBackend":  # transformers 5's name for a tokenizer.json
        tokenizer["tokenizer_class"] = "PreTrainedTokenizerFast"
    return {"modules.json": json.dumps(modules, indent=2), "tokenizer_config.json": json.dumps(tokenizer),
            "sentence_bert_config.json": json.dumps({"max_seq_length": 512, "do_lower_case": False}),
            "1_Pooling/config.json": json.dumps({"word_embedding_dimension": pooling["embedding_dimension"],
                                                 mode[pooling["pooling_mode"]]: True,
                                                 "include_prompt": pooling.get("include_prompt", True)})}


class Server:
    """A server on the server's core with one thread; `restart` gives a fresh process (a server that queued
    without bound through the grid's overloaded rates would otherwise still be working for clients that gave up)."""

    def __init__(self, kind: str, model: str, setting: str, infinity: Path | None, options: tuple[str, ...]) -> None:
        self.command, self.url, self.ready, self.folder = _server_command(kind, model, setting, infinity, options)
        self.label = f"{kind} {model} {setting}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        print(f"{self.label}: starting", flush=True)
        self.process = subprocess.Popen(on_server_core(self.command), stdout=subprocess.DEVNULL,
                                        cwd=self.folder, stderr=subprocess.PIPE, env={**os.environ, **ONE_THREAD})
        _wait_ready(self.process, self.ready)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def running(kind: str, model: str, setting: str, infinity: Path | None,
             options: tuple[str, ...] = ()) -> Iterator[Server]:
    """A started, ready server; stopped after."""
    server = Server(kind, model, setting, infinity, options)
    try:
        server.start()
        yield server
    finally:
        server.stop()
