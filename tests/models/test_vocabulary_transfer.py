"""FOCUS vocabulary transfer: sparsemax, tokenizer training, the copy / interpolate / random split, saving."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from polyembed.errors import PolyembedError
from polyembed.models.saving import LANGUAGE_MODELS_INDEX
from polyembed.models.vocabulary_transfer import (
    REPORT_FILE,
    VocabularyTransferError,
    canonical_vocabulary,
    cooccurrence_embeddings,
    fasttext_embeddings,
    focus_embeddings,
    sparsemax,
    swap_vocabulary,
    train_tokenizer,
    transfer_vocabulary,
    transfer_vocabulary_per_language,
)

MIN_COUNT = 5

# A made-up language: a few English words (they overlap with MiniLM's vocabulary) and pseudo-words (they
# do not), used in fixed slots so that words of one slot share contexts.
_DETS = ["the", "a", "zor", "mek"]
_NOUNS = ["dog", "house", "blorfen", "kwazzle", "drumpfel", "zibbet", "quornak", "flimsor"]
_VERBS = ["sees", "plinks", "gorvat", "runs", "twazzles", "smerks"]
_ADJS = ["red", "big", "vrullig", "snoffy", "plaggish"]
_RARE = ["yxqwert", "jabberwok", "zzzumph"]  # each used MIN_COUNT - 2 times: too rare for a vector


def _synthetic_corpus(n: int = 600, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(_DETS), rng.choice(_ADJS), rng.choice(_NOUNS), rng.choice(_VERBS)]
        words += [rng.choice(_DETS), rng.choice(_NOUNS)]
        out.append(" ".join(words) + ".")
    for word in _RARE:
        out += [f"the {word} runs."] * (MIN_COUNT - 2)
    return out


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return _synthetic_corpus()


@pytest.fixture(scope="module")
def source_tokenizer():
    from transformers import AutoTokenizer

    from polyembed.models.loading import BUILTIN_MODELS

    return AutoTokenizer.from_pretrained(str(BUILTIN_MODELS["minilm-en"].locate()))


@pytest.fixture(scope="module")
def old_embeddings(source_tokenizer) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1)
    return 0.5 + 2.0 * torch.randn((len(source_tokenizer), 8), generator=generator)


def _focus(source_tokenizer, old_embeddings, new_tokenizer, corpus, **extra):
    return focus_embeddings(
        source_tokenizer,
        old_embeddings,
        new_tokenizer,
        corpus,
        min_count=MIN_COUNT,
        dim=16,
        show_progress=False,
        **extra,
    )


@pytest.fixture(scope="module")
def transferred(source_tokenizer, old_embeddings, corpus):
    new_tokenizer = train_tokenizer(corpus, 200, source_tokenizer=source_tokenizer, show_progress=False)
    new, report = _focus(source_tokenizer, old_embeddings, new_tokenizer, corpus)
    return new_tokenizer, new, report


# --------------------------------------------------------------------------------------------- sparsemax


def _project_by_bisection(z: np.ndarray) -> np.ndarray:
    """Projection onto the simplex by its definition: p = max(z - tau, 0), sum(p) = 1, tau by bisection."""
    low, high = z.min() - 1.0, z.max()
    for _ in range(200):
        tau = (low + high) / 2
        if np.maximum(z - tau, 0).sum() > 1:
            low = tau
        else:
            high = tau
    return np.maximum(z - (low + high) / 2, 0)


def test_sparsemax_is_the_euclidean_projection_onto_the_simplex() -> None:
    rng = np.random.default_rng(0)
    for scale in (0.1, 1.0, 10.0):
        z = rng.normal(size=(20, 30)) * scale
        p = sparsemax(torch.from_numpy(z)).numpy()
        assert (p >= 0).all()
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
        for row in range(z.shape[0]):
            np.testing.assert_allclose(p[row], _project_by_bisection(z[row]), atol=1e-9)
            # no other point of the simplex is closer to z
            others = rng.dirichlet(np.full(z.shape[1], 0.3), size=500)
            assert np.linalg.norm(p[row] - z[row]) <= np.linalg.norm(others - z[row], axis=1).min() + 1e-12


def test_sparsemax_known_values_sparsity_and_dim() -> None:
    torch.testing.assert_close(sparsemax(torch.tensor([0.3, 0.1])), torch.tensor([0.6, 0.4]))
    torch.testing.assert_close(sparsemax(torch.tensor([1.0, 0.0])), torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(sparsemax(torch.tensor([5.0, 1.0, -3.0])), torch.tensor([1.0, 0.0, 0.0]))
    torch.testing.assert_close(sparsemax(torch.zeros(4)), torch.full((4,), 0.25))
    z = torch.randn(6, 9, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(sparsemax(z + 3.0), sparsemax(z))  # shift invariant
    torch.testing.assert_close(sparsemax(z, dim=0), sparsemax(z.T).T)
    assert sparsemax(z).dtype == torch.float32


# --------------------------------------------------------------------------------------------- tokenizer


def test_canonical_vocabulary_unifies_word_start_markers(source_tokenizer, corpus) -> None:
    vocab = source_tokenizer.get_vocab()
    canonical = canonical_vocabulary(source_tokenizer)
    assert canonical["▁the"] == vocab["the"]
    assert canonical["ing"] == vocab["##ing"]
    assert vocab["[CLS]"] not in canonical.values()
    unigram = train_tokenizer(corpus, 150, source_tokenizer=source_tokenizer, kind="unigram", show_progress=False)
    specials = set(unigram.all_special_tokens)
    # SentencePiece pieces already carry the '▁' marker: their canonical form is the piece itself
    assert canonical_vocabulary(unigram) == {t: i for t, i in unigram.get_vocab().items() if t not in specials}
    assert "▁dog" in canonical_vocabulary(unigram) and "▁dog" in canonical


@pytest.mark.parametrize("kind", ["wordpiece", "unigram"])
def test_train_tokenizer_keeps_special_tokens_normaliser_and_template(source_tokenizer, corpus, kind) -> None:
    new = train_tokenizer(corpus, 200, source_tokenizer=source_tokenizer, kind=kind, show_progress=False)
    assert new.convert_ids_to_tokens([0, 1, 2, 3, 4]) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    roles = (new.pad_token, new.cls_token, new.sep_token, new.unk_token)
    assert roles == ("[PAD]", "[CLS]", "[SEP]", "[UNK]")
    ids = new("The blorfen runs.")["input_ids"]
    assert ids[0] == new.cls_token_id == 2 and ids[-1] == new.sep_token_id == 3
    assert new.tokenize("THE BLORFEN") == new.tokenize("the blorfen")  # the source lowercases
    assert "blorfen" in new.convert_tokens_to_string(new.tokenize("the blorfen"))
    assert len(new) <= 200


def test_train_tokenizer_rejects_bad_input(source_tokenizer, corpus) -> None:
    for bad_corpus in ([], ["", "   "]):
        with pytest.raises(PolyembedError, match="empty"):
            train_tokenizer(bad_corpus, 100, source_tokenizer=source_tokenizer)
    with pytest.raises(PolyembedError, match="5 special tokens"):
        train_tokenizer(corpus, 5, source_tokenizer=source_tokenizer)
    with pytest.raises(VocabularyTransferError, match="vocab_size"):
        train_tokenizer(corpus, True, source_tokenizer=source_tokenizer)
    with pytest.raises(VocabularyTransferError, match="kind"):
        train_tokenizer(corpus, 100, source_tokenizer=source_tokenizer, kind="bpe")
    with pytest.raises(VocabularyTransferError, match="item 2 is int"):
        train_tokenizer(["ok", 3], 100, source_tokenizer=source_tokenizer)
    with pytest.raises(VocabularyTransferError, match="single string"):
        train_tokenizer("just one string", 100, source_tokenizer=source_tokenizer)


# ----------------------------------------------------------------------------------------- auxiliary space


def test_cooccurrence_embeddings_reflect_shared_contexts() -> None:
    sequences = [[5, 0, 6], [5, 1, 6], [7, 2, 8], [9, 2, 10]] * 20 + [[5, 3, 6]]
    vectors, counts = cooccurrence_embeddings(sequences, 11, dim=4, window=1, min_count=2)
    assert counts.tolist() == [20, 20, 40, 1, 0, 41, 41, 20, 20, 20, 20]
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    assert unit[0] @ unit[1] > 0.99  # same contexts
    assert abs(unit[0] @ unit[2]) < 0.1  # disjoint contexts
    assert not vectors[3].any() and not vectors[4].any()  # too rare / unseen: no vector
    with pytest.raises(VocabularyTransferError, match="token ids"):
        cooccurrence_embeddings([[0, 11]], 11)


def test_fasttext_embeddings_reflect_shared_contexts_and_are_deterministic() -> None:
    rng = random.Random(0)
    # tokens 0/1 share their contexts (5 _ 6), token 2 has its own (7 _ 8), token 3 is too rare
    sequences = [[5, rng.choice([0, 1]), 6] for _ in range(400)] + [[7, 2, 8] for _ in range(200)] + [[5, 3, 6]]
    tokens = ["▁ka", "▁ko", "zz", "▁ki", "unused", "▁le", "▁ri", "▁mu", "▁pa"]
    vectors, counts = fasttext_embeddings(sequences, tokens, dim=16, window=1, min_count=2, epochs=20)
    assert counts.tolist()[:5] == [int(counts[0]), 400 - int(counts[0]), 200, 1, 0]
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    assert unit[0] @ unit[1] > unit[0] @ unit[2] + 0.2  # shared contexts are closer than disjoint ones
    assert not vectors[3].any() and not vectors[4].any()  # too rare / unseen: no vector
    again, _ = fasttext_embeddings(sequences, tokens, dim=16, window=1, min_count=2, epochs=20)
    np.testing.assert_array_equal(vectors, again)
    with pytest.raises(VocabularyTransferError, match="token ids"):
        fasttext_embeddings([[0, 9]], tokens)


# --------------------------------------------------------------------------------------------- FOCUS


def test_every_token_is_copied_interpolated_or_random_exactly_once(transferred) -> None:
    new_tokenizer, new, report = transferred
    groups = [set(report.copied_ids), set(report.interpolated_ids), set(report.random_ids)]
    assert set().union(*groups) == set(range(len(new_tokenizer)))
    assert sum(len(g) for g in groups) == len(new_tokenizer) == new.shape[0] == report.target_vocab_size
    assert (report.copied, report.interpolated, report.random) == tuple(len(g) for g in groups)
    assert min(report.copied, report.interpolated, report.random) > 0
    assert "copied" in report.summary() and json.dumps(report.to_dict())


def test_copied_tokens_keep_exactly_their_old_vectors(source_tokenizer, old_embeddings, transferred) -> None:
    new_tokenizer, new, report = transferred
    old_forms = {i: form for form, i in canonical_vocabulary(source_tokenizer).items()}
    new_canonical = canonical_vocabulary(new_tokenizer)
    weights = report.weights
    for new_id in report.copied_ids:
        row = weights.getrow(new_id)
        assert row.nnz == 1 and row.data[0] == 1.0
        old_id = int(row.indices[0])
        assert torch.equal(new[new_id], old_embeddings[old_id])
        token = new_tokenizer.convert_ids_to_tokens(new_id)
        if token in new_tokenizer.all_special_tokens:
            assert source_tokenizer.convert_ids_to_tokens(old_id) == token
        else:
            assert old_forms[old_id] == next(f for f, i in new_canonical.items() if i == new_id)
    # nothing that overlaps was missed, and the word-start marker was normalised ('▁the' == 'the')
    old_canonical = canonical_vocabulary(source_tokenizer)
    assert {i for f, i in new_canonical.items() if f in old_canonical} <= set(report.copied_ids)
    assert new_tokenizer.get_vocab()["the"] in report.copied_ids
    cls = new_tokenizer.cls_token_id
    assert torch.equal(new[cls], old_embeddings[source_tokenizer.cls_token_id])


def test_interpolated_rows_are_convex_combinations_of_overlapping_rows(old_embeddings, transferred) -> None:
    new_tokenizer, new, report = transferred
    weights = report.weights
    anchor_old_ids = {int(weights.getrow(i).indices[0]) for i in report.copied_ids}
    for new_id in report.interpolated_ids:
        row = weights.getrow(new_id)
        assert row.nnz >= 1
        assert (row.data > 0).all()
        assert abs(row.data.sum() - 1.0) < 1e-5
        assert set(row.indices.tolist()) <= anchor_old_ids
        expected = torch.from_numpy(row.data).float() @ old_embeddings[torch.from_numpy(row.indices).long()]
        torch.testing.assert_close(new[new_id], expected, atol=1e-5, rtol=1e-5)
    pseudo = [new_tokenizer.get_vocab()[w] for w in ("blorfen", "kwazzle") if w in new_tokenizer.get_vocab()]
    assert pseudo and set(pseudo) <= set(report.interpolated_ids)


def test_overlap_across_families_sentencepiece_source_to_wordpiece_target(source_tokenizer, corpus) -> None:
    unigram = train_tokenizer(corpus, 150, source_tokenizer=source_tokenizer, kind="unigram", show_progress=False)
    same_family = train_tokenizer(corpus, 120, source_tokenizer=unigram, show_progress=False)
    assert json.loads(same_family.backend_tokenizer.to_str())["model"]["type"] == "Unigram"
    wordpiece = train_tokenizer(corpus, 200, source_tokenizer=unigram, kind="wordpiece", show_progress=False)
    old = torch.randn((len(unigram), 4), generator=torch.Generator().manual_seed(0))
    new, report = focus_embeddings(unigram, old, wordpiece, corpus, min_count=MIN_COUNT, show_progress=False)
    old_vocab, new_vocab = unigram.get_vocab(), wordpiece.get_vocab()
    assert torch.equal(new[new_vocab["dog"]], old[old_vocab["▁dog"]])  # word-initial in both
    continuation = next(t for t in new_vocab if t.startswith("##") and t[2:] in old_vocab)
    assert torch.equal(new[new_vocab[continuation]], old[old_vocab[continuation[2:]]])
    assert new_vocab["dog"] in report.copied_ids and new_vocab[continuation] in report.copied_ids


def test_random_rows_only_for_tokens_unseen_in_the_corpus(source_tokenizer, transferred, corpus) -> None:
    new_tokenizer, new, report = transferred
    counts = np.zeros(len(new_tokenizer), dtype=int)
    for ids in new_tokenizer(corpus, add_special_tokens=False)["input_ids"]:
        np.add.at(counts, ids, 1)
    assert all(counts[i] < MIN_COUNT for i in report.random_ids)
    frequent_new = {i for i in range(len(new_tokenizer)) if counts[i] >= MIN_COUNT} - set(report.copied_ids)
    assert frequent_new <= set(report.interpolated_ids)
    assert report.weights[report.random_ids].nnz == 0
    rare = [new_tokenizer.get_vocab().get(w) for w in _RARE]
    assert any(r is not None and r in report.random_ids for r in rare)


def test_focus_is_deterministic_keeps_dtype(source_tokenizer, old_embeddings, transferred, corpus) -> None:
    new_tokenizer, new, _ = transferred
    assert torch.equal(new, _focus(source_tokenizer, old_embeddings, new_tokenizer, corpus)[0])
    assert _focus(source_tokenizer, old_embeddings.half(), new_tokenizer, corpus)[0].dtype == torch.float16


def test_given_auxiliary_vectors_drive_the_sparsemax_weights(source_tokenizer, old_embeddings, transferred) -> None:
    new_tokenizer, _, report = transferred
    size = len(new_tokenizer)
    aux = np.eye(size, dtype=np.float32)  # every token orthogonal to every other
    a, b = report.copied_ids[10], report.copied_ids[20]
    one, two, tie, none = report.interpolated_ids[:4]
    aux[one] = aux[a]  # identical to anchor a only: sparsemax([1, 0, ...]) is one-hot
    aux[two] = (aux[a] + aux[b]) / np.sqrt(2)  # equally close to a and b
    aux[none] = 0  # no vector: random
    new, given = focus_embeddings(source_tokenizer, old_embeddings, new_tokenizer, None, auxiliary=aux)
    old_id = {i: int(given.weights.getrow(i).indices[0]) for i in (a, b)}
    torch.testing.assert_close(new[one], old_embeddings[old_id[a]])
    torch.testing.assert_close(new[two], (old_embeddings[old_id[a]] + old_embeddings[old_id[b]]) / 2)
    assert given.weights.getrow(tie).nnz == given.anchors  # all similarities equal: uniform weights
    assert none in given.random_ids and given.auxiliary == f"given ({size}-d)"
    with pytest.raises(VocabularyTransferError, match="auxiliary"):
        focus_embeddings(source_tokenizer, old_embeddings, new_tokenizer, None, auxiliary=aux[:5])
    with pytest.raises(VocabularyTransferError, match="missing"):
        focus_embeddings(source_tokenizer, old_embeddings, new_tokenizer, None)


def test_decompose_gives_unseen_tokens_the_mean_of_their_old_pieces(
    source_tokenizer, old_embeddings, transferred, corpus
) -> None:
    new_tokenizer, with_random, random_report = transferred
    new, report = _focus(source_tokenizer, old_embeddings, new_tokenizer, corpus, unseen="decompose")
    assert report.unseen == "decompose" and report.decomposed > 0
    assert sorted(report.decomposed_ids + report.random_ids) == sorted(random_report.random_ids)
    assert report.copied_ids == random_report.copied_ids and report.interpolated_ids == random_report.interpolated_ids
    unchanged = torch.tensor(random_report.copied_ids + random_report.interpolated_ids)
    assert torch.equal(new[unchanged], with_random[unchanged])
    vocab = new_tokenizer.get_vocab()
    rare = [vocab[w] for w in _RARE if w in vocab]
    assert rare and set(rare) <= set(report.decomposed_ids)  # too rare for a vector, but MiniLM can spell them
    for new_id in report.decomposed_ids:
        text = new_tokenizer.convert_ids_to_tokens(new_id).removeprefix("##")
        pieces = source_tokenizer(text, add_special_tokens=False)["input_ids"]
        pieces = [i for i in pieces if i != source_tokenizer.unk_token_id]
        torch.testing.assert_close(new[new_id], old_embeddings[pieces].mean(dim=0))
        expected = torch.from_numpy(report.weights[new_id].toarray()).float() @ old_embeddings
        torch.testing.assert_close(new[new_id], expected[0], atol=1e-5, rtol=1e-5)
    assert "decomposed (unseen)" in report.summary() and "decomposed (unseen)" not in random_report.summary()
    with pytest.raises(VocabularyTransferError, match="unseen must be one of random, decompose"):
        focus_embeddings(source_tokenizer, old_embeddings, new_tokenizer, corpus, unseen="mean")


def test_fasttext_space_interpolates_like_the_ppmi_space(source_tokenizer, old_embeddings, transferred, corpus):
    new_tokenizer, ppmi, ppmi_report = transferred
    fasttext, report = _focus(source_tokenizer, old_embeddings, new_tokenizer, corpus, space="fasttext", epochs=5)
    assert report.auxiliary.startswith("fastText CBOW") and ppmi_report.auxiliary.startswith("PPMI-SVD")
    assert report.copied_ids == ppmi_report.copied_ids  # the space changes only the interpolated rows
    assert torch.equal(fasttext[report.copied_ids], ppmi[report.copied_ids])
    assert report.interpolated > 0 and set(report.interpolated_ids) == set(ppmi_report.interpolated_ids)
    weights = report.weights[report.interpolated_ids]
    np.testing.assert_allclose(np.asarray(weights.sum(axis=1)).ravel(), 1.0, atol=1e-5)  # convex combinations
    assert not torch.equal(fasttext[report.interpolated_ids], ppmi[report.interpolated_ids])
    with pytest.raises(VocabularyTransferError, match="space must be one of"):
        _focus(source_tokenizer, old_embeddings, new_tokenizer, corpus, space="word2vec")


def test_focus_embeddings_rejects_bad_input(source_tokenizer, old_embeddings, transferred) -> None:
    new_tokenizer = transferred[0]
    with pytest.raises(PolyembedError, match="empty"):
        focus_embeddings(source_tokenizer, old_embeddings, new_tokenizer, [])
    with pytest.raises(VocabularyTransferError, match="rows"):
        focus_embeddings(source_tokenizer, old_embeddings[:100], new_tokenizer, ["the dog"])
    with pytest.raises(VocabularyTransferError, match="2-d"):
        focus_embeddings(source_tokenizer, old_embeddings[0], new_tokenizer, ["the dog"])


# --------------------------------------------------------------------------------------------- whole model


def test_transfer_vocabulary_saves_a_working_folder(minilm, corpus, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    model = copy.deepcopy(minilm.model)
    model.prompts = {"query": "query: "}
    old_weight = model[0].auto_model.get_input_embeddings().weight.detach().clone()
    out, report = transfer_vocabulary(
        model, corpus, tmp_path / "focus", vocab_size=300, min_count=MIN_COUNT, dim=32, verbose=False
    )
    assert out == tmp_path / "focus" and (out / "modules.json").is_file()
    assert json.loads((out / REPORT_FILE).read_text())["copied"] == report.copied
    assert [p.name for p in tmp_path.iterdir()] == ["focus"]  # no temp folder left behind

    # the caller's model is untouched
    assert len(model[0].tokenizer) == 30522
    assert torch.equal(model[0].auto_model.get_input_embeddings().weight, old_weight)

    loaded = SentenceTransformer(str(out), device="cpu", local_files_only=True)
    tokenizer, hf = loaded[0].tokenizer, loaded[0].auto_model
    assert loaded.prompts["query"] == "query: "
    assert len(tokenizer) == hf.config.vocab_size == hf.get_input_embeddings().weight.shape[0] <= 300
    assert hf.config.pad_token_id == tokenizer.pad_token_id == 0
    # the prompt was seen while training the tokenizer: 'query' is one token, copied from the old one
    query_id = tokenizer.get_vocab()["query"]
    assert query_id in report.copied_ids
    old_query_id = model[0].tokenizer.get_vocab()["query"]
    assert torch.equal(hf.get_input_embeddings().weight[query_id], old_weight[old_query_id])
    vectors = loaded.encode(["the blorfen plinks.", "zor red dog sees a house."], prompt_name="query")
    assert vectors.shape == (2, 384) and np.isfinite(vectors).all()

    with pytest.raises(VocabularyTransferError, match="not empty"):
        transfer_vocabulary(model, corpus, out, vocab_size=300, verbose=False)
    transfer_vocabulary(model, corpus[:300], out, vocab_size=250, overwrite=True, verbose=False)
    assert len(SentenceTransformer(str(out), device="cpu", local_files_only=True)[0].tokenizer) <= 250


def test_transfer_vocabulary_rejects_bad_input(minilm, corpus, tmp_path: Path) -> None:
    with pytest.raises(PolyembedError, match="empty"):
        transfer_vocabulary(minilm, [], tmp_path / "a", vocab_size=100, verbose=False)
    with pytest.raises(PolyembedError, match="special tokens"):
        transfer_vocabulary(minilm, corpus, tmp_path / "b", vocab_size=3, verbose=False)
    with pytest.raises(VocabularyTransferError, match="cannot transfer"):
        transfer_vocabulary(42, corpus, tmp_path / "c", vocab_size=100, verbose=False)
    assert not any(tmp_path.iterdir())
    with pytest.raises(VocabularyTransferError, match="shape"):
        swap_vocabulary(minilm, minilm.model[0].tokenizer, torch.zeros(10, 384))


def test_per_language_mode_trains_one_tokenizer_per_language(minilm, corpus, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    rng = random.Random(1)
    other = [" ".join(rng.choice(["ngolo", "tshaba", "mvula", "kuzwa", "dlala"]) for _ in range(6)) for _ in range(300)]
    out, reports = transfer_vocabulary_per_language(
        minilm, {"deu": corpus, "zu": other}, tmp_path / "langs", vocab_size=120, min_count=MIN_COUNT, dim=16,
        verbose=False,
    )
    assert sorted(reports) == ["de", "zu"]  # codes normalised
    index = json.loads((out / LANGUAGE_MODELS_INDEX).read_text())
    assert sorted(index["languages"]) == ["de", "zu"] and index["languages"]["de"]["folder"] == "de"
    vocabularies = {}
    for code in ("de", "zu"):
        loaded = SentenceTransformer(str(out / code), device="cpu", local_files_only=True)
        vocabularies[code] = set(loaded[0].tokenizer.get_vocab())
        assert loaded.encode(["the dog sees a house."]).shape == (1, 384)
        assert json.loads((out / code / REPORT_FILE).read_text())["copied"] == reports[code].copied
        card = (out / code / "README.md").read_text(encoding="utf-8")  # the model card (issue 38)
        assert f"- {code}" in card.split("---")[1] and f"| language | {code} |" in card
        assert f"| copied / interpolated / random rows | {reports[code].copied:,} /" in card
    assert "blorfen" in vocabularies["de"] and "blorfen" not in vocabularies["zu"]  # each its own text only
    assert "ngolo" in vocabularies["zu"] and "ngolo" not in vocabularies["de"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["langs"]

    with pytest.raises(PolyembedError, match="not empty"):
        transfer_vocabulary_per_language(minilm, {"de": corpus}, out, vocab_size=120, verbose=False)
    transfer_vocabulary_per_language(minilm, {"zu": other}, out, vocab_size=120, overwrite=True, verbose=False)
    assert sorted(p.name for p in out.iterdir()) == ["polyembed_languages.json", "zu"]


def test_per_language_mode_rejects_bad_input_and_writes_nothing(minilm, corpus, tmp_path: Path) -> None:
    target = tmp_path / "langs"
    with pytest.raises(PolyembedError, match="unknown language code 'xq1'"):
        transfer_vocabulary_per_language(minilm, {"xq1": corpus}, target, vocab_size=120, verbose=False)
    with pytest.raises(PolyembedError, match="given twice"):
        transfer_vocabulary_per_language(minilm, {"de": corpus, "deu": corpus}, target, vocab_size=120, verbose=False)
    with pytest.raises(PolyembedError, match="zu corpus is empty"):
        transfer_vocabulary_per_language(minilm, {"de": corpus, "zu": [" "]}, target, vocab_size=120, verbose=False)
    with pytest.raises(PolyembedError, match="no languages"):
        transfer_vocabulary_per_language(minilm, {}, target, vocab_size=120, verbose=False)
    with pytest.raises(PolyembedError, match="special tokens"):  # fails while building: nothing is published
        transfer_vocabulary_per_language(minilm, {"de": corpus}, target, vocab_size=3, verbose=False)
    assert not any(tmp_path.iterdir())


# --------------------------------------------------------------------------------------------- real German


def _sts_spearman(model, pairs, n: int) -> float:
    from scipy.stats import spearmanr

    a = model.encode(pairs.sentences1[:n], normalize_embeddings=True, batch_size=64)
    b = model.encode(pairs.sentences2[:n], normalize_embeddings=True, batch_size=64)
    return 100 * float(spearmanr((a * b).sum(axis=1), pairs.scores[:n]).statistic)


@pytest.mark.slow
def test_focus_minilm_to_german_beats_random_init(minilm, shared_data) -> None:
    """English MiniLM, German WordPiece vocabulary: STS on 200 stsb-multi-mt de test pairs, no training."""
    from polyembed.data.registry import get_dataset

    train = get_dataset("stsb-multi-mt").load("de", "train", root=shared_data)
    captions = get_dataset("multi30k").load("train", languages=["de", "en"], root=shared_data).texts["de"]
    corpus = list(dict.fromkeys(train.sentences1 + train.sentences2 + captions))
    test = get_dataset("stsb-multi-mt").load("de", "test", root=shared_data)
    model = minilm.model
    old_tokenizer, old = model[0].tokenizer, model[0].auto_model.get_input_embeddings().weight.detach()

    new_tokenizer = train_tokenizer(corpus, 8000, source_tokenizer=old_tokenizer, show_progress=False)
    focus, report = focus_embeddings(old_tokenizer, old, new_tokenizer, corpus, show_progress=False)
    noise = torch.randn(focus.shape, generator=torch.Generator().manual_seed(0))
    random_init = old.mean(dim=0) + old.std(dim=0) * noise
    copy_only = random_init.clone()
    copy_only[report.copied_ids] = focus[report.copied_ids]

    scores = {
        name: _sts_spearman(swap_vocabulary(model, new_tokenizer, matrix), test, 200)
        for name, matrix in (("focus", focus), ("random", random_init), ("copy+random", copy_only))
    }
    print(report.summary())
    print({k: round(v, 1) for k, v in scores.items()})
    assert report.copied > 1000 and report.interpolated > 1000
    assert scores["focus"] > scores["random"] + 5
    assert scores["focus"] > scores["copy+random"]
