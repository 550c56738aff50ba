"""Re-run the hostile-input cases as a careful user would: each case runs the installed `polyembed` command in a
scratch folder and checks what a user needs (nothing of theirs lost or replaced, one clear `error:` line with exit
2, memory bounded). Prints one row per case and stores them in results/bench/hostile/results.json.

    python -m benchmarks.hostile_inputs.run run [--cases S1 S2 ...]

The server's cases (streamed bodies, slow clients, header floods) live in `benchmarks.serve.run_hostile`; this script
covers the commands that read and write files.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common.results import RESULTS, machine, write_json
from benchmarks.common.script_cli import script_parser

OUT = RESULTS / "hostile"
POLYEMBED = [sys.executable, "-m", "polyembed"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
BITEXT = "".join(f"sentence number {i}\tSatz Nummer {i}\n" for i in range(30))


@dataclass
class Outcome:
    case: str
    held: bool
    observed: str


@dataclass
class Ran:
    code: int
    stderr: str
    seconds: float
    peak_mb: float | None


def polyembed(folder: Path, *args: str, timeout: int = 900, env: dict[str, str] | None = None) -> Ran:
    """The command as a user types it, with its wall time and peak memory (GNU time where it is installed)."""
    timer = ["/usr/bin/time", "-f", "peak_kb=%M"] if Path("/usr/bin/time").exists() else []
    started = time.perf_counter()
    done = subprocess.run([*timer, *POLYEMBED, *args], cwd=folder, env=env or ENV, capture_output=True, text=True,
                          timeout=timeout)
    seconds = time.perf_counter() - started
    lines = done.stderr.rstrip("\n").split("\n")
    peak = None
    if timer and lines and lines[-1].startswith("peak_kb="):
        peak = int(lines.pop()[len("peak_kb="):]) / 1024
        if lines and lines[-1].startswith("Command exited with non-zero status"):  # GNU time's own note
            lines.pop()
    return Ran(done.returncode, "\n".join(lines), seconds, peak)


def one_error_line(ran: Ran, expected: str) -> bool:
    """Exit 2, the last stderr line is the error and names `expected`, and no traceback."""
    last = ran.stderr.rstrip("\n").split("\n")[-1]
    return ran.code == 2 and last.startswith("error: ") and expected in last and "Traceback" not in ran.stderr


def _error(ran: Ran) -> str:
    return f"exit {ran.code}: {ran.stderr.rstrip().splitlines()[-1] if ran.stderr.strip() else '(no stderr)'}"


def _base_yaml(folder: Path) -> Path:
    (folder / "pairs.tsv").write_text(BITEXT, encoding="utf-8")
    path = folder / "base.yaml"
    path.write_text(f"languages: [de]\ndatasets: []\nparallel_files: ['de={folder}/pairs.tsv']\nmax_steps: 2\n"
                    "student: minilm-en\nteacher: minilm-en\neval_steps: 1\nbatch_size: 4\n", encoding="utf-8")
    return path


def case_s1(folder: Path) -> Outcome:
    proj = folder / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "thesis.txt").write_text("thesis\n")
    (proj / "config.yaml").write_text("port: 5432\n")
    ran = polyembed(folder, "train", "distill", "--config", str(_base_yaml(folder)), "--output-dir", str(proj),
                    "--overwrite")
    kept = (proj / "thesis.txt").read_text() == "thesis\n" and (proj / "src").is_dir() and (
        proj / "config.yaml").read_text() == "port: 5432\n"
    return Outcome("S1 train --overwrite into a folder with the user's config.yaml",
                   kept and one_error_line(ran, "not a polyembed run folder"), f"{_error(ran)}; files kept: {kept}")


def case_s2(folder: Path) -> Outcome:
    (folder / "good.txt").write_text("Hello world.\nA house.\n")
    target = folder / "fakenull"
    try:
        os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        kind = "character device"
    except PermissionError:  # not root: a FIFO stands in
        os.mkfifo(target)
        kind = "FIFO"
    ran = polyembed(folder, "encode", "good.txt", "-m", "minilm-en", "--language", "en", "-o", str(target))
    still = not target.is_file() and target.exists()
    return Outcome(f"S2 encode -o a {kind}", still and one_error_line(ran, f"is a {kind}"),
                   f"{_error(ran)}; still a {kind}: {still}")


def case_encode_replaces_user_file(folder: Path) -> Outcome:
    (folder / "good.txt").write_text("Hello world.\nA house.\n")
    (folder / "thesis.txt").write_text("thesis\n")
    ran = polyembed(folder, "encode", "good.txt", "-m", "minilm-en", "--language", "en", "-o", "thesis.txt")
    forced = polyembed(folder, "encode", "good.txt", "-m", "minilm-en", "--language", "en", "-o", "thesis.txt",
                       "--overwrite")
    kept = (folder / "thesis.txt").read_text() == "thesis\n"
    held = kept and one_error_line(ran, "exists; pass --overwrite") and one_error_line(forced, "did not write it")
    return Outcome("encode -o an existing user file (and with --overwrite)", held,
                   f"{_error(ran)} / {_error(forced)}; kept: {kept}")


def case_encode_fifo(folder: Path) -> Outcome:
    (folder / "good.txt").write_text("Hello world.\n")
    os.mkfifo(folder / "fifo")
    ran = polyembed(folder, "encode", "good.txt", "-m", "minilm-en", "--language", "en", "-o", "fifo")
    still = stat.S_ISFIFO(os.lstat(folder / "fifo").st_mode)
    return Outcome("encode -o a FIFO", still and one_error_line(ran, "is a FIFO"), f"{_error(ran)}; still: {still}")


def case_symlink_loop(folder: Path) -> Outcome:
    (folder / "good.txt").write_text("Hello world.\n")
    (folder / "loop").symlink_to(folder / "loop")
    ran = polyembed(folder, "encode", "good.txt", "-m", "me5-small", "-o", "loop")
    return Outcome("encode -o a symbolic-link loop (refused before the model loads)",
                   one_error_line(ran, "is a symbolic link") and ran.seconds < 30,
                   f"{_error(ran)} after {ran.seconds:.1f} s")


def _export(folder: Path, case: str) -> Outcome | None:
    """minilm-en exported into `folder`/exp, or the failed case's outcome when even that fails."""
    first = polyembed(folder, "export", "-m", "minilm-en", "-o", "exp")
    return None if first.code == 0 else Outcome(case, False, f"the first export: {_error(first)}")


def case_export_symlinked_subfolder(folder: Path) -> Outcome:
    failed = _export(folder, "export --overwrite with onnx/ a link out of the folder")
    if failed is not None:
        return failed
    outside = folder / "mine"
    outside.mkdir()
    (outside / "model.onnx").write_text("the user's file\n")
    shutil.rmtree(folder / "exp" / "onnx")
    (folder / "exp" / "onnx").symlink_to(outside)
    ran = polyembed(folder, "export", "-m", "minilm-en", "-o", "exp", "--overwrite")
    kept = (outside / "model.onnx").read_text() == "the user's file\n"
    return Outcome("export --overwrite with onnx/ a link out of the folder",
                   kept and one_error_line(ran, "is a symbolic link"), f"{_error(ran)}; user's file kept: {kept}")


def case_yaml_duplicate_key(folder: Path) -> Outcome:
    base = _base_yaml(folder)
    base.write_text(base.read_text() + f"output_dir: {folder}/a\noutput_dir: {folder}/b\n")
    ran = polyembed(folder, "train", "distill", "--config", str(base))
    return Outcome("YAML config with output_dir twice", one_error_line(ran, "output_dir: given twice"), _error(ran))


def case_yaml_nul(folder: Path) -> Outcome:
    base = _base_yaml(folder)
    base.write_text(base.read_text() + 'output_dir: "runs/a\\0b"\n')
    ran = polyembed(folder, "train", "distill", "--config", str(base))
    return Outcome("output_dir with a NUL byte", one_error_line(ran, "holds a NUL character"), _error(ran))


def case_shard_manifest(folder: Path) -> Outcome:
    (folder / "good.txt").write_text("Hello world.\n")
    (folder / "shards").mkdir()
    (folder / "shards" / "manifest.json").write_text("[1,2]")
    ran = polyembed(folder, "encode", "good.txt", "-m", "minilm-en", "--language", "en", "--shard-size", "1", "-o",
                    "shards")
    kept = (folder / "shards" / "manifest.json").read_text() == "[1,2]"
    return Outcome("encode --shard-size into a folder with a user manifest.json [1,2]",
                   kept and one_error_line(ran, "not a polyembed shard manifest"), f"{_error(ran)}; kept: {kept}")


def case_model_card_rows(folder: Path) -> Outcome:
    """A hand-edited card: the evaluation's rows are written anew, the report stays, no traceback."""
    model = folder / "student"
    train = polyembed(folder, "train", "distill", "--config", str(_base_yaml(folder)), "--output-dir", str(model))
    card = model / "model" / "README.md"
    if train.code != 0 or not card.is_file():
        return Outcome("eval onto a hand-edited model card", False, f"training {_error(train)}")
    head, rest = card.read_text(encoding="utf-8").split("<!-- polyembed-eval:start -->", 1)
    tail = rest.split("<!-- polyembed-eval:end -->", 1)[1]
    card.write_text(f'{head}<!-- polyembed-eval:start -->\n<!-- rows: [{{"task": 1}}, 7, "x", {{"metric": "m"}}] -->\n'
                    f"| hand | edited |\n<!-- polyembed-eval:end -->{tail}", encoding="utf-8")
    ran = polyembed(folder, "eval", "-m", str(model / "model"), "--tasks", "sts17", "--languages", "en-en",
                    "--out", "report")
    fine = ran.code == 0 and "Traceback" not in ran.stderr and (folder / "report" / "results.json").is_file()
    return Outcome("eval onto a hand-edited model card", fine, f"exit {ran.code}; report written: {fine}")


def case_huge_line(folder: Path) -> Outcome:
    """One 50 MB line: the model keeps its first tokens, so memory must not grow with the line."""
    words = ("alpha", "beta", "gamma", "delta", "epsilon")
    line = " ".join(words[i % 5] for i in range(8_500_000))[:50_000_000]
    (folder / "huge.txt").write_text(line + "\n")
    ran = polyembed(folder, "encode", "huge.txt", "-m", "me5-small", "--language", "en", "-o", "v.npy")
    shards = polyembed(folder, "encode", "huge.txt", "-m", "me5-small", "--language", "en", "--shard-size", "1",
                       "-o", "shards")
    peaks = [ran.peak_mb, shards.peak_mb]
    held = ran.code == 0 and shards.code == 0 and all(peak is not None and peak < 2048 for peak in peaks)
    return Outcome("encode a 50 MB line (.npy and --shard-size 1), peak memory", held,
                   f"exit {ran.code} / {shards.code}; peak {peaks[0]:.0f} / {peaks[1]:.0f} MB" if None not in peaks
                   else f"exit {ran.code} / {shards.code}")


def _scratch_cache(folder: Path) -> dict[str, str]:
    """An environment whose POLYEMBED_CACHE is a copy of the real one's converted me5-small (mtimes kept)."""
    cache = folder / "cache"
    cache.mkdir()
    real = Path(os.environ.get("POLYEMBED_CACHE") or Path.home() / ".cache" / "polyembed")
    shutil.copytree(real / "me5-small-v1", cache / "me5-small-v1", copy_function=shutil.copy2)
    return {**ENV, "POLYEMBED_CACHE": str(cache)}


def case_me5_damaged(folder: Path) -> Outcome:
    """A bit flipped in the converted me5-small (mtime kept) and a truncated one: doctor names it, a load of the
    truncated copy is refused, `models prepare` converts it again."""
    env = _scratch_cache(folder)
    weights = next((Path(env["POLYEMBED_CACHE"]) / "me5-small-v1").glob("*.safetensors"))
    info = weights.stat()
    with weights.open("r+b") as handle:
        handle.seek(info.st_size // 2)
        byte = handle.read(1)
        handle.seek(info.st_size // 2)
        handle.write(bytes([byte[0] ^ 1]))
    os.utime(weights, ns=(info.st_atime_ns, info.st_mtime_ns))
    doctor = polyembed(folder, "doctor", env=env)
    flipped = doctor.code != 0 and "damaged" in doctor_out(folder, env)
    with weights.open("r+b") as handle:
        handle.truncate(info.st_size // 3)
    (folder / "good.txt").write_text("Hello world.\n")
    load = polyembed(folder, "encode", "good.txt", "-m", "me5-small", "--language", "en", "-o", "v.npy", env=env)
    prepare = polyembed(folder, "models", "prepare", "me5-small", env=env)
    again = polyembed(folder, "encode", "good.txt", "-m", "me5-small", "--language", "en", "-o", "v.npy", env=env)
    held = flipped and one_error_line(load, "models prepare me5-small") and prepare.code == 0 and again.code == 0
    return Outcome("converted me5-small bit-flipped (doctor) and truncated (load, then models prepare)", held,
                   f"doctor flags it: {flipped}; load {_error(load)}; prepare exit {prepare.code}; encode after it "
                   f"exit {again.code}")


def doctor_out(folder: Path, env: dict[str, str]) -> str:
    done = subprocess.run([*POLYEMBED, "doctor"], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    return done.stdout + done.stderr


def case_cache_is_a_file(folder: Path) -> Outcome:
    (folder / "not-a-folder").write_text("x")
    (folder / "good.txt").write_text("Hello world.\n")
    env = {**ENV, "POLYEMBED_CACHE": str(folder / "not-a-folder")}
    report = doctor_out(folder, env)
    doctor = polyembed(folder, "doctor", env=env)
    load = polyembed(folder, "encode", "good.txt", "-m", "me5-small", "--language", "en", "-o", "v.npy", env=env)
    reported = "python" in report and "not usable" in report and "Traceback" not in report
    held = reported and doctor.code == 1 and one_error_line(load, "POLYEMBED_CACHE")
    return Outcome("POLYEMBED_CACHE pointing at a file (doctor, encode)", held,
                   f"doctor exit {doctor.code}, full report: {reported}; encode {_error(load)}")


def case_export_without_record(folder: Path) -> Outcome:
    """An export copied without its dot-files (`cp -r exp/* exp2/`), a part of its graph zeroed."""
    failed = _export(folder, "export copied without its record, graph damaged")
    if failed is not None:
        return failed
    copy = folder / "exp2"
    copy.mkdir()
    for item in (folder / "exp").iterdir():
        if not item.name.startswith("."):
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, copy / item.name)
    graph = next(copy.rglob("*.onnx"))
    with graph.open("r+b") as handle:
        handle.seek(graph.stat().st_size // 2)
        handle.write(bytes(4096))
    (folder / "good.txt").write_text("Hello world.\n")
    ran = polyembed(folder, "encode", "good.txt", "-m", str(copy), "--language", "en", "-o", "v.npy")
    return Outcome("export copied without its record, graph damaged", one_error_line(ran, ".polyembed-outputs.json"),
                   _error(ran))


def case_store_legacy_files(folder: Path) -> Outcome:
    """Legacy sentences.json + embeddings.npy planted in the embedding store must not override its rows."""
    env = {**ENV, "POLYEMBED_CACHE": str(folder / "cache")}
    (folder / "a.txt").write_text("the house is red\nthe cat sleeps\n")
    (folder / "b.txt").write_text("das Haus ist rot\ndie Katze schläft\n")
    args = ["mine", "a.txt", "b.txt", "-m", "minilm-en", "--cache", "--overwrite"]
    first = polyembed(folder, *args, "-o", "p1.tsv", env=env)
    store = next((folder / "cache" / "embeddings").iterdir())
    (store / "sentences.json").write_text('[["en", "the house is red"], ["en", "the cat sleeps"]]')
    import numpy as np

    np.save(store / "embeddings.npy", np.ones((2, 384), dtype=np.float32))
    second = polyembed(folder, *args, "-o", "p2.tsv", env=env)
    (store / "store.sqlite").unlink()
    (store / "store.sqlite").mkdir()
    third = polyembed(folder, *args, "-o", "p3.tsv", env=env)
    same = first.code == second.code == 0 and (folder / "p1.tsv").read_text() == (folder / "p2.tsv").read_text()
    held = same and one_error_line(third, "store.sqlite")
    return Outcome("embedding store: planted legacy files, then the store a folder", held,
                   f"same pairs with the planted files: {same}; store a folder: {_error(third)}")


CASES: dict[str, Callable[[Path], Outcome]] = {
    "S1": case_s1, "S2": case_s2, "encode-user-file": case_encode_replaces_user_file, "encode-fifo": case_encode_fifo,
    "symlink-loop": case_symlink_loop, "export-symlinked-subfolder": case_export_symlinked_subfolder,
    "yaml-duplicate-key": case_yaml_duplicate_key, "yaml-nul": case_yaml_nul, "shard-manifest": case_shard_manifest,
    "model-card-rows": case_model_card_rows, "huge-line": case_huge_line, "me5-damaged": case_me5_damaged,
    "cache-is-a-file": case_cache_is_a_file, "export-without-record": case_export_without_record,
    "store-legacy-files": case_store_legacy_files,
}


def run(names: list[str]) -> list[Outcome]:
    outcomes = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"hostile-{name}-") as scratch:
            outcome = CASES[name](Path(scratch))
        print(f"| {outcome.case} | {'holds' if outcome.held else 'FAILS'} | {outcome.observed} |", flush=True)
        outcomes.append(outcome)
    return outcomes


def main() -> None:
    parser, commands = script_parser(__doc__)
    runner = commands.add_parser("run", help="Run the cases and store their outcomes.")
    runner.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    args = parser.parse_args()
    print("| case | outcome | observed |\n|---|---|---|", flush=True)
    outcomes = run(args.cases)
    write_json(OUT / "results.json", {"machine": machine(), "cases": [outcome.__dict__ for outcome in outcomes]})
    held = sum(outcome.held for outcome in outcomes)
    print(f"{held} of {len(outcomes)} cases hold; stored in {OUT / 'results.json'}")
    print(json.dumps(machine()))


if __name__ == "__main__":
    main()
