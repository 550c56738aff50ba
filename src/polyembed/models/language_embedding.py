"""Language embeddings: a learned vector per language added to every token embedding of its sentences.

WACSE's ablation (Miao et al. 2024, section 5, Table 8) adds "a new embedding layer that encodes language IDs"
to the token and position embeddings. A BERT-style encoder already sums one more table into its input, the
token-type embeddings, so a language is a new token-type row: row (offset + i) = the model's own type-0 row plus
a random vector (normal, the model's initializer range) for language i. Rows below `offset` stay as they were,
so input without a language id (token type 0) is encoded exactly as before. The ids live in the transformer's
`config.json` (`language_embedding_ids`), so every save and checkpoint carries them; `load_model` then returns
a `LanguageEmbeddingEncoder`, which routes by language like a modular bundle.

Example::

    ids = add_language_embeddings(model, ["en", "kk"], seed=0)   # a SentenceTransformer, changed in place
    with language_id(model, ids["kk"]):
        vectors = model.encode(["Сәлем"])
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from polyembed.errors import PolyembedError
from polyembed.languages import normalize_language
from polyembed.models.encoder import SentenceTransformerEncoder, encode_by_language, register_encoder_kind

CONFIG_KEY = "language_embedding_ids"
logger = logging.getLogger(__name__)


def _token_type_table(model: Any) -> Any:
    embeddings = getattr(model[0].auto_model, "embeddings", None)
    table = getattr(embeddings, "token_type_embeddings", None)
    if table is None:
        raise PolyembedError(
            f"{type(model[0].auto_model).__name__} has no token-type embeddings to hold language embeddings "
            "(BERT-style encoders such as me5-small have them)"
        )
    return table


def language_embedding_ids(model: Any) -> dict[str, int]:
    """{language: token-type id} of a model with language embeddings; {} for any other model."""
    auto_model = getattr(model[0], "auto_model", None) if len(model) else None
    ids = getattr(getattr(auto_model, "config", None), CONFIG_KEY, None) or {}
    return dict(sorted(ids.items(), key=lambda item: item[1]))  # config.json sorts its keys


def add_language_embeddings(model: Any, languages: Sequence[str], seed: int = 0) -> dict[str, int]:
    """Give each of `languages` its own token-type row (see the module docstring); returns {language: id}."""
    import torch

    codes = list(dict.fromkeys(normalize_language(code) or code for code in languages))
    if language_embedding_ids(model):
        raise PolyembedError("the model already has language embeddings")
    table = _token_type_table(model)
    offset, hidden = table.weight.shape
    auto_model = model[0].auto_model
    spread = float(getattr(auto_model.config, "initializer_range", 0.02))
    generator = torch.Generator().manual_seed(seed)
    new = torch.nn.Embedding(offset + len(codes), hidden, dtype=table.weight.dtype, device=table.weight.device)
    with torch.no_grad():
        new.weight[:offset] = table.weight
        noise = torch.randn(len(codes), hidden, generator=generator) * spread
        new.weight[offset:] = table.weight[0] + noise.to(table.weight.dtype)
    auto_model.embeddings.token_type_embeddings = new
    auto_model.config.type_vocab_size = offset + len(codes)
    ids = {code: offset + index for index, code in enumerate(codes)}
    setattr(auto_model.config, CONFIG_KEY, ids)
    return ids


@contextmanager
def language_id(model: Any, token_type: int) -> Iterator[None]:
    """Every forward pass of `model` inside the block encodes its input as `token_type` (one language)."""
    import torch

    def set_token_types(_module: Any, args: tuple[Any, ...]) -> None:
        features = args[0]
        features["token_type_ids"] = torch.full_like(features["input_ids"], token_type)

    handle = model[0].register_forward_pre_hook(set_token_types)
    try:
        yield
    finally:
        handle.remove()


def encode_by_token_type(model: Any, sentences: Sequence[str], token_types: Sequence[int],
                         **encode_options: Any) -> np.ndarray:
    """`model.encode` of each sentence under its own token type (one call per type; `encode_by_language`'s
    routing); float32 rows in input order."""

    def encode_group(group: list[str], token_type: int) -> np.ndarray:
        with language_id(model, token_type):
            return model.encode(group, convert_to_tensor=True, **encode_options).float().cpu().numpy()

    return encode_by_language(encode_group, sentences, list(token_types))


def language_translation_evaluator(english: list[str], other: list[str], english_type: int,
                                   other_types: Sequence[int], **options: Any) -> Any:
    """sentence-transformers' TranslationEvaluator (same metrics and names) that encodes the English side
    under `english_type` and each other-side sentence under its own entry of `other_types`."""
    from sentence_transformers.sentence_transformer.evaluation import TranslationEvaluator

    class LanguageTranslationEvaluator(TranslationEvaluator):
        def embed_inputs(self, model: Any, sentences: Any, **kwargs: Any) -> Any:
            types = [english_type] * len(sentences) if sentences is self.source_sentences else list(other_types)
            import torch

            vectors = encode_by_token_type(model, list(sentences), types, batch_size=self.batch_size,
                                           show_progress_bar=self.show_progress_bar, **kwargs)
            return list(torch.from_numpy(vectors))  # rows, as ST

    return LanguageTranslationEvaluator(english, other, **options)


@register_encoder_kind
class LanguageEmbeddingEncoder(SentenceTransformerEncoder):
    """A model with language embeddings behind the SentenceEncoder interface: `language` picks the row.

    A language the model was not trained with gets none (token type 0, the base model's input), with a
    warning; rows given no language are identified among the model's own languages (langid).
    """

    def __init__(self, model: Any, name: str, path: Any = None) -> None:
        super().__init__(model, name=name, path=path)
        self.ids = language_embedding_ids(model)
        self._warned: set[str] = set()

    @classmethod
    def can_wrap(cls, model: Any) -> bool:
        return bool(language_embedding_ids(model))

    @property
    def languages(self) -> list[str]:
        return list(self.ids)

    def token_type(self, language: str | None) -> int:
        code = normalize_language(language) if language else None
        if code in self.ids:
            return self.ids[code]
        if language not in self._warned:
            self._warned.add(str(language))
            logger.warning("%s: no language embedding for '%s'; encoding without one", self.name, language)
        return 0

    def _encode_group(
        self, sentences: list[str], language: str | None, batch_size: int, show_progress_bar: bool
    ) -> np.ndarray:
        with language_id(self.model, self.token_type(language)):
            vectors = self.model.encode(sentences, batch_size=batch_size, show_progress_bar=show_progress_bar,
                                        convert_to_tensor=True)
        return vectors.float().cpu().numpy()
