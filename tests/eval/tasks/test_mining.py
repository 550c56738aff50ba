"""comparable-mining: corpus construction invariants, a perfect and a useless encoder, real-data sanity."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from polyembed.data.types import ParallelText
from polyembed.errors import PolyembedError, UnknownLanguageError
from polyembed.eval.base import Score
from polyembed.eval.registry import get_task
from polyembed.eval.runner import EmbeddingCache
from polyembed.eval.tasks.mining import DEFAULT_MINING_SUBSETS, comparable_splits
from tests.helpers import write_lines


def synthetic_pair(n: int, seed: int = 0) -> ParallelText:
    """English 'sentences' of random letter words; the 'translation' is the upper-cased sentence."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    english = [" ".join("".join(rng.choice(letters, size=5)) for _ in range(6)) for _ in range(n)]
    return ParallelText([s.upper() for s in english], english, "deu", "eng")




def by_metric(scores: list[Score], subset: str) -> dict[str, float]:
    return {s.metric: s.value for s in scores if s.subset == subset}


def test_comparable_splits_invariants() -> None:
    pair = synthetic_pair(200)
    train, test = comparable_splits(pair, n_gold=10, n_distractors=30, seed=3)
    translation = dict(zip(pair.source, pair.target, strict=True))
    for corpus in (train, test):
        assert len(corpus.source) == len(corpus.target) == 40 and len(corpus.gold) == 10
        for s, t in corpus.gold:
            assert translation[corpus.source[s]] == corpus.target[t]
        gold_sources = {s for s, _ in corpus.gold}
        targets = set(corpus.target)
        # distractor sources have no translation in the target pool
        for row, sentence in enumerate(corpus.source):
            assert (translation[sentence] in targets) == (row in gold_sources)
    used_train = {translation[s] for s in train.source} | set(train.target)
    used_test = {translation[s] for s in test.source} | set(test.target)
    assert not used_train & used_test  # train and test draw on disjoint rows
    again, _ = comparable_splits(pair, n_gold=10, n_distractors=30, seed=3)
    assert (again.source, again.target, again.gold) == (train.source, train.target, train.gold)
    other, _ = comparable_splits(pair, n_gold=10, n_distractors=30, seed=4)
    assert other.source != train.source


def test_comparable_splits_scale_down_and_drop_duplicates() -> None:
    pair = synthetic_pair(100)
    doubled = ParallelText(pair.source + pair.source[:20], pair.target + pair.target[:20], "deu", "eng")
    train, test = comparable_splits(doubled, n_gold=50, n_distractors=100, seed=0)
    # 100 distinct rows for 2 * (50 + 200) = 500 wanted: factor 0.2 -> 10 gold, 20 distractors per side
    assert train.info == {"gold": 10, "source_pool": 30, "target_pool": 30, "distinct_rows": 100}
    assert len(test.gold) == 10
    with pytest.raises(PolyembedError, match="too few"):
        comparable_splits(synthetic_pair(5), n_gold=10, n_distractors=100)


class RandomEncoder:
    """Unrelated random vector per text: no translation signal at all."""

    routes_by_language = False
    name = "random"

    def encode(self, sentences, language=None, *, batch_size: int = 64, show_progress_bar: bool = False):
        rows = []
        for text in sentences:
            seed = int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:4], "little")
            rows.append(np.random.default_rng(seed).normal(size=64))
        return np.array(rows, dtype=np.float32)


def _synthetic_root(tmp_path: Path) -> Path:
    pair = synthetic_pair(600, seed=1)
    folder = tmp_path / "tatoeba-challenge-v2021-08-07" / "deu-eng"
    write_lines(folder / "tatoeba-test-v2021-08-07.deu", pair.source)
    write_lines(folder / "tatoeba-test-v2021-08-07.eng", pair.target)
    return tmp_path


def test_perfect_encoder_finds_every_pair(tmp_path: Path, hashing_encoder) -> None:
    # the hashing encoder lower-cases, so a sentence and its upper-cased "translation" embed identically
    root = _synthetic_root(tmp_path)
    task = get_task("comparable-mining", languages=["tatoeba-challenge:deu"], n_gold=50, n_distractors=100)
    scores = task.evaluate(EmbeddingCache(hashing_encoder, root, show_progress=False))
    values = by_metric(scores, "tatoeba-challenge:deu")
    assert values["f1"] == 100.0 and values["precision"] == 100.0 and values["recall"] == 100.0
    assert values["train_f1"] == 100.0
    main = [s for s in scores if s.main]
    assert [(s.subset, s.metric, s.n) for s in main] == [("tatoeba-challenge:deu", "f1", 50), ("avg", "f1", 1)]


def test_random_encoder_finds_almost_nothing(tmp_path: Path) -> None:
    root = _synthetic_root(tmp_path)
    task = get_task("comparable-mining", languages=["tatoeba-challenge:deu"], n_gold=50, n_distractors=100)
    values = by_metric(
        task.evaluate(EmbeddingCache(RandomEncoder(), root, show_progress=False)), "tatoeba-challenge:deu"
    )
    assert values["recall"] <= 10.0  # chance: a source's best target is its translation with p = 1/150


def test_task_arguments() -> None:
    assert get_task("comparable-mining").languages == DEFAULT_MINING_SUBSETS
    with pytest.raises(UnknownLanguageError):
        get_task("comparable-mining", languages=["tico19:de"])
    with pytest.raises(PolyembedError, match="margin"):
        get_task("comparable-mining", margin="cosine")
    with pytest.raises(PolyembedError, match="mode"):
        get_task("comparable-mining", mode="union")


@pytest.mark.realdata
def test_real_tico_mining_is_deterministic(shared_data: Path, hashing_encoder) -> None:
    task = get_task("comparable-mining", languages=["tico19:fr"], n_gold=100, n_distractors=300)
    first = task.evaluate(EmbeddingCache(hashing_encoder, shared_data, show_progress=False))
    second = task.evaluate(EmbeddingCache(hashing_encoder, shared_data, show_progress=False))
    assert [s.value for s in first] == [s.value for s in second]
    values = by_metric(first, "tico19:fr")
    assert 0.0 < values["f1"] < 100.0
    extra = next(s.extra for s in first if s.subset == "tico19:fr")
    assert (extra["source_pool"], extra["target_pool"], extra["k"], extra["mode"]) == (400, 400, 4, "max")


def test_bucc_like_mining_keeps_gold_at_five_percent(tmp_path: Path, hashing_encoder) -> None:
    from polyembed.eval.tasks.mining import BUCC_LIKE_SUBSETS

    assert get_task("bucc-like-mining").languages == BUCC_LIKE_SUBSETS
    assert not {"tatoeba-challenge:deu", "tatoeba-challenge:spa"} & set(BUCC_LIKE_SUBSETS)  # demo languages
    with pytest.raises(PolyembedError, match="over 5 %"):
        get_task("bucc-like-mining", n_gold=100, n_distractors=1000)
    root = _synthetic_root(tmp_path)
    task = get_task("bucc-like-mining", languages=["tatoeba-challenge:deu"], n_gold=7, n_distractors=140)
    scores = task.evaluate(EmbeddingCache(hashing_encoder, root, show_progress=False))
    extra = next(s.extra for s in scores if s.subset == "tatoeba-challenge:deu")
    assert extra["gold_share"] <= 0.05 and extra["source_pool"] == 147  # 7 gold + 140 distractors
    assert by_metric(scores, "tatoeba-challenge:deu")["f1"] == 100.0  # the perfect encoder still finds all
