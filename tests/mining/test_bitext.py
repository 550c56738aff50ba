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
        source_embeddings=tmp_path / "src.npy", target_embeddings=tmp_path / "tgt.npy", overwrite=True, **options,
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
    with pytest.raises(PolyembedError, match="^margin: expected one of ratio, distance, absolute, got 'cosine'"):
        _mine(tmp_path, margin="cosine")
    with pytest.raises(PolyembedError, match="^index IVF999"):
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


# ---- integrity (issue 32): inputs that would give NaN scores, a corrupt store, shards of other text


def test_unscorable_rows_and_thresholds_are_refused_by_file_and_row(tmp_path) -> None:
    _pool(tmp_path, n=50)
    source = np.load(tmp_path / "src.npy")
    source[17] = np.nan
    np.save(tmp_path / "nan.npy", source)
    source[17] = 0.0
    np.save(tmp_path / "zero.npy", source)
    for name, problem in (("nan.npy", "NaN or infinite values"), ("zero.npy", "all zeros")):
        with pytest.raises(PolyembedError, match=rf"{name}: row 18 has {problem}"):
            mine_files("x", tmp_path / "src.txt", tmp_path / "tgt.txt", tmp_path / "o.tsv",
                       source_embeddings=tmp_path / name, target_embeddings=tmp_path / "tgt.npy")
    for threshold in (float("nan"), float("inf")):
        with pytest.raises(PolyembedError, match="^threshold: .* is out of range: expected a finite number"):
            _mine(tmp_path, threshold=threshold)
    assert not (tmp_path / "o.tsv").exists() and not (tmp_path / "out.tsv").exists()


def test_an_output_that_is_an_input_is_refused_before_any_work(tmp_path) -> None:
    _pool(tmp_path, n=20)
    before = (tmp_path / "tgt.txt").read_bytes()
    (tmp_path / "link.txt").symlink_to(tmp_path / "tgt.txt")
    for output in ("tgt.txt", "link.txt", "src.npy"):
        with pytest.raises(PolyembedError, match="is also the input"):
            mine_files("x", tmp_path / "src.txt", tmp_path / "tgt.txt", tmp_path / output,
                       source_embeddings=tmp_path / "src.npy", target_embeddings=tmp_path / "tgt.npy")
    assert (tmp_path / "tgt.txt").read_bytes() == before


def test_a_corrupt_cache_row_is_recomputed_not_mined(tmp_path, monkeypatch, hashing_encoder, caplog) -> None:
    """Row 9: vector blobs overwritten in place in the store; `mine --cache` recomputes them (and logs it)."""
    import sqlite3

    from polyembed.models.embedding_cache import STORE_FILE, EmbeddingStore

    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache"))
    texts = [f"sentence {i} about the {word}" for i, word in enumerate(["sea", "house", "dog", "tree"] * 10)]
    (tmp_path / "a.txt").write_text("".join(f"{t}\n" for t in texts), encoding="utf-8")
    (tmp_path / "b.txt").write_text("".join(f"{t}!\n" for t in reversed(texts)), encoding="utf-8")
    mine_files(hashing_encoder, tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "1.tsv", cache=True)
    store_file = EmbeddingStore(hashing_encoder).file
    sqlite3.connect(store_file).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = bytearray(store_file.read_bytes())
    for text in texts:  # every source vector, overwritten in place (SQLite's integrity check still passes)
        blob = hashing_encoder.encode([text])[0].astype(np.float32).tobytes()  # stored as encoded
        at = data.find(blob)
        assert at >= 0
        data[at : at + len(blob)] = np.ones(len(blob) // 4, dtype=np.float32).tobytes()
    store_file.write_bytes(bytes(data))
    assert sqlite3.connect(store_file).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    calls = len(hashing_encoder.calls)
    mine_files(hashing_encoder, tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "2.tsv", cache=True)
    assert len(hashing_encoder.calls) == calls + 1  # the corrupt side, once
    assert f"{store_file}: 40 stored embeddings failed their checksum" in caplog.text
    assert (tmp_path / "1.tsv").read_text() == (tmp_path / "2.tsv").read_text()
    assert store_file.name == STORE_FILE and store_file.parent.parent == tmp_path / "cache" / "embeddings"


def test_an_unreadable_cache_is_a_clean_error(tmp_path, monkeypatch, hashing_encoder) -> None:
    """Row 10: a store of random bytes: exit 2 with the store's path and how to rebuild it, no traceback."""
    from polyembed.models.embedding_cache import EmbeddingStore

    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache"))
    (tmp_path / "a.txt").write_text("a red house\nthe blue sea\n", encoding="utf-8")
    store_file = EmbeddingStore(hashing_encoder).file
    store_file.parent.mkdir(parents=True)
    store_file.write_bytes(np.random.default_rng(0).bytes(8192))
    with pytest.raises(PolyembedError, match=rf"{store_file}: not a readable embedding store .*rebuild it"):
        mine_files(hashing_encoder, tmp_path / "a.txt", tmp_path / "a.txt", tmp_path / "p.tsv", cache=True)
    assert not (tmp_path / "p.tsv").exists()


def test_a_shard_folder_of_other_text_is_refused(tmp_path, hashing_encoder) -> None:
    """Same line count, other lines: the shard manifest's content hash tells them apart."""
    from polyembed.streaming import StreamOptions, encode_to_shards

    (tmp_path / "a.txt").write_text("a red house\nthe blue sea\nsmall dog\n", encoding="utf-8")
    (tmp_path / "other.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    encode_to_shards(hashing_encoder, tmp_path / "other.txt", tmp_path / "shards",
                     StreamOptions(shard_size=2, dtype="float32"), show_progress=False)
    with pytest.raises(PolyembedError, match=r"shards: encoded from other text than .*a.txt"):
        mine_files(hashing_encoder, tmp_path / "a.txt", tmp_path / "a.txt", tmp_path / "p.tsv",
                   source_embeddings=tmp_path / "shards")


def test_the_mine_command_on_an_unreadable_cache_exits_2_naming_the_store(tmp_path, monkeypatch) -> None:
    """Row 10 end to end: one `error:` line with the store's path and how to rebuild it, no traceback."""
    from typer.testing import CliRunner

    from polyembed.cli import app
    from polyembed.models.embedding_cache import EmbeddingStore
    from polyembed.models.loading import load_model
    from tests.helpers import tiny_sentence_transformer

    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache"))
    model = str(tiny_sentence_transformer(tmp_path / "tiny", seed=0))
    store_file = EmbeddingStore(load_model(model)).file
    store_file.parent.mkdir(parents=True)
    store_file.write_bytes(np.random.default_rng(1).bytes(4096))
    (tmp_path / "a.txt").write_text("the cat sees the house\na dog likes the sea\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["mine", str(tmp_path / "a.txt"), str(tmp_path / "a.txt"), "-o",
                                      str(tmp_path / "p.tsv"), "-m", model, "--cache"])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"{store_file}: not a readable embedding store" in errors[0]
    assert "rebuild it" in errors[0] and "Traceback" not in result.output and not (tmp_path / "p.tsv").exists()


def test_mine_options_offer_the_margins_and_modes_mining_knows() -> None:
    import typing

    from polyembed.mining.bitext import MineOptions
    from polyembed.mining.margin import MARGINS, MODES

    hints = typing.get_type_hints(MineOptions)
    assert typing.get_args(hints["margin"]) == MARGINS and typing.get_args(hints["mode"]) == MODES
    with pytest.raises(PolyembedError, match="^cache: it keeps embeddings made in this process: drop cache or workers"):
        MineOptions(cache=True, workers=2)
    with pytest.raises(PolyembedError, match="^give options or k, not both"):
        mine_files("x", "a.txt", "b.txt", "o.tsv", options=MineOptions(), k=3)


def test_mining_replaces_only_its_own_earlier_output(tmp_path) -> None:
    """A second run onto the same TSV needs overwrite, and overwrite never replaces a file polyembed did not
    write (or one changed since)."""
    _pool(tmp_path)
    _mine(tmp_path)
    first = (tmp_path / "out.tsv").read_text()
    with pytest.raises(PolyembedError, match="out.tsv: exists; pass overwrite"):
        mine_files("no-such-model", tmp_path / "src.txt", tmp_path / "tgt.txt", tmp_path / "out.tsv",
                   source_embeddings=tmp_path / "src.npy", target_embeddings=tmp_path / "tgt.npy")
    _mine(tmp_path)  # overwrite=True: polyembed's own, unchanged file
    assert (tmp_path / "out.tsv").read_text() == first
    (tmp_path / "out.tsv").write_text("the user's edited pairs\n")
    with pytest.raises(PolyembedError, match="polyembed did not write it"):
        _mine(tmp_path)
    assert (tmp_path / "out.tsv").read_text() == "the user's edited pairs\n"
