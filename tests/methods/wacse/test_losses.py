"""WACSE's objectives on hand-made tensors: word vectors from token spans, WTR over aligned words, TR."""

from __future__ import annotations

import math

import torch

from polyembed.methods.wacse.alignments import link_label, split_words
from polyembed.methods.wacse.losses import translation_ranking, word_translation_ranking, word_vectors


def test_word_vectors_average_their_tokens_and_mask_padding() -> None:
    tokens = torch.tensor([[[1.0, 0.0], [3.0, 0.0], [0.0, 5.0], [9.0, 9.0]]])
    spans = torch.tensor([[[0, 2], [2, 3], [-1, -1]]])
    vectors, valid = word_vectors(tokens, spans)
    assert torch.allclose(vectors[0, 0], torch.tensor([2.0, 0.0])) and torch.allclose(vectors[0, 1],
                                                                                        torch.tensor([0.0, 5.0]))
    assert valid.tolist() == [[True, True, False]]


def test_word_translation_ranking_is_low_when_aligned_words_match_and_ignores_padding() -> None:
    source = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]])
    target = torch.tensor([[[0.0, 1.0], [1.0, 0.0], [7.0, 7.0]]])  # the third target "word" is padding
    spans = torch.tensor([[[0, 1], [1, 2], [-1, -1]]])
    right = torch.tensor([[[0, 1], [1, 0], [-1, -1]]])  # source 0 <-> target 1, source 1 <-> target 0
    wrong = torch.tensor([[[0, 0], [1, 1], [-1, -1]]])
    good = word_translation_ranking(source, target, spans, spans, right, scale=20.0)
    bad = word_translation_ranking(source, target, spans, spans, wrong, scale=20.0)
    # each link: log(1 + e^-20) per direction (~2e-9), 2 links x 2 directions, divided by 2N = 2; a wrong
    # link costs ~20 per direction
    assert float(good) < 1e-6 and math.isclose(float(bad), 2 * (20 + math.log1p(math.exp(-20))), rel_tol=1e-4)
    empty = torch.full((1, 3, 2), -1)
    assert float(word_translation_ranking(source, target, spans, spans, empty, scale=20.0)) == 0.0


def test_translation_ranking_prefers_the_diagonal() -> None:
    english = torch.eye(3)
    assert float(translation_ranking(english, english, 20.0)) < 1e-6
    assert float(translation_ranking(english, english.flip(0), 20.0)) > 10


def test_labels_keep_the_best_links_inside_the_truncated_text() -> None:
    assert [w for w, _, _ in split_words("Hello, world!")] == ["Hello", ",", "world", "!"]
    english_spans = [(1, 2), (2, 3), None]  # the third word was truncated away
    other_spans = [(1, 3), (3, 4)]
    links = {(0, 1): 0.95, (1, 0): 0.85, (2, 1): 0.99, (1, 1): 0.5}
    label = link_label(english_spans, other_spans, links, threshold=0.8, max_links=4, size=4)
    assert label.shape == (3, 4, 2)
    assert label[2].tolist() == [[0, 1], [1, 0], [-1, -1], [-1, -1]]  # (2, 1) points at a truncated word
    assert label[0, :3].tolist() == [[1, 2], [2, 3], [-1, -1]] and label[1, :2].tolist() == [[1, 3], [3, 4]]


def test_aligned_word_prediction_over_all_links_is_the_sum_of_each_link_masked_alone(tmp_path) -> None:
    """awp_links all (eq. 4): every link in its own masked copy, summed; one link per row gives that link's loss."""
    from sentence_transformers import SentenceTransformer

    from polyembed.methods.wacse.losses import WordAlignedTranslationLoss
    from tests.helpers import tiny_sentence_transformer

    model = SentenceTransformer(str(tiny_sentence_transformer(tmp_path / "m", seed=0, mask_token=True)), device="cpu")
    model.eval()  # no dropout: the passes are comparable
    loss = WordAlignedTranslationLoss(model, awp_weight=0.1, awp_links="all")
    features = model.preprocess(["the cat sees the sea", "a dog runs home"])
    other = model.preprocess(["die katze sieht das meer", "ein hund läuft heim"])
    spans = torch.tensor([[[1, 2], [2, 3], [3, 4]], [[1, 2], [2, 3], [-1, -1]]])
    links = torch.tensor([[[0, 0], [1, 2], [-1, -1]], [[1, 1], [-1, -1], [-1, -1]]])
    with torch.no_grad():
        both = loss.aligned_word_prediction(features, spans, other, spans, links)
        loss.awp_links = "one"
        singles = []
        for first_row in ([[0, 0], [-1, -1], [-1, -1]], [[1, 2], [-1, -1], [-1, -1]]):
            only = torch.tensor([first_row, [[-1, -1]] * 3])
            singles.append(loss.aligned_word_prediction(features, spans, other, spans, only))
        second = loss.aligned_word_prediction(features, spans, other, spans,
                                              torch.tensor([[[-1, -1]] * 3, [[1, 1], [-1, -1], [-1, -1]]]))
    assert float(both) > 0
    assert math.isclose(float(both), float(sum(singles) + second), rel_tol=1e-5)


def test_aligned_word_prediction_together_masks_a_rows_links_in_one_copy(tmp_path) -> None:
    """awp_links together: one copy per row with every aligned word masked, the loss still summed over links; with
    one link per row it is the same as all."""
    from sentence_transformers import SentenceTransformer

    from polyembed.methods.wacse.losses import WordAlignedTranslationLoss
    from tests.helpers import tiny_sentence_transformer

    model = SentenceTransformer(str(tiny_sentence_transformer(tmp_path / "m", seed=0, mask_token=True)), device="cpu")
    model.eval()
    loss = WordAlignedTranslationLoss(model, awp_weight=0.1, awp_links="together")
    features = model.preprocess(["the cat sees the sea", "a dog runs home"])
    other = model.preprocess(["die katze sieht das meer", "ein hund läuft heim"])
    spans = torch.tensor([[[1, 2], [2, 3], [3, 4]], [[1, 2], [2, 3], [-1, -1]]])
    two_and_one = torch.tensor([[[0, 0], [1, 2], [-1, -1]], [[1, 1], [-1, -1], [-1, -1]]])
    copies = loss.masked_copies(features, spans, other, spans, two_and_one)
    assert copies is not None and len(copies.input_ids) == 2 and copies.links == 3
    mask = model.tokenizer.mask_token_id
    assert copies.input_ids[0, 1] == mask and copies.input_ids[0, 2] == mask  # both of row 0's words, one copy
    one_each = torch.tensor([[[1, 2], [-1, -1], [-1, -1]], [[1, 1], [-1, -1], [-1, -1]]])
    with torch.no_grad():
        together = loss.aligned_word_prediction(features, spans, other, spans, one_each)
        loss.awp_links = "all"
        apart = loss.aligned_word_prediction(features, spans, other, spans, one_each)
    assert float(together) > 0 and math.isclose(float(together), float(apart), rel_tol=1e-6)
