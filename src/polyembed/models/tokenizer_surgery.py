"""Vocabulary surgery shared by pruning (`pruning.py`) and vocabulary transfer (`vocabulary_transfer/`): which
model parts can be operated on, how a serialized post-processor's special-token ids are renumbered, and how a
rewritten `tokenizers` pipeline becomes a Hugging Face tokenizer again."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from polyembed.errors import PolyembedError

CONFIG_TOKEN_IDS = (
    "pad_token_id",
    "bos_token_id",
    "eos_token_id",
    "sep_token_id",
    "cls_token_id",
    "unk_token_id",
    "mask_token_id",
    "decoder_start_token_id",
)
"""Model-config fields that hold token ids and must follow the new numbering."""
SPECIAL_ATTRS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
"""Tokenizer attributes naming special tokens (their roles survive surgery)."""


def sentence_transformer_of(model: Any, purpose: str, error: type[PolyembedError]) -> tuple[Any, str]:
    """The SentenceTransformer behind `model` (see `polyembed.models.loading.as_sentence_transformer`),
    with a failure raised as `error`."""
    from polyembed.models.loading import ModelNotAvailableError, as_sentence_transformer

    try:
        return as_sentence_transformer(model, purpose)
    except ModelNotAvailableError as err:
        raise error(str(err)) from err


def transformer_parts(model: Any, error: type[PolyembedError] = PolyembedError) -> tuple[Any, Any, Any]:
    """(Transformer module, its tokenizer, its HF model) of a SentenceTransformer, checked for what vocabulary
    surgery (pruning, transfer) needs; a model that does not fit raises `error`."""
    transformer = model[0]
    tokenizer = getattr(transformer, "tokenizer", None)
    hf_model = getattr(transformer, "auto_model", None)
    if tokenizer is None or hf_model is None or not getattr(tokenizer, "is_fast", False):
        raise error("the first module must be a Hugging Face Transformer with a fast tokenizer")
    if getattr(transformer, "processor", tokenizer) is not tokenizer:
        raise error("multimodal processors are not supported: the module's processor must be its tokenizer")
    if hf_model.get_output_embeddings() is not None:
        raise error("models with an output (LM) head tied to the vocabulary are not supported")
    return transformer, tokenizer, hf_model


def remap_post_processor(
    spec: dict[str, Any] | None, new_id: Callable[[str, int], int]
) -> dict[str, Any] | None:
    """A copy of a serialized post-processor (Template, Bert, Roberta, Sequence) whose special tokens get
    `new_id(token, old_id)`: pruning renumbers by old id, transfer looks the token up in the new vocabulary."""
    if not spec:
        return spec
    spec = copy.deepcopy(spec)
    kind = spec.get("type")
    if kind == "Sequence":
        spec["processors"] = [remap_post_processor(child, new_id) for child in spec.get("processors", [])]
    elif kind == "TemplateProcessing":
        for entry in spec.get("special_tokens", {}).values():
            entry["ids"] = [new_id(token, old) for token, old in zip(entry["tokens"], entry["ids"], strict=True)]
    elif kind in {"BertProcessing", "RobertaProcessing"}:
        for key in ("sep", "cls"):
            token, old = spec[key]
            spec[key] = [token, new_id(token, old)]
    return spec


def wrap_tokenizer(backend_json: str, source_tokenizer: Any) -> Any:
    """A generic PreTrainedTokenizerFast around `backend_json` with the source's special-token roles (those
    still in the vocabulary) and settings.

    The generic class reloads tokenizer.json verbatim; model-specific classes (BertTokenizer,
    XLMRobertaTokenizer) rebuild their pipeline from the vocabulary on load in transformers 5 and would drop
    custom normalisers, pre-tokenisers or the trained model."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_str(backend_json)
    vocab = backend.get_vocab(with_added_tokens=True)
    kwargs: dict[str, Any] = {}
    for attr in SPECIAL_ATTRS:
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
