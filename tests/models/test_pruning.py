"""Vocabulary pruning: tiny models built here (fast, every tokenizer kind) and the real me5-small."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from polyembed.models.pruning import PruningError, PruningReport, prune_vocabulary
from tests.helpers import TRAINING_TEXTS, make_tiny_hf_encoder

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

CORPUS = TRAINING_TEXTS[:3] + TRAINING_TEXTS[6:8]
OUTSIDE = ["Completely different words: zebra, xylophone, quantum physics!"]


def _tiny_sentence_transformer(tmp_path: Path, kind: str) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    hf = make_tiny_hf_encoder(tmp_path / f"hf-{kind}", kind)
    return SentenceTransformer(
        modules=[Transformer(str(hf)), Pooling(32, pooling_mode="mean")],
        device="cpu",
        prompts={"query": "query: ", "passage": "passage: "},
        default_prompt_name="query",
    )


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


@pytest.mark.parametrize("kind", ["wordpiece", "unigram"])
def test_pruned_tiny_model_embeds_the_corpus_identically(tmp_path: Path, kind: str) -> None:
    from sentence_transformers import SentenceTransformer

    model = _tiny_sentence_transformer(tmp_path, kind)
    before = model.encode(CORPUS + OUTSIDE, convert_to_numpy=True)
    original_size = len(model[0].tokenizer)
    out = prune_vocabulary(model, CORPUS, tmp_path / "pruned", verbose=False)

    pruned = SentenceTransformer(str(out), device="cpu")
    assert pruned.prompts["query"] == "query: " and pruned.prompts["passage"] == "passage: "
    assert pruned.default_prompt_name == "query"
    after = pruned.encode(CORPUS, convert_to_numpy=True)  # one padded batch: pad id and mask must line up
    np.testing.assert_allclose(after, before[: len(CORPUS)], atol=1e-5)
    assert _cosines(after, before[: len(CORPUS)]).min() > 0.9999
    for prompt_name in ("passage",):  # every stored prompt was covered, not only the default one
        a = model.encode(CORPUS, prompt_name=prompt_name, convert_to_numpy=True)
        b = pruned.encode(CORPUS, prompt_name=prompt_name, convert_to_numpy=True)
        np.testing.assert_allclose(a, b, atol=1e-5)

    report = PruningReport.load(out)
    tokenizer = pruned[0].tokenizer
    assert report.kept_tokens == len(tokenizer) < original_size
    card = (out / "README.md").read_text(encoding="utf-8")  # the model card (issue 38)
    assert f"base_model: {report.source}" in card and "polyembed-pruned-vocabulary" in card
    assert f"| tokens kept | {report.kept_tokens:,} of {report.original_tokens:,} |" in card
    assert report.original_tokens == original_size and report.corpus_sentences == len(CORPUS)
    assert pruned[0].auto_model.get_input_embeddings().weight.shape[0] == report.kept_tokens
    assert report.parameters_after < report.parameters_before
    assert report.parameters_before - report.parameters_after == 32 * (original_size - report.kept_tokens)
    # Same pieces as before, new ids; text outside the corpus still encodes (more unknowns, expected).
    old_tokens = model[0].tokenizer.tokenize("query: " + CORPUS[0])
    assert tokenizer.tokenize("query: " + CORPUS[0]) == old_tokens
    assert np.isfinite(pruned.encode(OUTSIDE, convert_to_numpy=True)).all()
    # The source model is untouched.
    assert len(model[0].tokenizer) == original_size
    np.testing.assert_allclose(model.encode(CORPUS, convert_to_numpy=True), before[: len(CORPUS)], atol=1e-6)


def test_keep_tokens_and_overwrite(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model = _tiny_sentence_transformer(tmp_path, "wordpiece")
    vocab = model[0].tokenizer.get_vocab()
    extra = next(t for t in ("zebra", "park", "school", "##s") if t in vocab)
    with caplog.at_level("INFO", logger="polyembed"):
        out = prune_vocabulary(model, ["the dog"], tmp_path / "pruned", keep_tokens=[extra, vocab["[UNK]"]])
    printed = caplog.text
    report = PruningReport.load(out)
    assert f"kept {report.kept_tokens}" in printed.replace(",", "")
    tokenizer = model[0].tokenizer
    dog, fox = (
        set(tokenizer.tokenize("the dog")),
        set(tokenizer.tokenize("fox")) - set(tokenizer.tokenize("the dog")),
    )
    assert fox  # some piece only "fox" needs
    pruned_vocab = json.loads((out / "tokenizer.json").read_text())["model"]["vocab"]
    assert extra in pruned_vocab and dog <= set(pruned_vocab) and not fox & set(pruned_vocab)
    with pytest.raises(PruningError, match="not empty"):
        prune_vocabulary(model, ["the dog"], out, verbose=False)
    prune_vocabulary(model, ["the fox"], out, overwrite=True, verbose=False)
    assert fox <= set(json.loads((out / "tokenizer.json").read_text())["model"]["vocab"])


def test_bad_requests_are_clear_errors(tmp_path: Path) -> None:
    model = _tiny_sentence_transformer(tmp_path, "wordpiece")
    with pytest.raises(PruningError, match="empty"):
        prune_vocabulary(model, [], tmp_path / "a", verbose=False)
    with pytest.raises(PruningError, match="corpus item 2"):
        prune_vocabulary(model, ["ok", 3], tmp_path / "b", verbose=False)  # type: ignore[list-item]
    with pytest.raises(PruningError, match="not in the vocabulary"):
        prune_vocabulary(model, ["ok"], tmp_path / "c", keep_tokens=["no-such-piece-xyz"], verbose=False)
    with pytest.raises(PruningError, match="outside the vocabulary"):
        prune_vocabulary(model, ["ok"], tmp_path / "d", keep_tokens=[10**6], verbose=False)
    with pytest.raises(PruningError, match="cannot prune"):
        prune_vocabulary(object(), ["ok"], tmp_path / "e", verbose=False)
    bpe = _tiny_sentence_transformer(tmp_path, "bpe")
    with pytest.raises(PruningError, match="BPE"):
        prune_vocabulary(bpe, ["ok"], tmp_path / "f", verbose=False)
    assert not any((tmp_path / name).exists() for name in "abcdef")


def test_prune_me5_small_on_real_sentences(shared_data: Path, tmp_path: Path) -> None:
    """A few hundred real sentences in German, Kazakh and Amharic: same vectors, a fraction of the size."""
    from polyembed.data.io import read_lines
    from polyembed.models import load_model

    corpus: list[str] = []
    for code in ("deu", "kaz", "amh"):
        corpus += read_lines(shared_data / "tatoeba" / f"tatoeba.{code}-eng.{code}")[:100]
    me5 = load_model("me5-small")
    out = prune_vocabulary(me5, corpus, tmp_path / "me5-pruned", verbose=False)
    report = PruningReport.load(out)
    assert report.original_tokens == 250_002 and report.kept_tokens < 5_000
    assert report.parameters_after < 0.25 * report.parameters_before

    pruned = load_model(str(out))
    assert pruned.prompt == "query: "
    sample = corpus[::10]  # 30 sentences, 10 per language
    cosines = _cosines(me5.encode(sample), pruned.encode(sample))
    assert cosines.min() > 0.9999
