"""Run MTEB on any polyembed model: a wrapper that speaks MTEB's encoder protocol.

Why: users compare encoders on MTEB. `MTEBEncoder(model)` passes `mteb.evaluate` a model it can call like any
other; polyembed's own tasks stay the reference for the papers' benchmarks. For a language-routed model the
language of each MTEB subset is passed through: a monolingual subset (`eval_langs` ["deu-Latn"]) routes every
input to that language, a cross-lingual one (["eng-Latn", "deu-Latn"]) lets the language identifier choose
between its two languages for each input (MTEB's batches do not say which side a text is on).

    import mteb
    from polyembed.eval.mteb_model import MTEBEncoder

    results = mteb.evaluate(MTEBEncoder("me5-small"), mteb.get_tasks(tasks=["STS17"]), cache=None)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from polyembed.environment import require
from polyembed.languages import normalize_language
from polyembed.models.encoder import SentenceEncoder, normalize_rows
from polyembed.models.loading import as_encoder


def subset_languages(task_metadata: Any, hf_subset: str) -> list[str]:
    """polyembed codes of an MTEB subset ('deu-Latn' -> 'de'), from the task's `eval_langs`."""
    eval_langs = getattr(task_metadata, "eval_langs", None)
    tags: Sequence[str]
    if isinstance(eval_langs, dict):
        tags = eval_langs.get(hf_subset, [])
    elif isinstance(eval_langs, list | tuple):
        tags = eval_langs
    else:
        tags = []
    codes = []
    for tag in tags:
        code = normalize_language(str(tag).split("-")[0])
        if code and code not in codes:
            codes.append(code)
    return codes


class MTEBEncoder:
    """A polyembed encoder behind MTEB's `EncoderProtocol` (encode, similarity, similarity_pairwise, meta)."""

    def __init__(self, model: str | SentenceEncoder, name: str | None = None, batch_size: int = 64) -> None:
        require(("mteb",), "MTEBEncoder", extra="mteb")
        self.encoder = as_encoder(model)
        self.batch_size = batch_size
        self.languages_used: list[tuple[str, str | None]] = []
        """(hf_subset, language) of every encode call, for the record."""
        self.mteb_model_meta = self._meta(name or self.encoder.name)

    def _meta(self, name: str) -> Any:
        from mteb.models.model_meta import ModelMeta

        return ModelMeta.create_empty(
            {
                "name": f"polyembed/{name.replace('/', '__')}",
                "revision": "local",
                "embed_dim": self.encoder.dimension,
                "similarity_fn_name": "cosine",
                "framework": ["PyTorch"],
                "open_weights": True,
            }
        )

    def encode(
        self,
        inputs: Iterable[dict[str, Any]],
        *,
        task_metadata: Any,
        hf_split: str,
        hf_subset: str,
        prompt_type: Any = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """Embeddings (L2-normalised rows) of every text in MTEB's batches, in order: a routed model gets the
        subset's language, or each text's (langid among the subset's) when the subset has several."""
        from polyembed.models.langid import identify_languages

        texts = [text for batch in inputs for text in batch["text"]]
        candidates = subset_languages(task_metadata, hf_subset) if self.encoder.routes_by_language else []
        languages: list[str | None] = (
            [candidates[0]] * len(texts) if len(candidates) == 1
            else list(identify_languages(texts, candidates)) if candidates
            else [None] * len(texts)
        )
        self.languages_used.extend((hf_subset, code) for code in dict.fromkeys(languages))
        return self.encoder.encode(texts, languages, batch_size=self.batch_size, normalize=True)

    def similarity(self, embeddings1: Any, embeddings2: Any) -> np.ndarray:
        """Cosine similarity matrix."""
        a, b = _unit_rows(embeddings1), _unit_rows(embeddings2)
        return a @ b.T

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> np.ndarray:
        """Cosine of each row pair."""
        return (_unit_rows(embeddings1) * _unit_rows(embeddings2)).sum(axis=1)


def _unit_rows(matrix: Any) -> np.ndarray:
    array = np.asarray(matrix.cpu() if hasattr(matrix, "cpu") else matrix, dtype=np.float32)
    array = array.reshape(1, -1) if array.ndim == 1 else array
    return normalize_rows(array)
