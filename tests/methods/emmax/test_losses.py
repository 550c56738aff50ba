"""EMMA-X's pieces against closed forms: the GMM's likelihood and posterior (scipy), ranking InfoNCE (a case
worked by hand), the mixup rank rule, the queue's first-in-first-out and the key encoder's momentum step."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from polyembed.errors import PolyembedError
from polyembed.methods.emmax.classifier import (
    FeedForwardRankClassifier,
    GaussianRankClassifier,
    build_classifier,
    load_classifier,
    save_classifier,
)
from polyembed.methods.emmax.losses import (
    EmmaxState,
    RankSimilarity,
    mixup_rank,
    rank_nll,
    ranking_info_nce,
    translation_mask,
)


def _random_gmm(dim: int = 3, ranks: int = 4) -> GaussianRankClassifier:
    torch.manual_seed(0)
    gmm = GaussianRankClassifier(dim, ranks)
    with torch.no_grad():
        gmm.prior_logits.copy_(torch.randn(ranks))
        gmm.means.copy_(torch.randn(ranks, dim))
        gmm.log_std.copy_(torch.randn(ranks, dim) * 0.3)
    return gmm


def test_gmm_likelihood_and_posterior_match_scipy() -> None:
    gmm = _random_gmm().double()
    points = torch.randn(5, 3, dtype=torch.float64)
    priors = torch.softmax(gmm.prior_logits, 0).double().detach().numpy()
    expected = np.stack([
        np.log(priors[r]) + multivariate_normal(gmm.means[r].double().detach().numpy(),
                                                np.diag(gmm.log_std[r].double().exp().detach().numpy() ** 2))
        .logpdf(points.numpy())
        for r in range(4)
    ], axis=1)
    got = gmm.joint_log_likelihood(points).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    posterior = gmm.log_posterior(points).detach().numpy()
    np.testing.assert_allclose(posterior, expected - logsumexp(expected, axis=1, keepdims=True), rtol=1e-10)
    assert np.allclose(np.exp(posterior).sum(axis=1), 1.0)


def test_ranking_info_nce_matches_a_hand_computed_case() -> None:
    # one anchor, four keys of ranks 1, 2, 2, 3 (N = 3): terms for r = 1 and r = 2 only
    similarities = torch.tensor([[0.9, 0.5, 0.4, 0.1]])
    ranks = torch.tensor([[1, 2, 2, 3]])
    tau = [0.1, 0.2, 0.3]
    s = [0.9, 0.5, 0.4, 0.1]
    term_1 = math.log(math.exp(s[0] / tau[0]) / sum(math.exp(v / tau[0]) for v in s))
    term_2 = math.log((math.exp(s[1] / tau[1]) + math.exp(s[2] / tau[1])) / sum(math.exp(v / tau[1]) for v in s[1:]))
    assert ranking_info_nce(similarities, ranks, tau).item() == pytest.approx(-(term_1 + term_2), rel=1e-6)


def test_ranking_info_nce_skips_empty_ranks_and_averages_over_anchors() -> None:
    similarities = torch.tensor([[0.9, 0.1], [0.3, 0.2]])
    ranks = torch.tensor([[1, 3], [3, 3]])  # the second anchor has no key below rank N: no term
    tau = [0.5, 0.6, 0.7]
    term = math.log(math.exp(0.9 / 0.5) / (math.exp(0.9 / 0.5) + math.exp(0.1 / 0.5)))
    assert ranking_info_nce(similarities, ranks, tau).item() == pytest.approx(-term / 2, rel=1e-6)


def test_warmup_objective_teaches_the_gmm_translations_from_outliers() -> None:
    """Synthetic embeddings where a translation is a small perturbation: 150 Adam steps of Eq. 4 at the
    default classifier learning rate tell rank 1 from rank N on new pairs."""
    from torch.nn import functional as F

    from polyembed.methods.emmax.losses import EmmaxWarmupLoss

    torch.manual_seed(0)
    dim = 32
    loss = EmmaxWarmupLoss(model=None, classifier=GaussianRankClassifier(dim, 4), mixup_examples=1)
    optimizer = torch.optim.Adam(loss.classifier.parameters(), lr=1e-2)

    def pairs(size: int) -> tuple[torch.Tensor, torch.Tensor]:
        first = F.normalize(torch.randn(size, dim), dim=-1)
        return first, F.normalize(first + 0.3 * torch.randn(size, dim) / dim**0.5, dim=-1)

    for _ in range(150):
        value = loss.rank_likelihood(*pairs(16))
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
    first, second = pairs(200)
    with torch.no_grad():
        translation = loss.classifier.log_posterior(first - second).argmax(-1) == 0
        outlier = loss.classifier.log_posterior(first - second.roll(1, 0)).argmax(-1) == 3
    assert translation.float().mean() > 0.9 and outlier.float().mean() > 0.9


def test_mixup_rank_rules() -> None:
    lambdas = torch.tensor([0.0, 0.01, 1 / 3, 0.34, 0.5, 2 / 3, 0.9, 1.0])
    # the paper's rule, N = 4: ceil(1 + 3 lambda)
    assert mixup_rank(lambdas, 4, "ceil").tolist() == [1, 2, 2, 3, 3, 3, 4, 4]
    assert mixup_rank(torch.tensor([0.0, 0.2, 0.8]), 2, "ceil").tolist() == [1, 2, 2]
    # the authors' bins, N = 4: [0, .25) rank 1, [.25, .5) rank 2, [.5, .75) rank 3, [.75, 1] rank 4
    assert mixup_rank(torch.tensor([0.0, 0.24, 0.25, 0.5, 0.74, 0.75, 1.0]), 4).tolist() == [1, 1, 2, 3, 3, 4, 4]
    with pytest.raises(ValueError, match="not one of"):
        mixup_rank(lambdas, 4, "floor")


def test_rank_nll_with_the_authors_label_smoothing() -> None:
    log_posterior = torch.log(torch.tensor([[0.7, 0.2, 0.1]]))
    assert rank_nll(log_posterior, torch.tensor([1])).item() == pytest.approx(-math.log(0.7))
    # eps = 0.3: target 0.7 on the true rank, 0.15 on each of the two others
    smoothed = 0.7 * -math.log(0.7) + 0.15 * -math.log(0.2) + 0.15 * -math.log(0.1)
    assert rank_nll(log_posterior, torch.tensor([1]), 0.3).item() == pytest.approx(smoothed)


def test_ranking_info_nce_leaves_excluded_pairs_out_of_every_sum() -> None:
    # keys: own key (excluded), translation (rank 1), a rank-2 key; N = 3
    similarities = torch.tensor([[1.0, 0.8, 0.3]], dtype=torch.float64)
    ranks = torch.tensor([[1, 1, 2]])
    exclude = torch.tensor([[True, False, False]])
    tau = [0.1, 0.2, 0.3]
    term_1 = math.log(math.exp(0.8 / 0.1) / (math.exp(0.8 / 0.1) + math.exp(0.3 / 0.1)))  # rank 2 has no term below N
    term_2 = 0.0  # rank 2: the only key of rank >= 2 is itself
    assert ranking_info_nce(similarities, ranks, tau, exclude).item() == pytest.approx(-(term_1 + term_2), rel=1e-6)


def test_rank_similarity_is_a_bias_corrected_moving_average() -> None:
    similarity = RankSimilarity(3)
    similarity.update(torch.tensor([0.9, 0.8, 0.2]), torch.tensor([1, 1, 3]), momentum=0.9)
    # one update: the batch means themselves, not 0.1 of them; rank 2 never seen stays 0
    torch.testing.assert_close(similarity.values(0.9), torch.tensor([0.85, 0.0, 0.2]))
    similarity.update(torch.tensor([0.5]), torch.tensor([1]), momentum=0.9)
    # two updates of rank 1: (0.9 * 0.1 * 0.85 + 0.1 * 0.5) / (1 - 0.81), the batches weighted 0.09 : 0.1
    expected = (0.9 * 0.1 * 0.85 + 0.1 * 0.5) / (1 - 0.9**2)
    assert similarity.values(0.9)[0].item() == pytest.approx(expected)
    assert similarity.updates.tolist() == [2, 0, 1]
    restored = RankSimilarity(3)
    restored.load_values(similarity.values(0.9).tolist(), similarity.updates.tolist(), momentum=0.9)
    torch.testing.assert_close(restored.average, similarity.average)


def test_queue_is_first_in_first_out_with_wrap_around() -> None:
    state = EmmaxState(GaussianRankClassifier(2, 2), torch.nn.Linear(2, 2), torch.zeros(5, 2))
    batches = [torch.tensor([[float(i), 1.0]]) for i in range(1, 4)]
    for batch in batches:
        state.enqueue(batch)
    assert state.queue[:, 0].tolist() == [1, 2, 3, 0, 0] and state.queue_position.item() == 3
    state.enqueue(torch.tensor([[4.0, 1.0], [5.0, 1.0], [6.0, 1.0]]))  # wraps: 6 replaces the oldest (1)
    assert state.queue[:, 0].tolist() == [6, 2, 3, 4, 5] and state.queue_position.item() == 1


def test_momentum_update_is_an_exponential_moving_average() -> None:
    query, key = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    before = [p.detach().clone() for p in key.parameters()]
    state = EmmaxState(GaussianRankClassifier(2, 2), key, torch.zeros(3, 2))
    state.momentum_update(query, 0.9)
    for old, new, target in zip(before, key.parameters(), query.parameters(), strict=True):
        torch.testing.assert_close(new, 0.9 * old + 0.1 * target)


def test_em_rank_similarities_start_from_the_warmup_or_the_paper_grid() -> None:
    from polyembed.methods.emmax.losses import EmmaxEmLoss

    loss = EmmaxEmLoss(_Encoder(), GaussianRankClassifier(4, 4), torch.randn(6, 4), [0.05, 0.075, 0.1, 0.125])
    assert loss.rank_similarities().tolist() == [1.0, 0.75, 0.5, 0.25]  # no warm-up values: the paper's order
    warm = EmmaxEmLoss(_Encoder(), GaussianRankClassifier(4, 4), torch.randn(6, 4), [0.05, 0.075, 0.1, 0.125],
                       initial_rank_similarity=([0.95, 0.9, 0.85, 0.8], [10, 10, 10, 10]))
    torch.testing.assert_close(warm.rank_similarities(), torch.tensor([0.95, 0.9, 0.85, 0.8]))


@pytest.mark.parametrize("kind", ["gmm", "fcn"])
def test_classifier_saves_and_loads(tmp_path, kind: str) -> None:
    classifier = build_classifier(kind, 6, 3)
    save_classifier(classifier, tmp_path)
    loaded = load_classifier(tmp_path)
    assert isinstance(loaded, GaussianRankClassifier if kind == "gmm" else FeedForwardRankClassifier)
    points = torch.randn(4, 6)
    torch.testing.assert_close(loaded.log_posterior(points), classifier.log_posterior(points))


def test_fewer_than_two_ranks_is_refused() -> None:
    with pytest.raises(PolyembedError, match="at least 2"):
        build_classifier("gmm", 4, 1)


class _Encoder(torch.nn.Module):
    """A stand-in sentence encoder: features {'x': tensor} -> a linear map as the sentence embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, features: dict) -> dict:
        return {**features, "sentence_embedding": self.linear(features["x"])}


def test_em_step_pairs_each_anchor_with_its_own_key_at_rank_1() -> None:
    from polyembed.methods.emmax.losses import EmmaxEmLoss

    torch.manual_seed(0)
    encoder = _Encoder()
    loss = EmmaxEmLoss(encoder, GaussianRankClassifier(4, 3), torch.randn(6, 4), [0.05, 0.07, 0.1], momentum=0.5)
    batch = {"x": torch.randn(3, 4)}
    with torch.no_grad():
        encoder.linear.weight.add_(1.0)  # the key encoder (a copy from before) now lags behind
    queue_before = loss.head.queue.clone()
    losses = loss([batch])
    assert set(losses) == {"ranking_info_nce", "rank_mle"} and losses["ranking_info_nce"].requires_grad
    # the key encoder moved half-way to the encoder, then embedded the batch into the queue's first slots
    torch.testing.assert_close(loss.head.key_encoder.linear.weight,
                               (encoder.linear.weight + (encoder.linear.weight - 1.0)) / 2)
    keys = torch.nn.functional.normalize(loss.head.key_encoder(batch)["sentence_embedding"], dim=-1)
    torch.testing.assert_close(loss.head.queue[:3], keys)
    torch.testing.assert_close(loss.head.queue[3:], queue_before[3:])
    # 3 anchors x (3 own-batch keys + 6 queue keys), the 3 own-key pairs excluded from the counts
    assert loss.head.rank_counts.sum().item() == 3 * 9 - 3
    encoder.eval()
    loss([batch])  # an evaluation pass moves nothing
    assert loss.head.queue_position.item() == 3 and loss.head.rank_counts.sum().item() == 24


class _FixedRanks(torch.nn.Module):
    """A stand-in classifier whose argmax rank for each (anchor, key) pair is given."""

    def __init__(self, ranks: torch.Tensor, count: int) -> None:
        super().__init__()
        self.fixed, self.ranks = ranks, count
        self.weight = torch.nn.Parameter(torch.zeros(1))

    def log_posterior(self, difference: torch.Tensor) -> torch.Tensor:
        one_hot = torch.nn.functional.one_hot(self.fixed - 1, self.ranks).float()
        return torch.log_softmax(one_hot * 10 + self.weight, dim=-1)


def test_translation_mask_pairs_first_and_second_sides() -> None:
    mask = translation_mask(2, 5)  # anchors: pair 0 and 1 first sides, then their second sides; one queue key
    assert mask.nonzero().tolist() == [[0, 2], [1, 3], [2, 0], [3, 1]]


def test_em_e_step_with_bitext_sets_translations_and_masks_own_keys() -> None:
    """Two pairs (anchors 0, 1 first sides; 2, 3 their translations), keys = the 4 batch keys + 2 queue keys."""
    from polyembed.methods.emmax.losses import EmmaxEmLoss

    predicted = torch.tensor([[2, 3, 3, 3, 3, 2],
                              [3, 2, 3, 3, 2, 3],
                              [3, 3, 3, 3, 3, 3],
                              [3, 3, 3, 1, 3, 3]])
    loss = EmmaxEmLoss(_Encoder(), _FixedRanks(predicted, 3), torch.randn(2, 4), [0.05, 0.1, 0.15],
                       initial_rank_similarity=([0.9, 0.5, 0.1], [5, 5, 5]))
    similarities = torch.tensor([[1.0, 0.2, 0.85, 0.1, 0.45, 0.6],
                                 [0.2, 1.0, 0.1, 0.8, 0.2, 0.35],
                                 [0.85, 0.1, 1.0, 0.2, 0.0, 0.65],
                                 [0.1, 0.8, 0.2, 1.0, 0.4, 0.12]])
    step = loss.e_step(similarities, torch.zeros(4, 6, 4), batch_keys=True, parallel=True)
    own = torch.eye(4, 6, dtype=torch.bool)
    golden = translation_mask(2, 6)
    assert torch.equal(step.exclude, own) and torch.equal(step.fixed, own | golden)
    assert torch.equal(step.predicted, predicted)
    # the encoder learns c_G, with each translation rank 1 (own keys excluded, whatever their label)
    expected_encoder = predicted.clone()
    expected_encoder[golden] = 1
    assert torch.equal(step.encoder_targets, expected_encoder)
    # the classifier learns c_M, the nearest of s = (0.9, 0.5, 0.1), with own keys and translations rank 1
    nearest = torch.tensor([[1, 3, 1, 3, 2, 2],
                            [3, 1, 3, 1, 3, 2],
                            [1, 3, 1, 3, 3, 2],
                            [3, 1, 3, 1, 2, 3]])
    nearest[own | golden] = 1
    assert torch.equal(step.classifier_targets, nearest)


def test_em_e_step_without_bitext_makes_the_own_key_rank_1() -> None:
    from polyembed.methods.emmax.losses import EmmaxEmLoss

    predicted = torch.tensor([[3, 2, 3], [2, 3, 3]])
    loss = EmmaxEmLoss(_Encoder(), _FixedRanks(predicted, 3), torch.randn(1, 4), [0.05, 0.1, 0.15])
    step = loss.e_step(torch.zeros(2, 3), torch.zeros(2, 3, 4), batch_keys=True, parallel=False)
    assert step.exclude is None and step.encoder_targets.tolist() == [[1, 2, 3], [2, 1, 3]]


def test_em_step_on_bitext_counts_only_decided_pairs_and_queues_both_sides() -> None:
    from polyembed.methods.emmax.losses import EmmaxEmLoss

    torch.manual_seed(0)
    encoder = _Encoder()
    loss = EmmaxEmLoss(encoder, GaussianRankClassifier(4, 3), torch.randn(8, 4), [0.05, 0.1, 0.15])
    first, second = {"x": torch.randn(3, 4)}, {"x": torch.randn(3, 4)}
    losses = loss([first, second])
    assert set(losses) == {"ranking_info_nce", "rank_mle"} and losses["ranking_info_nce"].requires_grad
    # 6 anchors x (6 batch keys + 8 queue keys), minus 6 own keys and 6 translations whose rank is known
    assert loss.head.rank_counts.sum().item() == 6 * 14 - 12
    assert loss.head.queue_position.item() == 6 and loss.rank_similarity.updates.min().item() >= 0


def test_warmup_examples_come_in_both_orientations_with_their_similarities() -> None:
    from polyembed.methods.emmax.losses import EmmaxWarmupLoss

    torch.manual_seed(0)
    first = torch.nn.functional.normalize(torch.randn(5, 4), dim=-1)
    second = torch.nn.functional.normalize(torch.randn(5, 4), dim=-1)
    loss = EmmaxWarmupLoss(None, GaussianRankClassifier(4, 4), mixup_examples=1)
    differences, similarities, ranks = loss.labelled_examples(first, second)
    assert differences.shape == (30, 4)  # 2 orientations x (translation, outlier, mixup) x 5 pairs
    assert ranks[:5].tolist() == [1] * 5 and ranks[5:10].tolist() == [4] * 5
    torch.testing.assert_close(differences[:5], first - second)
    torch.testing.assert_close(differences[15:20], second - first)
    torch.testing.assert_close(similarities[:5], (first * second).sum(-1))
    one_way = EmmaxWarmupLoss(None, GaussianRankClassifier(4, 4), both_orientations=False)
    assert one_way.labelled_examples(first, second)[0].shape == (15, 4)
    plain = EmmaxWarmupLoss(None, GaussianRankClassifier(4, 4), mixup_examples=0)
    plain.rank_likelihood(first, second, update=True)  # s_1 and s_N: the translations' and outliers' mean cosine
    assert plain.rank_similarity.updates.tolist() == [1, 0, 0, 1]
    assert plain.rank_similarities()[0].item() == pytest.approx((first * second).sum(-1).mean().item(), abs=1e-4)


def _unit(rows: int, dim: int = 4) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(rows, dim), dim=-1)


def test_authors_warmup_info_nce_leaves_the_own_key_out_and_rewards_the_translation() -> None:
    from polyembed.methods.emmax.losses import EmmaxWarmupLoss

    torch.manual_seed(0)
    anchors, keys = _unit(4), _unit(6)  # two pairs: anchors 0, 1 first sides, 2, 3 their translations; 2 queued
    loss = EmmaxWarmupLoss(None, GaussianRankClassifier(4, 4), temperature=0.1)
    expected = 0.0
    for i in range(4):
        others = [j for j in range(6) if j != i]  # every key but the own one, queue included
        logits = torch.stack([anchors[i] @ keys[j] / 0.1 for j in others])
        expected += -(logits[others.index((i + 2) % 4)] - torch.logsumexp(logits, 0))
    torch.testing.assert_close(loss.authors_info_nce(anchors, keys), expected / 4)


def test_authors_classifier_examples_mix_each_translation_with_every_key() -> None:
    """As the authors' `interploted_feature`: m = w t + (1 - w) k for the anchor's translation t, the example
    is a - m, its similarity a.m, its rank the key's weight 1 - w binned; own key and translation rank 1."""
    from polyembed.methods.emmax.losses import EmmaxWarmupLoss

    torch.manual_seed(0)
    anchors, keys = _unit(4), _unit(7)
    translations = torch.cat([anchors[2:], anchors[:2]])  # first sides, then second sides
    loss = EmmaxWarmupLoss(None, GaussianRankClassifier(4, 4))
    differences, similarities, ranks = loss.keyed_examples(anchors, keys)
    assert differences.shape == (4, 7, 4) and ranks.shape == similarities.shape == (4, 7)
    # a - m = (a - k) - w (t - k): recover the translation's weight w from one coordinate
    weights = ((anchors[:, None, 0] - keys[None, :, 0]) - differences[..., 0]) / (
        translations[:, None, 0] - keys[None, :, 0])
    mixed = weights[..., None] * translations[:, None] + (1 - weights[..., None]) * keys[None]
    torch.testing.assert_close(differences, anchors[:, None] - mixed)
    torch.testing.assert_close(similarities, (anchors[:, None] * mixed).sum(-1))
    assert ((weights >= 0) & (weights <= 1)).all()
    known = translation_mask(2, 7)
    known[torch.arange(4), torch.arange(4)] = True
    assert ranks[known].tolist() == [1] * 8  # own key and translation: rank 1 whatever w
    assert ranks[~known].tolist() == mixup_rank(1 - weights[~known], 4).tolist()  # near the translation: rank 1


def test_mixup_rank_by_the_classifiers_priors() -> None:
    lambdas = torch.tensor([0.0, 0.05, 0.1, 0.5, 0.69, 0.7, 0.99])
    prior = torch.tensor([0.1, 0.2, 0.4, 0.3])  # rank 1 covers [0, 0.1), rank 2 [0.1, 0.3), 3 [0.3, 0.7), 4 the rest
    assert mixup_rank(lambdas, 4, "prior", prior).tolist() == [1, 1, 2, 3, 3, 4, 4]
    equal = torch.full((4,), 0.25)
    grid = torch.tensor([0.0, 0.24, 0.26, 0.5, 0.74, 0.76, 1.0])
    assert mixup_rank(grid, 4, "prior", equal).tolist() == mixup_rank(grid, 4, "uniform").tolist()
    with pytest.raises(ValueError, match="needs the classifier's 4 rank priors"):
        mixup_rank(lambdas, 4, "prior")


def test_warmup_stages_train_only_their_part() -> None:
    from polyembed.methods.emmax.losses import EmmaxWarmupLoss, KeyBank, momentum_copy

    torch.manual_seed(0)
    encoder = _Encoder()
    batch = [{"x": torch.randn(3, 4)}, {"x": torch.randn(3, 4)}]
    bank = KeyBank(torch.randn(5, 4), momentum_copy(encoder))
    encoder_only = EmmaxWarmupLoss(encoder, GaussianRankClassifier(4, 4), stage="encoder", encoder_loss="authors",
                                   keys=bank, momentum=0.5)
    with torch.no_grad():
        encoder.linear.weight.add_(1.0)
    losses = encoder_only(batch)
    assert set(losses) == {"info_nce"} and losses["info_nce"].requires_grad
    torch.testing.assert_close(bank.key_encoder.linear.weight, encoder.linear.weight - 0.5)  # half-way
    keys = torch.cat([torch.nn.functional.normalize(bank.key_encoder(b)["sentence_embedding"], dim=-1)
                      for b in batch])
    torch.testing.assert_close(bank.queue, keys[-5:])  # six keys into a queue of five: the newest five stay
    assert encoder_only.rank_similarity.updates.sum().item() == 0  # no classifier examples, s_r untouched

    classifier_only = EmmaxWarmupLoss(encoder, GaussianRankClassifier(4, 4), stage="classifier",
                                      classifier_examples="authors", keys=KeyBank(torch.randn(5, 4)))
    losses = classifier_only(batch)
    assert set(losses) == {"rank_mle"} and losses["rank_mle"].requires_grad
    losses["rank_mle"].backward()
    assert encoder.linear.weight.grad is None  # the frozen stage never reaches the encoder
    assert classifier_only.classifier.means.grad is not None
    assert classifier_only.rank_similarity.updates.min().item() == 1  # every rank drawn among 6 x 11 examples
    with pytest.raises(ValueError, match="need a KeyBank"):
        EmmaxWarmupLoss(encoder, GaussianRankClassifier(4, 4), encoder_loss="authors")
    with pytest.raises(ValueError, match="needs a key encoder"):
        EmmaxWarmupLoss(encoder, GaussianRankClassifier(4, 4), encoder_loss="authors", keys=KeyBank(torch.randn(5, 4)))
