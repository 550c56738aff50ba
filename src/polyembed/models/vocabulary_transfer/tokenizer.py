"""Step 1 of FOCUS: a new tokenizer of the source's family trained on target text, and the canonical token
form in which old and new vocabularies are compared (step 2)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass
from polyembed.models.tokenizer_surgery import (
    remap_post_processor,
    wrap_tokenizer,
)
from polyembed.models.vocabulary_transfer.common import (
    WORD_START,
    TokenizerKind,
    VocabularyTransferError,
    corpus_texts,
)


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


def special_tokens(tokenizer: Any) -> list[str]:
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
    specials = set(special_tokens(tokenizer))
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
    specials = special_tokens(source_tokenizer)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= len(specials):
        raise VocabularyTransferError(
            f"vocab_size {vocab_size!r} must be an integer larger than the {len(specials)} special tokens "
            f"kept from the source ({', '.join(specials)})"
        )
    texts = corpus_texts(corpus)
    kind = kind or source_kind(source_tokenizer)
    unk = getattr(source_tokenizer, "unk_token", None)
    if unk is None:
        raise VocabularyTransferError("the source tokenizer has no unk_token; the new tokenizer needs one")
    unk = str(unk)
    source = Tokenizer.from_str(json.dumps(spec))
    same_family = kind == source_kind(source_tokenizer) and _family(spec) in {"WordPiece", "Unigram"}
    trainer: trainers.Trainer
    default_pre: pre_tokenizers.PreTokenizer
    default_decoder: decoders.Decoder
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

    def lookup(token: str, old_id: int) -> int:
        if token not in ids:
            raise VocabularyTransferError(f"the post-processor needs token {token!r}, missing from the new vocabulary")
        return ids[token]

    new_spec["post_processor"] = remap_post_processor(spec.get("post_processor"), lookup)
    new_spec["truncation"] = None
    new_spec["padding"] = None
    return wrap_tokenizer(json.dumps(new_spec, ensure_ascii=False), source_tokenizer)
