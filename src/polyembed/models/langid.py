"""Language identification behind one small interface (langid.py), used wherever a language is not given."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache


@lru_cache(maxsize=1)
def _identifier():  # noqa: ANN202 - langid has no types
    from langid.langid import LanguageIdentifier, model

    return LanguageIdentifier.from_modelstring(model, norm_probs=True)


def identify_language(text: str, candidates: Sequence[str] | None = None) -> tuple[str, float]:
    """ISO 639-1 code and probability for `text`, optionally restricted to `candidates`."""
    identifier = _identifier()
    if candidates:
        identifier.set_languages(list(candidates))
    try:
        code, probability = identifier.classify(text)
    finally:
        if candidates:
            identifier.set_languages(None)
    return code, float(probability)


def langid_identify(texts: Sequence[str], candidates: Sequence[str] | None = None) -> list[str]:
    """langid.py's language for each text, among the `candidates` it knows (all 97 when None)."""
    known = [code for code in candidates if code in langid_languages()] if candidates else None
    return [identify_language(text, known)[0] for text in texts]


def identify_languages(texts: Sequence[str], candidates: Sequence[str] | None = None) -> list[str]:
    """Language code for each text."""
    return [identify_language(text, candidates)[0] for text in texts]


def langid_languages() -> frozenset[str]:
    """The ISO 639-1 codes the identifier can answer (97 languages)."""
    return frozenset(str(code) for code in _identifier().nb_classes)


def identify_among(texts: Sequence[str], languages: Sequence[str], model_name: str) -> list[str]:
    """Language of each text among a language-routed model's `languages` (those langid knows); a clear error
    naming the model when langid knows none of them."""
    from polyembed.errors import PolyembedError

    candidates = [code for code in languages if code in langid_languages()]
    if not candidates:
        raise PolyembedError(
            f"{model_name}: the language identifier knows none of {', '.join(languages)}; pass language=..."
        )
    return identify_languages(texts, candidates)
