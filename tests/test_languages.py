import pytest

from polyembed.data.registry import DATASETS
from polyembed.errors import UnknownLanguageError
from polyembed.languages import is_known_language, normalize_language, require_known_language


@pytest.mark.parametrize(
    ("code", "expected"),
    [("deu", "de"), ("de", "de"), ("cmn_Hans", "zh"), ("es_LA", "es"), ("swh", "sw"), ("swa", "sw"),
     ("eng", "en"), ("esp", "es"), ("arq", "arq"), ("kab", "kab"), ("KAZ", "kk"), (None, None)],
)
def test_normalize_language(code: str | None, expected: str | None) -> None:
    assert normalize_language(code) == expected


def test_same_language_in_two_datasets_gets_one_code() -> None:
    tatoeba = {normalize_language(c) for c in DATASETS["tatoeba"].languages}
    xcopa = {normalize_language(c) for c in DATASETS["xcopa"].languages}
    assert {"et", "id", "it", "sw", "ta", "th", "tr", "vi", "zh"} <= tatoeba & xcopa


@pytest.mark.parametrize(
    ("code", "expected"),
    [("tir", "ti"), ("lug", "lg"), ("nso", "nso"), ("quy", "quy"), ("fuv", "fuv"), ("zh-Hant", "zh"),
     ("sr-Latn", "sr"), ("es-419", "es"), ("ger", "de"), ("tgl", "tl"), ("zsm", "ms"), ("ckb", "ckb")],
)
def test_every_iso_639_code_and_bcp47_tag_is_known_and_normalised(code: str, expected: str) -> None:
    assert is_known_language(code) and normalize_language(code) == expected
    assert require_known_language(code, "--languages") == expected


@pytest.mark.parametrize("code", ["xq1", "xx", "zz", "germn", "und", "", "de-", "-"])
def test_made_up_codes_are_refused_with_the_option(code: str) -> None:
    assert not is_known_language(code)
    with pytest.raises(UnknownLanguageError, match=f"--languages: unknown language code '{code}'"):
        require_known_language(code, "--languages")


def test_every_dataset_language_is_known() -> None:
    codes = {(name, part) for name, info in DATASETS.items() for code in info.languages for part in code.split("-")}
    assert not {(name, code) for name, code in codes if not is_known_language(code)}  # 'en-de' is a pair of codes


def test_a_subset_is_named_in_any_spelling_of_its_languages() -> None:
    from polyembed.languages import match_subset, subsets_named

    tatoeba = ["deu", "cmn", "yue", "swh", "ara"]
    assert [match_subset(code, tatoeba) for code in ("de", "deu", "ger", "zh", "zh-Hant", "sw", "ar")] == [
        "deu", "deu", "deu", "cmn", "cmn", "swh", "ara"]
    sts = ["ar-ar", "ar-en", "en-en", "es-en"]
    assert match_subset("ara-eng", sts) == "ar-en" and match_subset("es-en", sts) == "es-en"
    assert subsets_named("fr", tatoeba) == [] and subsets_named("en-ar", sts) == []
    with pytest.raises(UnknownLanguageError, match="tatoeba has no language/subset fr; it has: deu, cmn"):
        match_subset("fr", tatoeba, "tatoeba")
    with pytest.raises(UnknownLanguageError, match="'de' names several subsets \\(deu, deu_Latn\\)"):
        match_subset("de", ["deu", "deu_Latn"])
