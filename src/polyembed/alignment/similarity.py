"""Word alignment from an encoder's contextual token embeddings (SimAlign, Jalili Sabet et al. 2020).

Each word's vector is the mean of its subword vectors at one hidden layer; a word pair's score is
(cos + 1) / 2 of the two vectors, in 0..1, and every link keeps its score so that a threshold can filter links
(the WACSE paper keeps WSPAlign links of probability >= 0.9; polyembed's WACSE filters these similarity scores
at its own `alignment_threshold`). Three ways to pick links from the score matrix:

- `argmax`: links that are the best target of their source word and the best source of their target word;
- `itermax`: argmax, then further rounds (2 in all by default) for words left unaligned: a cell whose row and
  column are both unaligned competes at full score, one with only one of them unaligned at `alpha` (0.9) of it,
  and cells between aligned words are out. This is SimAlign's answer to argmax leaving words unaligned;
- `match`: maximum-weight bipartite matching (scipy's linear_sum_assignment), one link per word on the
  shorter side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from polyembed.alignment.pharaoh import Link, SentencePair
from polyembed.errors import PolyembedError
from polyembed.messages import hide_progress
from polyembed.models.encoder import normalize_rows

Method = Literal["argmax", "itermax", "match"]
METHODS = ("argmax", "itermax", "match")


@dataclass
class WordAlignment:
    """Links of one sentence pair with their scores (0..1)."""

    scores: dict[Link, float]

    def links(self, threshold: float = 0.0) -> set[Link]:
        return {link for link, score in self.scores.items() if score >= threshold}


def argmax_links(scores: np.ndarray) -> np.ndarray:
    """Boolean matrix of mutual best matches."""
    rows, columns = scores.shape
    forward = np.zeros_like(scores, dtype=bool)
    forward[np.arange(rows), scores.argmax(axis=1)] = True
    backward = np.zeros_like(scores, dtype=bool)
    backward[scores.argmax(axis=0), np.arange(columns)] = True
    return forward & backward


def itermax_links(scores: np.ndarray, rounds: int = 2, alpha: float = 0.9) -> np.ndarray:
    """Argmax, then up to `rounds - 1` further rounds over the words still unaligned (see the module docstring)."""
    aligned = argmax_links(scores)
    if min(scores.shape) <= 2:
        return aligned
    for _ in range(rounds - 1):
        free_rows = ~np.any(aligned, axis=1)  # np.any: numpy's stubs type the method's result as a scalar or array
        free_columns = ~np.any(aligned, axis=0)
        if not free_rows.any() or not free_columns.any():
            break
        both = free_rows[:, None] & free_columns[None, :]
        either = free_rows[:, None] | free_columns[None, :]
        weights = np.where(both, 1.0, np.where(either, alpha, 0.0))
        candidates = argmax_links(scores * weights) & either
        if not (candidates & ~aligned).any():
            break
        aligned |= candidates
    return aligned


def match_links(scores: np.ndarray) -> np.ndarray:
    """Maximum-weight bipartite matching."""
    from scipy.optimize import linear_sum_assignment

    rows, columns = linear_sum_assignment(scores, maximize=True)
    out = np.zeros_like(scores, dtype=bool)
    out[rows, columns] = True
    return out


def similarity_scores(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """(cos + 1) / 2 between every source and target word vector."""
    return (normalize_rows(source) @ normalize_rows(target).T + 1.0) / 2.0


class WordVectorEncoder:
    """One model's word vectors: the mean of each word's subword vectors at `layer`; a word cut off by
    `max_length` gets a zero vector (it then scores 0.5 against everything)."""

    def __init__(self, model: Any, layer: int, max_length: int) -> None:
        from polyembed.models.loading import as_sentence_transformer, load_model

        encoder, _ = as_sentence_transformer(load_model(model) if isinstance(model, str) else model)
        self.tokenizer = encoder[0].tokenizer
        self.network = encoder[0].auto_model
        layers = self.network.config.num_hidden_layers
        if not 0 <= layer <= layers:
            raise PolyembedError(f"layer {layer}: this encoder has hidden states 0 (embeddings) to {layers}")
        if not getattr(self.tokenizer, "is_fast", False):
            raise PolyembedError("word alignment needs a fast tokenizer (it maps subwords back to words)")
        positions = getattr(self.network.config, "max_position_embeddings", max_length)
        if getattr(self.network.config, "model_type", "") in ("roberta", "xlm-roberta"):
            positions -= 2  # RoBERTa-style position ids start after the padding index
        self.layer = layer
        self.max_length = min(max_length, positions, int(min(self.tokenizer.model_max_length, 1e9)))

    def word_vectors(self, sentences: Sequence[list[str]], batch_size: int) -> list[np.ndarray]:
        import torch

        out = []
        self.network.eval()
        for start in range(0, len(sentences), batch_size):
            batch = [list(words) for words in sentences[start : start + batch_size]]
            encoded = self.tokenizer(batch, is_split_into_words=True, truncation=True, max_length=self.max_length,
                                     padding=True, return_tensors="pt")
            with torch.inference_mode():
                hidden = self.network(**encoded.to(self.network.device),
                                      output_hidden_states=True).hidden_states[self.layer]
            hidden = hidden.float().cpu().numpy()
            for row, words in enumerate(batch):
                vectors = np.zeros((len(words), hidden.shape[-1]), dtype=np.float32)
                counts = np.zeros(len(words), dtype=np.float32)
                for position, word in enumerate(encoded.word_ids(row)):
                    if word is not None:
                        vectors[word] += hidden[row, position]
                        counts[word] += 1
                out.append(vectors / counts.clip(1)[:, None])
        return out


class EmbeddingAligner:
    """Aligns words with the contextual embeddings of a sentence-transformers or Hugging Face encoder."""

    def __init__(self, model: Any, layer: int = 8, method: Method = "itermax", batch_size: int = 32,
                 max_length: int = 256, target_model: Any = None) -> None:
        if method not in METHODS:
            raise PolyembedError(f"alignment method '{method}': choose from {', '.join(METHODS)}")
        self.source = WordVectorEncoder(model, layer, max_length)
        self.target = self.source if target_model is None else WordVectorEncoder(target_model, layer, max_length)
        self.layer, self.method, self.batch_size, self.max_length = layer, method, batch_size, max_length

    def word_vectors(self, sentences: Sequence[list[str]]) -> list[np.ndarray]:
        """One (words x hidden) matrix per sentence, from the source-side model (see `WordVectorEncoder`)."""
        return self.source.word_vectors(sentences, self.batch_size)

    def align(self, pairs: Sequence[SentencePair], show_progress: bool = False) -> list[WordAlignment]:
        """Links with scores for every pair."""
        from tqdm.auto import tqdm

        pick = {"argmax": argmax_links, "itermax": itermax_links, "match": match_links}[self.method]
        out = []
        for start in tqdm(range(0, len(pairs), self.batch_size), desc=f"aligning ({self.method})",
                          disable=hide_progress(show_progress)):
            chunk = pairs[start : start + self.batch_size]
            sources = self.source.word_vectors([p.source for p in chunk], self.batch_size)
            targets = self.target.word_vectors([p.target for p in chunk], self.batch_size)
            for source, target in zip(sources, targets, strict=True):
                scores = similarity_scores(source, target)
                chosen = np.argwhere(pick(scores))
                out.append(WordAlignment({(int(i), int(j)): float(scores[i, j]) for i, j in chosen}))
        return out
