"""Step 3 of FOCUS: the auxiliary token space of the re-tokenised corpus, either PPMI-SVD or fastText
(see the package doc)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from polyembed.environment import require
from polyembed.messages import hide_progress
from polyembed.models.vocabulary_transfer.common import VocabularyTransferError


def token_ids(tokenizer: Any, texts: Sequence[str], batch_size: int, show_progress: bool) -> list[list[int]]:
    from tqdm.auto import tqdm

    out: list[list[int]] = []
    starts = range(0, len(texts), batch_size)
    for start in tqdm(starts, desc="tokenising corpus", unit="batch", disable=hide_progress(show_progress)):
        batch = list(texts[start : start + batch_size])
        out.extend(tokenizer(batch, add_special_tokens=False, truncation=False)["input_ids"])
    return out


def cooccurrence_embeddings(
    sequences: Sequence[Sequence[int]],
    vocab_size: int,
    *,
    dim: int = 100,
    window: int = 5,
    min_count: int = 10,
    smoothing: float = 0.75,
    power: float = 0.5,
    seed: int = 0,
    chunk_sentences: int = 100_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Static token vectors from co-occurrence statistics: PPMI + truncated SVD (FOCUS's auxiliary space).

    Returns (vectors, counts): `vectors` is (vocab_size, d) float32, all-zero for a token seen fewer than
    `min_count` times (it has no usable vector); `counts` is each token's corpus frequency. Co-occurrences
    are counted within `window` tokens inside a sentence, weighted (window - distance + 1) / window like
    word2vec's dynamic window; PMI uses context-distribution smoothing (`smoothing`, 0.75 as in word2vec);
    the PPMI rows of the frequent tokens are factorised with a seeded randomized SVD, vectors = U * S^power
    (eigenvalue weighting; 0.5 is the symmetric split of Levy, Goldberg & Dagan 2015).
    """
    from scipy import sparse
    from sklearn.utils.extmath import randomized_svd

    if window < 1 or dim < 1 or min_count < 1:
        raise VocabularyTransferError("window, dim and min_count must be at least 1")
    counts = np.zeros(vocab_size, dtype=np.int64)
    matrix = sparse.csr_matrix((vocab_size, vocab_size), dtype=np.float64)
    for start in range(0, len(sequences), chunk_sentences):  # bounded memory on large corpora
        chunk = sequences[start : start + chunk_sentences]
        lengths = np.fromiter((len(s) for s in chunk), dtype=np.int64, count=len(chunk))
        flat = np.fromiter((i for s in chunk for i in s), dtype=np.int64, count=int(lengths.sum()))
        if flat.size and (flat.min() < 0 or flat.max() >= vocab_size):
            raise VocabularyTransferError(f"token ids must lie in 0..{vocab_size - 1}")
        counts += np.bincount(flat, minlength=vocab_size)
        sentence = np.repeat(np.arange(len(lengths)), lengths)
        for distance in range(1, min(window, flat.size - 1) + 1):
            same = sentence[:-distance] == sentence[distance:]
            left, right = flat[:-distance][same], flat[distance:][same]
            weight = np.full(left.size, (window - distance + 1) / window)
            pairs = sparse.coo_matrix((weight, (left, right)), shape=(vocab_size, vocab_size)).tocsr()
            matrix = matrix + pairs + pairs.T
    vectors = np.zeros((vocab_size, dim), dtype=np.float32)
    if matrix.nnz == 0:
        return vectors, counts
    matrix.sum_duplicates()
    row_sum = np.asarray(matrix.sum(axis=1)).ravel()
    col_sum = np.asarray(matrix.sum(axis=0)).ravel()
    smoothed = np.power(col_sum, smoothing)
    coo = matrix.tocoo()
    pmi = np.log(coo.data) - np.log(row_sum[coo.row]) - np.log(smoothed[coo.col]) + math.log(smoothed.sum())
    keep = pmi > 0
    ppmi = sparse.csr_matrix((pmi[keep], (coo.row[keep], coo.col[keep])), shape=matrix.shape)
    frequent = np.flatnonzero((counts >= min_count) & (np.diff(ppmi.indptr) > 0))
    contexts = np.flatnonzero(col_sum > 0)
    sub = ppmi[frequent][:, contexts]
    rank = min(dim, min(sub.shape) - 1)
    if rank < 1:
        return vectors, counts
    u, s, _ = randomized_svd(sub, n_components=rank, n_iter=7, random_state=seed)
    vectors[frequent, :rank] = (u * np.power(s, power)).astype(np.float32)
    return vectors, counts


def fasttext_embeddings(
    sequences: Sequence[Sequence[int]],
    tokens: Sequence[str],
    *,
    dim: int = 100,
    window: int = 5,
    min_count: int = 10,
    epochs: int = 3,
    negative: int = 10,
    buckets: int = 200_000,
    seed: int = 0,
    workers: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Static token vectors from a fastText CBOW model trained on the re-tokenised corpus (FOCUS's own space).

    `sequences` are token ids, `tokens[i]` the string of id i: fastText sees each token as a word, so its
    character n-grams (3 to 6) are those of the token string. Settings follow the FOCUS code (deepfocus):
    CBOW, `dim` 100, `negative` 10, `epochs` 3, `min_count` 10; learning rate 0.05 and sub-sampling 1e-4
    are fastText's own defaults. `buckets` n-gram rows instead of fastText's 2M keep memory at dim x 800 KB;
    only tokens that reach `min_count` get a vector, so the n-grams only smooth those. Returns (vectors,
    counts) like `cooccurrence_embeddings`: an all-zero row means "no vector". One worker makes the result
    depend on `seed` alone (gensim trains deterministically then, whatever PYTHONHASHSEED is).
    """
    require(("gensim",), "the fastText token space", extra="fasttext")
    from gensim.models import FastText

    if window < 1 or dim < 1 or min_count < 1 or epochs < 1:
        raise VocabularyTransferError("window, dim, min_count and epochs must be at least 1")
    vocab_size = len(tokens)
    counts = np.zeros(vocab_size, dtype=np.int64)
    sentences: list[list[str]] = []
    for sequence in sequences:
        ids = np.asarray(sequence, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
            raise VocabularyTransferError(f"token ids must lie in 0..{vocab_size - 1}")
        counts += np.bincount(ids, minlength=vocab_size)
        if ids.size:
            sentences.append([tokens[i] for i in ids])
    vectors = np.zeros((vocab_size, dim), dtype=np.float32)
    if not (counts >= min_count).any():
        return vectors, counts
    model = FastText(
        vector_size=dim,
        window=window,
        min_count=min_count,
        sg=0,
        negative=negative,
        alpha=0.05,
        sample=1e-4,
        min_n=3,
        max_n=6,
        bucket=buckets,
        seed=seed,
        workers=workers,
    )
    model.build_vocab(corpus_iterable=sentences)
    model.train(corpus_iterable=sentences, total_examples=len(sentences), epochs=epochs)
    index_of = {token: i for i, token in enumerate(tokens)}
    for token in model.wv.index_to_key:
        vectors[index_of[token]] = model.wv[token]
    return vectors, counts
