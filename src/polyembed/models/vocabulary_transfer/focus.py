"""Steps 2, 4 and 5 of FOCUS: copy overlapping rows, interpolate new tokens with sparsemax weights in the
auxiliary space, initialise the rest (random, or the mean of their old pieces)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch
from polyembed.messages import hide_progress
from polyembed.models.tokenizer_surgery import (
    SPECIAL_ATTRS,
)
from polyembed.models.vocabulary_transfer.auxiliary import cooccurrence_embeddings, fasttext_embeddings, token_ids
from polyembed.models.vocabulary_transfer.common import (
    AUXILIARY_SPACES,
    UNSEEN_RULES,
    WORD_START,
    AuxiliarySpace,
    TransferReport,
    VocabularyTransferError,
    corpus_texts,
)
from polyembed.models.vocabulary_transfer.tokenizer import canonical_vocabulary, special_tokens


def sparsemax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Euclidean projection of `scores` onto the probability simplex (Martins & Astudillo 2016).

    FOCUS weights anchor tokens with it: unlike softmax it gives exact zeros, so each new embedding mixes
    only the few most similar overlapping tokens. Output: p >= 0, sum(p) = 1 along `dim`,
    p = max(z - tau, 0) with the threshold tau that makes the sum 1.
    """
    import torch

    z = scores.transpose(dim, -1).to(torch.float64 if scores.dtype == torch.float64 else torch.float32)
    ordered, _ = torch.sort(z, dim=-1, descending=True)
    cumulative = ordered.cumsum(dim=-1)
    k = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
    support = (1 + k * ordered) > cumulative
    support_size = support.sum(dim=-1, keepdim=True)
    tau = (cumulative.gather(-1, support_size - 1) - 1) / support_size.to(z.dtype)
    out = torch.clamp(z - tau, min=0)
    return out.to(scores.dtype).transpose(dim, -1)


def _special_map(old_tokenizer: Any, new_tokenizer: Any) -> dict[int, int]:
    """new id -> old id for special tokens: same string first, then same role (cls_token, pad_token...)."""
    old_vocab, new_vocab = old_tokenizer.get_vocab(), new_tokenizer.get_vocab()
    out: dict[int, int] = {}
    for token in special_tokens(new_tokenizer):
        if token in old_vocab:
            out[new_vocab[token]] = old_vocab[token]
    for attr in SPECIAL_ATTRS:
        new_token, old_token = getattr(new_tokenizer, attr, None), getattr(old_tokenizer, attr, None)
        if new_token is None or old_token is None:
            continue
        new_id, old_id = new_vocab.get(str(new_token)), old_vocab.get(str(old_token))
        if new_id is not None and old_id is not None:
            out.setdefault(new_id, old_id)
    return out


def check_choices(unseen: str, space: str) -> None:
    """The two string options, checked before any work (the API takes plain strings)."""
    if unseen not in UNSEEN_RULES:
        raise VocabularyTransferError(f"unseen must be one of {', '.join(UNSEEN_RULES)}, not {unseen!r}")
    if space not in AUXILIARY_SPACES:
        raise VocabularyTransferError(f"space must be one of {', '.join(AUXILIARY_SPACES)}, not {space!r}")


def _old_pieces(old_tokenizer: Any, new_tokenizer: Any, new_ids: Sequence[int]) -> dict[int, list[int]]:
    """new id -> old ids of the pieces the old tokenizer splits the token's text into (unknown tokens and a
    bare word-start marker dropped; empty when nothing is left). A word-internal piece is spelled as a word of
    its own: the old tokenizer has no way to be asked for word-internal pieces only."""
    if not new_ids:
        return {}
    form_of = {i: form for form, i in canonical_vocabulary(new_tokenizer).items()}
    tokens = new_tokenizer.convert_ids_to_tokens(list(new_ids))
    texts = [form_of.get(i, token).removeprefix(WORD_START) for i, token in zip(new_ids, tokens, strict=True)]
    skip = {old_tokenizer.unk_token_id, old_tokenizer.get_vocab().get(WORD_START)} - {None}
    spelled = old_tokenizer(texts, add_special_tokens=False)["input_ids"]
    return {i: [p for p in pieces if p not in skip] for i, pieces in zip(new_ids, spelled, strict=True)}


def focus_embeddings(
    old_tokenizer: Any,
    old_embeddings: torch.Tensor,
    new_tokenizer: Any,
    corpus: Iterable[str] | None,
    *,
    seed: int = 0,
    dim: int = 100,
    window: int = 5,
    min_count: int = 10,
    power: float = 0.5,
    space: AuxiliarySpace = "ppmi-svd",
    epochs: int = 3,
    auxiliary: np.ndarray | None = None,
    batch_size: int = 1024,
    chunk_size: int = 1024,
    unseen: str = "random",
    show_progress: bool = True,
) -> tuple[torch.Tensor, TransferReport]:
    """FOCUS embedding matrix for `new_tokenizer`, from `old_embeddings` (rows indexed by `old_tokenizer`).

    Returns (new_embeddings of shape (len(new_tokenizer), hidden), report). Copied: special tokens (by
    string, then role) and tokens whose canonical form (see `canonical_vocabulary`) is in the old vocabulary.
    Interpolated: other tokens with an auxiliary vector (`space`: "ppmi-svd" is `cooccurrence_embeddings`,
    "fasttext" is `fasttext_embeddings`, both over `corpus` tokenised with `new_tokenizer`; `dim`, `window`,
    `min_count` are their settings, `power` PPMI-SVD's, `epochs` fastText's), as the sparsemax-weighted
    convex combination of the anchors' old rows. Random: the rest, N(mean, std) of the old rows per
    dimension, from a generator seeded with `seed`. The result has the dtype of `old_embeddings`.
    `auxiliary` replaces the built-in space with your own static vectors (e.g. fastText trained on the
    re-tokenised corpus, as in the FOCUS paper): one row per new token id, an all-zero row meaning "no
    vector"; `corpus` may then be None. `unseen="decompose"` gives a token without an auxiliary vector the
    mean of the old rows of its old-tokenizer pieces instead of a random row (module docstring, step 5).
    """
    import torch
    from scipy import sparse
    from tqdm.auto import tqdm

    check_choices(unseen, space)
    texts = corpus_texts(corpus) if corpus is not None or auxiliary is None else []
    if old_embeddings.ndim != 2:
        raise VocabularyTransferError(f"old_embeddings must be a 2-d matrix, got shape {tuple(old_embeddings.shape)}")
    old = old_embeddings.detach().cpu().to(torch.float32)
    old_vocab_size = len(old_tokenizer)
    old_canonical = canonical_vocabulary(old_tokenizer)
    old_max_id = max(old_tokenizer.get_vocab().values())
    if old_max_id >= old.shape[0]:
        raise VocabularyTransferError(
            f"old_embeddings has {old.shape[0]} rows but the old tokenizer uses id {old_max_id}"
        )
    new_size = len(new_tokenizer)
    new_vocab = new_tokenizer.get_vocab()
    if max(new_vocab.values()) >= new_size:  # pragma: no cover - holes in a vocabulary
        new_size = max(new_vocab.values()) + 1

    # 1. overlap: specials, then canonical forms
    source_of: dict[int, int] = _special_map(old_tokenizer, new_tokenizer)
    specials = set(special_tokens(new_tokenizer))
    for form, new_id in canonical_vocabulary(new_tokenizer).items():
        if new_id not in source_of and form in old_canonical:
            source_of[new_id] = old_canonical[form]
    old_vocab = old_tokenizer.get_vocab()
    model_vocab = new_tokenizer.backend_tokenizer.get_vocab(with_added_tokens=False)
    for token, new_id in new_vocab.items():  # non-special added tokens: exact string match
        if new_id not in source_of and token not in specials and token not in model_vocab and token in old_vocab:
            source_of[new_id] = old_vocab[token]

    # 2. auxiliary space on the corpus tokenised with the NEW tokenizer (unless given)
    if auxiliary is None:
        sequences = token_ids(new_tokenizer, texts, batch_size, show_progress)
        corpus_tokens = int(sum(len(s) for s in sequences))
        if space == "fasttext":
            tokens = [token or "" for token in new_tokenizer.convert_ids_to_tokens(list(range(new_size)))]
            aux, _ = fasttext_embeddings(
                sequences, tokens, dim=dim, window=window, min_count=min_count, epochs=epochs, seed=seed
            )
            aux_name = f"fastText CBOW dim={dim} window={window} min_count={min_count} epochs={epochs}"
        else:
            aux, _ = cooccurrence_embeddings(
                sequences, new_size, dim=dim, window=window, min_count=min_count, power=power, seed=seed
            )
            aux_name = f"PPMI-SVD dim={dim} window={window} min_count={min_count} power={power}"
    else:
        aux = np.asarray(auxiliary, dtype=np.float32)
        if aux.ndim != 2 or aux.shape[0] != new_size:
            raise VocabularyTransferError(
                f"auxiliary must be a ({new_size}, d) matrix (one row per new token), got {aux.shape}"
            )
        corpus_tokens, aux_name = 0, f"given ({aux.shape[1]}-d)"
    norms = np.linalg.norm(aux, axis=1)
    usable = norms > 1e-12
    aux_unit = np.zeros_like(aux)
    aux_unit[usable] = aux[usable] / norms[usable, None]

    anchors = np.array(sorted(i for i in source_of if usable[i]), dtype=np.int64)
    targets = np.array([i for i in range(new_size) if i not in source_of and usable[i]], dtype=np.int64)
    if anchors.size == 0:
        targets = np.zeros(0, dtype=np.int64)
    random_ids = [i for i in range(new_size) if i not in source_of and (not usable[i] or anchors.size == 0)]
    pieces_of = _old_pieces(old_tokenizer, new_tokenizer, random_ids) if unseen == "decompose" else {}
    decomposed_ids = [i for i in random_ids if pieces_of.get(i)]
    random_ids = [i for i in random_ids if not pieces_of.get(i)]

    # 3. copy, random, interpolate
    new = torch.zeros((new_size, old.shape[1]), dtype=torch.float32)
    copied_ids = sorted(source_of)
    if copied_ids:
        new[torch.tensor(copied_ids)] = old[torch.tensor([source_of[i] for i in copied_ids])]
    vocab_rows = old[: max(old_vocab_size, 1)]
    mean, std = vocab_rows.mean(dim=0), vocab_rows.std(dim=0)
    generator = torch.Generator().manual_seed(seed)
    if random_ids:
        noise = torch.randn((len(random_ids), old.shape[1]), generator=generator)
        new[torch.tensor(random_ids)] = mean + std * noise

    w_rows: list[np.ndarray] = [np.array(copied_ids, dtype=np.int64)]
    w_cols: list[np.ndarray] = [np.array([source_of[i] for i in copied_ids], dtype=np.int64)]
    w_vals: list[np.ndarray] = [np.ones(len(copied_ids))]
    for new_id in decomposed_ids:
        pieces = pieces_of[new_id]
        new[new_id] = old[torch.tensor(pieces)].mean(dim=0)
        w_rows.append(np.full(len(pieces), new_id, dtype=np.int64))
        w_cols.append(np.array(pieces, dtype=np.int64))
        w_vals.append(np.full(len(pieces), 1.0 / len(pieces)))
    anchor_old = torch.tensor([source_of[int(i)] for i in anchors], dtype=torch.long)
    anchor_rows = old[anchor_old] if anchors.size else old[:0]
    anchor_aux = torch.from_numpy(aux_unit[anchors])
    examples: list[str] = []
    new_tokens = new_tokenizer.convert_ids_to_tokens(list(range(new_size)))
    old_tokens = old_tokenizer.convert_ids_to_tokens(list(range(old_vocab_size)))
    progress = tqdm(total=int(targets.size), desc="FOCUS interpolation", unit="tok",
                    disable=hide_progress(show_progress))
    for start in range(0, targets.size, chunk_size):
        chunk = targets[start : start + chunk_size]
        weights = sparsemax(torch.from_numpy(aux_unit[chunk]) @ anchor_aux.T, dim=-1)
        new[torch.from_numpy(chunk)] = weights @ anchor_rows
        row, col = torch.nonzero(weights, as_tuple=True)
        w_rows.append(chunk[row.numpy()])
        w_cols.append(anchor_old[col].numpy())
        w_vals.append(weights[row, col].double().numpy())
        if len(examples) < 5:
            for local in range(min(len(chunk), 5 - len(examples))):
                top = torch.topk(weights[local], k=min(3, weights.shape[1]))
                parts = [
                    f"{old_tokens[int(anchor_old[j])]}:{float(v):.2f}"
                    for v, j in zip(top.values, top.indices, strict=True)
                    if v > 0
                ]
                examples.append(f"{new_tokens[int(chunk[local])]!r} <- {', '.join(parts)}")
        progress.update(len(chunk))
    progress.close()

    weight_matrix = sparse.csr_matrix(
        (np.concatenate(w_vals), (np.concatenate(w_rows), np.concatenate(w_cols))),
        shape=(new_size, old.shape[0]),
    )
    report = TransferReport(
        source_vocab_size=old_vocab_size,
        target_vocab_size=new_size,
        copied=len(copied_ids),
        interpolated=int(targets.size),
        random=len(random_ids),
        anchors=int(anchors.size),
        corpus_sentences=len(texts),
        corpus_tokens=corpus_tokens,
        auxiliary=aux_name,
        examples=examples,
        decomposed=len(decomposed_ids),
        unseen=unseen,
        copied_ids=copied_ids,
        interpolated_ids=[int(i) for i in targets],
        random_ids=random_ids,
        decomposed_ids=decomposed_ids,
        weights=weight_matrix,
    )
    return new.to(old_embeddings.dtype), report
