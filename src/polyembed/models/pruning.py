"""Vocabulary pruning: keep only the tokens a target corpus uses, so a multilingual encoder shrinks a lot.

Multilingual encoders spend most of their parameters on the word-embedding matrix (me5-small: 96M of 118M
for 250k XLM-R pieces). A model meant for a few languages needs only the pieces its texts produce. Pruning
keeps those pieces (plus the special tokens and anything asked for), copies their embedding rows, renumbers
the tokenizer consistently (model vocabulary, added tokens, post-processor, padding) and saves a working
sentence-transformers folder with the same modules and prompts.

Texts of the corpus tokenise exactly as before (same pieces, new ids), so their embeddings are unchanged:
- Unigram: the old best segmentation only uses kept pieces, so it stays optimal; the lowest-scoring piece
  is kept too, so the `<unk>` score (min score - 10) does not change;
- WordPiece / WordLevel: greedy longest-match picks the same pieces.
Text outside the corpus may tokenise differently (more `<unk>`, shorter pieces); that is expected.
BPE tokenizers are refused: their merges would need their intermediate tokens back.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from polyembed.data.io import read_text
from polyembed.errors import PolyembedError
from polyembed.models.cards import CARD_FILE, derived_card_text
from polyembed.models.saving import check_model_output_dir, save_model_atomically
from polyembed.models.tokenizer_surgery import (
    CONFIG_TOKEN_IDS,
    remap_post_processor,
    sentence_transformer_of,
    transformer_parts,
    wrap_tokenizer,
)

logger = logging.getLogger(__name__)

REPORT_FILE = "polyembed_pruning.json"
_SUPPORTED_MODELS = ("Unigram", "WordPiece", "WordLevel")
class PruningError(PolyembedError):
    """The model or the request cannot be pruned (unsupported tokenizer, empty corpus, unknown token...)."""


@dataclass(frozen=True)
class PruningReport:
    """What a pruning run kept; saved next to the model as polyembed_pruning.json."""

    kept_tokens: int
    original_tokens: int
    corpus_sentences: int
    parameters_before: int
    parameters_after: int
    source: str

    @classmethod
    def load(cls, folder: str | Path) -> PruningReport:
        """Read the report written by `prune_vocabulary` into `folder`."""
        return cls(**json.loads(read_text(Path(folder) / REPORT_FILE)))


def _corpus_token_ids(
    tokenizer: Any, corpus: Iterable[str], prompts: list[str], batch_size: int
) -> tuple[set[int], int]:
    """Every token id the tokenizer produces for the corpus, with each prompt prepended as encode() does."""
    used: set[int] = set()
    count = 0
    batch: list[str] = []

    def flush() -> None:
        for prompt in prompts:
            encoded = tokenizer([prompt + text for text in batch], add_special_tokens=True, truncation=False)
            for ids in encoded["input_ids"]:
                used.update(ids)
        batch.clear()

    for number, text in enumerate(corpus, start=1):
        if not isinstance(text, str):
            raise PruningError(f"corpus item {number} is {type(text).__name__}, not str")
        batch.append(text)
        count += 1
        if len(batch) >= batch_size:
            flush()
    if batch:
        flush()
    if count == 0:
        raise PruningError("the corpus is empty: nothing to keep")
    return used, count


def _resolve_keep_tokens(tokenizer: Any, keep_tokens: Iterable[str | int], size: int) -> set[int]:
    """Token strings or ids the caller wants kept, validated against the tokenizer."""
    vocab = tokenizer.get_vocab()
    out: set[int] = set()
    for token in keep_tokens:
        if isinstance(token, bool) or not isinstance(token, int | str):
            raise PruningError(f"keep_tokens entries must be token strings or ids, got {token!r}")
        if isinstance(token, int):
            if not 0 <= token < size:
                raise PruningError(f"keep_tokens id {token} is outside the vocabulary (0..{size - 1})")
            out.add(token)
        elif token in vocab:
            out.add(vocab[token])
        else:
            raise PruningError(f"keep_tokens entry {token!r} is not in the vocabulary")
    return out


def _special_ids_in(spec: dict[str, Any] | None) -> set[int]:
    """Ids a serialized post-processor inserts (they must survive pruning)."""
    if not spec:
        return set()
    kind = spec.get("type")
    if kind == "Sequence":
        return set().union(*(_special_ids_in(child) for child in spec.get("processors", [])))
    if kind == "TemplateProcessing":
        return {i for entry in spec.get("special_tokens", {}).values() for i in entry["ids"]}
    if kind in {"BertProcessing", "RobertaProcessing"}:
        return {spec["sep"][1], spec["cls"][1]}
    return set()


def _prune_tokenizer_spec(spec: dict[str, Any], kept: list[int]) -> tuple[dict[str, Any], dict[int, int]]:
    """Rewrite a serialized `tokenizers` pipeline for the kept ids (returned with the old->new id map)."""
    remap = {old: new for new, old in enumerate(kept)}
    model = spec["model"]
    kind = model.get("type")
    if kind == "Unigram":
        vocab = model["vocab"]
        model["vocab"] = [vocab[i] for i in kept if i < len(vocab)]
        if model.get("unk_id") is not None:
            model["unk_id"] = remap[model["unk_id"]]
    elif kind in {"WordPiece", "WordLevel"}:
        model["vocab"] = {piece: remap[i] for piece, i in model["vocab"].items() if i in remap}
    else:  # pragma: no cover - checked by the caller
        raise PruningError(f"cannot prune a {kind} tokenizer")
    for token in spec.get("added_tokens", []):
        token["id"] = remap[token["id"]]
    if spec.get("post_processor"):
        spec["post_processor"] = remap_post_processor(spec["post_processor"], lambda token, old: remap[old])
    if spec.get("padding") and spec["padding"].get("pad_id") is not None:
        spec["padding"]["pad_id"] = remap[spec["padding"]["pad_id"]]
    return spec, remap


def _model_vocab_ids(spec: dict[str, Any]) -> tuple[list[int], int | None]:
    """(ids of the model vocabulary, the lowest-scoring Unigram piece's id or None)."""
    model = spec["model"]
    if model.get("type") == "Unigram":
        scores = [score for _, score in model["vocab"]]
        lowest = min(range(len(scores)), key=scores.__getitem__) if scores else None
        return list(range(len(scores))), lowest
    return sorted(model["vocab"].values()), None


def _parameter_count(model: Any) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def prune_vocabulary(
    encoder_or_path: Any,
    corpus: Iterable[str],
    output_dir: Path,
    *,
    keep_tokens: Iterable[str | int] | None = None,
    overwrite: bool = False,
    batch_size: int = 1024,
    verbose: bool = True,
) -> Path:
    """Save a copy of the model whose vocabulary holds only what `corpus` uses; returns `output_dir`.

    `encoder_or_path` is a model name/folder (as for `load_model`), a SentenceTransformer or a
    SentenceTransformerEncoder; it is not modified. Kept: every token of every corpus sentence (each prompt
    of the model prepended, as `encode` does), the special and added tokens, the ids the model config
    names, and `keep_tokens` (strings or ids). The summary (kept tokens, parameters before/after) is printed
    when `verbose` and saved as polyembed_pruning.json (`PruningReport.load(output_dir)`).
    """
    import torch

    output_dir = check_model_output_dir(output_dir, overwrite, error=PruningError)
    model, source = sentence_transformer_of(encoder_or_path, "prune", PruningError)
    transformer, tokenizer, hf_model = transformer_parts(model, PruningError)
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    kind = spec["model"].get("type")
    if kind not in _SUPPORTED_MODELS:
        raise PruningError(f"cannot prune a {kind} tokenizer (supported: {', '.join(_SUPPORTED_MODELS)})")

    embedding = hf_model.get_input_embeddings()
    rows = embedding.weight.shape[0]
    model_ids, lowest = _model_vocab_ids(spec)
    added_ids = {token["id"] for token in spec.get("added_tokens", [])}
    original = len(set(model_ids) | added_ids)
    size = max([*model_ids, *added_ids]) + 1

    prompts = sorted({p for p in (model.prompts or {}).values() if p} | {""})
    used, n_sentences = _corpus_token_ids(tokenizer, corpus, prompts, batch_size)
    keep = used | added_ids | set(tokenizer.all_special_ids) | _special_ids_in(spec.get("post_processor"))
    keep |= {i for attr in CONFIG_TOKEN_IDS if isinstance(i := getattr(hf_model.config, attr, None), int)}
    if spec["model"].get("unk_id") is not None:
        keep.add(spec["model"]["unk_id"])
    if spec.get("padding") and spec["padding"].get("pad_id") is not None:
        keep.add(spec["padding"]["pad_id"])
    if lowest is not None:
        keep.add(lowest)  # keeps Unigram's unknown-token score (min score - 10) unchanged
    if keep_tokens is not None:
        keep |= _resolve_keep_tokens(tokenizer, keep_tokens, size)
    keep = {i for i in keep if 0 <= i < size}
    kept = sorted(keep)
    if kept[-1] >= rows:
        raise PruningError(f"token id {kept[-1]} has no row in the {rows}-row embedding matrix")

    new_spec, remap = _prune_tokenizer_spec(spec, kept)
    new_tokenizer = wrap_tokenizer(json.dumps(new_spec, ensure_ascii=False), tokenizer)
    pad_id = getattr(embedding, "padding_idx", None)
    new_embedding = torch.nn.Embedding(
        len(kept),
        embedding.weight.shape[1],
        padding_idx=remap.get(pad_id) if pad_id is not None else None,
        dtype=embedding.weight.dtype,
        device=embedding.weight.device,
    )
    with torch.no_grad():
        new_embedding.weight.copy_(embedding.weight[torch.tensor(kept, device=embedding.weight.device)])

    # Copy everything but the big matrix and the tokenizer, which the memo swaps for their pruned versions.
    memo = {id(embedding): new_embedding, id(transformer.processor): new_tokenizer}
    pruned = copy.deepcopy(model, memo)
    pruned_hf = pruned[0].auto_model
    pruned_hf.config.vocab_size = len(kept)
    for attr in CONFIG_TOKEN_IDS:
        value = getattr(pruned_hf.config, attr, None)
        if isinstance(value, int):
            setattr(pruned_hf.config, attr, remap.get(value))
    pruned[0]._prompt_length_mapping = {}

    report = PruningReport(
        kept_tokens=len(kept),
        original_tokens=original,
        corpus_sentences=n_sentences,
        parameters_before=_parameter_count(model),
        parameters_after=_parameter_count(pruned),
        source=source,
    )
    card = derived_card_text(
        Path(output_dir).name, "a pruned vocabulary", source,
        {"tokens kept": f"{report.kept_tokens:,} of {report.original_tokens:,}",
         "corpus sentences": f"{report.corpus_sentences:,}",
         "parameters": f"{report.parameters_before:,} -> {report.parameters_after:,}",
         "embeddings": "the kept tokens' rows of the source model, unchanged (a token the corpus never produced "
                       "is encoded as unknown)"},
        REPORT_FILE, tags=["polyembed-pruned-vocabulary"])
    save_model_atomically(pruned, output_dir, {REPORT_FILE: json.dumps(asdict(report), indent=2) + "\n",
                                               CARD_FILE: card})
    if verbose:
        logger.info(
            f"pruned vocabulary: kept {report.kept_tokens:,} of {report.original_tokens:,} tokens; "
            f"parameters {report.parameters_before:,} -> {report.parameters_after:,} ({output_dir})"
        )
    return output_dir
