"""MCQA tasks (belebele, xcopa, kardes-xcopa) on tiny mock data with the hashing encoder; real-data smoke."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from polyembed.errors import DataError, PolyembedError, UnknownLanguageError
from polyembed.eval.registry import get_task
from polyembed.eval.runner import EmbeddingCache
from polyembed.eval.tasks.mcqa import BelebeleTask, KardesXcopaTask, XcopaTask, choose_by_similarity, qa_pair

# Passages whose correct answer repeats the passage's words (the hashing encoder's trigrams find it) and
# whose wrong answers share nothing with it.
PASSAGES = [
    ("The red fox jumps over the lazy dog near the river bank.", "What jumps?", 1),
    ("Seven golden bells ring loudly every morning in Vienna.", "What rings?", 3),
    ("Quantum computers factor numbers using qubits and interference.", "How do they work?", 0),
]
WRONG = ["zzz qqq", "xyxyxy wvwv", "kkkk jjjj", "mmm ppp nnn"]


def _belebele_record(passage: str, question: str, correct: int, gold: int | None = None) -> dict[str, object]:
    """One passage, one question; answer `correct` repeats the passage, answer `gold` is flagged correct."""
    gold = correct if gold is None else gold
    answers = [{"text": passage if i == correct else WRONG[i], "correct": i == gold} for i in range(4)]
    return {"text": passage, "items": [{"question": question, "answers": answers}]}


def _mock_belebele(root: Path, *, deu_labels_shifted: bool = False) -> Path:
    folder = root / "belebele-eng-deu"
    folder.mkdir(parents=True)
    for lang in ("eng", "deu"):
        records = [_belebele_record(p, q, c) for p, q, c in PASSAGES]
        if lang == "deu" and deu_labels_shifted:
            records[2]["items"][0]["answers"][0]["correct"] = False  # type: ignore[index]
            records[2]["items"][0]["answers"][1]["correct"] = True  # type: ignore[index]
        (folder / f"{lang}_Latn.jsonl").write_text(
            "\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8"
        )
    return root


def _context(encoder: object, root: Path, figures: Path | None = None) -> EmbeddingCache:
    return EmbeddingCache(encoder, root, figures, show_progress=False)  # type: ignore[arg-type]


def test_choose_by_similarity_by_hand() -> None:
    contexts = np.array([[1.0, 0.0], [0.0, 1.0]])
    candidates = np.array([[0.0, 1.0], [0.8, 0.6], [0.6, 0.8], [1.0, 0.0], [0.0, 1.0]])
    # item 0 has candidates 0-1 (scores 0, 0.8 -> 1); item 1 has candidates 2-4 (0.8, 0, 1 -> 2)
    assert choose_by_similarity(contexts, candidates, [0, 2, 5]).tolist() == [1, 2]


def test_belebele_mono_and_cross_lingual(tmp_path: Path, hashing_encoder: object) -> None:
    root = _mock_belebele(tmp_path)
    context = _context(hashing_encoder, root)
    scores = BelebeleTask().evaluate(context)
    assert [(s.subset, s.metric, s.value, s.n, s.main) for s in scores] == [
        ("eng", "accuracy", 100.0, 3, True),
        ("deu", "accuracy", 100.0, 3, True),
        ("eng-deu", "accuracy", 100.0, 3, True),
        ("deu-eng", "accuracy", 100.0, 3, True),
    ]
    assert scores[2].extra == {"passage_language": "eng", "qa_language": "deu"}
    # what was embedded: each passage once, and "question answer" pairs (the paper's concatenation)
    passage, question, correct = PASSAGES[0]
    assert qa_pair(question, passage) == f"{question} {passage}"
    assert (None, qa_pair(question, passage)) in context._vectors
    assert (None, passage) in context._vectors
    assert context.encoded_count == 3 + 12  # same texts in eng and deu: encoded once


def test_belebele_wrong_labels_score_zero(tmp_path: Path, hashing_encoder: object) -> None:
    """The gold flag on an unrelated answer makes every prediction wrong: the task does not peek at labels."""
    root = tmp_path / "flipped"
    folder = root / "belebele-eng-deu"
    folder.mkdir(parents=True)
    for lang in ("eng", "deu"):
        records = [_belebele_record(p, q, c, gold=(c + 1) % 4) for p, q, c in PASSAGES]
        (folder / f"{lang}_Latn.jsonl").write_text(
            "\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8"
        )
    scores = BelebeleTask(languages=["eng"]).evaluate(_context(hashing_encoder, root))
    assert [(s.subset, s.value) for s in scores] == [("eng", 0.0)]


def test_belebele_misaligned_files_are_an_error(tmp_path: Path, hashing_encoder: object) -> None:
    root = _mock_belebele(tmp_path, deu_labels_shifted=True)
    with pytest.raises(DataError) as excinfo:
        BelebeleTask(languages=["eng-deu"]).evaluate(_context(hashing_encoder, root))
    assert Path(excinfo.value.path).name == "deu_Latn.jsonl" and excinfo.value.line == 3
    # a monolingual subset does not need the alignment
    (deu,) = BelebeleTask(languages=["deu"]).evaluate(_context(hashing_encoder, root))
    assert deu.value == pytest.approx(200 / 3)


def _copa_line(premise: str, first: str, second: str, label: int) -> str:
    record = {"premise": premise, "choice1": first, "choice2": second, "question": "effect", "label": label}
    return json.dumps(record)


def test_xcopa_accuracy_and_average(tmp_path: Path, hashing_encoder: object) -> None:
    for lang, labels in (("it", [0, 1]), ("tr", [1, 1])):
        folder = tmp_path / "xcopa" / lang
        folder.mkdir(parents=True)
        lines = [
            _copa_line("the cat sat on the mat", "the cat sat on a mat", "rain fell in spain", labels[0]),
            _copa_line("stocks fell sharply today", "zebra yoghurt", "stocks fell sharply", labels[1]),
        ]
        (folder / f"test.{lang}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # predictions are [0, 1] in both languages: it is fully right, tr half right
    scores = XcopaTask(languages=["it", "tr"]).evaluate(_context(hashing_encoder, tmp_path))
    assert [(s.subset, s.value, s.n, s.main) for s in scores] == [
        ("it", 100.0, 2, True),
        ("tr", 50.0, 2, True),
        ("avg", 75.0, 4, True),
    ]
    only = XcopaTask(languages=["tr"]).evaluate(_context(hashing_encoder, tmp_path))
    assert [s.subset for s in only] == ["tr"]


def test_kardes_xcopa_task(tmp_path: Path, hashing_encoder: object) -> None:
    header = ",id,asks-for,most-plausible-alternative,p,a1,a2,p_translation,a1_translation,a2_translation\n"
    row = "0,1,cause,2,dogs bark loud,cats nap,dogs bark loudly,it yomgir,bu olma,it yomgir yogdi\n"
    for directory, code in (("azeri", "az"), ("uzbek", "uz")):  # English is read from the az file
        folder = tmp_path / "kardes-nlu" / directory
        folder.mkdir(parents=True)
        (folder / f"xcopa.test.{code}.csv").write_text(header + row, encoding="utf-8")
    scores = KardesXcopaTask(languages=["en", "uz"]).evaluate(_context(hashing_encoder, tmp_path))
    assert [(s.subset, s.value) for s in scores] == [("en", 100.0), ("uz", 100.0), ("avg", 100.0)]


def test_tasks_are_registered_with_their_subsets() -> None:
    assert get_task("belebele", languages=["deu-eng"]).languages == ("deu-eng",)
    assert get_task("xcopa").split == "test" and len(get_task("xcopa").languages) == 11
    assert get_task("kardes-xcopa", split="dev").languages == ("en", "az", "kk", "ky", "ug", "uz")
    with pytest.raises(UnknownLanguageError, match="eng, deu, eng-deu, deu-eng"):
        get_task("belebele", languages=["fra"])


def test_real_data_smoke(shared_data: Path, hashing_encoder: object) -> None:
    context = _context(hashing_encoder, shared_data)
    (xcopa,) = XcopaTask(languages=["it"]).evaluate(context)
    assert xcopa.n == 500 and 30.0 < xcopa.value < 70.0
    kardes = KardesXcopaTask(languages=["en", "kk"]).evaluate(context)
    assert [s.subset for s in kardes] == ["en", "kk", "avg"] and all(s.n for s in kardes)


@pytest.mark.slow
def test_real_belebele_minilm(shared_data: Path, minilm: object) -> None:
    scores = BelebeleTask(languages=["eng"]).evaluate(_context(minilm, shared_data))
    assert scores[0].n == 900 and scores[0].value > 28.0  # chance is 25; minilm-en measured 31.8


def test_belebele_cross_lingual_subsets_pair_passage_and_questions_in_the_right_languages(
    tmp_path: Path, hashing_encoder: object
) -> None:
    """eng-deu must pair the English passage with the German question + answers. The German correct answer
    repeats the English passage, the English files point elsewhere, so only the right pairing scores 100."""
    german = [
        "Zwei blaue Kraniche fliegen langsam über den See.",
        "Heute backt meine Tante einen Apfelkuchen mit Zimt.",
        "Der Zug nach Hamburg hat leider zwanzig Minuten Verspätung.",
    ]
    folder = tmp_path / "belebele-eng-deu"
    folder.mkdir(parents=True)
    eng, deu = [], []
    for (passage, question, correct), passage_de in zip(PASSAGES, german, strict=True):
        decoy = (correct + 1) % 4
        eng_answers = [{"text": WRONG[i], "correct": i == correct} for i in range(4)]
        eng_answers[decoy]["text"] = passage_de  # English QA resembles the German passage, but is wrong
        deu_answers = [{"text": passage if i == correct else WRONG[i], "correct": i == correct} for i in range(4)]
        eng.append({"text": passage, "items": [{"question": question, "answers": eng_answers}]})
        deu.append({"text": passage_de, "items": [{"question": question, "answers": deu_answers}]})
    for lang, records in (("eng", eng), ("deu", deu)):
        (folder / f"{lang}_Latn.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    scores = {s.subset: s.value for s in BelebeleTask().evaluate(_context(hashing_encoder, tmp_path))}
    assert scores["eng-deu"] == 100.0
    assert scores["deu-eng"] == 0.0


def test_belebele_max_questions_keeps_the_first_ones(tmp_path: Path, hashing_encoder: object) -> None:
    root = _mock_belebele(tmp_path)
    scores = BelebeleTask(languages=["eng"], max_questions=2).evaluate(_context(hashing_encoder, root))
    assert [(s.subset, s.n, s.value) for s in scores] == [("eng", 2, 100.0)]
    with pytest.raises(PolyembedError, match="max_questions"):
        BelebeleTask(max_questions=0)
