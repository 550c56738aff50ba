"""Multiple-choice readers: Belebele (JSONL passages), XCOPA (JSONL) and Kardes-NLU XCOPA (CSV).

Every reader validates the records strictly (types, exactly one correct answer, labels in range) and
reports bad input as a DataError naming the file and the 1-based line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyembed.data.io import read_lines
from polyembed.data.readers.kardes import KARDES_FOLDERS, kardes_file, read_kardes_rows
from polyembed.data.types import MultipleChoiceItem
from polyembed.errors import DataError, PolyembedError, UnknownLanguageError

BELEBELE_FILES = {"eng": "eng_Latn.jsonl", "deu": "deu_Latn.jsonl"}
XCOPA_LANGUAGES = ("et", "ht", "id", "it", "qu", "sw", "ta", "th", "tr", "vi", "zh")
XCOPA_SPLITS = ("val", "test")
KARDES_XCOPA_LANGUAGES = ("en", *KARDES_FOLDERS)
KARDES_XCOPA_SPLITS = ("dev", "test")
COPA_QUESTIONS = ("cause", "effect")


@dataclass
class BelebeleItem(MultipleChoiceItem):
    """A Belebele question: `context` is the passage, `candidates` the raw answer texts.

    The question is kept apart (not pre-joined to the answers) so a task decides how to combine them;
    `line` (1-based, in the JSONL file) and `item_index` (position within the passage) identify the
    question, which is what aligns the eng and deu files.
    """

    question: str = ""
    line: int = 0
    item_index: int = 0


def _json_object(path: Path, line: int, text: str) -> dict[str, Any]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(path, line, f"invalid JSON ({err.msg} at column {err.colno})") from err
    except ValueError as err:  # an integer of more than 4300 digits (Python's int conversion limit)
        raise DataError(path, line, f"invalid JSON ({str(err).split(';')[0]})") from None
    except RecursionError:
        raise DataError(path, line, "invalid JSON (nested too deeply)") from None
    if not isinstance(record, dict):
        raise DataError(path, line, f"expected a JSON object, found {type(record).__name__}")
    return record


def _string(path: Path, line: int, record: dict[str, Any], key: str, where: str = "") -> str:
    if key not in record:
        raise DataError(path, line, f"missing key '{key}'{where}")
    value = record[key]
    if not isinstance(value, str) or not value.strip():
        raise DataError(path, line, f"'{key}'{where} must be a non-empty string, found {value!r}")
    return value


def read_belebele(folder: Path, language: str) -> list[BelebeleItem]:
    """All Belebele questions of one language (eng or deu), in file order.

    Format: one passage per line, `{"text", "items": [{"question", "answers": [{"text", "correct"}]}]}`.
    Each question needs at least two answers and exactly one with `"correct": true`.
    """
    if language not in BELEBELE_FILES:
        raise UnknownLanguageError(f"Belebele has no language '{language}' here (has {', '.join(BELEBELE_FILES)})")
    path = Path(folder) / BELEBELE_FILES[language]
    out: list[BelebeleItem] = []
    for line, text in enumerate(read_lines(path, allow_empty=True), start=1):
        if not text.strip():
            continue
        record = _json_object(path, line, text)
        passage = _string(path, line, record, "text")
        items = record.get("items")
        if not isinstance(items, list) or not items:
            raise DataError(path, line, f"'items' must be a non-empty list, found {items!r:.60}")
        for index, item in enumerate(items):
            where = f" in item {index + 1}"
            if not isinstance(item, dict):
                raise DataError(path, line, f"item {index + 1} is not a JSON object")
            question = _string(path, line, item, "question", where)
            answers = item.get("answers")
            if not isinstance(answers, list) or len(answers) < 2:
                raise DataError(path, line, f"'answers'{where} must be a list of at least 2 answers")
            texts: list[str] = []
            correct: list[int] = []
            for number, answer in enumerate(answers):
                answer_where = f" of answer {number + 1}{where}"
                if not isinstance(answer, dict):
                    raise DataError(path, line, f"answer {number + 1}{where} is not a JSON object")
                texts.append(_string(path, line, answer, "text", answer_where))
                flag = answer.get("correct")
                if not isinstance(flag, bool):
                    raise DataError(path, line, f"'correct'{answer_where} must be true or false, found {flag!r}")
                if flag:
                    correct.append(number)
            if len(correct) != 1:
                raise DataError(path, line, f"expected exactly one correct answer{where}, found {len(correct)}")
            out.append(
                BelebeleItem(
                    context=passage,
                    candidates=texts,
                    label=correct[0],
                    context_language=language,
                    candidate_language=language,
                    question=question,
                    line=line,
                    item_index=index,
                )
            )
    if not out:
        raise DataError(path, None, "no questions found")
    return out


def _copa_item(
    path: Path,
    line: int,
    premise: str,
    choices: list[str],
    question: str,
    label: int,
    language: str,
    ident: str,
) -> MultipleChoiceItem:
    if question not in COPA_QUESTIONS:
        raise DataError(path, line, f"question must be 'cause' or 'effect', found {question!r}")
    return MultipleChoiceItem(
        context=premise,
        candidates=choices,
        label=label,
        context_language=language,
        candidate_language=language,
        meta={"question": question, "id": ident, "line": str(line)},
    )


def read_xcopa(folder: Path, language: str, split: str = "test") -> list[MultipleChoiceItem]:
    """XCOPA items of one language: context = premise, candidates = [choice1, choice2], label 0|1.

    `meta["question"]` says whether the premise asks for the cause or the effect. Upstream quirk: the th
    files (and tr val) mark every item "effect", so do not rely on this field per language.
    """
    if language not in XCOPA_LANGUAGES:
        raise UnknownLanguageError(f"XCOPA has no language '{language}' (has {', '.join(XCOPA_LANGUAGES)})")
    if split not in XCOPA_SPLITS:
        raise PolyembedError(f"XCOPA has no split '{split}' (has {', '.join(XCOPA_SPLITS)})")
    path = Path(folder) / language / f"{split}.{language}.jsonl"
    out: list[MultipleChoiceItem] = []
    for line, text in enumerate(read_lines(path, allow_empty=True), start=1):
        if not text.strip():
            continue
        record = _json_object(path, line, text)
        premise = _string(path, line, record, "premise")
        choices = [_string(path, line, record, "choice1"), _string(path, line, record, "choice2")]
        question = _string(path, line, record, "question")
        if "label" not in record:
            raise DataError(path, line, "missing key 'label'")
        label = record["label"]
        if isinstance(label, bool) or label not in (0, 1):
            raise DataError(path, line, f"label must be 0 or 1, found {label!r}")
        ident = str(record.get("idx", len(out)))
        out.append(_copa_item(path, line, premise, choices, question, int(label), language, ident))
    if not out:
        raise DataError(path, None, "no items found")
    return out


def read_kardes_xcopa(folder: Path, language: str, split: str = "test") -> list[MultipleChoiceItem]:
    """Kardes-NLU XCOPA items in one language; "en" gives the English source columns.

    Every Kardes file carries the same English text; "en" reads it from the Azerbaijani file.
    The CSV's `most-plausible-alternative` (1|2) becomes the 0-based label.
    """
    if language not in KARDES_XCOPA_LANGUAGES:
        raise UnknownLanguageError(
            f"Kardes XCOPA has no language '{language}' (has {', '.join(KARDES_XCOPA_LANGUAGES)})"
        )
    if split not in KARDES_XCOPA_SPLITS:
        raise PolyembedError(f"Kardes XCOPA has no split '{split}' (has {', '.join(KARDES_XCOPA_SPLITS)})")
    source = "az" if language == "en" else language
    path = kardes_file(Path(folder), "xcopa", source, split)
    columns = ("p", "a1", "a2") if language == "en" else ("p_translation", "a1_translation", "a2_translation")
    out: list[MultipleChoiceItem] = []
    for line, row in read_kardes_rows(Path(folder), "xcopa", source, split):
        answer = row["most-plausible-alternative"].strip()
        if answer not in ("1", "2"):
            raise DataError(path, line, f"most-plausible-alternative must be 1 or 2, found {answer!r}")
        premise, first, second = (row[name] for name in columns)
        question = row["asks-for"].strip()
        out.append(_copa_item(path, line, premise, [first, second], question, int(answer) - 1, language, row["id"]))
    if not out:
        raise DataError(path, None, "no items found")
    return out
