"""The teacher's embedding store: encode each sentence once, keep it on disk, answer in input order."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from polyembed.models.embedding_cache import STORE_FILE, EmbeddingStore, encoder_fingerprint
from tests.conftest import HashingEncoder


class CountingEncoder:
    """Wraps an encoder and records every sentence it was asked to encode."""

    def __init__(self, inner: HashingEncoder) -> None:
        self.inner = inner
        self.name = inner.name
        self.seen: list[str] = []

    def encode(self, sentences: Sequence[str], **kwargs) -> np.ndarray:
        self.seen.extend(sentences)
        return self.inner.encode(sentences, **kwargs)


@pytest.fixture
def counting(hashing_encoder: HashingEncoder) -> CountingEncoder:
    return CountingEncoder(hashing_encoder)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache"))


def test_encodes_only_unseen_and_keeps_input_order(tmp_path: Path, counting: CountingEncoder) -> None:
    store = EmbeddingStore(counting, tmp_path / "store")
    first = store.embed(["a dog", "a cat", "a dog"], show_progress_bar=False)
    assert counting.seen == ["a dog", "a cat"]  # duplicates encoded once
    expected = counting.inner.encode(["a dog", "a cat", "a dog"])
    np.testing.assert_array_equal(first, expected)
    assert first.dtype == np.float32 and len(store) == 2 and "a cat" in store and "a cow" not in store

    second = store.embed(["a cow", "a cat", "a bird", "a cow"], show_progress_bar=False)
    assert counting.seen == ["a dog", "a cat", "a cow", "a bird"]
    np.testing.assert_array_equal(second, counting.inner.encode(["a cow", "a cat", "a bird", "a cow"]))
    assert len(store) == 4

    store.embed(["a bird", "a dog"], show_progress_bar=False)
    assert len(counting.seen) == 4  # nothing new
    assert store.embed([], show_progress_bar=False).shape[0] == 0


def test_persists_to_directory(tmp_path: Path, counting: CountingEncoder) -> None:
    directory = tmp_path / "store"
    sentences = ["Guten Morgen.", "Hello there.", "Wie geht's?"]
    first = EmbeddingStore(counting, directory)
    vectors = first.embed(sentences, show_progress_bar=False)
    first.close()
    assert (directory / STORE_FILE).is_file()

    fresh = CountingEncoder(counting.inner)
    reopened = EmbeddingStore(fresh, directory)
    assert len(reopened) == 3
    again = reopened.embed(list(reversed(sentences)), show_progress_bar=False)
    assert fresh.seen == [] and reopened.encoded == 0
    np.testing.assert_array_equal(again, vectors[::-1])
    reopened.embed(["Neu hier.", "Hello there."], show_progress_bar=False)
    assert fresh.seen == ["Neu hier."] and reopened.encoded == 1
    assert len(EmbeddingStore(fresh, directory)) == 4


def test_a_routed_encoder_is_keyed_by_language(tmp_path: Path, counting: CountingEncoder) -> None:
    counting.routes_by_language = True  # type: ignore[attr-defined]
    store = EmbeddingStore(counting, tmp_path / "store")
    store.embed(["Gift"], show_progress_bar=False, language="de")
    store.embed(["Gift"], show_progress_bar=False, language="en")  # same text, other route: encoded again
    store.embed(["Gift"], show_progress_bar=False, language="de")
    assert counting.seen == ["Gift", "Gift"] and len(store) == 2
    plain = EmbeddingStore(HashingEncoder(), tmp_path / "plain")  # not routed: the language is no part of the key
    plain.embed(["Gift"], show_progress_bar=False, language="de")
    plain.embed(["Gift"], show_progress_bar=False, language="en")
    assert plain.encoded == 1


def test_encode_stands_in_for_a_teacher(tmp_path: Path, counting: CountingEncoder) -> None:
    store = EmbeddingStore(counting, tmp_path / "store")
    out = store.encode(["one", "two", "one"], batch_size=8, show_progress_bar=False, convert_to_numpy=True)
    assert isinstance(out, np.ndarray) and out.shape == (3, counting.inner.dimension)
    np.testing.assert_array_equal(out[0], out[2])
    single = store.encode("two", convert_to_numpy=True)
    assert single.shape == (counting.inner.dimension,)
    np.testing.assert_array_equal(single, out[1])
    assert counting.seen == ["one", "two"]
    assert store.encode(("two", "one")).shape == (2, counting.inner.dimension)  # any sequence


def test_files_of_the_format_before_sqlite_are_ignored(tmp_path: Path, counting: CountingEncoder,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """`sentences.json` + `embeddings.npy` carry no checksums: never read, so never served (they used to be
    imported and to replace checksummed rows); their sentences are encoded as if they were not there."""
    caplog.set_level("INFO", logger="polyembed.models.embedding_cache")
    directory = tmp_path / "store"
    directory.mkdir()
    (directory / "sentences.json").write_text(json.dumps(["a", "b"]), encoding="utf-8")
    np.save(directory / "embeddings.npy", counting.inner.encode(["a", "b"]))
    store = EmbeddingStore(counting, directory)
    assert len(store) == 0 and "a" not in store
    assert store.embed(["b", "c"], show_progress_bar=False).shape == (2, counting.inner.dimension)
    assert counting.seen == ["b", "c"] and (directory / "sentences.json").exists()
    assert "sentences.json" in caplog.text and "ignored" in caplog.text


def test_planted_legacy_files_never_override_checksummed_rows(tmp_path: Path, counting: CountingEncoder) -> None:
    """The probe: legacy files with other vectors for sentences the store holds; the store's rows win."""
    directory = tmp_path / "store"
    sentences, vectors = _filled(directory, counting.inner, n=4)
    (directory / "sentences.json").write_text(json.dumps(sentences[::-1]), encoding="utf-8")
    np.save(directory / "embeddings.npy", vectors)  # each sentence paired with another one's vector
    store = EmbeddingStore(counting, directory)
    np.testing.assert_array_equal(store.embed(sentences, show_progress_bar=False), vectors)
    assert counting.seen == [] and store.encoded == 0


def test_default_directory_is_under_cache_by_fingerprint(tmp_path: Path, counting: CountingEncoder) -> None:
    store = EmbeddingStore(counting)
    assert store.directory == tmp_path / "cache" / "embeddings" / encoder_fingerprint(counting)
    store.embed(["x"], show_progress_bar=False)
    assert (store.directory / STORE_FILE).is_file()


def test_fingerprint_follows_name_and_weight_files(tmp_path: Path) -> None:
    assert encoder_fingerprint(HashingEncoder(name="a")) == encoder_fingerprint(HashingEncoder(name="a"))
    assert encoder_fingerprint(HashingEncoder(name="a")) != encoder_fingerprint(HashingEncoder(name="b"))

    model = tmp_path / "model"
    model.mkdir()
    weights = model / "model.safetensors"
    weights.write_bytes(b"\0" * 10)
    encoder = HashingEncoder(name="folder-model")
    encoder.path = str(model)  # type: ignore[attr-defined]
    before = encoder_fingerprint(encoder)
    assert len(before) == 16 and before != encoder_fingerprint(HashingEncoder(name="folder-model"))
    weights.write_bytes(b"\0" * 20)  # retrained: the weights change size
    assert encoder_fingerprint(encoder) != before


# ---- integrity (issue 32): a checksum per row, a readable file, the right encoder


def _filled(directory: Path, encoder, n: int = 60) -> tuple[list[str], np.ndarray]:
    sentences = [f"sentence number {i} of the store" for i in range(n)]
    store = EmbeddingStore(encoder, directory)
    vectors = store.embed(sentences, show_progress_bar=False)
    store.close()
    return sentences, vectors


def _overwrite_blobs_in_place(path: Path, vectors: np.ndarray) -> None:
    """Bytes of each vector replaced in the file itself, as bit rot or a stray write would: SQLite's own
    integrity check still passes (it does not read blob contents)."""
    import sqlite3

    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = bytearray(path.read_bytes())
    for vector in vectors:
        blob = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
        at = data.find(blob)
        assert at >= 0
        data[at : at + len(blob)] = np.full(len(vector), 0.5, dtype=np.float32).tobytes()
    path.write_bytes(bytes(data))
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_blobs_overwritten_in_place_are_recomputed_and_logged(tmp_path: Path, counting: CountingEncoder,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "store"
    sentences, vectors = _filled(directory, counting.inner)
    _overwrite_blobs_in_place(directory / STORE_FILE, vectors[:40])
    store = EmbeddingStore(counting, directory)
    again = store.embed(sentences, show_progress_bar=False)
    np.testing.assert_array_equal(again, vectors)  # never the corrupted bytes
    assert counting.seen == sentences[:40] and store.encoded == 40
    assert "40 stored embeddings failed their checksum" in caplog.text and str(directory / STORE_FILE) in caplog.text
    store.close()
    caplog.clear()
    repaired = EmbeddingStore(CountingEncoder(counting.inner), directory)  # the rows were replaced
    np.testing.assert_array_equal(repaired.embed(sentences, show_progress_bar=False), vectors)
    assert repaired.encoded == 0 and "checksum" not in caplog.text


def test_a_store_from_before_checksums_is_re_encoded_once(tmp_path: Path, counting: CountingEncoder) -> None:
    import sqlite3

    directory = tmp_path / "store"
    directory.mkdir()
    old = sqlite3.connect(directory / STORE_FILE)
    old.execute("CREATE TABLE embeddings (language TEXT NOT NULL, sentence TEXT NOT NULL, vector BLOB NOT NULL, "
                "PRIMARY KEY (language, sentence))")
    old.execute("INSERT INTO embeddings VALUES ('', 'a', ?)", [np.zeros(256, dtype=np.float32).tobytes()])
    old.commit()
    old.close()
    store = EmbeddingStore(counting, directory)
    np.testing.assert_array_equal(store.embed(["a"], show_progress_bar=False)[0], counting.inner.encode(["a"])[0])
    assert counting.seen == ["a"]
    store.embed(["a"], show_progress_bar=False)
    assert counting.seen == ["a"] and len(store) == 1


@pytest.mark.parametrize("damage", ["truncated", "random bytes"])
def test_an_unreadable_store_names_itself_and_how_to_rebuild(tmp_path: Path, counting: CountingEncoder,
                                                            damage: str) -> None:
    from polyembed.errors import PolyembedError

    directory = tmp_path / "store"
    sentences, _ = _filled(directory, counting.inner, n=300)
    import sqlite3

    sqlite3.connect(directory / STORE_FILE).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    path = directory / STORE_FILE
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    else:
        path.write_bytes(np.random.default_rng(0).bytes(path.stat().st_size))
    store = EmbeddingStore(counting, directory)
    with pytest.raises(PolyembedError, match=rf"{path}: not a readable embedding store .*delete the folder "
                                             rf"{directory} and run again to rebuild it"):
        store.embed(sentences, show_progress_bar=False)
    store.close()


def test_a_zero_byte_store_is_rebuilt(tmp_path: Path, counting: CountingEncoder) -> None:
    directory = tmp_path / "store"
    directory.mkdir()
    (directory / STORE_FILE).write_bytes(b"")
    assert EmbeddingStore(counting, directory).embed(["x"], show_progress_bar=False).shape == (1, 256)


def test_a_store_of_another_encoder_is_refused(tmp_path: Path) -> None:
    from polyembed.errors import PolyembedError

    _filled(tmp_path / "store", HashingEncoder(name="model-a"), n=3)
    with pytest.raises(PolyembedError, match="holds the embeddings of encoder 'model-a'.*not of 'model-b'"):
        len(EmbeddingStore(HashingEncoder(name="model-b"), tmp_path / "store"))


def test_a_folder_where_the_store_file_should_be_is_a_clear_error(tmp_path: Path, counting: CountingEncoder) -> None:
    from polyembed.errors import PolyembedError

    (tmp_path / "store" / STORE_FILE).mkdir(parents=True)
    with pytest.raises(PolyembedError, match=rf"^{tmp_path / 'store' / STORE_FILE}: is a folder, not an "
                                             "embedding store file"):
        EmbeddingStore(counting, tmp_path / "store").embed(["x"], show_progress_bar=False)
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(PolyembedError, match=rf"^{tmp_path / 'file'}: cannot be the embedding store's folder \(a "
                                             "file is in its place\)"):
        EmbeddingStore(counting, tmp_path / "file").embed(["x"], show_progress_bar=False)


def _chattr(flag: str, path: Path) -> bool:
    import subprocess

    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


def test_an_unwritable_store_is_a_clear_error(tmp_path: Path, counting: CountingEncoder) -> None:
    """An immutable store file (`chattr +i`, which binds root too): one error naming the file and what to do,
    not an sqlite3 traceback."""
    import sqlite3

    from polyembed.errors import PolyembedError

    directory = tmp_path / "store"
    sentences, _ = _filled(directory, counting.inner, n=3)
    sqlite3.connect(directory / STORE_FILE).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    if not _chattr("+i", directory / STORE_FILE):
        pytest.skip("chattr +i is not available here")
    try:
        store = EmbeddingStore(counting, directory)
        with pytest.raises(PolyembedError, match=rf"^{directory / STORE_FILE}: cannot use the embedding store "
                                                 r"\(attempt to write a readonly database\).*permissions"):
            store.embed([*sentences, "something new"], show_progress_bar=False)
        store.close()
    finally:
        _chattr("-i", directory / STORE_FILE)


def test_a_cache_folder_that_is_a_file_names_polyembed_cache(tmp_path: Path, counting: CountingEncoder,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from polyembed.models.cache import CacheDirError

    (tmp_path / "cache-file").write_text("x")
    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache-file"))
    with pytest.raises(CacheDirError, match=rf"cache folder {tmp_path / 'cache-file'} \(POLYEMBED_CACHE=.*\): "
                                            r"cannot use it \(it is a file, not a folder\)"):
        EmbeddingStore(counting)


def test_a_store_another_process_holds_is_waited_for_then_a_clear_error(tmp_path: Path, counting: CountingEncoder,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs sharing a store (a killed run and its rerun side by side) wait for each other's lock; a lock held
    past LOCK_WAIT is an error naming the store and what to do."""
    import sqlite3
    import threading

    from polyembed.models import embedding_cache

    store = EmbeddingStore(counting, tmp_path / "store")
    store.embed(["first"], show_progress_bar=False)
    other = sqlite3.connect(store.file, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")  # what another process's write transaction holds
    threading.Timer(0.5, other.rollback).start()
    second = EmbeddingStore(counting, tmp_path / "store")
    assert second.embed(["second"], show_progress_bar=False).shape == (1, 256)  # waited for the lock, then wrote
    assert len(second) == 2

    monkeypatch.setattr(embedding_cache, "LOCK_WAIT", 0.3)
    other.execute("BEGIN EXCLUSIVE")
    try:
        third = EmbeddingStore(counting, tmp_path / "store")
        with pytest.raises(embedding_cache.StoreError, match="another process kept the embedding store locked"):
            third.embed(["third"], show_progress_bar=False)
    finally:
        other.rollback()
        other.close()
