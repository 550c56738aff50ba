"""One spelling per language: datasets use ISO 639-1 ('de'), 639-3 ('deu'), 639-2/B ('ger') and BCP-47-like
variants ('cmn_Hans', 'es_LA', 'zh-Hant').

Codes are read with `langcodes` (the IANA language subtag registry, offline), so every ISO 639-1/639-3 code
and BCP-47 tag is understood, and normalised to the primary language subtag: ISO 639-1 where one exists
('deu' -> 'de'), else the ISO 639-3 code ('tir' -> 'ti' since Tigrinya has one; 'nso', 'quy', 'fuv' stay).
Language-routed models and the language identifier speak that form, so every code a task passes to an
encoder goes through `normalize_language` first.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import langcodes

# Individual languages that our datasets and langid name by their macrolanguage's ISO 639-1 code
# (Tatoeba's 'cmn' and 'swh', FLORES' 'arb', 'pes', 'zsm', 'lvs'), and one non-ISO dataset spelling.
_AS_MACROLANGUAGE = {
    "arb": "ar",
    "cmn": "zh",
    "lvs": "lv",
    "pes": "fa",
    "swh": "sw",
    "zsm": "ms",
    "tgl": "tl",  # langcodes reads Tagalog as Filipino ('fil'); langid and the datasets say 'tl'
    "fil": "tl",
    "esp": "es",  # a dataset spelling, not an ISO code
}


@functools.lru_cache(maxsize=4096)
def _parse(code: str) -> langcodes.Language | None:
    try:
        return langcodes.Language.get(code.replace("_", "-"))
    except (langcodes.LanguageTagError, ValueError):
        return None


def normalize_language(code: str | None) -> str | None:
    """The one spelling of a language code ('deu' -> 'de', 'cmn_Hans' -> 'zh', 'es_LA' -> 'es', 'tir' -> 'ti',
    'nso' -> 'nso'); a code that cannot be read comes back lower-cased (see `is_known_language`); None stays
    None."""
    if code is None:
        return None
    text = code.strip()
    primary = text.replace("-", "_").split("_")[0].lower()
    if primary in _AS_MACROLANGUAGE:
        return _AS_MACROLANGUAGE[primary]
    parsed = _parse(text)
    language = parsed.language if parsed is not None else None
    if not language:
        return primary
    return _AS_MACROLANGUAGE.get(language, language)


def is_known_language(code: str) -> bool:
    """Whether a code names a language in the IANA registry (every ISO 639-1/639-3 code and BCP-47 tag).
    Catches typos ('xx', 'germn', 'xq1') before a training run starts."""
    primary = code.strip().replace("-", "_").split("_")[0].lower()
    if primary in _AS_MACROLANGUAGE or primary in _AS_MACROLANGUAGE.values():
        return True
    parsed = _parse(code.strip())
    return parsed is not None and parsed.language not in (None, "und") and parsed.is_valid()


def require_known_language(code: str, option: str = "language") -> str:
    """The normalized code, or an error naming the option: a typo ('xx', 'germn') must not reach a model."""
    from polyembed.errors import UnknownLanguageError

    normalized = normalize_language(code)
    if not normalized or not is_known_language(code) or not is_known_language(normalized):
        raise UnknownLanguageError(f"{option}: unknown language code '{code}' (use an ISO 639-1 or 639-3 code)")
    return normalized


def _subset_key(subset: str) -> tuple[str | None, ...]:
    """A subset's language(s) in the one spelling: ('de',) for 'deu' or 'deu_Latn', ('ar', 'en') for the pair
    'ar-en' or 'ara-eng' (both sides lower-case language codes, so 'zh-Hant' stays one language)."""
    left, _, right = subset.partition("-")
    if right and right.islower() and 2 <= len(right) <= 3 and is_known_language(left) and is_known_language(right):
        return normalize_language(left), normalize_language(right)
    return (normalize_language(subset),)


def subsets_named(code: str, subsets: Sequence[str]) -> list[str]:
    """The subsets of a dataset that `code` names, in any spelling of its language(s): `code` itself when listed,
    else every subset of the same language ('de' -> ['deu'] in Tatoeba, 'zh' -> ['cmn'], 'deu-eng' -> ['de-en']).
    Why here: datasets spell codes their own way, and no caller should keep a map to them."""
    if code in subsets:
        return [code]
    key = _subset_key(code.strip())
    return [subset for subset in subsets if _subset_key(subset) == key]


def match_subset(code: str, subsets: Sequence[str], task: str = "task") -> str:
    """The one subset `code` names (`subsets_named`), or an error that lists the task's subsets."""
    from polyembed.errors import UnknownLanguageError

    matches = subsets_named(code, subsets)
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UnknownLanguageError(f"{task}: '{code}' names several subsets ({', '.join(matches)}): give one of them")
    raise UnknownLanguageError(f"{task} has no language/subset {code}; it has: {', '.join(subsets)}")
