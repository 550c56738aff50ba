"""Bitext retrieval tasks: accuracy against brute-force numpy on synthetic and real data, xSIM, options."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from polyembed.data.registry import get_dataset
from polyembed.data.types import ParallelText
from polyembed.errors import PolyembedError, UnknownLanguageError
from polyembed.eval.base import Score
from polyembed.eval.registry import get_task
from polyembed.eval.runner import EmbeddingCache
from polyembed.eval.tasks.retrieval import (
    drop_duplicate_rows,
    evenly_spaced_rows,
    retrieval_accuracy,
    retrieval_hits,
    xsim_error,
)
from tests.helpers import write_lines


def unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def brute_accuracy(queries: np.ndarray, candidates: np.ndarray) -> float:
    """Independent reference: per query, argmax of the cosine row; hit iff it is the gold row.

    The hashing encoder yields integer count vectors, whose cosines can tie exactly (the task then picks the
    lowest index). Near-maximal candidates are therefore compared exactly, as fractions dot^2 / |c|^2.
    """
    q, c = np.rint(queries).astype(np.int64), np.rint(candidates).astype(np.int64)
    assert np.array_equal(q, queries) and np.array_equal(c, candidates), "needs integer count vectors"
    dots, norms = q @ c.T, (c * c).sum(axis=1)
    cosines = unit(q) @ unit(c).T
    hits = 0
    for i in range(len(q)):
        near = np.flatnonzero(cosines[i] >= cosines[i].max() - 1e-9)
        exact = [Fraction(int(dots[i, j]) ** 2, int(norms[j])) if dots[i, j] > 0 else Fraction(0) for j in near]
        hits += int(near[exact.index(max(exact))] == i)
    return 100.0 * hits / len(q)


def brute_xsim(x: np.ndarray, y: np.ndarray, k: int = 4) -> float:
    """LASER xsim.py with loops: ratio margin over the k nearest targets, index error rate in percent."""
    x, y = unit(x), unit(y)
    cos = x @ y.T
    avg_x = np.sort(cos, axis=1)[:, -k:].mean(axis=1)
    avg_y = np.sort(cos, axis=0)[-k:].mean(axis=0)
    errors = 0
    for i in range(len(x)):
        neighbours = np.argsort(-cos[i])[:k]
        best = max(neighbours, key=lambda j, i=i: cos[i, j] / ((avg_x[i] + avg_y[j]) / 2))
        errors += int(best != i)
    return 100.0 * errors / len(x)


def by_metric(scores: list[Score], subset: str) -> dict[str, float]:
    return {s.metric: s.value for s in scores if s.subset == subset}


def test_retrieval_hits_hand_case() -> None:
    queries = unit(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    candidates = unit(np.array([[1.0, 0.1], [1.0, 0.0], [1.0, 1.0]]))
    # query 0 -> candidate 1 (miss), query 1 -> candidate 2 (miss), query 2 -> candidate 2 (hit)
    assert retrieval_hits(queries, candidates).tolist() == [False, False, True]
    assert retrieval_accuracy(queries, candidates) == pytest.approx(100 / 3)
    tie = unit(np.array([[1.0, 0.0], [1.0, 0.0]]))
    assert retrieval_hits(tie, tie).tolist() == [True, False]  # duplicates: first index wins, the second misses


def test_tatoeba_task_on_synthetic_data(tmp_path: Path, hashing_encoder) -> None:
    deu = ["der hund schläft", "die katze isst fisch", "ich trinke wasser", "wir gehen nach hause", "es regnet heute"]
    eng = ["the dog sleeps", "the cat eats fish", "i drink water", "we go home", "it rains today"]
    write_lines(tmp_path / "tatoeba" / "tatoeba.deu-eng.deu", deu)
    write_lines(tmp_path / "tatoeba" / "tatoeba.deu-eng.eng", eng)
    context = EmbeddingCache(hashing_encoder, tmp_path, show_progress=False)
    scores = get_task("tatoeba", languages=["deu"]).evaluate(context)
    x, e = hashing_encoder.encode(deu), hashing_encoder.encode(eng)
    values = by_metric(scores, "deu")
    assert values["accuracy_x2pivot"] == pytest.approx(brute_accuracy(x, e))
    assert values["accuracy_pivot2x"] == pytest.approx(brute_accuracy(e, x))
    assert values["accuracy"] == pytest.approx((brute_accuracy(x, e) + brute_accuracy(e, x)) / 2)
    assert values["xsim_error"] == pytest.approx(brute_xsim(x, e))
    main = [s for s in scores if s.main]
    assert [s.subset for s in main] == ["deu", "avg"] and all(s.metric == "accuracy" for s in main)


class TableEncoder:
    """Returns fixed vectors per text, to check which direction each metric measures."""

    routes_by_language = False
    name = "table"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def encode(self, sentences, language=None, *, batch_size: int = 64, show_progress_bar: bool = False):
        return np.array([self.table[text] for text in sentences], dtype=np.float32)


def test_directions_are_not_swapped(tmp_path: Path) -> None:
    # x0 -> p0 and x1 -> p1 (x2pivot 100 %); p0 -> x0 but p1 -> x0 (0.90 > 0.89): pivot2x 50 %
    table = {"x0": [1.0, 0.0], "x1": [0.6, 0.8], "p0": [1.0, 0.0], "p1": [0.9, 0.436]}
    write_lines(tmp_path / "tatoeba" / "tatoeba.deu-eng.deu", ["x0", "x1"])
    write_lines(tmp_path / "tatoeba" / "tatoeba.deu-eng.eng", ["p0", "p1"])
    context = EmbeddingCache(TableEncoder(table), tmp_path, show_progress=False)
    values = by_metric(get_task("tatoeba", languages=["deu"], xsim_k=1).evaluate(context), "deu")
    assert (values["accuracy_x2pivot"], values["accuracy_pivot2x"], values["accuracy"]) == (100.0, 50.0, 75.0)
    assert values["xsim_error"] == 0.0  # k = 1: plain nearest neighbour from the X side


def test_task_rejects_unknown_language() -> None:
    with pytest.raises(UnknownLanguageError):
        get_task("tatoeba", languages=["xx"])
    with pytest.raises(UnknownLanguageError):
        get_task("tico19-retrieval", languages=["de"])


@pytest.mark.realdata
def test_real_tatoeba_accuracy_equals_brute_force(shared_data: Path, hashing_encoder) -> None:
    context = EmbeddingCache(hashing_encoder, shared_data, show_progress=False)
    scores = get_task("tatoeba", languages=["deu", "amh"]).evaluate(context)
    for language in ("deu", "amh"):
        pair = get_dataset("tatoeba").load(language, root=shared_data)
        x, e = hashing_encoder.encode(pair.source), hashing_encoder.encode(pair.target)
        values = by_metric(scores, language)
        assert values["accuracy_x2pivot"] == pytest.approx(brute_accuracy(x, e))
        assert values["accuracy_pivot2x"] == pytest.approx(brute_accuracy(e, x))
        assert values["xsim_error"] == pytest.approx(xsim_error(unit(x), unit(e)))
        assert values["xsim_error"] == pytest.approx(brute_xsim(x, e))
    average = by_metric(scores, "avg")
    assert average["accuracy"] == pytest.approx(
        (by_metric(scores, "deu")["accuracy"] + by_metric(scores, "amh")["accuracy"]) / 2
    )


def test_parallel_retrieval_directory(tmp_path: Path, hashing_encoder) -> None:
    folder = tmp_path / "multi"
    write_lines(folder / "dev.en", ["red apple", "blue sky", "green grass", "red apple"])
    write_lines(folder / "dev.fr", ["pomme rouge", "ciel bleu", "herbe verte", "pomme rouge!"])
    write_lines(folder / "dev.de", ["roter apfel", "blauer himmel", "grünes gras", "roter apfel?"])
    task = get_task("parallel-retrieval", directory=folder, prefix="dev")
    assert task.pivot == "en" and set(task.languages) == {"fr", "de"}
    context = EmbeddingCache(hashing_encoder, tmp_path, show_progress=False)
    scores = task.evaluate(context)
    en = ["red apple", "blue sky", "green grass"]  # row 4 repeats an English sentence and is dropped
    for language, text in (
        ("fr", ["pomme rouge", "ciel bleu", "herbe verte"]),
        ("de", ["roter apfel", "blauer himmel", "grünes gras"]),
    ):
        x, p = hashing_encoder.encode(text), hashing_encoder.encode(en)
        values = by_metric(scores, language)
        assert values["accuracy_pivot2x"] == pytest.approx(brute_accuracy(p, x))
        assert values["accuracy_x2pivot"] == pytest.approx(brute_accuracy(x, p))
        assert [s.n for s in scores if s.subset == language] == [3, 3, 3]
    only_de = get_task("parallel-retrieval", directory=str(folder), prefix="dev", languages=["de"], pivot="fr")
    assert only_de.languages == ("de",) and only_de.pivot == "fr"
    with pytest.raises(UnknownLanguageError):
        get_task("parallel-retrieval", directory=folder, prefix="dev", languages=["es"])
    with pytest.raises(PolyembedError, match="exactly one"):
        get_task("parallel-retrieval")


def test_parallel_retrieval_needs_a_pivot(tmp_path: Path) -> None:
    write_lines(tmp_path / "t.fr", ["a"])
    write_lines(tmp_path / "t.de", ["b"])
    with pytest.raises(PolyembedError, match="pivot"):
        get_task("parallel-retrieval", directory=tmp_path)


def test_duplicate_filter_and_evenly_spaced_cap() -> None:
    pair = ParallelText(["a", "b", "a", "c", "d"], ["A", "B", "X", "B", "D"], "x", "eng")
    unique = drop_duplicate_rows(pair)
    assert unique.source == ["a", "b", "d"] and unique.target == ["A", "B", "D"]
    long = ParallelText([str(i) for i in range(10)], [f"t{i}" for i in range(10)], "x", "eng")
    assert evenly_spaced_rows(long, 4).source == ["0", "2", "5", "7"]
    assert evenly_spaced_rows(long, 20) is long


@pytest.mark.realdata
def test_real_tico_and_challenge_retrieval(shared_data: Path, hashing_encoder) -> None:
    context = EmbeddingCache(hashing_encoder, shared_data, show_progress=False)
    tico = get_task("tico19-retrieval", languages=["fr"]).evaluate(context)
    assert {s.n for s in tico if s.subset == "fr"} == {1948}  # 152 repeated French sentences dropped
    challenge = get_task("tatoeba-challenge-retrieval", languages=["deu"]).evaluate(context)
    assert {s.n for s in challenge if s.subset == "deu"} == {2000}
    pair = drop_duplicate_rows(get_dataset("tatoeba-challenge").load("deu", root=shared_data))
    pair = evenly_spaced_rows(pair, 2000)
    x, e = hashing_encoder.encode(pair.source), hashing_encoder.encode(pair.target)
    assert by_metric(challenge, "deu")["accuracy_x2pivot"] == pytest.approx(brute_accuracy(x, e))


@pytest.mark.realdata
def test_real_mafand_retrieval_reads_the_chosen_split(shared_data: Path, hashing_encoder) -> None:
    """MAFAND-MT dev (choose recipes here) and test are separate files; repeated sentences are dropped."""
    context = EmbeddingCache(hashing_encoder, shared_data, show_progress=False)
    for split in ("dev", "test"):
        scores = get_task("mafand-retrieval", languages=["ha"], split=split).evaluate(context)
        pair = drop_duplicate_rows(get_dataset("mafand-mt").load("hau", split, root=shared_data))
        assert {s.n for s in scores if s.subset == "hau"} == {len(pair)} and {s.split for s in scores} == {split}
        x, e = hashing_encoder.encode(pair.source), hashing_encoder.encode(pair.target)
        assert by_metric(scores, "hau")["accuracy_x2pivot"] == pytest.approx(brute_accuracy(x, e))
    assert get_task("mafand-retrieval").split == "test" and len(get_task("mafand-retrieval").languages) == 8


@pytest.mark.slow
@pytest.mark.realdata
def test_minilm_tatoeba_matches_reference(shared_data: Path, minilm) -> None:
    """Reference: plain sentence-transformers with all-MiniLM-L6-v2, mean of both directions."""
    context = EmbeddingCache(minilm, shared_data, show_progress=False)
    scores = get_task("tatoeba", languages=["deu", "amh"]).evaluate(context)
    assert by_metric(scores, "deu")["accuracy"] == pytest.approx(12.7, abs=0.5)
    assert by_metric(scores, "amh")["accuracy"] == pytest.approx(1.5, abs=0.5)
