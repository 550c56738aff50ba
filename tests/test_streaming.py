"""Streaming encode into shards: same rows as in memory, offsets back to the text, resume, languages, errors."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest

import polyembed
from polyembed.errors import DataError, PolyembedError
from polyembed.streaming import MANIFEST_FILE, StreamOptions, encode_to_shards, load_shards
from tests.conftest import HashingEncoder
from tests.helpers import TRAINING_TEXTS


class RoutedHashingEncoder(HashingEncoder):
    """The hashing encoder as a routed model: records which language each call was for."""

    routes_by_language = True

    def __init__(self) -> None:
        super().__init__()
        self.languages_seen: list[str | None] = []

    def encode(self, sentences, language=None, *, batch_size=64, show_progress_bar=False):
        self.languages_seen.append(language)
        return super().encode(sentences, language, batch_size=batch_size)


class FailingEncoder(HashingEncoder):
    """Dies on its n-th call, like a run killed in the middle of a shard."""

    def __init__(self, fail_on_call: int) -> None:
        super().__init__()
        self.fail_on_call = fail_on_call

    def encode(self, sentences, language=None, *, batch_size=64, show_progress_bar=False):
        if len(self.calls) + 1 == self.fail_on_call:
            raise KeyboardInterrupt
        return super().encode(sentences, language, batch_size=batch_size)


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("".join(f"{text}\n" for text in TRAINING_TEXTS[:10]), encoding="utf-8")
    return path


def test_shards_hold_the_in_memory_rows_and_lead_back_to_the_text(tmp_path, corpus) -> None:
    encoder = HashingEncoder()
    result = encode_to_shards(encoder, corpus, tmp_path / "out", StreamOptions(shard_size=4, dtype="float32"),
                              show_progress=False)
    assert result.lines == 10 and result.shards == ["shard-00000", "shard-00001", "shard-00002"]
    assert encoder.calls == [4, 4, 2]  # one shard in memory at a time
    assert np.allclose(load_shards(tmp_path / "out"), polyembed.encode(encoder, TRAINING_TEXTS[:10]), atol=1e-6)
    offsets = np.load(tmp_path / "out" / "shard-00001.offsets.npy")
    with corpus.open("rb") as handle:
        handle.seek(int(offsets[1]))
        assert handle.readline().decode().rstrip("\n") == TRAINING_TEXTS[5]
    manifest = json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())
    assert manifest["lines"] == 10 and manifest["dimension"] == 256 and manifest["dtype"] == "float32"
    half = encode_to_shards(encoder, corpus, tmp_path / "half", StreamOptions(shard_size=4), show_progress=False)
    assert np.load(tmp_path / "half" / "shard-00000.npy").dtype == np.float16 and half.lines == 10


def test_a_killed_run_resumes_at_the_first_unfinished_shard(tmp_path, corpus) -> None:
    options = StreamOptions(shard_size=4, dtype="float32")
    with pytest.raises(KeyboardInterrupt):
        encode_to_shards(FailingEncoder(fail_on_call=2), corpus, tmp_path / "out", options, show_progress=False)
    assert (tmp_path / "out" / "shard-00000.npy").is_file() and not (tmp_path / "out" / MANIFEST_FILE).exists()
    assert not (tmp_path / "out" / "shard-00001.npy").exists()  # nothing half-written
    encoder = HashingEncoder()
    result = encode_to_shards(encoder, corpus, tmp_path / "out", options, show_progress=False)
    assert (result.encoded_shards, result.skipped_shards) == (2, 1) and encoder.calls == [4, 2]
    assert np.allclose(load_shards(tmp_path / "out"), polyembed.encode(encoder, TRAINING_TEXTS[:10]), atol=1e-6)
    with pytest.raises(PolyembedError, match="shard_size=4"):  # a rerun with other settings is refused
        encode_to_shards(encoder, corpus, tmp_path / "out", StreamOptions(shard_size=5, dtype="float32"))


def test_stdin_and_a_language_column_route_each_line(tmp_path, monkeypatch) -> None:
    rows = "de\tGuten Tag\nen\tGood day\nde\tDanke\neng\tThanks\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(rows.encode())))
    encoder = RoutedHashingEncoder()
    options = StreamOptions(shard_size=10, dtype="float32", language_column=1, text_column=2)
    result = encode_to_shards(encoder, "-", tmp_path / "out", options, show_progress=False)
    assert result.lines == 4 and encoder.languages_seen == ["de", "en"]  # one call per language, eng -> en
    assert (tmp_path / "out" / "shard-00000.languages.txt").read_text().split() == ["de", "en", "de", "en"]
    expected = polyembed.encode(HashingEncoder(), ["Guten Tag", "Good day", "Danke", "Thanks"])
    assert np.allclose(load_shards(tmp_path / "out"), expected, atol=1e-6)


@pytest.mark.parametrize(
    ("text", "options", "message"),
    [
        ("a\n\nb\n", {}, "corpus.txt:2: empty line"),
        ("de\tHallo\nxq1\tfoo\n", {"language_column": 1, "text_column": 2}, "corpus.txt:2: unknown language code"),
        ("de\tHallo\nfoo\n", {"language_column": 1, "text_column": 2}, "corpus.txt:2: 1 tab-separated columns"),
        ("ok\n\xff\n", {}, "corpus.txt:2: not valid UTF-8"),
    ],
)
def test_bad_lines_name_the_file_and_line(tmp_path, text, options, message) -> None:
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("latin-1") if "\xff" in text else text.encode())
    with pytest.raises(DataError, match=message):
        encode_to_shards(HashingEncoder(), path, tmp_path / "out", StreamOptions(**options), show_progress=False)


def test_bad_options_are_refused_in_the_callers_terms() -> None:
    """Python callers read argument names; the same options from flags read the flags."""
    from polyembed.config import build_config

    with pytest.raises(PolyembedError, match="^shard_size: 0 is out of range: expected a value >= 1"):
        StreamOptions(shard_size=0)
    with pytest.raises(PolyembedError, match="^language_column: language_column and text_column go together"):
        StreamOptions(language_column=1)
    with pytest.raises(PolyembedError, match="^dtype: expected one of float16, float32, got 'int8'"):
        StreamOptions(dtype="int8")  # type: ignore[arg-type]
    with pytest.raises(PolyembedError, match="^--shard-size: 0 is out of range"):
        build_config(StreamOptions, None, {"shard_size": 0})
    with pytest.raises(PolyembedError, match="^--text-column: the columns must differ \\(--language-column is 2"):
        build_config(StreamOptions, None, {"language_column": 2, "text_column": 2})


def test_two_worker_processes_write_the_same_shards(tmp_path, corpus) -> None:
    """The real command with --workers 2 on a tiny model: shards split between two processes, same rows."""
    from typer.testing import CliRunner

    from polyembed.cli import app
    from tests.helpers import tiny_sentence_transformer

    model = str(tiny_sentence_transformer(tmp_path / "tiny", seed=0))
    runner = CliRunner()
    common = ["encode", str(corpus), "-m", model, "--shard-size", "3", "--dtype", "float32"]
    one = runner.invoke(app, [*common, "-o", str(tmp_path / "one")])
    two = runner.invoke(app, [*common, "-o", str(tmp_path / "two"), "--workers", "2"])
    assert one.exit_code == 0 and two.exit_code == 0, (one.output, two.output)
    assert "10 lines in 4 shards (4 encoded, 0 already there)" in two.output
    assert np.allclose(load_shards(tmp_path / "one"), load_shards(tmp_path / "two"), atol=1e-5)


def test_ray_workers_write_the_same_shards_and_mine_the_same_pairs(tmp_path, corpus) -> None:
    """A 2-worker local Ray job gives the single-process rows, for `encode` and for `mine`'s encoding (the same
    code path scales to a cluster)."""
    ray = pytest.importorskip("ray")
    from polyembed.mining.bitext import mine_files
    from tests.helpers import tiny_sentence_transformer

    model = str(tiny_sentence_transformer(tmp_path / "tiny", seed=0))
    single = encode_to_shards(model, corpus, tmp_path / "one", StreamOptions(shard_size=3, dtype="float32"),
                              show_progress=False)
    target = tmp_path / "target.txt"
    target.write_text("".join(reversed(corpus.read_text(encoding="utf-8").splitlines(keepends=True))), "utf-8")
    mined_here = mine_files(model, corpus, target, tmp_path / "here.tsv")
    try:
        result = encode_to_shards(
            model, corpus, tmp_path / "ray", StreamOptions(shard_size=3, dtype="float32", workers=2, backend="ray"),
            show_progress=False,
        )
        mined_ray = mine_files(model, corpus, target, tmp_path / "ray.tsv", workers=2, backend="ray")
    finally:
        ray.shutdown()
    assert (result.encoded_shards, result.lines) == (4, 10) and result.shards == single.shards
    assert np.allclose(load_shards(tmp_path / "one"), load_shards(tmp_path / "ray"), atol=1e-5)
    assert mined_ray.pairs == mined_here.pairs == 10

    def pairs(path):
        return [line.split("\t", 1) for line in path.read_text(encoding="utf-8").splitlines()]

    here, there = pairs(tmp_path / "here.tsv"), pairs(tmp_path / "ray.tsv")
    assert [text for _, text in here] == [text for _, text in there]
    assert np.allclose([float(score) for score, _ in here], [float(score) for score, _ in there], atol=1e-4)


# ---- integrity: a kept shard must belong to the current input, intact, written by one run at a time


def _lines(path, texts) -> None:
    path.write_text("".join(f"{text}\n" for text in texts), encoding="utf-8")


def _fresh(tmp_path, texts, options) -> np.ndarray:
    """The rows of `texts` encoded into a new folder in one go (what any rerun must end up with)."""
    source = tmp_path / "fresh.txt"
    _lines(source, texts)
    folder = tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*')))}"
    encode_to_shards(HashingEncoder(), source, folder, options, show_progress=False)
    return load_shards(folder)


def test_an_input_edited_after_a_kill_re_encodes_the_changed_shards(tmp_path, corpus, caplog) -> None:
    """Row 1 of issue 32: shards of the old text are never mixed with the new text."""
    options = StreamOptions(shard_size=2, dtype="float32")
    with pytest.raises(KeyboardInterrupt):
        encode_to_shards(FailingEncoder(fail_on_call=4), corpus, tmp_path / "out", options, show_progress=False)
    edited = list(TRAINING_TEXTS[:10])
    edited[3] = "An edited line in the second shard."
    _lines(corpus, edited)
    encoder = HashingEncoder()
    result = encode_to_shards(encoder, corpus, tmp_path / "out", options, show_progress=False)
    assert (result.encoded_shards, result.skipped_shards) == (4, 1)  # shard 1 changed, shard 0 and 2 did not
    assert "shard-00001: written from other lines of the input; encoding it again" in caplog.text
    assert np.array_equal(load_shards(tmp_path / "out"), _fresh(tmp_path, edited, options))
    manifest = json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())
    assert manifest["input"]["path"] == str(corpus.resolve()) and manifest["input"]["size"] == corpus.stat().st_size
    assert len(manifest["input"]["blake2b"]) == 64 and set(manifest["checksums"]) == set(manifest["shards"])


def test_a_finished_folder_rerun_with_another_file_of_the_same_length_gets_its_vectors(tmp_path, corpus) -> None:
    """Row 2: the same line count is no proof of the same text."""
    options = StreamOptions(shard_size=4, dtype="float32")
    encode_to_shards(HashingEncoder(), corpus, tmp_path / "out", options, show_progress=False)
    other = tmp_path / "other.txt"
    texts = [f"a completely different sentence {i}" for i in range(10)]
    _lines(other, texts)
    result = encode_to_shards(HashingEncoder(), other, tmp_path / "out", options, show_progress=False)
    assert (result.encoded_shards, result.skipped_shards) == (3, 0)
    assert np.array_equal(load_shards(tmp_path / "out"), _fresh(tmp_path, texts, options))
    again = encode_to_shards(HashingEncoder(), other, tmp_path / "out", options, show_progress=False)
    assert (again.encoded_shards, again.skipped_shards) == (0, 3)  # unchanged input: nothing to redo


def test_a_shorter_input_leaves_no_stale_shards_and_other_files_alone(tmp_path) -> None:
    """Row 3: 30 lines, then 5 lines: the manifest, the shards and the rows all say 5."""
    options = StreamOptions(shard_size=2, dtype="float32")
    source = tmp_path / "in.txt"
    _lines(source, [f"line number {i}" for i in range(30)])
    encode_to_shards(HashingEncoder(), source, tmp_path / "out", options, show_progress=False)
    (tmp_path / "out" / "notes.txt").write_text("mine")
    (tmp_path / "out" / "shard-00099.npy.bak").write_text("mine too")
    _lines(source, [f"short {i}" for i in range(5)])
    result = encode_to_shards(HashingEncoder(), source, tmp_path / "out", options, show_progress=False)
    assert result.lines == 5 and result.shards == ["shard-00000", "shard-00001", "shard-00002"]
    assert sorted(p.name for p in (tmp_path / "out").glob("shard-*.npy")) == [
        "shard-00000.npy", "shard-00000.offsets.npy", "shard-00001.npy", "shard-00001.offsets.npy",
        "shard-00002.npy", "shard-00002.offsets.npy"]
    assert not list((tmp_path / "out").glob("shard-0001*")) and not list((tmp_path / "out").glob("shard-00003*"))
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
    assert (tmp_path / "out" / "shard-00099.npy.bak").read_text() == "mine too"
    assert np.array_equal(load_shards(tmp_path / "out"), _fresh(tmp_path, [f"short {i}" for i in range(5)], options))


def test_a_second_writer_is_refused_while_the_first_holds_the_folder(tmp_path, corpus) -> None:
    """Row 4: two runs into one folder cannot interleave their shards; a killed holder frees the folder."""
    import subprocess
    import time

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from polyembed.integrity import FolderLock; "
         "FolderLock(sys.argv[1]).acquire(); print('locked', flush=True); time.sleep(120)", str(tmp_path / "out")],
        stdout=subprocess.PIPE, text=True,
    )
    (tmp_path / "out").mkdir()
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(PolyembedError, match=rf"out: another polyembed run \(pid {holder.pid}\) is writing"):
            encode_to_shards(HashingEncoder(), corpus, tmp_path / "out", StreamOptions(shard_size=4),
                             show_progress=False)
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".polyembed.lock"]  # nothing written
    finally:
        holder.kill()  # SIGKILL: the kernel drops the lock with the process
        holder.wait()
    time.sleep(0.05)
    result = encode_to_shards(HashingEncoder(), corpus, tmp_path / "out", StreamOptions(shard_size=4),
                              show_progress=False)
    assert result.encoded_shards == 3 and not (tmp_path / "out" / ".polyembed.lock").exists()


def test_the_lock_refuses_a_second_holder_in_the_same_process(tmp_path) -> None:
    from polyembed.integrity import FolderLock

    tmp_path.joinpath("out").mkdir()
    with FolderLock(tmp_path / "out", "--output"), pytest.raises(PolyembedError, match="another polyembed run"):
        FolderLock(tmp_path / "out", "--output").acquire()
    with FolderLock(tmp_path / "out"):  # released: free again
        pass


@pytest.mark.parametrize("damaged", ["shard-00001.npy", "shard-00001.offsets.npy", "shard-00001.check.json"])
def test_a_zero_byte_shard_file_is_encoded_again(tmp_path, corpus, damaged) -> None:
    """Row 5: an empty file (a full disk, a copy cut short) is an unfinished shard, not an abort."""
    options = StreamOptions(shard_size=4, dtype="float32")
    encode_to_shards(HashingEncoder(), corpus, tmp_path / "out", options, show_progress=False)
    expected = load_shards(tmp_path / "out")
    (tmp_path / "out" / damaged).write_bytes(b"")
    if damaged.endswith(".npy"):  # the reader names the file instead of handing out rows
        with pytest.raises(DataError, match=rf"out/{damaged}: checksum mismatch"):
            load_shards(tmp_path / "out")
    else:  # the record is a resume aid: the manifest keeps the checksums, the rows are still right
        assert np.array_equal(load_shards(tmp_path / "out"), expected)
    result = encode_to_shards(HashingEncoder(), corpus, tmp_path / "out", options, show_progress=False)
    assert (result.encoded_shards, result.skipped_shards) == (1, 2)
    assert np.array_equal(load_shards(tmp_path / "out"), expected)


def test_an_overwritten_shard_body_fails_its_checksum(tmp_path, corpus, caplog) -> None:
    """Row 6: the .npy header is intact, the rows are NaN: the reader refuses, a rerun repairs."""
    options = StreamOptions(shard_size=4, dtype="float32")
    encode_to_shards(HashingEncoder(), corpus, tmp_path / "out", options, show_progress=False)
    expected = load_shards(tmp_path / "out")
    path = tmp_path / "out" / "shard-00002.npy"
    rows = np.load(path, mmap_mode="r+")
    rows[:] = np.nan
    rows.flush()
    del rows
    with pytest.raises(DataError, match="shard-00002.npy: checksum mismatch"):
        load_shards(tmp_path / "out")
    result = encode_to_shards(HashingEncoder(), corpus, tmp_path / "out", options, show_progress=False)
    assert (result.encoded_shards, result.skipped_shards) == (1, 2)
    assert "shard-00002.npy changed after it was written (checksum mismatch)" in caplog.text
    assert np.array_equal(load_shards(tmp_path / "out"), expected)


def test_other_language_options_re_encode_and_stale_languages_go(tmp_path) -> None:
    """The per-shard record holds the options too: a rerun without the language column rewrites every shard
    and removes the languages files that no longer belong to the rows."""
    source = tmp_path / "in.tsv"
    source.write_text("de\tGuten Tag\nen\tGood day\n", encoding="utf-8")
    tsv = StreamOptions(shard_size=10, dtype="float32", language_column=1, text_column=2)
    encode_to_shards(HashingEncoder(), source, tmp_path / "out", tsv, show_progress=False)
    assert (tmp_path / "out" / "shard-00000.languages.txt").is_file()
    plain = encode_to_shards(HashingEncoder(), source, tmp_path / "out", StreamOptions(shard_size=10, dtype="float32"),
                             show_progress=False)
    assert plain.encoded_shards == 1 and not (tmp_path / "out" / "shard-00000.languages.txt").exists()


KILLED_RUN = """
import sys, time
from polyembed.streaming import StreamOptions, encode_to_shards
from tests.conftest import HashingEncoder

class Slow(HashingEncoder):
    def encode(self, sentences, language=None, **kwargs):
        time.sleep(float(sys.argv[3]))
        return super().encode(sentences, language)

encode_to_shards(Slow(), sys.argv[1], sys.argv[2], StreamOptions(shard_size=3), show_progress=False)
"""


def test_a_run_killed_with_sigkill_resumes_to_byte_identical_files(tmp_path, corpus) -> None:
    """kill -9 between shards, then the same command: every file equals an uninterrupted run's, byte for byte."""
    import os
    import subprocess
    from pathlib import Path

    from tests.helpers import kill_after

    root = Path(__file__).resolve().parents[1]
    script = tmp_path / "run.py"
    script.write_text(KILLED_RUN)
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))  # the repo, then what was set
    run = subprocess.Popen([sys.executable, str(script), str(corpus), str(tmp_path / "killed"), "0.5"], cwd=root,
                           env={**os.environ, "PYTHONPATH": path})
    kill_after(run, tmp_path / "killed" / "shard-00001.check.json")
    assert not (tmp_path / "killed" / MANIFEST_FILE).exists()
    encode_to_shards(HashingEncoder(), corpus, tmp_path / "killed", StreamOptions(shard_size=3), show_progress=False)
    encode_to_shards(HashingEncoder(), corpus, tmp_path / "whole", StreamOptions(shard_size=3), show_progress=False)
    killed, whole = (sorted(p.name for p in (tmp_path / name).iterdir()) for name in ("killed", "whole"))
    assert killed == whole and "shard-00003.npy" in whole
    for name in whole:
        assert (tmp_path / "killed" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
