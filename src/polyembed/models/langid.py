"""Language identification behind one small interface, used wherever a language is not given.

Two identifiers: langid.py (97 languages, shipped with its model) and the character n-gram identifier trained
on the data layer (`models/ngram_langid.py`: 118 languages, among them Hausa, Igbo, Yoruba, Tatar, Turkmen and
Uzbek, which langid.py lacks). `identify_languages` uses the n-gram identifier where a data root
holds its sources and it knows every candidate, langid.py otherwise; docs/benchmarks.md ("Language
identification") measures both per language.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache


@lru_cache(maxsize=1)
def _identifier():  # noqa: ANN202 - langid has no types
    from langid.langid import LanguageIdentifier, model

    return LanguageIdentifier.from_modelstring(model, norm_probs=True)


def identify_language(text: str, candidates: Sequence[str] | None = None) -> tuple[str, float]:
    """langid.py's ISO 639-1 code and probability for `text`, optionally restricted to `candidates`."""
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
    """Language code for each text (among `candidates` when given): the n-gram identifier where there is one
    for the data root and it knows every candidate; else langid.py where it knows every candidate; else the one
    that knows more of them (a candidate neither knows is never answered)."""
    from polyembed.models.ngram_langid import ngram_identifier

    ngram = ngram_identifier()
    if ngram is not None and (not candidates or all(ngram.knows(code) for code in candidates)):
        return ngram.identify(texts, candidates)
    if ngram is None or not candidates:
        return langid_identify(texts, candidates)
    by_langid = sum(code in langid_languages() for code in candidates)
    by_ngram = sum(ngram.knows(code) for code in candidates)
    return ngram.identify(texts, candidates) if by_ngram > by_langid else langid_identify(texts, candidates)


def known_languages() -> frozenset[str]:
    """The codes `identify_languages` can answer on this machine."""
    from polyembed.models.ngram_langid import ngram_identifier

    ngram = ngram_identifier()
    return langid_languages() | frozenset(ngram.languages if ngram is not None else ())


def langid_languages() -> frozenset[str]:
    """The ISO 639-1 codes the identifier can answer (97 languages)."""
    return frozenset(str(code) for code in _identifier().nb_classes)


def identify_among(texts: Sequence[str], languages: Sequence[str], model_name: str) -> list[str]:
    """Language of each text among a language-routed model's `languages` (those an identifier knows); a clear
    error naming the model when none knows any of them."""
    from polyembed.errors import PolyembedError

    candidates = [code for code in languages if code in known_languages()]
    if not candidates:
        raise PolyembedError(
            f"{model_name}: the language identifier knows none of {', '.join(languages)}; pass language=..."
        )
    return identify_languages(texts, candidates)
