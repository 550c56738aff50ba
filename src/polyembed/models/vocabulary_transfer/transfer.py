"""The model side: swap a SentenceTransformer's tokenizer and input embeddings, and `transfer_vocabulary`,
which runs every step and saves a working model folder."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
from polyembed.models.saving import check_model_output_dir, save_model_atomically
from polyembed.models.tokenizer_surgery import (
    CONFIG_TOKEN_IDS,
    SPECIAL_ATTRS,
    sentence_transformer_of,
    transformer_parts,
)
from polyembed.models.vocabulary_transfer.common import (
    REPORT_FILE,
    TokenizerKind,
    TransferReport,
    VocabularyTransferError,
    corpus_texts,
)
from polyembed.models.vocabulary_transfer.focus import check_unseen, focus_embeddings
from polyembed.models.vocabulary_transfer.tokenizer import train_tokenizer


def swap_vocabulary(model: Any, tokenizer: Any, embeddings: torch.Tensor) -> Any:
    """A copy of the sentence-transformers `model` that uses `tokenizer` and input `embeddings`.

    The original is not modified. Updated: the word-embedding matrix (rows = len(tokenizer)), the config's
    vocab_size and special-token ids (looked up by the old token's string, falling back to its role), the
    embedding's padding index (also the position-id padding index of RoBERTa-style models). Everything else
    (other modules, pooling, prompts, max_seq_length) is kept.
    """
    import torch

    st_model, _ = sentence_transformer_of(model, "transfer the vocabulary of", VocabularyTransferError)
    transformer, old_tokenizer, hf_model = transformer_parts(st_model, VocabularyTransferError)
    embedding = hf_model.get_input_embeddings()
    rows = len(tokenizer)
    if embeddings.ndim != 2 or embeddings.shape[0] != rows or embeddings.shape[1] != embedding.weight.shape[1]:
        raise VocabularyTransferError(
            f"embeddings must have shape ({rows}, {embedding.weight.shape[1]}), got {tuple(embeddings.shape)}"
        )
    new_vocab = tokenizer.get_vocab()
    old_id_to_token = {i: t for t, i in old_tokenizer.get_vocab().items()}
    role_of = {str(getattr(old_tokenizer, attr)): attr for attr in SPECIAL_ATTRS if getattr(old_tokenizer, attr, None)}

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
    old_config_ids = {attr: getattr(config, attr, None) for attr in CONFIG_TOKEN_IDS}
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
    check_unseen(unseen)
    st_model, source = sentence_transformer_of(model, "transfer the vocabulary of", VocabularyTransferError)
    _, old_tokenizer, hf_model = transformer_parts(st_model, VocabularyTransferError)
    texts = corpus_texts(corpus)
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
