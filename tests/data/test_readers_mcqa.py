"""Readers for Belebele, XCOPA and Kardes XCOPA: tiny synthetic files for every error path, plus real data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyembed.data.readers.mcqa import (
    KARDES_XCOPA_LANGUAGES,
    XCOPA_LANGUAGES,
    BelebeleItem,
    read_belebele,
    read_kardes_xcopa,
    read_xcopa,
)
from polyembed.data.registry import get_dataset
from polyembed.errors import DataError, PolyembedError, UnknownLanguageError


def _answers(correct: int, n: int = 4) -> list[dict[str, object]]:
    return [{"text": f"answer {i}", "correct": i == correct, "prediction": None} for i in range(n)]


def _passage(text: str, *items: tuple[str, int]) -> dict[str, object]:
    return {
        "text": text,
        "items": [{"question": q, "answers": _answers(c), "multiple": False} for q, c in items],
    }


def _write_jsonl(path: Path, records: list[object | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _error(excinfo: pytest.ExceptionInfo[DataError]) -> tuple[str, int | None, str]:
    err = excinfo.value
    return Path(err.path).name, err.line, err.message


# --- Belebele ---------------------------------------------------------------------------------------------


def test_belebele_reads_items_in_order(tmp_path: Path) -> None:
    _write_jsonl(
        tmp_path / "eng_Latn.jsonl",
        [_passage("Passage one.", ("Q1?", 2), ("Q2?", 0)), "", _passage("Passage two.", ("Q3?", 3))],
    )
    items = read_belebele(tmp_path, "eng")
    assert [type(item) for item in items] == [BelebeleItem] * 3
    assert [item.question for item in items] == ["Q1?", "Q2?", "Q3?"]
    assert [item.label for item in items] == [2, 0, 3]
    assert [(item.line, item.item_index) for item in items] == [(1, 0), (1, 1), (3, 0)]
    assert items[0].context == "Passage one." and items[2].context == "Passage two."
    assert items[0].candidates == ["answer 0", "answer 1", "answer 2", "answer 3"]
    assert items[0].context_language == items[0].candidate_language == "eng"


@pytest.mark.parametrize(
    ("record", "line", "fragment"),
    [
        ('{"text": "p", "items": [', 2, "invalid JSON"),
        ("[1, 2]", 2, "expected a JSON object"),
        ({"items": []}, 2, "missing key 'text'"),
        ({"text": "p", "items": []}, 2, "'items' must be a non-empty list"),
        ({"text": "p", "items": [{"answers": _answers(0)}]}, 2, "missing key 'question'"),
        (
            {"text": "p", "items": [{"question": "q", "answers": _answers(-1)}]},
            2,
            "exactly one correct answer",
        ),
        (
            {
                "text": "p",
                "items": [{"question": "q", "answers": [*_answers(0, 3), {"text": "x", "correct": True}]}],
            },
            2,
            "found 2",
        ),
        (
            {"text": "p", "items": [{"question": "q", "answers": [{"text": "a", "correct": "yes"}] * 4}]},
            2,
            "true or",
        ),
        (
            {"text": "p", "items": [{"question": "q", "answers": [{"correct": True}] * 4}]},
            2,
            "missing key 'text'",
        ),
        ({"text": "p", "items": [{"question": "q", "answers": _answers(0, 1)}]}, 2, "at least 2 answers"),
    ],
)
def test_belebele_bad_records_name_file_and_line(
    tmp_path: Path, record: object, line: int, fragment: str
) -> None:
    _write_jsonl(tmp_path / "deu_Latn.jsonl", [_passage("ok", ("q", 1)), record])
    with pytest.raises(DataError) as excinfo:
        read_belebele(tmp_path, "deu")
    name, got_line, message = _error(excinfo)
    assert (name, got_line) == ("deu_Latn.jsonl", line)
    assert fragment in message


def test_belebele_unknown_language_lists_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(UnknownLanguageError, match="eng, deu"):
        read_belebele(tmp_path, "fra")


def test_belebele_missing_or_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="file not found"):
        read_belebele(tmp_path, "eng")
    (tmp_path / "eng_Latn.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(DataError, match="no questions"):
        read_belebele(tmp_path, "eng")


# --- XCOPA ------------------------------------------------------------------------------------------------


def _copa(
    premise: str = "p", label: object = 0, question: str = "cause", **extra: object
) -> dict[str, object]:
    record: dict[str, object] = {"premise": premise, "choice1": "c1", "choice2": "c2", "question": question}
    record["label"] = label
    record.update(extra)
    return record


def test_xcopa_reads_items(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "it" / "test.it.jsonl", [_copa("a", 1, idx=7), _copa("b", 0, "effect", idx=8)])
    items = read_xcopa(tmp_path, "it", "test")
    assert [(i.context, i.candidates, i.label) for i in items] == [
        ("a", ["c1", "c2"], 1),
        ("b", ["c1", "c2"], 0),
    ]
    assert [i.meta["question"] for i in items] == ["cause", "effect"]
    assert items[0].meta["id"] == "7" and items[1].meta["line"] == "2"


@pytest.mark.parametrize(
    ("record", "fragment"),
    [
        (_copa(label=2), "label must be 0 or 1"),
        (_copa(label=True), "label must be 0 or 1"),
        (_copa(label="0"), "label must be 0 or 1"),
        ({"premise": "p", "choice1": "a", "choice2": "b", "question": "cause"}, "missing key 'label'"),
        ({"premise": "p", "choice1": "a", "question": "cause", "label": 0}, "missing key 'choice2'"),
        (_copa(premise=""), "'premise' must be a non-empty string"),
        (_copa(question="why"), "'cause' or 'effect'"),
        ('{"premise": "p",', "invalid JSON"),
    ],
)
def test_xcopa_bad_records(tmp_path: Path, record: object, fragment: str) -> None:
    _write_jsonl(tmp_path / "sw" / "val.sw.jsonl", [_copa(), _copa(), record])
    with pytest.raises(DataError) as excinfo:
        read_xcopa(tmp_path, "sw", "val")
    name, line, message = _error(excinfo)
    assert (name, line) == ("val.sw.jsonl", 3)
    assert fragment in message


def test_xcopa_unknown_language_and_split(tmp_path: Path) -> None:
    with pytest.raises(UnknownLanguageError, match="et, ht, id"):
        read_xcopa(tmp_path, "en", "test")
    with pytest.raises(PolyembedError, match="val, test"):
        read_xcopa(tmp_path, "it", "train")


# --- Kardes XCOPA -----------------------------------------------------------------------------------------

KARDES_HEADER = (
    "\ufeff,id,asks-for,most-plausible-alternative,p,a1,a2,p_translation,a1_translation,a2_translation\n"
)


def _kardes(folder: Path, rows: list[str], language: str = "az", directory: str = "azeri") -> Path:
    path = folder / directory / f"xcopa.test.{language}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(KARDES_HEADER + "".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def test_kardes_xcopa_english_and_translation(tmp_path: Path) -> None:
    _kardes(
        tmp_path,
        [
            "0,501,cause,1,P en,A1 en,A2 en,P az,A1 az,A2 az",
            '1,502,effect,2,Q en,"B1, en",B2 en,Q az,B1 az,B2 az',
        ],
    )
    english = read_kardes_xcopa(tmp_path, "en", "test")
    azeri = read_kardes_xcopa(tmp_path, "az", "test")
    assert [(i.context, i.candidates, i.label) for i in english] == [
        ("P en", ["A1 en", "A2 en"], 0),
        ("Q en", ["B1, en", "B2 en"], 1),
    ]
    assert [(i.context, i.label, i.context_language) for i in azeri] == [("P az", 0, "az"), ("Q az", 1, "az")]
    assert [i.meta["question"] for i in azeri] == ["cause", "effect"]
    assert azeri[1].meta == {"question": "effect", "id": "502", "line": "3"}


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ("1,502,effect,3,p,a,b,p,a,b", "most-plausible-alternative must be 1 or 2"),
        ("1,502,why,1,p,a,b,p,a,b", "'cause' or 'effect'"),
        ("1,502,effect,1,p,a,b,p,,b", "empty 'a1_translation'"),
        ("1,502,effect,1,p,a,b", "expected 10 fields"),
    ],
)
def test_kardes_xcopa_bad_rows(tmp_path: Path, row: str, fragment: str) -> None:
    _kardes(tmp_path, ["0,501,cause,1,p,a,b,p,a,b", row], language="kk", directory="kazakh")
    with pytest.raises(DataError) as excinfo:
        read_kardes_xcopa(tmp_path, "kk", "test")
    name, line, message = _error(excinfo)
    assert (name, line) == ("xcopa.test.kk.csv", 3)
    assert fragment in message


def test_kardes_xcopa_unknown_language_and_split(tmp_path: Path) -> None:
    with pytest.raises(UnknownLanguageError, match="en, az, kk, ky, ug, uz"):
        read_kardes_xcopa(tmp_path, "tr", "test")
    with pytest.raises(PolyembedError, match="dev, test"):
        read_kardes_xcopa(tmp_path, "az", "train")


# --- registry and real data -------------------------------------------------------------------------------


def test_registry_points_at_these_readers() -> None:
    assert get_dataset("belebele").reader_function() is read_belebele
    assert get_dataset("xcopa").reader_function() is read_xcopa
    assert get_dataset("kardes-xcopa").reader_function() is read_kardes_xcopa
    assert get_dataset("xcopa").languages == XCOPA_LANGUAGES
    assert get_dataset("kardes-xcopa").languages == KARDES_XCOPA_LANGUAGES


def test_real_belebele_is_aligned(shared_data: Path) -> None:
    eng = get_dataset("belebele").load("eng", root=shared_data)
    deu = get_dataset("belebele").load("deu", root=shared_data)
    assert len(eng) == len(deu) == 900
    assert all(len(item.candidates) == 4 for item in eng)
    assert [(i.line, i.item_index, i.label) for i in eng] == [(i.line, i.item_index, i.label) for i in deu]
    assert len({item.context for item in eng}) == 488


def test_real_xcopa_and_kardes(shared_data: Path) -> None:
    items = get_dataset("xcopa").load("it", "test", root=shared_data)
    assert len(items) == 500 and {i.label for i in items} == {0, 1}
    en = get_dataset("kardes-xcopa").load("en", "test", root=shared_data)
    kk = get_dataset("kardes-xcopa").load("kk", "test", root=shared_data)
    assert len(en) == len(kk) == 500
    assert [i.label for i in en] == [i.label for i in kk]
    assert en[0].context == "The item was packaged in bubble wrap." and en[0].label == 0
