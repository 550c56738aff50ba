"""The n-gram language identifier: trained on labelled text, restricted to candidates, saved and loaded exactly,
trained once per data root into the cache, and never trained on the rows it is measured on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from polyembed.errors import PolyembedError
from polyembed.models.ngram_langid import (
    LabelledText,
    NgramIdentifier,
    _identifier_at,
    labelled_text,
    ngram_identifier,
    training_text,
)
from tests.helpers import write_lines

HAUSA = ["Gwamnatin tarayya ta ce za ta gina sababbin makarantu a jihohin arewa.",
         "Yara sun tafi makaranta da safe domin su koyi karatu da rubutu.",
         "Manoma suna bukatar ruwan sama domin amfanin gona ya yi kyau.",
         "Shugaban kasa ya gana da wakilan kungiyoyin kwadago a Abuja."]
SWAHILI = ["Serikali imesema itajenga shule mpya katika mikoa ya kaskazini.",
           "Watoto walikwenda shuleni asubuhi ili kujifunza kusoma na kuandika.",
           "Wakulima wanahitaji mvua ili mazao yao yastawi vizuri.",
           "Rais alikutana na wawakilishi wa vyama vya wafanyakazi jijini Dodoma."]
ENGLISH = ["The federal government says it will build new schools in the northern states.",
           "The children went to school in the morning to learn to read and write.",
           "Farmers need rain so that their crops grow well.",
           "The president met representatives of the labour unions in the capital."]


def _fitted() -> NgramIdentifier:
    items = [LabelledText("ha", "tico19", "long", HAUSA[:3]), LabelledText("sw", "tico19", "long", SWAHILI[:3]),
             LabelledText("en", "tico19", "long", ENGLISH[:3])]
    return NgramIdentifier.fit(items)


def test_it_identifies_held_out_sentences_and_respects_candidates() -> None:
    identifier = _fitted()
    held_out = [HAUSA[3], SWAHILI[3], ENGLISH[3]]
    assert identifier.identify(held_out) == ["ha", "sw", "en"]
    assert identifier.identify(held_out, candidates=["sw", "en"])[1:] == ["sw", "en"]
    assert set(identifier.identify(held_out, candidates=["sw", "en"])) <= {"sw", "en"}
    assert identifier.identify([]) == []
    assert identifier.sources == {"tico19": "CC0"}
    with pytest.raises(PolyembedError, match="knows none of fr, de"):
        identifier.identify(held_out, candidates=["fr", "de"])


def test_save_and_load_give_the_same_answers(tmp_path: Path) -> None:
    identifier = _fitted()
    identifier.save(tmp_path / "lid")
    loaded = NgramIdentifier.load(tmp_path / "lid")
    texts = HAUSA + SWAHILI + ENGLISH
    assert loaded.languages == identifier.languages
    assert loaded.identify(texts) == identifier.identify(texts)
    _, before = identifier.scores(texts)
    _, after = loaded.scores(texts)
    np.testing.assert_allclose(after, before, rtol=1e-2)  # float16 storage


def test_the_identifier_trains_once_per_data_root_into_the_cache(tmp_path: Path, offline_cache: Path) -> None:
    root = _tiny_root(tmp_path / "data")
    _identifier_at.cache_clear()
    first = ngram_identifier(str(root))
    assert first is not None and first.languages == ["en", "ha", "sw"]
    stored = list((offline_cache / "langid").glob("ngram-*.npz"))
    assert len(stored) == 1 and stored[0].with_suffix(".json").is_file()
    _identifier_at.cache_clear()
    loaded = ngram_identifier(str(root))  # from the cache this time
    assert loaded is not None and loaded.identify([HAUSA[0], SWAHILI[0]]) == ["ha", "sw"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert ngram_identifier(str(empty)) is None  # no source present: callers fall back to langid.py
    _identifier_at.cache_clear()


def test_moving_the_data_root_moves_the_identifier(tmp_path: Path, offline_cache: Path) -> None:
    from polyembed.data import set_data_root

    first_root = _tiny_root(tmp_path / "first")
    second_root = tmp_path / "second"
    write_lines(second_root / "tico19-test" / "en-sw" / "tico19-test.sw", SWAHILI * 2)
    write_lines(second_root / "tico19-test" / "en-sw" / "tico19-test.en", ENGLISH[:4] * 2)
    _identifier_at.cache_clear()
    try:
        set_data_root(first_root)
        first = ngram_identifier()
        set_data_root(second_root)
        second = ngram_identifier()
        assert first is not None and second is not None
        assert first.languages == ["en", "ha", "sw"] and second.languages == ["en", "sw"]
    finally:
        set_data_root(None)
        _identifier_at.cache_clear()


def test_held_out_rows_are_never_training_rows(shared_data: Path) -> None:
    test = labelled_text("test", shared_data)
    assert {"ha", "ig", "yo", "kk", "ky", "uz", "tt", "tk", "en"} <= {item.language for item in test}
    assert {item.length for item in test} == {"short", "long"}
    held_out = {text for item in test for text in item.texts}
    train = training_text(shared_data)
    assert sum(len(item.texts) for item in train) > len(held_out)
    assert not any(text in held_out for item in train for text in item.texts)
    raw = {text for item in labelled_text("train", shared_data) for text in item.texts}
    assert raw & held_out  # what training_text removes: sentences the sets share (Tatoeba repeats some)


def _tiny_root(root: Path) -> Path:
    for code, lines in (("ha", HAUSA), ("sw", SWAHILI)):
        write_lines(root / "tico19-test" / f"en-{code}" / f"tico19-test.{code}", lines * 2)
        write_lines(root / "tico19-test" / f"en-{code}" / "tico19-test.en", ENGLISH * 2)
    return root


def test_routing_uses_the_ngram_identifier_for_languages_langid_lacks(tmp_path: Path, offline_cache: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from polyembed.models.langid import identify_among, identify_languages, langid_languages

    assert "ha" not in langid_languages()
    monkeypatch.setenv("POLYEMBED_DATA", str(_tiny_root(tmp_path / "data")))
    _identifier_at.cache_clear()
    try:
        texts = [HAUSA[3], ENGLISH[3], SWAHILI[3]]
        assert identify_among(texts, ["en", "ha", "sw"], "bundle") == ["ha", "en", "sw"]
        # a candidate the n-gram identifier lacks: langid.py, which knows all three
        assert identify_languages(["Der Zug hat heute leider Verspätung."], ["de", "en", "sw"]) == ["de"]
    finally:
        _identifier_at.cache_clear()


def test_without_a_data_root_langid_answers_and_an_unknown_set_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from polyembed.models import ngram_langid
    from polyembed.models.langid import identify_among, identify_languages

    monkeypatch.setattr(ngram_langid, "ngram_identifier", lambda root=None: None)
    assert identify_languages(["Guten Morgen, wie geht es dir heute?"], ["de", "en", "ha"]) == ["de"]
    with pytest.raises(PolyembedError, match="bundle: the language identifier knows none of ha, yo"):
        identify_among(["Sannu"], ["ha", "yo"], "bundle")


# ---- the cached identifier carries a checksum: a damaged copy is trained again, never a traceback


@pytest.mark.parametrize("damage", ["truncated npz", "garbage npz", "garbage json", "npz missing", "json missing"])
def test_a_damaged_cached_identifier_is_trained_again(tmp_path: Path, offline_cache: Path, damage: str,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    root = _tiny_root(tmp_path / "data")
    _identifier_at.cache_clear()
    try:
        assert ngram_identifier(str(root)) is not None
        (npz,) = (offline_cache / "langid").glob("ngram-*.npz")
        description = npz.with_suffix(".json")
        if damage == "truncated npz":
            npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
        elif damage == "garbage npz":
            npz.write_bytes(np.random.default_rng(0).bytes(npz.stat().st_size))
        elif damage == "garbage json":
            description.write_bytes(b"\x00\xff not json")
        else:
            (npz if damage == "npz missing" else description).unlink()
        _identifier_at.cache_clear()
        again = ngram_identifier(str(root))
        assert again is not None and again.identify([HAUSA[3], SWAHILI[3]]) == ["ha", "sw"]
        assert "the cached language identifier is not usable" in caplog.text
        assert NgramIdentifier.load(npz.with_suffix("")).languages == ["en", "ha", "sw"]  # replaced, intact
    finally:
        _identifier_at.cache_clear()


def test_load_refuses_what_its_record_does_not_vouch_for(tmp_path: Path) -> None:
    import json

    from polyembed.models.ngram_langid import CachedIdentifierError

    _fitted().save(tmp_path / "lid")
    npz, description = tmp_path / "lid.npz", tmp_path / "lid.json"
    stored = json.loads(description.read_text())
    assert stored["checksum"] and stored["algorithm"] == "blake2b"
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0x01
    npz.write_bytes(bytes(data))
    with pytest.raises(CachedIdentifierError, match=rf"{npz}: checksum mismatch"):
        NgramIdentifier.load(tmp_path / "lid")
    description.write_text(json.dumps({**stored, "version": 1}))
    with pytest.raises(CachedIdentifierError, match="of another version"):
        NgramIdentifier.load(tmp_path / "lid")
