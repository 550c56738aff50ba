"""One spelling per language: datasets use ISO 639-1 ('de'), 639-3 ('deu') and variants ('cmn_Hans', 'es_LA').

Language-routed models and the language identifier speak ISO 639-1 where a code exists, so every code a
task passes to an encoder goes through `normalize_language` first.
"""

from __future__ import annotations

# ISO 639-3 (and 639-2/B, dataset spellings) -> ISO 639-1, for the languages of the registered datasets.
_TO_ISO639_1 = {
    "afr": "af",
    "amh": "am",
    "ara": "ar",
    "arb": "ar",
    "aze": "az",
    "bel": "be",
    "ben": "bn",
    "bos": "bs",
    "bre": "br",
    "bul": "bg",
    "cat": "ca",
    "ces": "cs",
    "cze": "cs",
    "cha": "ch",
    "cmn": "zh",
    "cor": "kw",
    "cym": "cy",
    "dan": "da",
    "deu": "de",
    "ger": "de",
    "ell": "el",
    "eng": "en",
    "epo": "eo",
    "esp": "es",
    "est": "et",
    "eus": "eu",
    "fao": "fo",
    "fin": "fi",
    "fra": "fr",
    "fre": "fr",
    "fry": "fy",
    "gla": "gd",
    "gle": "ga",
    "glg": "gl",
    "hau": "ha",
    "heb": "he",
    "hin": "hi",
    "hrv": "hr",
    "hun": "hu",
    "hye": "hy",
    "ibo": "ig",
    "ido": "io",
    "ile": "ie",
    "ina": "ia",
    "ind": "id",
    "isl": "is",
    "ita": "it",
    "jav": "jv",
    "jpn": "ja",
    "kat": "ka",
    "kaz": "kk",
    "khm": "km",
    "kin": "rw",
    "kir": "ky",
    "kor": "ko",
    "kur": "ku",
    "lat": "la",
    "lit": "lt",
    "lvs": "lv",
    "lav": "lv",
    "mal": "ml",
    "mar": "mr",
    "mkd": "mk",
    "mon": "mn",
    "nld": "nl",
    "nno": "nn",
    "nob": "nb",
    "oci": "oc",
    "pes": "fa",
    "fas": "fa",
    "pol": "pl",
    "por": "pt",
    "ron": "ro",
    "rus": "ru",
    "slk": "sk",
    "slv": "sl",
    "spa": "es",
    "sqi": "sq",
    "srp": "sr",
    "swa": "sw",
    "swe": "sv",
    "swh": "sw",
    "tam": "ta",
    "tat": "tt",
    "tel": "te",
    "tgl": "tl",
    "tha": "th",
    "tuk": "tk",
    "tur": "tr",
    "uig": "ug",
    "ukr": "uk",
    "urd": "ur",
    "uzb": "uz",
    "vie": "vi",
    "xho": "xh",
    "yid": "yi",
    "yor": "yo",
    "zho": "zh",
    "zsm": "ms",
    "zul": "zu",
}


def normalize_language(code: str | None) -> str | None:
    """ISO 639-1 code when one exists ('deu' -> 'de', 'cmn_Hans' -> 'zh', 'es_LA' -> 'es'), else the
    lower-cased ISO 639-3 code ('arq', 'kab'); None stays None."""
    if code is None:
        return None
    base = code.strip().replace("-", "_").split("_")[0].lower()
    if len(base) == 2:
        return base
    return _TO_ISO639_1.get(base, base)


def _iso639_1_codes() -> frozenset[str]:
    """ISO 639-1 codes: those of our datasets plus every language langid identifies."""
    from langid.langid import LanguageIdentifier, model

    identifier = LanguageIdentifier.from_modelstring(model)
    return frozenset(_TO_ISO639_1.values()) | frozenset(identifier.nb_classes)


_KNOWN: frozenset[str] | None = None


def is_known_language(code: str) -> bool:
    """Whether a normalized code is a language we can name: an ISO 639-1 code of our datasets or langid,
    or an ISO 639-3 code in our table. Catches typos ('xx', 'germn') before a training run starts."""
    global _KNOWN
    if _KNOWN is None:
        _KNOWN = _iso639_1_codes()
    return code in _KNOWN or code in _TO_ISO639_1


def require_known_language(code: str, option: str = "language") -> str:
    """The normalized code, or an error naming the option: a typo ('xx', 'germn') must not reach a model."""
    from polyembed.data.errors import UnknownLanguageError

    normalized = normalize_language(code)
    if not normalized or not is_known_language(normalized):
        raise UnknownLanguageError(f"{option}: unknown language code '{code}' (use an ISO 639-1 or 639-3 code)")
    return normalized
