"""Mining at scale: the index chosen by pool size, approximate indexes against exact search, the sharded search
against the in-memory one (bit for bit with the flat index), a restart after a kill, memory-mapped inputs, the
line reader against `read_lines`, and bad options named by their flag."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from polyembed.errors import DataError, PolyembedError
from polyembed.mining import search
from polyembed.mining.bitext import mine_files
from polyembed.mining.index import COMPRESSED_LIMIT, EXACT_SEARCH_LIMIT, IndexChoice, choose_index
from polyembed.mining.margin import mine
from polyembed.mining.search import IndexSpec, mine_vectors
from polyembed.mining.vectors import open_vectors

FLAT = IndexSpec(IndexChoice(None, None), "flat")


def _planted(tmp_path: Path, n: int, dim: int, noise: float = 0.1, seed: int = 0, extra: int = 0) -> np.ndarray:
    """src/tgt .txt and .npy where target perm[i] is a noisy copy of source i (its translation); `extra` target
    rows have no translation. Returns perm."""
    rng = np.random.default_rng(seed)
    source = rng.standard_normal((n, dim)).astype(np.float32)
    perm = rng.permutation(n + extra)[:n]
    target = rng.standard_normal((n + extra, dim)).astype(np.float32)
    target[perm] = source + noise * rng.standard_normal((n, dim)).astype(np.float32)
    (tmp_path / "src.txt").write_text("".join(f"source {i}\n" for i in range(n)), encoding="utf-8")
    (tmp_path / "tgt.txt").write_text("".join(f"target {j}\n" for j in range(n + extra)), encoding="utf-8")
    np.save(tmp_path / "src.npy", source)
    np.save(tmp_path / "tgt.npy", target)
    return perm


def _mine(tmp_path: Path, output: str = "out.tsv", **options: object) -> tuple[object, list[list[str]]]:
    result = mine_files("no-such-model", tmp_path / "src.txt", tmp_path / "tgt.txt", tmp_path / output,
                        source_embeddings=tmp_path / "src.npy", target_embeddings=tmp_path / "tgt.npy",
                        overwrite=True, show_progress=False, **options)
    rows = [line.split("\t") for line in (tmp_path / output).read_text(encoding="utf-8").splitlines()]
    return result, rows


def _pairs(rows: list[list[str]]) -> set[tuple[int, int]]:
    return {(int(src.split()[1]), int(tgt.split()[1])) for _, src, tgt in rows}


def test_auto_chooses_exact_ivf_sq8_or_pq_by_each_sides_size() -> None:
    assert choose_index(EXACT_SEARCH_LIMIT, dimension=384).factory is None
    plenty, little = 10**12, 10**9  # bytes of memory available
    assert choose_index(1_000_000, dimension=384, memory=plenty) == IndexChoice("IVF4000,Flat", "nprobe=16")
    assert choose_index(1_000_000, dimension=384, memory=little) == IndexChoice("IVF4000,SQ8", "nprobe=16")
    assert choose_index(COMPRESSED_LIMIT, dimension=384, memory=plenty) == IndexChoice("OPQ64,IVF8000,PQ64",
                                                                                       "nprobe=64")
    assert choose_index(10_000_000, dimension=312).factory == "OPQ24,IVF12649,PQ24"  # 24 divides 312, 64 does not
    assert choose_index(3000, "pq", dimension=64) == IndexChoice("IVF76,PQ64x6", "nprobe=64")  # too few rows
    assert choose_index(9984, "pq", dimension=64) == IndexChoice("OPQ64,IVF256,PQ64", "nprobe=64")  # for 8 bits
    assert choose_index(3000, "ivf-sq8").factory == "IVF76,SQ8"
    assert choose_index(10, "IVF8,PQ4") == IndexChoice("IVF8,PQ4", None)


def test_each_side_gets_the_index_of_its_own_size(tmp_path: Path) -> None:
    _planted(tmp_path, n=200, dim=16, extra=EXACT_SEARCH_LIMIT)  # the target side is past the exact limit
    result, rows = _mine(tmp_path, mode="forward")
    assert result.index.endswith("over the target, exact flat over the source") and "IVF" in result.index
    assert len(rows) == 200


@pytest.mark.parametrize(("kind", "n", "dim"), [
    ("ivf", 3000, 32), ("ivf-sq8", 3000, 32), ("pq", 3000, 16), ("IVF16,PQ8x4", 3000, 32),
    pytest.param("pq", 10_000, 16, marks=pytest.mark.slow)])  # OPQ trains for minutes on a busy 2-core machine
def test_approximate_indexes_find_the_pairs_exact_search_finds(tmp_path: Path, kind: str, n: int, dim: int) -> None:
    """An easy planted set: every index mines exactly the pairs the flat index mines (pq: 6-bit codes without OPQ
    on 3,000 rows, OPQ + 8-bit codes on 10,000)."""
    perm = _planted(tmp_path, n=n, dim=dim)
    _, exact = _mine(tmp_path, "exact.tsv", index="flat")
    assert _pairs(exact) == {(i, int(perm[i])) for i in range(n)}
    parameters = {"search_parameters": "nprobe=8"} if kind.startswith("IVF16") else {}
    result, approximate = _mine(tmp_path, index=kind, **parameters)
    assert _pairs(approximate) == _pairs(exact)
    expected = "IVF16,PQ8x4" if kind.startswith("IVF16") else choose_index(n, kind, dimension=dim).factory
    assert result.index.startswith(f"{expected} (") and ("OPQ" in expected) == (n == 10_000 and kind == "pq")


def test_candidates_are_rescored_with_exact_cosines(tmp_path: Path) -> None:
    """4-bit PQ codes estimate similarities coarsely: the search returns each candidate's exact cosine, best
    first; probing every cell of an IVF-Flat index finds the exact index's neighbours."""
    _planted(tmp_path, n=1000, dim=32, noise=0.8)
    queries, database = (open_vectors(tmp_path / name, 1000, name) for name in ("src.npy", "tgt.npy"))
    cosines = queries.block(0, 1000) @ database.block(0, 1000).T
    pq = IndexSpec(IndexChoice("IVF4,PQ8x4", "nprobe=4"), "IVF4,PQ8x4")
    sims, ids = search.search(queries, database, 3, pq, work=None, direction="forward", side="target",
                              show_progress=False)
    np.testing.assert_allclose(sims, np.take_along_axis(cosines, ids, axis=1), atol=1e-6)
    assert (np.diff(sims, axis=1) <= 0).all()
    flat = IndexSpec(IndexChoice("IVF4,Flat", "nprobe=4"), "IVF4,Flat")
    exact_sims, exact_ids = search.search(queries, database, 3, FLAT, work=None, direction="forward",
                                          side="target", show_progress=False)
    sims, ids = search.search(queries, database, 3, flat, work=None, direction="forward", side="target",
                              show_progress=False)
    np.testing.assert_array_equal(ids, exact_ids)
    np.testing.assert_allclose(sims, exact_sims, atol=1e-6)


@pytest.mark.parametrize(("n", "dim", "mode", "margin"), [
    (9000, 16, "max", "ratio"), (300, 24, "intersect", "distance"), (5000, 96, "forward", "ratio")])
def test_the_sharded_flat_search_mines_bit_for_bit_what_the_in_memory_one_does(
        tmp_path: Path, n: int, dim: int, mode: str, margin: str) -> None:
    """Shards of 4096 queries (three for 9,000 rows), memory-mapped float16 and float32 inputs: the pairs and the
    scores (not only their rounding in the TSV) are those of `polyembed.mining.margin.mine`."""
    _planted(tmp_path, n=n, dim=dim, noise=0.8, extra=7)
    source, target = np.load(tmp_path / "src.npy"), np.load(tmp_path / "tgt.npy")
    np.save(tmp_path / "src16.npy", source.astype(np.float16))
    for name in ("src.npy", "src16.npy"):
        reference = mine(np.load(tmp_path / name).astype(np.float32), target, 4, margin, mode)
        src, tgt, score = mine_vectors(open_vectors(tmp_path / name, n, "src.txt"),
                                       open_vectors(tmp_path / "tgt.npy", n + 7, "tgt.txt"), k=4, margin=margin,
                                       mode=mode, threshold=None, forward=FLAT, backward=FLAT, shard_size=1,
                                       show_progress=False)
        assert src.tolist() == [p.source for p in reference] and tgt.tolist() == [p.target for p in reference]
        assert score.tolist() == [p.score for p in reference]  # bit for bit


def test_a_killed_run_restarts_at_the_next_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Three shards per direction; the run dies after saving two. The same call searches the four others only,
    writes the TSV of an uninterrupted run and removes its work folder."""
    _planted(tmp_path, n=9000, dim=16, noise=0.5)
    _, uninterrupted = _mine(tmp_path, "whole.tsv", index="ivf", shard_size=4096)
    saved = search.SearchWork.save_result

    class Killed(BaseException):
        """Stands for SIGKILL: nothing of the run's own cleanup may treat it as an error to recover from."""

    def dies_after_two(self: search.SearchWork, *args: object) -> None:
        if len(list(self.folder.glob("*.npz"))) == 2:
            raise Killed
        saved(self, *args)

    monkeypatch.setattr(search.SearchWork, "save_result", dies_after_two)
    with pytest.raises(Killed):
        _mine(tmp_path, index="ivf", shard_size=4096)
    work = tmp_path / "out.tsv.work"
    assert sorted(p.name for p in work.iterdir()) == ["forward-00000.npz", "forward-00001.npz", "index-target.faiss",
                                                      "job.json"]
    assert not (tmp_path / "out.tsv").exists()
    (work / ".forward-00002.npz.k1ll3d.tmp").write_bytes(b"half a shard")  # killed while writing the third
    searched: list[tuple[str, int]] = []

    def counted(self: search.SearchWork, direction: str, shard: int, *args: object) -> None:
        searched.append((direction, shard))
        saved(self, direction, shard, *args)

    monkeypatch.setattr(search.SearchWork, "save_result", counted)
    trained: list[str] = []
    monkeypatch.setattr(search, "sample_rows", lambda *args: trained.append("again") or np.arange(args[0]))
    with caplog.at_level(logging.INFO, logger="polyembed.mining.search"):
        _, resumed = _mine(tmp_path, index="ivf", shard_size=4096)
    assert searched == [("forward", 2), ("backward", 0), ("backward", 1), ("backward", 2)]
    assert trained == ["again"]  # the source side's index only: the target's was read back
    assert "2 of 3 forward shards already searched" in caplog.text
    assert resumed == uninterrupted and not work.exists()


def test_results_of_other_options_are_searched_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    _planted(tmp_path, n=300, dim=16)
    work = tmp_path / "out.tsv.work"
    work.mkdir()
    (work / "job.json").write_text('{"k": 9}\n')
    (work / "forward-00000.npz").write_bytes(b"not ours any more")
    (work / "notes.txt").write_text("the user's\n")
    _, rows = _mine(tmp_path)
    assert "neighbours found for other inputs or options; searching again" in caplog.text
    assert len(rows) == 300 and sorted(p.name for p in work.iterdir()) == ["notes.txt"]  # only its own files go


def test_shard_folders_are_read_memory_mapped_and_mine_as_the_matrix_does(tmp_path: Path, hashing_encoder) -> None:
    from polyembed.streaming import StreamOptions, encode_to_shards, load_shards

    texts = [f"sentence {i} about the {word}" for i, word in enumerate(["sea", "house", "dog", "tree"] * 25)]
    (tmp_path / "a.txt").write_text("".join(f"{t}\n" for t in texts), encoding="utf-8")
    (tmp_path / "b.txt").write_text("".join(f"{t}!\n" for t in reversed(texts)), encoding="utf-8")
    for side in ("a", "b"):
        encode_to_shards(hashing_encoder, tmp_path / f"{side}.txt", tmp_path / side, StreamOptions(shard_size=30),
                         show_progress=False)  # float16 rows, four shards
    vectors = open_vectors(tmp_path / "a", 100, tmp_path / "a.txt")
    assert vectors.matrix is None and [count for _, count in vectors.parts] == [30, 30, 30, 10]
    block = vectors.block(25, 65)  # across three shards
    assert type(block) is np.ndarray and block.dtype == np.float32  # a copy: no file stays mapped
    expected = load_shards(tmp_path / "a")[25:65]
    np.testing.assert_array_equal(block, expected / np.linalg.norm(expected, axis=1, keepdims=True))
    np.testing.assert_array_equal(vectors.take(np.array([99, 0, 31, 31])), vectors.block(0, 100)[[99, 0, 31, 31]])
    for side in ("a", "b"):
        np.save(tmp_path / f"{side}.npy", load_shards(tmp_path / side))
    shards = mine_files("no-such-model", tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "1.tsv",
                        source_embeddings=tmp_path / "a", target_embeddings=tmp_path / "b", show_progress=False)
    matrix = mine_files("no-such-model", tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "2.tsv",
                        source_embeddings=tmp_path / "a.npy", target_embeddings=tmp_path / "b.npy",
                        show_progress=False)
    assert shards.pairs == matrix.pairs == 100
    assert (tmp_path / "1.tsv").read_text() == (tmp_path / "2.tsv").read_text()


def test_a_shard_of_another_dimension_or_side_is_named(tmp_path: Path, hashing_encoder) -> None:
    from polyembed.streaming import StreamOptions, encode_to_shards

    (tmp_path / "a.txt").write_text("a red house\nthe blue sea\nsmall dog\n", encoding="utf-8")
    encode_to_shards(hashing_encoder, tmp_path / "a.txt", tmp_path / "a", StreamOptions(shard_size=2),
                     show_progress=False)
    np.save(tmp_path / "b.npy", np.ones((3, 8), dtype=np.float32))
    with pytest.raises(PolyembedError, match=r"b.npy: 8-dimensional rows where .*/a has 256-dimensional ones"):
        mine_files("x", tmp_path / "a.txt", tmp_path / "a.txt", tmp_path / "p.tsv",
                   source_embeddings=tmp_path / "a", target_embeddings=tmp_path / "b.npy")
    with pytest.raises(PolyembedError, match=r"^index nonsense: not one of auto, flat, ivf, ivf-sq8, pq, hnsw nor a "
                                             r"faiss factory string faiss can build for 8-dimensional rows \(could "
                                             r"not parse index string nonsense\)$"):
        mine_files("x", tmp_path / "a.txt", tmp_path / "a.txt", tmp_path / "p.tsv", index="nonsense",
                   source_embeddings=tmp_path / "b.npy", target_embeddings=tmp_path / "b.npy")
    with pytest.raises(PolyembedError, match=r"^search_parameters nprobe=x: could not interpret parameters"):
        mine_files("x", tmp_path / "a.txt", tmp_path / "a.txt", tmp_path / "p.tsv", index="ivf",
                   search_parameters="nprobe=x", source_embeddings=tmp_path / "b.npy",
                   target_embeddings=tmp_path / "b.npy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "a.txt", "b.npy"]  # no work folder either


def test_the_line_reader_reads_what_read_lines_reads(tmp_path: Path) -> None:
    from polyembed.data.io import read_lines
    from polyembed.mining.lines import count_lines

    path = tmp_path / "t.txt"
    path.write_bytes("\ufeffFirst line\r\nzweite Zeile \u00e4\nthird\twith a tab\r\r\nlast without newline".encode())
    lines = count_lines(path)
    with lines.reader() as reader:
        assert [reader[i] for i in (3, 0, 2, 1)] == [read_lines(path)[i] for i in (3, 0, 2, 1)]
    for content, message in ((b"one\n\ntwo\n", "t.txt:2: empty line"), (b"one\ncaf\xe9\n", "t.txt:2: not valid UTF-8 "
                                                                                         r"\(byte 3: b'\\xe9'\)")):
        path.write_bytes(content)
        with pytest.raises(DataError, match=message):
            count_lines(path)
        with pytest.raises(DataError, match=message):
            read_lines(path)
    path.write_text("one\ntwo\n", encoding="utf-8")
    lines = count_lines(path)
    path.write_text("one\ntwo\nthree\n", encoding="utf-8")
    with pytest.raises(PolyembedError, match="t.txt: changed while it was being mined"), lines.reader():
        pass
