"""WACSE's objectives (Miao et al. 2024, section 3) as one sentence-transformers loss over (English, other)
pairs whose label carries word spans and word alignments (`alignments.link_label`).

- TR, translation ranking (eq. 9-10): in-batch softmax over cosines of the sentence vectors times `scale`
  (20: DAP's temperature 0.05; eq. 9 prints a plain cosine), each English sentence against every
  other-language sentence of the batch.
- WTR, word translation ranking (eq. 6-8): for each aligned word pair (x_j, y_k), InfoNCE of x_j's vector
  against every word of the same target sentence, and of y_k's against every word of the source sentence (a
  word's vector is the mean of its token states); cosines times `wtr_scale` (1: eq. 6's plain cosine); summed
  over links, divided by 2N.
- AWP, aligned word prediction (eq. 4-5): mask an aligned word of one side and predict the tokens of its
  counterpart from the masked positions with an MLM head tied to the input embeddings; when the two words
  have different token counts the longer is clipped (section 4.3). The loss sums over links (eq. 4);
  `awp_links` "together" (the default) masks all of a sentence's aligned words in one copy, "all" masks each
  link in its own copy of the sentence (the paper does not say which), "one" masks one random link per
  sentence and direction. "together" and "one" cost one extra forward pass per direction instead of one per
  link.

The total is alpha TR + beta AWP + gamma WTR (0.8 / 0.1 / 0.1); a weight of 0 leaves its objective out.
With `language_embeddings`, each side is encoded under the token type its label names (the paper's Table 8
ablation; see `polyembed.models.language_embedding`).
"""

from __future__ import annotations

from typing import Any, NamedTuple, cast

import torch
from torch import nn
from torch.nn import functional as F

from polyembed.models.mlm_head import MaskedLanguageModelingHead


class MaskedCopies(NamedTuple):
    """One direction's AWP inputs: the masked copies, their attention inputs, (copy, position) of each predicted
    token, its target token id, the link it belongs to, and the number of links."""

    input_ids: torch.Tensor
    inputs: dict[str, torch.Tensor]
    positions: list[tuple[int, int]]
    targets: list[int]
    link_of: list[int]
    links: int


def word_vectors(tokens: torch.Tensor, spans: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(batch x words x hidden) means of each word's token states, and the (batch x words) mask of real words;
    `spans` is (batch x words x 2) start / end token positions, -1 for padding."""
    valid = spans[..., 0] >= 0
    positions = torch.arange(tokens.shape[1], device=tokens.device)
    inside = (positions >= spans[..., :1]) & (positions < spans[..., 1:2]) & valid[..., None]
    weights = inside.to(tokens.dtype)
    vectors = weights @ tokens / weights.sum(dim=-1, keepdim=True).clamp(min=1)
    return vectors, valid


def translation_ranking(source: torch.Tensor, target: torch.Tensor, scale: float) -> torch.Tensor:
    """Mean in-batch softmax cross-entropy of each source sentence against all target sentences."""
    scores = scale * F.normalize(source, dim=-1) @ F.normalize(target, dim=-1).T
    return F.cross_entropy(scores, torch.arange(len(scores), device=scores.device))


def word_translation_ranking(source_tokens: torch.Tensor, target_tokens: torch.Tensor, source_spans: torch.Tensor,
                             target_spans: torch.Tensor, links: torch.Tensor, scale: float) -> torch.Tensor:
    """WTR summed over links in both directions, divided by 2N (N: batch size)."""
    source, source_valid = word_vectors(source_tokens, source_spans)
    target, target_valid = word_vectors(target_tokens, target_spans)
    scores = scale * F.normalize(source, dim=-1) @ F.normalize(target, dim=-1).transpose(1, 2)  # B x Ls x Lt
    rows, slots = torch.nonzero(links[..., 0] >= 0, as_tuple=True)
    if len(rows) == 0:
        return scores.sum() * 0.0
    j, k = links[rows, slots, 0], links[rows, slots, 1]
    forward = scores[rows, j].masked_fill(~target_valid[rows], float("-inf"))
    backward = scores[rows, :, k].masked_fill(~source_valid[rows], float("-inf"))
    total = F.cross_entropy(forward, k, reduction="sum") + F.cross_entropy(backward, j, reduction="sum")
    return total / (2 * len(source_tokens))


class WordAlignedTranslationLoss(nn.Module):
    """alpha TR + beta AWP + gamma WTR over (English, other) pairs; see the module docstring.

    Inputs: a dataset with two text columns (English, the other language) and a `label` column of
    `link_label` arrays. Paper: Miao et al. 2024, WACSE (arXiv:2404.02490), section 3.

    Example::

        loss = WordAlignedTranslationLoss(model, tr_weight=0.8, awp_weight=0.1, wtr_weight=0.1, wtr_scale=1.0)
        Dataset.from_dict({"english": en, "other": kk, "label": [link_label(...) for ...]})
    """

    def __init__(self, model: Any, tr_weight: float = 0.8, awp_weight: float = 0.1, wtr_weight: float = 0.1,
                 scale: float = 20.0, language_embeddings: bool = False, *, wtr_scale: float = 1.0,
                 awp_links: str = "together") -> None:
        super().__init__()
        if awp_links not in ("all", "together", "one"):
            raise ValueError(f"awp_links '{awp_links}': choose all, together or one")
        self.model = model
        self.language_embeddings = language_embeddings
        self.tr_weight, self.awp_weight, self.wtr_weight, self.scale = tr_weight, awp_weight, wtr_weight, scale
        self.wtr_scale, self.awp_links = wtr_scale, awp_links
        self.head: MaskedLanguageModelingHead | None = None
        if awp_weight > 0:
            transformer = model[0].auto_model
            if model.tokenizer.mask_token_id is None:
                raise ValueError("aligned word prediction needs a tokenizer with a mask token")
            config = transformer.config
            rows = transformer.get_input_embeddings().weight.shape[0]
            self.head = MaskedLanguageModelingHead(config.hidden_size, rows,
                                                   getattr(config, "layer_norm_eps", 1e-12)).to(model.device)
        self.last_parts: dict[str, float] = {}

    def forward(self, sentence_features: list[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        english, other = sentence_features
        if self.language_embeddings:  # label row 3, slot 0: the token types of the English and the other side
            for side, features in enumerate((english, other)):
                types = labels[:, 3, 0, side].to(features["input_ids"].device)
                features["token_type_ids"] = types[:, None].expand_as(features["input_ids"]).contiguous()
        english_out, other_out = self.model(english), self.model(other)
        english_spans, other_spans, links = labels[:, 0], labels[:, 1], labels[:, 2]
        parts: dict[str, torch.Tensor] = {}
        if self.tr_weight > 0:
            parts["tr"] = translation_ranking(english_out["sentence_embedding"], other_out["sentence_embedding"],
                                              self.scale)
        if self.wtr_weight > 0:
            parts["wtr"] = word_translation_ranking(english_out["token_embeddings"], other_out["token_embeddings"],
                                                    english_spans, other_spans, links, self.wtr_scale)
        if self.head is not None:
            parts["awp"] = (self.aligned_word_prediction(english, english_spans, other, other_spans, links)
                            + self.aligned_word_prediction(other, other_spans, english, english_spans,
                                                           links.flip(-1))) / 2
        self.last_parts = {name: float(value.detach()) for name, value in parts.items()}
        weights = {"tr": self.tr_weight, "awp": self.awp_weight, "wtr": self.wtr_weight}
        # a tensor: training refuses a loss whose every chosen objective has weight 0
        return cast(torch.Tensor, sum(weights[name] * value for name, value in parts.items()))

    def masked_copies(self, masked_side: dict[str, torch.Tensor], masked_spans: torch.Tensor,
                      other_side: dict[str, torch.Tensor], other_spans: torch.Tensor,
                      links: torch.Tensor) -> MaskedCopies | None:
        """AWP's inputs in one direction: for each chosen link (x_j, y_k) the sentence with x_j's tokens masked,
        and the first n masked positions with the first n tokens of y_k as targets (n: the shorter word).
        `awp_links` "all" takes every link of a row, each in its own copy (the paper's sum, one pass per link);
        "together" every link of a row in one copy with all its aligned words masked at once (one pass per
        row); "one" a single link per row drawn from torch's generator (which the trainer checkpoints). None
        when no row has a link."""
        input_ids = masked_side["input_ids"]
        counts = (links[..., 0] >= 0).sum(dim=1)
        if self.awp_links == "one":
            draws = torch.randint(0, 2**31 - 1, (len(input_ids),))
            chosen = [(row, int(draws[row] % counts[row])) for row in range(len(input_ids)) if counts[row] > 0]
        else:
            chosen = [(row, slot) for row in range(len(input_ids)) for slot in range(int(counts[row]))]
        if not chosen:
            return None
        if self.awp_links == "together":  # one copy per row that has links
            copy_rows = sorted({row for row, _ in chosen})
            copy_of = {row: copy for copy, row in enumerate(copy_rows)}
            copy_index = [copy_of[row] for row, _ in chosen]
        else:
            copy_rows, copy_index = [row for row, _ in chosen], list(range(len(chosen)))
        rows = torch.tensor(copy_rows, device=input_ids.device)
        masked = input_ids[rows].clone()
        positions: list[tuple[int, int]] = []
        targets: list[int] = []
        link_of: list[int] = []
        for link, ((row, slot), copy) in enumerate(zip(chosen, copy_index, strict=True)):
            j, k = links[row, slot].tolist()
            (x_start, x_end), (y_start, y_end) = masked_spans[row, j].tolist(), other_spans[row, k].tolist()
            masked[copy, x_start:x_end] = self.model.tokenizer.mask_token_id
            n = min(x_end - x_start, y_end - y_start)
            positions += [(copy, x_start + t) for t in range(n)]
            targets += other_side["input_ids"][row, y_start : y_start + n].tolist()
            link_of += [link] * n
        inputs = {key: value[rows] for key, value in masked_side.items() if key in ("attention_mask", "token_type_ids")}
        return MaskedCopies(masked, inputs, positions, targets, link_of, len(chosen))

    def aligned_word_prediction(self, masked_side: dict[str, torch.Tensor], masked_spans: torch.Tensor,
                                other_side: dict[str, torch.Tensor], other_spans: torch.Tensor,
                                links: torch.Tensor) -> torch.Tensor:
        """Eq. 4-5 in one direction over `masked_copies`: mean cross-entropy per link over the vocabulary, summed
        over links, divided by N."""
        assert self.head is not None
        transformer = self.model[0].auto_model
        batch = self.masked_copies(masked_side, masked_spans, other_side, other_spans, links)
        if batch is None:
            return transformer.get_input_embeddings().weight.sum() * 0.0
        hidden = transformer(input_ids=batch.input_ids, **batch.inputs).last_hidden_state
        if not batch.positions:
            return hidden.sum() * 0.0
        index = torch.tensor(batch.positions, device=hidden.device)
        logits = self.head(hidden[index[:, 0], index[:, 1]], transformer.get_input_embeddings().weight)
        token_loss = F.cross_entropy(logits, torch.tensor(batch.targets, device=hidden.device), reduction="none")
        link = torch.tensor(batch.link_of, device=hidden.device)
        per_link = torch.zeros(batch.links, device=hidden.device, dtype=token_loss.dtype).index_add(0, link,
                                                                                                    token_loss)
        per_link = per_link / torch.bincount(link, minlength=batch.links).clamp(min=1)
        return per_link.sum() / len(masked_side["input_ids"])

    @property
    def citation(self) -> str:
        return "Miao et al. 2024, Enhancing cross-lingual sentence embedding for low-resource languages with word " \
               "alignment (WACSE), section 3"
