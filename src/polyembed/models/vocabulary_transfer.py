"""FOCUS vocabulary transfer: give an existing sentence encoder a new, target-language vocabulary.

Why: an encoder trained on one language (or a huge multilingual vocabulary) tokenises a new language into
many short, poorly-trained pieces. Both the multilingual-distillation recipe (Reimers & Gurevych 2020) and the
modular-encoder recipe (language-specific tokenizer + embeddings, initialised with FOCUS) start by giving the
encoder a tokenizer trained on target-language text, and need a good first guess for its embedding matrix.

FOCUS (Dobler & de Melo, EMNLP 2023), as implemented here:

1. **New tokenizer** (`train_tokenizer`): trained on target text, same family as the source (WordPiece or
   Unigram), same normaliser, and the source's special tokens (placed first, in the source's id order).
2. **Overlap**: tokens are compared in a canonical form that hides how each family marks word starts
   (SentencePiece ``▁x`` and WordPiece ``x`` are both ``▁x``; ``##x`` and SentencePiece ``x`` are both
   ``x``). Overlapping tokens copy their old embedding row exactly; special tokens are matched by string,
   then by role (``cls_token``, ``pad_token``...).
3. **Auxiliary space**: static token vectors learnt from the target corpus tokenised with the NEW tokenizer.
4. **Interpolation**: every other new token with an auxiliary vector becomes a convex combination of the old
   rows of the overlapping tokens, weighted by ``sparsemax`` of its cosine similarities to them in the
   auxiliary space (only overlapping tokens that have an auxiliary vector are used as anchors).
5. **Random**: a new token without a usable auxiliary vector (seen fewer than ``min_count`` times in the
   corpus) is drawn from a normal with the old matrix's per-dimension mean and std. That is FOCUS's rule and
   the default. ``unseen="decompose"`` instead gives such a token the mean of the old rows of the pieces the
   OLD tokenizer splits its text into (the rule of Fast Vocabulary Transfer, Gee et al. 2022); only a token
   the old tokenizer cannot spell (no pieces, or only its unknown token) stays random. Why: on a small corpus
   many tokens miss ``min_count`` (35% of a 16k vocabulary trained on 20k sentences), and a random row throws
   away what the old model knew about the token's pieces (for me5-small, decompose scored 2.7 points of
   cross-lingual STS above random after 400 steps; docs/benchmarks.md, vocabulary comparisons).

Auxiliary space: FOCUS trains fastText (CBOW) on the re-tokenised corpus. There is no clean fastText wheel for
this stack, so we use the count-based equivalent: positive PMI (context-distribution smoothing 0.75,
word2vec-style distance-weighted window) of the token co-occurrence matrix, factorised with a truncated SVD
(vectors U·sqrt(S)). Levy & Goldberg (2014) show skip-gram/CBOW with negative sampling implicitly factorise
this shifted-PMI matrix, and Levy, Goldberg & Dagan (2015) find PPMI-SVD on par with them for word
similarity, especially on small corpora. So tokens are similar exactly when they occur in similar contexts
of target text, which is what FOCUS uses fastText for. It is deterministic (seeded randomized SVD) and fast on
CPU. Not reproduced: fastText's character n-gram vectors (FOCUS only uses vectors of tokens that fastText
kept, i.e. that reached ``min_count``, so the n-grams only smooth those vectors).

`transfer_vocabulary` does it all for a sentence-transformers model and saves a working folder.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import typing
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from polyembed.data.errors import PolyembedError
from polyembed.models.saving import check_model_output_dir, save_model_atomically

if TYPE_CHECKING:
    import torch
    from scipy import sparse

REPORT_FILE = "polyembed_vocabulary_transfer.json"
UnseenRule = Literal["random", "decompose"]
UNSEEN_RULES: tuple[str, ...] = typing.get_args(UnseenRule)
"""How a new token without an auxiliary vector is initialised (see the module docstring, step 5)."""
from polyembed.models.pruning import _CONFIG_TOKEN_IDS, _SPECIAL_ATTRS, transformer_parts  # noqa: E402 - shared surgery constants

WORD_START = "▁"
TokenizerKind = Literal["unigram", "wordpiece"]


class VocabularyTransferError(PolyembedError):
    """The vocabulary transfer cannot run: empty corpus, impossible vocabulary size, unsupported model..."""


# --------------------------------------------------------------------------------------------- sparsemax


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


# --------------------------------------------------------------------------------------------- report


@dataclass
class TransferReport:
    """What FOCUS did to each new token; its summary is printed and saved as REPORT_FILE.

    `weights` is a (new vocab x old vocab) scipy CSR matrix: a copied token's row is one-hot at its old id, an
    interpolated token's row holds its sparsemax weights over the anchors' old ids, a decomposed token's row
    holds 1/k for each of its k old pieces, a random token's row is empty. So ``new[i] == weights[i] @ old``
    for every token that is not random.
    """

    source_vocab_size: int
    target_vocab_size: int
    copied: int
    interpolated: int
    random: int
    anchors: int
    corpus_sentences: int
    corpus_tokens: int
    auxiliary: str
    examples: list[str] = field(default_factory=list)
    source: str = ""
    decomposed: int = 0
    unseen: str = "random"
    copied_ids: list[int] = field(default_factory=list, repr=False)
    interpolated_ids: list[int] = field(default_factory=list, repr=False)
    random_ids: list[int] = field(default_factory=list, repr=False)
    decomposed_ids: list[int] = field(default_factory=list, repr=False)
    weights: sparse.csr_matrix | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able summary (counts and examples; not the per-token ids or weights)."""
        out = asdict(self)
        for key in ("copied_ids", "interpolated_ids", "random_ids", "decomposed_ids", "weights"):
            out.pop(key)
        return out

    def summary(self) -> str:
        """A few human-readable lines: counts and example interpolations."""
        total = max(self.target_vocab_size, 1)
        lines = [
            f"FOCUS vocabulary transfer{f' of {self.source}' if self.source else ''}: "
            f"{self.source_vocab_size:,} -> {self.target_vocab_size:,} tokens",
            f"  copied (overlapping)  {self.copied:>7,} ({100 * self.copied / total:.1f}%)",
            f"  interpolated (FOCUS)  {self.interpolated:>7,} ({100 * self.interpolated / total:.1f}%)"
            f" from {self.anchors:,} anchors",
            *(
                [f"  decomposed (unseen)   {self.decomposed:>7,} ({100 * self.decomposed / total:.1f}%) old pieces"]
                if self.unseen == "decompose"
                else []
            ),
            f"  random (unseen)       {self.random:>7,} ({100 * self.random / total:.1f}%)",
            f"  auxiliary space: {self.auxiliary}; corpus {self.corpus_sentences:,} sentences, "
            f"{self.corpus_tokens:,} tokens",
        ]
        lines += [f"  e.g. {example}" for example in self.examples]
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------- helpers


def _texts(corpus: Iterable[str] | str, what: str = "corpus") -> list[str]:
    """The corpus as a list of non-blank strings; a non-string item or an empty corpus is an error."""
    if corpus is None:
        raise VocabularyTransferError(f"the {what} is missing (None): a new vocabulary needs target-language text")
    if isinstance(corpus, str | bytes):
        raise VocabularyTransferError(f"the {what} must be an iterable of sentences, not a single string")
    out: list[str] = []
    for number, text in enumerate(corpus, start=1):
        if not isinstance(text, str):
            raise VocabularyTransferError(f"{what} item {number} is {type(text).__name__}, not str")
        if text.strip():
            out.append(text)
    if not out:
        raise VocabularyTransferError(f"the {what} is empty: a new vocabulary needs target-language text")
    return out


def _spec(tokenizer: Any) -> dict[str, Any]:
    """The serialized `tokenizers` pipeline of a fast tokenizer."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise VocabularyTransferError(
            f"{type(tokenizer).__name__} is not a fast (tokenizers-backed) tokenizer; FOCUS needs one"
        )
    return json.loads(backend.to_str())


def _family(spec: dict[str, Any]) -> str:
    return str(spec["model"].get("type"))


def _contains_type(spec: dict[str, Any] | None, kind: str) -> bool:
    """Whether a serialized component (possibly a Sequence) contains a component of type `kind`."""
    if not spec:
        return False
    if spec.get("type") == kind:
        return True
    children = spec.get("pretokenizers") or spec.get("decoders") or spec.get("processors") or []
    return any(_contains_type(child, kind) for child in children)


def _metaspace_replacement(spec: dict[str, Any]) -> str | None:
    for part in (spec.get("pre_tokenizer"), spec.get("decoder")):
        stack = [part] if part else []
        while stack:
            item = stack.pop()
            if item.get("type") == "Metaspace":
                return str(item.get("replacement", WORD_START))
            stack.extend(item.get("pretokenizers") or item.get("decoders") or [])
    return None


def _special_tokens(tokenizer: Any) -> list[str]:
    """Special tokens of a tokenizer (named roles, extra specials, special added tokens), by id."""
    vocab = tokenizer.get_vocab()
    tokens = {str(t) for t in tokenizer.all_special_tokens}
    for token in _spec(tokenizer).get("added_tokens", []):
        if token.get("special"):
            tokens.add(token["content"])
    return sorted((t for t in tokens if t in vocab), key=lambda t: vocab[t])


def canonical_vocabulary(tokenizer: Any) -> dict[str, int]:
    """Map canonical token form -> id for the model vocabulary (special tokens excluded).

    Canonical form: ``▁`` + text for a word-initial piece, the bare text for a word-internal one, so a
    SentencePiece/Unigram ``▁haus``, a WordPiece ``haus`` and a byte-level BPE ``Ġhaus`` all read ``▁haus``.
    Where two tokens share a form, the lowest id wins (deterministic).
    """
    spec = _spec(tokenizer)
    family = _family(spec)
    specials = set(_special_tokens(tokenizer))
    vocab = tokenizer.backend_tokenizer.get_vocab(with_added_tokens=False)
    out: dict[str, int] = {}
    if family == "WordPiece":
        prefix = spec["model"].get("continuing_subword_prefix") or "##"

        def form(token: str) -> str:
            return token[len(prefix) :] if token.startswith(prefix) else WORD_START + token

    elif family == "WordLevel":

        def form(token: str) -> str:
            return WORD_START + token

    elif _contains_type(spec.get("decoder"), "ByteLevel") or _contains_type(spec.get("pre_tokenizer"), "ByteLevel"):
        from tokenizers import decoders

        byte_level = decoders.ByteLevel()

        def form(token: str) -> str:
            text = byte_level.decode([token])
            return WORD_START + text[1:] if text.startswith(" ") else text

    else:  # Unigram / SentencePiece-style BPE with a Metaspace marker
        marker = _metaspace_replacement(spec) or WORD_START

        def form(token: str) -> str:
            return WORD_START + token[len(marker) :] if token.startswith(marker) else token

    for token, index in sorted(vocab.items(), key=lambda item: item[1]):
        if token in specials:
            continue
        out.setdefault(form(token), index)
    return out


# --------------------------------------------------------------------------------------------- tokenizer


def _remap_post_processor(spec: dict[str, Any] | None, ids: dict[str, int]) -> dict[str, Any] | None:
    """Copy a serialized post-processor with its special-token ids looked up in the new vocabulary."""
    if not spec:
        return spec
    spec = copy.deepcopy(spec)

    def lookup(token: str) -> int:
        if token not in ids:
            raise VocabularyTransferError(f"the post-processor needs token {token!r}, missing from the new vocabulary")
        return ids[token]

    kind = spec.get("type")
    if kind == "Sequence":
        spec["processors"] = [_remap_post_processor(child, ids) for child in spec.get("processors", [])]
    elif kind == "TemplateProcessing":
        for entry in spec.get("special_tokens", {}).values():
            entry["ids"] = [lookup(token) for token in entry["tokens"]]
    elif kind in {"BertProcessing", "RobertaProcessing"}:
        for key in ("sep", "cls"):
            spec[key] = [spec[key][0], lookup(spec[key][0])]
    return spec


def _wrap(backend_json: str, source_tokenizer: Any) -> Any:
    """A generic PreTrainedTokenizerFast around `backend_json` with the source's special-token roles.

    The generic class reloads tokenizer.json verbatim; model-specific classes (BertTokenizer...) would rebuild
    their pipeline from a vocab file on load and lose the trained model.
    """
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(backend_json)
    vocab = backend.get_vocab(with_added_tokens=True)
    kwargs: dict[str, Any] = {}
    for attr in _SPECIAL_ATTRS:
        value = getattr(source_tokenizer, attr, None)
        if value is not None and str(value) in vocab:
            kwargs[attr] = str(value)
    extra = [str(t) for t in getattr(source_tokenizer, "additional_special_tokens", None) or [] if str(t) in vocab]
    if extra:
        kwargs["additional_special_tokens"] = extra
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        model_max_length=source_tokenizer.model_max_length,
        padding_side=source_tokenizer.padding_side,
        truncation_side=source_tokenizer.truncation_side,
        clean_up_tokenization_spaces=bool(getattr(source_tokenizer, "clean_up_tokenization_spaces", False)),
        **kwargs,
    )


def source_kind(tokenizer: Any) -> TokenizerKind:
    """The tokenizer family `train_tokenizer` uses by default: 'wordpiece' for WordPiece/WordLevel sources,
    'unigram' for Unigram and BPE sources (both mark word starts SentencePiece-style)."""
    return "wordpiece" if _family(_spec(tokenizer)) in {"WordPiece", "WordLevel"} else "unigram"


def train_tokenizer(
    corpus: Iterable[str],
    vocab_size: int,
    *,
    source_tokenizer: Any,
    kind: TokenizerKind | None = None,
    min_frequency: int = 2,
    show_progress: bool = True,
) -> Any:
    """Train a target-language tokenizer that can replace `source_tokenizer` in its model.

    Returns a `transformers.PreTrainedTokenizerFast`. `kind` defaults to the source's family (see
    `source_kind`). Kept from the source: the normaliser (so casing/accent handling matches and tokens can
    overlap), the special tokens (ids 0..k-1, in the source's id order, with the same roles), the
    post-processor (e.g. ``[CLS] A [SEP]``) and, for the same family, the pre-tokeniser and decoder. A
    different family gets the standard pipeline of its kind (Metaspace for Unigram, BERT pre-tokeniser and
    ``##`` decoder for WordPiece). `vocab_size` counts the special tokens; WordPiece always keeps the full
    character alphabet, so its vocabulary may come out a little larger.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if kind is not None and kind not in ("unigram", "wordpiece"):
        raise VocabularyTransferError(f"kind must be 'unigram' or 'wordpiece', not {kind!r}")
    spec = _spec(source_tokenizer)
    specials = _special_tokens(source_tokenizer)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= len(specials):
        raise VocabularyTransferError(
            f"vocab_size {vocab_size!r} must be an integer larger than the {len(specials)} special tokens "
            f"kept from the source ({', '.join(specials)})"
        )
    texts = _texts(corpus)
    kind = kind or source_kind(source_tokenizer)
    unk = getattr(source_tokenizer, "unk_token", None)
    if unk is None:
        raise VocabularyTransferError("the source tokenizer has no unk_token; the new tokenizer needs one")
    unk = str(unk)
    source = Tokenizer.from_str(json.dumps(spec))
    same_family = kind == source_kind(source_tokenizer) and _family(spec) in {"WordPiece", "Unigram"}
    if kind == "wordpiece":
        prefix = (spec["model"].get("continuing_subword_prefix") if same_family else None) or "##"
        tokenizer = Tokenizer(models.WordPiece(unk_token=unk, continuing_subword_prefix=prefix))
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=specials,
            continuing_subword_prefix=prefix,
            show_progress=show_progress,
        )
        default_pre, default_decoder = pre_tokenizers.BertPreTokenizer(), decoders.WordPiece(prefix=prefix)
    else:
        tokenizer = Tokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(
            vocab_size=vocab_size, special_tokens=specials, unk_token=unk, show_progress=show_progress
        )
        default_pre = pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always")
        default_decoder = decoders.Metaspace(replacement=WORD_START, prepend_scheme="always")
    if source.normalizer is not None:
        tokenizer.normalizer = source.normalizer
    tokenizer.pre_tokenizer = source.pre_tokenizer if same_family and source.pre_tokenizer else default_pre
    tokenizer.decoder = source.decoder if same_family and source.decoder else default_decoder
    try:
        tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    except Exception as err:  # tokenizers raises bare Exceptions for impossible settings
        raise VocabularyTransferError(f"training a {kind} tokenizer failed: {err}") from err
    new_spec = json.loads(tokenizer.to_str())
    ids = tokenizer.get_vocab(with_added_tokens=True)
    missing = [t for t in specials if t not in ids]
    if missing:  # pragma: no cover - the trainers always add special tokens
        raise VocabularyTransferError(f"the trained tokenizer lost special tokens {missing}")
    new_spec["post_processor"] = _remap_post_processor(spec.get("post_processor"), ids)
    new_spec["truncation"] = None
    new_spec["padding"] = None
    return _wrap(json.dumps(new_spec, ensure_ascii=False), source_tokenizer)


# ----------------------------------------------------------------------------------------- auxiliary space


def _token_ids(tokenizer: Any, texts: Sequence[str], batch_size: int, show_progress: bool) -> list[list[int]]:
    from tqdm.auto import tqdm

    out: list[list[int]] = []
    starts = range(0, len(texts), batch_size)
    for start in tqdm(starts, desc="tokenising corpus", unit="batch", disable=not show_progress):
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


# --------------------------------------------------------------------------------------------- FOCUS


def _special_map(old_tokenizer: Any, new_tokenizer: Any) -> dict[int, int]:
    """new id -> old id for special tokens: same string first, then same role (cls_token, pad_token...)."""
    old_vocab, new_vocab = old_tokenizer.get_vocab(), new_tokenizer.get_vocab()
    out: dict[int, int] = {}
    for token in _special_tokens(new_tokenizer):
        if token in old_vocab:
            out[new_vocab[token]] = old_vocab[token]
    for attr in _SPECIAL_ATTRS:
        new_token, old_token = getattr(new_tokenizer, attr, None), getattr(old_tokenizer, attr, None)
        if new_token is None or old_token is None:
            continue
        new_id, old_id = new_vocab.get(str(new_token)), old_vocab.get(str(old_token))
        if new_id is not None and old_id is not None:
            out.setdefault(new_id, old_id)
    return out


def _check_unseen(unseen: str) -> None:
    if unseen not in UNSEEN_RULES:
        raise VocabularyTransferError(f"unseen must be one of {', '.join(UNSEEN_RULES)}, not {unseen!r}")


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
    auxiliary: np.ndarray | None = None,
    batch_size: int = 1024,
    chunk_size: int = 1024,
    unseen: str = "random",
    show_progress: bool = True,
) -> tuple[torch.Tensor, TransferReport]:
    """FOCUS embedding matrix for `new_tokenizer`, from `old_embeddings` (rows indexed by `old_tokenizer`).

    Returns (new_embeddings of shape (len(new_tokenizer), hidden), report). Copied: special tokens (by
    string, then role) and tokens whose canonical form (see `canonical_vocabulary`) is in the old vocabulary.
    Interpolated: other tokens with an auxiliary vector (`cooccurrence_embeddings` over `corpus` tokenised
    with `new_tokenizer`; `dim`, `window`, `min_count`, `power` are its settings), as the sparsemax-weighted
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

    _check_unseen(unseen)
    texts = _texts(corpus) if corpus is not None or auxiliary is None else []
    if old_embeddings.ndim != 2:
        raise VocabularyTransferError(f"old_embeddings must be a 2-d matrix, got shape {tuple(old_embeddings.shape)}")
    old = old_embeddings.detach().to("cpu", torch.float32)
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
    specials = set(_special_tokens(new_tokenizer))
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
        sequences = _token_ids(new_tokenizer, texts, batch_size, show_progress)
        corpus_tokens = int(sum(len(s) for s in sequences))
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
    progress = tqdm(total=int(targets.size), desc="FOCUS interpolation", unit="tok", disable=not show_progress)
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


# --------------------------------------------------------------------------------------------- model surgery


def _as_sentence_transformer(model: Any) -> tuple[Any, str]:
    """The SentenceTransformer behind `model` (see `polyembed.models.loading.as_sentence_transformer`)."""
    from polyembed.models.loading import ModelNotAvailableError, as_sentence_transformer

    try:
        return as_sentence_transformer(model, "transfer the vocabulary of")
    except ModelNotAvailableError as err:
        raise VocabularyTransferError(str(err)) from err


def swap_vocabulary(model: Any, tokenizer: Any, embeddings: torch.Tensor) -> Any:
    """A copy of the sentence-transformers `model` that uses `tokenizer` and input `embeddings`.

    The original is not modified. Updated: the word-embedding matrix (rows = len(tokenizer)), the config's
    vocab_size and special-token ids (looked up by the old token's string, falling back to its role), the
    embedding's padding index (also the position-id padding index of RoBERTa-style models). Everything else
    (other modules, pooling, prompts, max_seq_length) is kept.
    """
    import torch

    st_model, _ = _as_sentence_transformer(model)
    transformer, old_tokenizer, hf_model = transformer_parts(st_model, VocabularyTransferError)
    embedding = hf_model.get_input_embeddings()
    rows = len(tokenizer)
    if embeddings.ndim != 2 or embeddings.shape[0] != rows or embeddings.shape[1] != embedding.weight.shape[1]:
        raise VocabularyTransferError(
            f"embeddings must have shape ({rows}, {embedding.weight.shape[1]}), got {tuple(embeddings.shape)}"
        )
    new_vocab = tokenizer.get_vocab()
    old_id_to_token = {i: t for t, i in old_tokenizer.get_vocab().items()}
    role_of = {str(getattr(old_tokenizer, attr)): attr for attr in _SPECIAL_ATTRS if getattr(old_tokenizer, attr, None)}

    def new_id(old_id: int | None) -> int | None:
        if old_id is None or old_id not in old_id_to_token:
            return None
        token = old_id_to_token[old_id]
        if token in new_vocab:
            return new_vocab[token]
        role = role_of.get(token)
        value = getattr(tokenizer, role, None) if role else None
        return new_vocab.get(str(value)) if value is not None else None

    pad_id = tokenizer.pad_token_id
    new_embedding = torch.nn.Embedding(
        rows,
        embedding.weight.shape[1],
        padding_idx=pad_id if embedding.padding_idx is not None else None,
        dtype=embedding.weight.dtype,
        device=embedding.weight.device,
    )
    with torch.no_grad():
        new_embedding.weight.copy_(embeddings.to(embedding.weight.device, embedding.weight.dtype))
    memo = {id(embedding): new_embedding, id(transformer.processor): tokenizer}
    swapped = copy.deepcopy(st_model, memo)
    swapped_hf = swapped[0].auto_model
    config = swapped_hf.config
    old_config_ids = {attr: getattr(config, attr, None) for attr in _CONFIG_TOKEN_IDS}
    config.vocab_size = rows
    for attr, value in old_config_ids.items():
        if isinstance(value, int) and not isinstance(value, bool):
            setattr(config, attr, new_id(value))
    embeddings_module = getattr(swapped_hf, "embeddings", None)
    old_padding = getattr(embeddings_module, "padding_idx", None)
    if isinstance(old_padding, int) and old_config_ids.get("pad_token_id") == old_padding:
        embeddings_module.padding_idx = config.pad_token_id
    with contextlib.suppress(AttributeError):
        swapped[0]._prompt_length_mapping = {}
    return swapped


def transfer_vocabulary(
    model: Any,
    corpus: Iterable[str],
    output_dir: str | Path,
    *,
    vocab_size: int,
    kind: TokenizerKind | None = None,
    seed: int = 0,
    dim: int = 100,
    window: int = 5,
    min_count: int = 10,
    unseen: str = "random",
    overwrite: bool = False,
    verbose: bool = True,
) -> tuple[Path, TransferReport]:
    """Give `model` a new vocabulary trained on `corpus` with FOCUS-initialised embeddings; save it.

    `model`: a polyembed SentenceTransformerEncoder, a SentenceTransformer, or a name/folder for
    `load_model`; it is not modified. Steps: `train_tokenizer` (same family and special tokens as the
    model's, `vocab_size` tokens), `focus_embeddings` (settings `seed`, `dim`, `window`, `min_count`, `unseen`),
    `swap_vocabulary`, then an atomic save (temp folder, then rename) of a standard sentence-transformers
    folder to `output_dir` (prompts preserved) with the report summary as polyembed_vocabulary_transfer.json.
    The corpus is held in memory. If the model has prompts (e.g. e5's "query: "), they are prepended
    round-robin to the corpus sentences (sentence i gets prompt i mod (P+1), the (P+1)-th being none) so
    the new vocabulary and auxiliary space see the prefixes the model will encode. The new model needs
    continued training (MLM / distillation) to reach its full quality; FOCUS only makes a good start.
    """
    output_dir = check_model_output_dir(output_dir, overwrite, error=VocabularyTransferError)
    _check_unseen(unseen)
    st_model, source = _as_sentence_transformer(model)
    _, old_tokenizer, hf_model = transformer_parts(st_model, VocabularyTransferError)
    texts = _texts(corpus)
    prompts = sorted({p for p in (getattr(st_model, "prompts", None) or {}).values() if p})
    if prompts:
        cycle = ["", *prompts]
        texts = [cycle[i % len(cycle)] + text for i, text in enumerate(texts)]
    new_tokenizer = train_tokenizer(texts, vocab_size, source_tokenizer=old_tokenizer, kind=kind, show_progress=verbose)
    embeddings, report = focus_embeddings(
        old_tokenizer,
        hf_model.get_input_embeddings().weight,
        new_tokenizer,
        texts,
        seed=seed,
        dim=dim,
        window=window,
        min_count=min_count,
        unseen=unseen,
        show_progress=verbose,
    )
    report.source = source
    swapped = swap_vocabulary(st_model, new_tokenizer, embeddings)

    report_text = json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
    save_model_atomically(swapped, output_dir, {REPORT_FILE: report_text})
    if verbose:
        print(report.summary())
        print(f"saved to {output_dir}")
    return output_dir, report
