"""Paraphrase pairs per language (the modular SE stage's data): registry sources on the real data root, and
user TSV files with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.data.parallel_sources import _sts_benchmark_sentences
from polyembed.data.paraphrases import cross_lingual_paraphrases, load_paraphrases, read_paraphrase_file
from polyembed.data.readers.sts import read_stsb_multi_mt
from polyembed.errors import DataError


def test_a_paraphrase_file_needs_two_columns_on_every_line(tmp_path: Path) -> None:
    good = tmp_path / "good.tsv"
    good.write_text("a cat sleeps\ta cat is asleep\nhe runs\the is running\n", encoding="utf-8")
    assert read_paraphrase_file(good) == [("a cat sleeps", "a cat is asleep"), ("he runs", "he is running")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("a cat sleeps\ta cat is asleep\nonly one column\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.tsv:2: expected two tab-separated"):
        read_paraphrase_file(bad)


def test_stsb_multi_mt_paraphrases_are_high_scored_rows_without_sts_test_sentences(shared_data: Path) -> None:
    (german,) = load_paraphrases("de", ["stsb-multi-mt"], shared_data)
    train = read_stsb_multi_mt(shared_data / "stsb-multi-mt", "de", "train")
    scores = dict(zip(zip(train.sentences1, train.sentences2, strict=True), train.scores, strict=True))
    pairs = list(zip(german.anchors, german.positives, strict=True))
    assert 1000 < len(pairs) < 2000 and all(scores[pair] >= 4 for pair in pairs)
    (english,) = load_paraphrases("en", ["stsb-multi-mt"], shared_data)
    held_out = _sts_benchmark_sentences(shared_data / "stsb-multi-mt")
    assert not held_out & (set(english.anchors) | set(english.positives))


def test_tatoeba_challenge_paraphrases_translate_the_same_english_sentence(shared_data: Path) -> None:
    sources = load_paraphrases("tr", ["tatoeba-challenge", "stsb-multi-mt", "paraphrase-en"], shared_data)
    assert [s.name for s in sources] == ["tatoeba-challenge"]
    (turkish,) = sources
    assert len(turkish) > 500 and all(a != b for a, b in zip(turkish.anchors, turkish.positives, strict=True))
    # Low-resource languages have next to none (kk 8 pairs, uz 23, sw 1): their SE data has to be translated.
    (kazakh,) = load_paraphrases("kk", ["tatoeba-challenge"], shared_data)
    assert len(kazakh) < 50
    (english,) = load_paraphrases("en", ["paraphrase-en"], shared_data)
    assert len(english) > 10_000


def test_kardes_xnli_gives_low_resource_languages_entailment_pairs_mono_and_cross(shared_data: Path) -> None:
    (kazakh,) = load_paraphrases("kk", ["kardes-xnli"], shared_data)
    (english,) = load_paraphrases("en", ["kardes-xnli"], shared_data)
    assert len(kazakh) == len(english) > 600  # a third of the 2,000 XNLI rows are entailment
    assert all(any("\u0400" <= ch <= "\u04ff" for ch in a) for a in kazakh.anchors[:20])  # Cyrillic Kazakh
    (cross,) = cross_lingual_paraphrases("kk", shared_data, ["stsb-multi-mt", "kardes-xnli"])
    assert len(cross) == 2 * len(kazakh)
    # each Kazakh sentence faces the English of the other sentence of its pair
    assert (cross.anchors[0], cross.positives[1]) == (kazakh.anchors[0], english.anchors[0])
    assert cross_lingual_paraphrases("de", shared_data, ["kardes-xnli"]) == []


def test_kardes_xnli_with_an_unknown_label_names_its_line(tmp_path: Path) -> None:
    folder = tmp_path / "kardes-nlu" / "kazakh"
    folder.mkdir(parents=True)
    header = ",gold_label,sentence1,sentence2,s1_translation,s2_translation\n"
    (folder / "xnli.test.kk.csv").write_text(header + "0,entailment,a,b,c,d\n1,maybe,a,b,c,d\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"xnli.test.kk.csv:3: gold_label 'maybe'"):
        load_paraphrases("kk", ["kardes-xnli"], tmp_path)
