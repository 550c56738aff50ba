"""The model side: swap a SentenceTransformer's tokenizer and input embeddings; `transfer_vocabulary`, which
runs every step and saves a working model folder; `transfer_vocabulary_per_language`, one such model per
language (the modular-encoder recipe: each language its own tokenizer, not one joint vocabulary)."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
from polyembed.languages import require_known_language
from polyembed.models.cards import CARD_FILE, derived_card_text
from polyembed.models.saving import LANGUAGE_MODELS_INDEX, check_model_output_dir, save_model_atomically
from polyembed.models.tokenizer_surgery import (
    CONFIG_TOKEN_IDS,
    SPECIAL_ATTRS,
    sentence_transformer_of,
    transformer_parts,
)
from polyembed.models.vocabulary_transfer.common import (
    REPORT_FILE,
    AuxiliarySpace,
    TokenizerKind,
    TransferReport,
    VocabularyTransferError,
    corpus_texts,
)
from polyembed.models.vocabulary_transfer.focus import check_choices, focus_embeddings
from polyembed.models.vocabulary_transfer.tokenizer import train_tokenizer
from polyembed.outputs import atomic_dir

logger = logging.getLogger(__name__)


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
    if (embeddings_module is not None and isinstance(old_padding, int)
            and old_config_ids.get("pad_token_id") == old_padding):
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
    auxiliary_space: AuxiliarySpace = "ppmi-svd",
    epochs: int = 3,
    overwrite: bool = False,
    verbose: bool = True,
) -> tuple[Path, TransferReport]:
    """Give `model` a new vocabulary trained on `corpus` with FOCUS-initialised embeddings; save it.

    `model`: a polyembed SentenceTransformerEncoder, a SentenceTransformer, or a name/folder for
    `load_model`; it is not modified. Steps: `train_tokenizer` (same family and special tokens as the
    model's, `vocab_size` tokens), `focus_embeddings` (settings `seed`, `dim`, `window`, `min_count`, `unseen`;
    `auxiliary_space` "ppmi-svd" or "fasttext", `epochs` for fastText),
    `swap_vocabulary`, then an atomic save (temp folder, then rename) of a standard sentence-transformers
    folder to `output_dir` (prompts preserved) with the report summary as polyembed_vocabulary_transfer.json.
    The corpus is held in memory. If the model has prompts (e.g. e5's "query: "), they are prepended
    round-robin to the corpus sentences (sentence i gets prompt i mod (P+1), the (P+1)-th being none) so
    the new vocabulary and auxiliary space see the prefixes the model will encode. The new model needs
    continued training (MLM / distillation) to reach its full quality; FOCUS only makes a good start.
    """
    output_dir = check_model_output_dir(output_dir, overwrite, error=VocabularyTransferError)
    check_choices(unseen, auxiliary_space)
    st_model, source = sentence_transformer_of(model, "transfer the vocabulary of", VocabularyTransferError)
    texts = corpus_texts(corpus)
    focus_options = {"seed": seed, "dim": dim, "window": window, "min_count": min_count, "unseen": unseen,
                     "epochs": epochs}
    swapped, report = _transferred_model(
        st_model, texts, vocab_size=vocab_size, kind=kind, auxiliary_space=auxiliary_space, verbose=verbose,
        **focus_options,
    )
    report.source = source
    save_model_atomically(swapped, output_dir, _files(report, Path(output_dir)))
    if verbose:
        logger.info(report.summary())
        logger.info(f"saved to {output_dir}")
    return output_dir, report


def transfer_vocabulary_per_language(
    model: Any,
    corpora: Mapping[str, Iterable[str]],
    output_dir: str | Path,
    *,
    vocab_size: int,
    overwrite: bool = False,
    verbose: bool = True,
    **options: Any,
) -> tuple[Path, dict[str, TransferReport]]:
    """One model per language, each with its own tokenizer trained on that language's corpus only.

    `corpora`: language code (ISO 639-1/-3 or BCP-47, normalised) -> its sentences. Writes
    `output_dir/<language>/`, each a standard sentence-transformers folder made as `transfer_vocabulary`
    makes one (`options` are its keyword settings), plus `output_dir/polyembed_languages.json` listing the
    languages, folders and transfer reports. The whole folder is written all-or-nothing: a failure for any
    language leaves no output. Why per language: a joint vocabulary trained on all languages gives a small
    or low-resource language few tokens of its own; the modular-encoder recipe gives each its own.
    """
    output_dir = check_model_output_dir(output_dir, overwrite, error=VocabularyTransferError)
    check_choices(options.get("unseen", "random"), options.get("auxiliary_space", "ppmi-svd"))
    if not corpora:
        raise VocabularyTransferError("no languages: give one corpus per language")
    texts_of: dict[str, list[str]] = {}
    for language, corpus in corpora.items():
        code = require_known_language(language, "corpus language")
        if code in texts_of:
            raise VocabularyTransferError(f"language {language!r} is given twice (as {code})")
        texts_of[code] = corpus_texts(corpus, f"{code} corpus")
    st_model, source = sentence_transformer_of(model, "transfer the vocabulary of", VocabularyTransferError)
    reports: dict[str, TransferReport] = {}
    with atomic_dir(output_dir) as staging:
        for code, texts in texts_of.items():
            if verbose:
                logger.info(f"[{code}] {len(texts):,} sentences")
            swapped, report = _transferred_model(st_model, texts, vocab_size=vocab_size, verbose=verbose, **options)
            report.source = source
            save_model_atomically(swapped, staging / code, _files(report, Path(output_dir) / code, code))
            reports[code] = report
            if verbose:
                logger.info(report.summary())
        index = {code: {"folder": code, "report": report.to_dict()} for code, report in reports.items()}
        (staging / LANGUAGE_MODELS_INDEX).write_text(
            json.dumps({"source": source, "languages": index}, indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
    if verbose:
        logger.info(f"saved {len(reports)} language models to {output_dir}")
    return output_dir, reports


def _report_text(report: TransferReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"


def _files(report: TransferReport, folder: Path, language: str | None = None) -> dict[str, str]:
    """The report and the model card that go into the saved folder."""
    card = derived_card_text(
        folder.name, "a new vocabulary with FOCUS-initialised embeddings", report.source,
        {"language": language or "the corpus's", "tokens": f"{report.source_vocab_size:,} -> "
         f"{report.target_vocab_size:,}", "copied / interpolated / random rows":
         f"{report.copied:,} / {report.interpolated:,} / {report.random:,}",
         "corpus": f"{report.corpus_sentences:,} sentences, {report.corpus_tokens:,} tokens",
         "auxiliary space": report.auxiliary,
         "training": "none yet: FOCUS gives a start; continued training (MLM, distillation) reaches full quality"},
        REPORT_FILE, languages=[language] if language else [], tags=["polyembed-vocabulary-transfer"])
    return {REPORT_FILE: _report_text(report), CARD_FILE: card}


def _transferred_model(
    st_model: Any,
    texts: list[str],
    *,
    vocab_size: int,
    kind: TokenizerKind | None = None,
    auxiliary_space: AuxiliarySpace = "ppmi-svd",
    verbose: bool = True,
    **focus_options: Any,
) -> tuple[Any, TransferReport]:
    """The in-memory steps of `transfer_vocabulary`: new tokenizer, FOCUS embeddings (`focus_options` are
    `focus_embeddings` settings: seed, dim, window, min_count, unseen, epochs), swapped copy."""
    _, old_tokenizer, hf_model = transformer_parts(st_model, VocabularyTransferError)
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
        space=auxiliary_space,
        show_progress=verbose,
        **focus_options,
    )
    return swap_vocabulary(st_model, new_tokenizer, embeddings), report
