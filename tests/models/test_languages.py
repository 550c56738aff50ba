import pytest

from polyembed.data.registry import DATASETS
from polyembed.models.languages import normalize_language


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
