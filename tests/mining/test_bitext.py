"""Mining two monolingual files: index choice, the TSV written, precomputed embeddings, errors, real data."""

from __future__ import annotations

import numpy as np
import pytest

from polyembed.errors import DataError, PolyembedError
from polyembed.mining.bitext import EXACT_SEARCH_LIMIT, choose_index, mine_files


def _pool(tmp_path, n: int = 300, dim: int = 24, seed: int = 0):
    """Text files plus embeddings where target row perm[i] is a noisy copy of source row i (its translation)."""
    rng = np.random.default_rng(seed)
    source = rng.standard_normal((n, dim)).astype(np.float32)
    perm = rng.permutation(n)
    target = np.empty_like(source)
    target[perm] = source + 0.1 * rng.standard_normal((n, dim)).astype(np.float32)
    (tmp_path / "src.txt").write_text("".join(f"source {i}\n" for i in range(n)), encoding="utf-8")
    (tmp_path / "tgt.txt").write_text("".join(f"target {j}\n" for j in range(n)), encoding="utf-8")
    np.save(tmp_path / "src.npy", source)
    np.save(tmp_path / "tgt.npy", target)
    return perm


def _mine(tmp_path, **options):
    return mine_files(
        "no-such-model",  # both sides come with embeddings: the model is never loaded
        tmp_path / "src.txt", tmp_path / "tgt.txt", tmp_path / "out.tsv",
        source_embeddings=tmp_path / "src.npy", target_embeddings=tmp_path / "tgt.npy", **options,
    )


def _rows(path):
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def test_index_is_chosen_by_pool_size() -> None:
    assert choose_index(EXACT_SEARCH_LIMIT).factory is None
    large = choose_index(1_000_000)
    assert large.factory == "IVF4000,Flat" and large.search_parameters == "nprobe=16"
    assert choose_index(1000, "ivf").factory == "IVF25,Flat"  # at least 39 sentences per cell
    assert choose_index(10, "hnsw").factory == "HNSW32"
    assert choose_index(10, "IVF8,PQ4").factory == "IVF8,PQ4"


def test_mining_writes_every_translation_best_first(tmp_path) -> None:
    perm = _pool(tmp_path)
    result = _mine(tmp_path)
    rows = _rows(tmp_path / "out.tsv")
    assert result.pairs == len(rows) == 300 and result.index == "exact flat"
    scores = [float(score) for score, _, _ in rows]
    assert scores == sorted(scores, reverse=True)
    found = {int(src.split()[1]): int(tgt.split()[1]) for _, src, tgt in rows}
    assert found == {i: int(perm[i]) for i in range(300)}


def test_threshold_mode_and_ivf(tmp_path) -> None:
    _pool(tmp_path, n=2000)
    exact = _rows((_mine(tmp_path, mode="intersect"), tmp_path / "out.tsv")[1])
    ivf = _mine(tmp_path, mode="intersect", index="ivf")
    assert "IVF" in ivf.index
    approximate = _rows(tmp_path / "out.tsv")
    overlap = {(s, t) for _, s, t in exact} & {(s, t) for _, s, t in approximate}
    assert len(overlap) >= 0.98 * len(exact)  # the approximate index finds nearly every pair
    cut = sorted(float(score) for score, _, _ in exact)[len(exact) // 2]
    kept = _mine(tmp_path, mode="intersect", threshold=cut)
    assert kept.pairs == sum(1 for score, _, _ in exact if float(score) >= cut)


def test_bad_inputs_name_what_is_wrong(tmp_path) -> None:
    _pool(tmp_path, n=50)
    np.save(tmp_path / "short.npy", np.zeros((49, 24), dtype=np.float32))
    with pytest.raises(PolyembedError, match="short.npy: 49 rows"):
        mine_files("x", tmp_path / "src.txt", tmp_path / "tgt.txt", tmp_path / "o.tsv",
                   source_embeddings=tmp_path / "short.npy", target_embeddings=tmp_path / "tgt.npy")
    with pytest.raises(PolyembedError, match="--margin"):
        _mine(tmp_path, margin="cosine")
    with pytest.raises(PolyembedError, match="--index IVF999"):
        _mine(tmp_path, index="IVF999,Flat")  # more cells than sentences: faiss refuses
    (tmp_path / "gap.txt").write_text("a\n\nb\n", encoding="utf-8")
    with pytest.raises(DataError, match="gap.txt:2"):
        mine_files("x", tmp_path / "gap.txt", tmp_path / "tgt.txt", tmp_path / "o.tsv")
    assert not (tmp_path / "o.tsv").exists()


def test_mine_command_on_real_tatoeba(tmp_path, shared_data) -> None:
    """me5-small mines German-English Tatoeba pairs out of two shuffled 200-line files through the CLI."""
    from typer.testing import CliRunner

    from polyembed.cli import app

    german = (shared_data / "tatoeba" / "tatoeba.deu-eng.deu").read_text(encoding="utf-8").splitlines()[:200]
    english = (shared_data / "tatoeba" / "tatoeba.deu-eng.eng").read_text(encoding="utf-8").splitlines()[:200]
    order = np.random.default_rng(0).permutation(200)
    (tmp_path / "de.txt").write_text("\n".join(german) + "\n", encoding="utf-8")
    (tmp_path / "en.txt").write_text("\n".join(english[i] for i in order) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["mine", str(tmp_path / "de.txt"), str(tmp_path / "en.txt"),
                                      "-o", str(tmp_path / "pairs.tsv"), "-m", "me5-small", "--threshold", "1.0"])
    assert result.exit_code == 0, result.output
    gold = set(zip(german, english, strict=True))
    rows = _rows(tmp_path / "pairs.tsv")
    correct = sum((src, tgt) in gold for _, src, tgt in rows)
    assert len(rows) >= 190 and correct >= 0.95 * len(rows)


def test_mining_again_with_cache_encodes_nothing(tmp_path, monkeypatch, hashing_encoder) -> None:
    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache"))
    (tmp_path / "a.txt").write_text("a red house\nthe blue sea\nsmall dog\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("the blue sea!\nsmall dogs\na red house.\n", encoding="utf-8")
    first = mine_files(hashing_encoder, tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "1.tsv", cache=True)
    calls = len(hashing_encoder.calls)
    second = mine_files(hashing_encoder, tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "2.tsv", cache=True)
    assert len(hashing_encoder.calls) == calls and first.pairs == second.pairs == 3
    assert (tmp_path / "1.tsv").read_text() == (tmp_path / "2.tsv").read_text()


def test_shard_folders_are_embeddings_too(tmp_path, hashing_encoder) -> None:
    from polyembed.streaming import StreamOptions, encode_to_shards

    (tmp_path / "a.txt").write_text("a red house\nthe blue sea\nsmall dog\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("the blue sea!\nsmall dogs\na red house.\n", encoding="utf-8")
    for side in ("a", "b"):
        encode_to_shards(hashing_encoder, tmp_path / f"{side}.txt", tmp_path / f"{side}-shards",
                         StreamOptions(shard_size=2, dtype="float32"), show_progress=False)
    calls = len(hashing_encoder.calls)
    result = mine_files("no-such-model", tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "p.tsv",
                        source_embeddings=tmp_path / "a-shards", target_embeddings=tmp_path / "b-shards")
    direct = mine_files(hashing_encoder, tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "q.tsv")
    assert len(hashing_encoder.calls) == calls + 2 and result.pairs == direct.pairs == 3
    assert (tmp_path / "p.tsv").read_text() == (tmp_path / "q.tsv").read_text()
