"""EMMA-X's semantic-rank classifiers (Guo et al. 2023, section 3.2 and Appendix G): given two sentence
embeddings, a distribution over N semantic ranks (1 = translation or paraphrase, N = unrelated).

- `GaussianRankClassifier` (the paper's): rank r is a Gaussian over the difference of the two embeddings with
  a prior pi_r, a mean mu_r and a diagonal standard deviation sigma_r (all trainable, kept in log space:
  softmax logits for the priors, log sigma); the posterior is Eq. 5 with the Gaussian form of Eq. 19.
- `FeedForwardRankClassifier`: the paper's FCN ablation, a two-layer network over the same difference.

Both are saved next to the encoder (`emmax_classifier.json` + `.safetensors`), so the warm-up's model folder
carries its classifier into the EM phase.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn

from polyembed.errors import PolyembedError

CLASSIFIER_CONFIG = "emmax_classifier.json"
CLASSIFIER_WEIGHTS = "emmax_classifier.safetensors"
ClassifierKind = Literal["gmm", "fcn"]


class GaussianRankClassifier(nn.Module):
    """N diagonal Gaussians over embedding differences, with trainable priors (Eq. 5, Eq. 19).

    All ranks start alike (zero mean, sigma = sqrt(2 / dim), the per-dimension spread of the difference of two
    unrelated unit vectors): only the supervised ranks of the warm-up tell them apart."""

    kind: ClassifierKind = "gmm"

    def __init__(self, dim: int, ranks: int) -> None:
        super().__init__()
        self.dim, self.ranks = dim, ranks
        self.prior_logits = nn.Parameter(torch.zeros(ranks))
        self.means = nn.Parameter(torch.zeros(ranks, dim))
        self.log_std = nn.Parameter(torch.full((ranks, dim), 0.5 * math.log(2.0 / dim)))

    def joint_log_likelihood(self, difference: torch.Tensor) -> torch.Tensor:
        """log pi_r + log N_r(difference | mu_r, sigma_r) for every rank: (... x dim) -> (... x N).

        The squared distance sum_d (x_d - mu_rd)^2 / sigma_rd^2 is expanded into three matrix products, so phase
        2's (anchors x keys x dim) differences never grow an N-fold copy (64 anchors against 832 keys: 82M
        values per pass otherwise)."""
        precision = torch.exp(-2 * self.log_std)  # N x dim, 1 / sigma^2
        squared = (difference.pow(2) @ precision.T - 2 * difference @ (self.means * precision).T
                   + (self.means.pow(2) * precision).sum(-1))
        log_density = -0.5 * (squared + self.dim * math.log(2 * math.pi)) - self.log_std.sum(-1)
        return torch.log_softmax(self.prior_logits, dim=0) + log_density

    def log_posterior(self, difference: torch.Tensor) -> torch.Tensor:
        """log P(c = r | x, y), Eq. 5: (... x dim) -> (... x N)."""
        return torch.log_softmax(self.joint_log_likelihood(difference), dim=-1)

    def prior(self) -> torch.Tensor:
        """The rank priors pi_r (they sum to 1)."""
        return torch.softmax(self.prior_logits, dim=0)


class FeedForwardRankClassifier(nn.Module):
    """The FCN ablation: difference -> hidden (tanh) -> N rank logits.

    The difference is first scaled by sqrt(dim / 2), so that two unrelated unit vectors differ by about 1 per
    dimension (the spread the GMM starts from). Unscaled, the first layer sees values near 0.05 and 200 steps
    barely move it: `benchmarks/emmax.py classifier` gave a rank-1 accuracy of 12-57 % on held-out me5-small
    pairs before the scaling (at 99638e6) and 77-93 % with it, over the same learning rates and two seeds."""

    kind: ClassifierKind = "fcn"

    def __init__(self, dim: int, ranks: int) -> None:
        super().__init__()
        self.dim, self.ranks = dim, ranks
        self.scale = math.sqrt(dim / 2)
        self.layers = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, ranks))

    def log_posterior(self, difference: torch.Tensor) -> torch.Tensor:
        """log P(c = r | x, y): (... x dim) -> (... x N)."""
        return torch.log_softmax(self.layers(difference * self.scale), dim=-1)


RankClassifier = GaussianRankClassifier | FeedForwardRankClassifier
CLASSIFIERS: dict[str, type[RankClassifier]] = {"gmm": GaussianRankClassifier, "fcn": FeedForwardRankClassifier}


def build_classifier(kind: str, dim: int, ranks: int) -> RankClassifier:
    """A new classifier of `kind` ('gmm' or 'fcn') over `dim`-dimensional embeddings with `ranks` ranks."""
    if ranks < 2:
        raise PolyembedError(f"ranks must be at least 2 (translation and unrelated), got {ranks}")
    if kind not in CLASSIFIERS:
        raise PolyembedError(f"unknown classifier '{kind}' (choose from {', '.join(CLASSIFIERS)})")
    return CLASSIFIERS[kind](dim, ranks)


def save_classifier(classifier: RankClassifier, folder: str | Path, extra: dict[str, Any] | None = None) -> None:
    """Write the classifier's kind, size and weights into `folder` (a model folder), with `extra` JSON fields
    (the rank similarities s_r that go with it)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    description = {"kind": classifier.kind, "dim": classifier.dim, "ranks": classifier.ranks, **(extra or {})}
    (folder / CLASSIFIER_CONFIG).write_text(json.dumps(description, indent=2) + "\n", encoding="utf-8")
    save_file({k: v.detach().contiguous().cpu() for k, v in classifier.state_dict().items()},
              str(folder / CLASSIFIER_WEIGHTS))


def read_classifier_config(folder: str | Path) -> dict[str, Any]:
    """The saved classifier's kind, dim and ranks (and the extra fields saved with it), without loading weights
    (a clear error when absent)."""
    path = Path(folder) / CLASSIFIER_CONFIG
    if not path.is_file():
        raise PolyembedError(
            f"{folder}: no {CLASSIFIER_CONFIG}; the EM phase starts from a warm-up model "
            "(run `polyembed train emmax warmup` first and pass its model/ folder as the student)"
        )
    try:
        description = json.loads(path.read_text(encoding="utf-8"))
        return {**description, "kind": str(description["kind"]), "dim": int(description["dim"]),
                "ranks": int(description["ranks"])}
    except (ValueError, KeyError, TypeError) as err:
        raise PolyembedError(f"{path}: not an EMMA-X classifier description ({err})") from err


def load_classifier(folder: str | Path) -> RankClassifier:
    """The classifier saved in `folder` by `save_classifier`."""
    from safetensors.torch import load_file

    description = read_classifier_config(folder)
    classifier = build_classifier(str(description["kind"]), int(description["dim"]), int(description["ranks"]))
    classifier.load_state_dict(load_file(str(Path(folder) / CLASSIFIER_WEIGHTS)))
    return classifier
