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


def test_bad_options_are_refused() -> None:
    with pytest.raises(PolyembedError, match="--shard-size"):
        StreamOptions(shard_size=0)
    with pytest.raises(PolyembedError, match="go together"):
        StreamOptions(language_column=1)
    with pytest.raises(PolyembedError, match="--dtype"):
        StreamOptions(dtype="int8")  # type: ignore[arg-type]


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
