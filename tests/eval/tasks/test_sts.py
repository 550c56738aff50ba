"""STS tasks: scores equal an independent computation on small fake data folders, and on real data with MiniLM."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from polyembed.errors import UnknownLanguageError
from polyembed.eval.base import Score
from polyembed.eval.registry import get_task
from polyembed.eval.runner import run_tasks
from polyembed.eval.tasks.sts import STS17_CROSS, STS17_MONO
from polyembed.models.encoder import SentenceEncoder, SentenceTransformerEncoder

STS17_FILES = {
    "ar-ar": ("1", "ar-ar"),
    "ar-en": ("2", "ar-en"),
    "es-es": ("3", "es-es"),
    "es-en": ("4a", "es-en"),
    "es-en-wmt": ("4b", "es-en"),
    "en-en": ("5", "en-en"),
    "tr-en": ("6", "tr-en"),
}


def fake_pairs(seed: int, n: int, prefix1: str, prefix2: str) -> tuple[list[str], list[str], list[float]]:
    """n sentence pairs whose second sentence keeps k of 6 words (k < 6) of the first; gold grows with k."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(300)]
    first, second, gold = [], [], []
    for _ in range(n):
        words = rng.sample(vocabulary, 12)
        keep = rng.randint(0, 5)  # never 6: identical sentences tie at cosine 1 up to float noise
        first.append(" ".join(f"{prefix1}{w}" for w in words[:6]))
        second.append(" ".join(f"{prefix2}{w}" for w in words[:keep] + words[6 : 12 - keep]))
        gold.append(round(keep * 5 / 6 + rng.uniform(-0.4, 0.4), 3))
    return first, second, gold


def make_sts2017(root: Path, n: int = 24) -> Path:
    """A fake STS2017 folder (all 7 tracks; track 6 with the doubled input file of the real set)."""
    folder = root / "sts2017"
    (folder / "STS2017.eval.v1.1").mkdir(parents=True)
    (folder / "STS2017.gs").mkdir(parents=True)
    for seed, (subset, (track, pair)) in enumerate(STS17_FILES.items()):
        first, second, gold = fake_pairs(seed, n, subset[:2], subset[-2:])
        lines = [f"{a}\t{b}" for a, b in zip(first, second, strict=True)]
        if track == "6":
            lines += [f"extra {i}\tnot scored {i}" for i in range(n)]
        stem = f"track{track}.{pair}.txt"
        (folder / "STS2017.eval.v1.1" / f"STS.input.{stem}").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (folder / "STS2017.gs" / f"STS.gs.{stem}").write_text("".join(f"{g}\n" for g in gold), encoding="utf-8")
    return root


def make_multi_mt(root: Path, n: int = 30) -> Path:
    """Fake stsb-multi-mt test files for en and de (same gold, different words)."""
    folder = root / "stsb-multi-mt"
    folder.mkdir(parents=True)
    for language in ("en", "de"):
        first, second, gold = fake_pairs(7, n, language, language)
        rows = [f'"{a},",{b},{g}\n' for a, b, g in zip(first, second, gold, strict=True)]
        (folder / f"stsb-{language}-test.csv").write_text("".join(rows), encoding="utf-8")
    return root


def make_kardes(root: Path, n: int = 20) -> Path:
    """Fake Kardes-NLU STS test files for az (with BOM) and kk, both carrying the same English pairs."""
    en1, en2, gold = fake_pairs(11, n, "", "")
    for folder, code, prefix, bom in (("azeri", "az", "az", True), ("kazakh", "kk", "kk", False)):
        rows = [",sentence1,sentence2,score,s1_translation,s2_translation"]
        for i, (a, b, g) in enumerate(zip(en1, en2, gold, strict=True)):
            rows.append(
                f"{i},{a},{b},{g},{prefix}{a.replace(' ', ' ' + prefix)},{prefix}{b.replace(' ', ' ' + prefix)}"
            )
        path = root / "kardes-nlu" / folder / f"sts.test.{code}.csv"
        path.parent.mkdir(parents=True)
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + "\r\n".join(rows).encode("utf-8") + b"\r\n")
    return root


def make_semrel(root: Path, n: int = 25) -> Path:
    """Fake SemRel track A test files for eng and amh."""
    for seed, language in enumerate(("eng", "amh")):
        first, second, gold = fake_pairs(20 + seed, n, language, language)
        rows = ["PairID,Text,Score"] + [
            f'{language}-{i},"{a}\n{b}",{g / 5:.3f}'
            for i, (a, b, g) in enumerate(zip(first, second, gold, strict=True))
        ]
        path = root / "semrel2024" / "track_a" / language / f"{language}_test_with_labels.csv"
        path.parent.mkdir(parents=True)
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def direct(encoder: SentenceEncoder, first: list[str], second: list[str], gold: list[float]) -> tuple[float, float]:
    """Spearman and Pearson x100 computed without polyembed's task code."""
    a = encoder.encode(first)
    b = encoder.encode(second)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    cosine = (a * b).sum(axis=1)
    return 100 * spearmanr(cosine, gold).statistic, 100 * pearsonr(cosine, gold).statistic


def value(scores: list[Score], subset: str, metric: str = "spearman") -> float:
    (match,) = [s.value for s in scores if s.subset == subset and s.metric == metric]
    return match


def test_sts17_matches_direct_computation(tmp_path: Path, hashing_encoder: SentenceEncoder) -> None:
    root = make_sts2017(tmp_path)
    result = run_tasks(hashing_encoder, [get_task("sts17")], data_root=root, show_progress=False)
    scores = result.scores
    for seed, subset in enumerate(STS17_FILES):
        first, second, gold = fake_pairs(seed, 24, subset[:2], subset[-2:])
        rho, r = direct(hashing_encoder, first, second, gold)
        assert value(scores, subset) == pytest.approx(rho, abs=1e-6)
        assert value(scores, subset, "pearson") == pytest.approx(r, abs=1e-4)
    mono = [value(scores, s) for s in STS17_MONO]
    cross = [value(scores, s) for s in STS17_CROSS]
    assert value(scores, "mono-avg") == pytest.approx(np.mean(mono))
    assert value(scores, "cross-avg") == pytest.approx(np.mean(cross))
    assert value(scores, "avg") == pytest.approx(np.mean(mono + cross))
    assert "es-en-wmt" not in next(s for s in scores if s.subset == "cross-avg").extra["subsets"]
    main = [s for s in scores if s.main]
    assert {s.metric for s in main} == {"spearman"} and len(main) == 7 + 3
    assert next(s for s in scores if s.subset == "tr-en").n == 24  # track 6: first half only


def test_sts17_embeds_each_language_once(tmp_path: Path, hashing_encoder: SentenceEncoder) -> None:
    root = make_sts2017(tmp_path)
    run_tasks(hashing_encoder, [get_task("sts17", languages=["ar-en", "ar-ar"])], data_root=root, show_progress=False)
    assert len(hashing_encoder.calls) == 2  # one call for English, one for Arabic


def test_stsb_multi_mt_cross_directions(tmp_path: Path, hashing_encoder: SentenceEncoder) -> None:
    root = make_multi_mt(tmp_path)
    task = get_task("stsb-multi-mt", languages=["en", "de"])
    scores = run_tasks(hashing_encoder, [task], data_root=root, show_progress=False).scores
    en1, en2, gold = fake_pairs(7, 30, "en", "en")
    de1, de2, _ = fake_pairs(7, 30, "de", "de")
    en1, de1 = [s + "," for s in en1], [s + "," for s in de1]
    forward, _ = direct(hashing_encoder, en1, de2, gold)
    backward, _ = direct(hashing_encoder, de1, en2, gold)
    assert value(scores, "en-de", "spearman-en-de") == pytest.approx(forward, abs=1e-6)
    assert value(scores, "en-de", "spearman-de-en") == pytest.approx(backward, abs=1e-6)
    assert value(scores, "en-de") == pytest.approx((forward + backward) / 2, abs=1e-6)
    assert value(scores, "en") == pytest.approx(direct(hashing_encoder, en1, en2, gold)[0], abs=1e-6)
    assert value(scores, "mono-avg") == pytest.approx((value(scores, "en") + value(scores, "de")) / 2)
    assert value(scores, "cross-avg") == pytest.approx(value(scores, "en-de"))


def test_stsb_multi_mt_languages_select_x(tmp_path: Path, hashing_encoder: SentenceEncoder) -> None:
    root = make_multi_mt(tmp_path)
    scores = run_tasks(
        hashing_encoder, [get_task("stsb-multi-mt", languages=["de"])], data_root=root, show_progress=False
    ).scores
    assert {s.subset for s in scores if s.main} == {"de", "en-de", "mono-avg", "cross-avg"}
    with pytest.raises(UnknownLanguageError, match="en, de, es"):
        get_task("stsb-multi-mt", languages=["sv"])


def test_kardes_sts_mono_and_cross(tmp_path: Path, hashing_encoder: SentenceEncoder) -> None:
    root = make_kardes(tmp_path)
    scores = run_tasks(
        hashing_encoder, [get_task("kardes-sts", languages=["kk", "en", "az"])], data_root=root, show_progress=False
    ).scores
    assert [s.subset for s in scores if s.main] == [
        "en",
        "az",
        "kk",
        "en-az",
        "en-kk",
        "az-kk",
        "mono-avg",
        "cross-avg",
    ]
    en1, en2, gold = fake_pairs(11, 20, "", "")
    az = ["az" + s.replace(" ", " az") for s in en1], ["az" + s.replace(" ", " az") for s in en2]
    kk = ["kk" + s.replace(" ", " kk") for s in en1], ["kk" + s.replace(" ", " kk") for s in en2]
    forward = direct(hashing_encoder, az[0], kk[1], gold)[0]
    backward = direct(hashing_encoder, kk[0], az[1], gold)[0]
    assert value(scores, "az-kk") == pytest.approx((forward + backward) / 2, abs=1e-6)
    assert value(scores, "az-kk", "spearman-az-kk") == pytest.approx(forward, abs=1e-6)
    assert value(scores, "en") == pytest.approx(direct(hashing_encoder, en1, en2, gold)[0], abs=1e-6)
    assert value(scores, "cross-avg") == pytest.approx(np.mean([value(scores, s) for s in ("en-az", "en-kk", "az-kk")]))


def test_semrel_and_split_checks(tmp_path: Path, hashing_encoder: SentenceEncoder) -> None:
    root = make_semrel(tmp_path)
    task = get_task("semrel", languages=["eng", "amh"])
    assert task.split == "test"
    scores = run_tasks(hashing_encoder, [task], data_root=root, show_progress=False).scores
    first, second, gold = fake_pairs(21, 25, "amh", "amh")
    expected = direct(hashing_encoder, first, second, [round(g / 5, 3) for g in gold])[0]
    assert value(scores, "amh") == pytest.approx(expected, abs=1e-6)
    assert value(scores, "avg") == pytest.approx((value(scores, "eng") + value(scores, "amh")) / 2)
    assert get_task("stsb").split == "test" and get_task("stsb", split="dev").split == "dev"


def test_real_sts17_and_kardes_with_hashing_encoder(shared_data: Path, hashing_encoder: SentenceEncoder) -> None:
    tasks = [get_task("sts17"), get_task("kardes-sts", languages=["en", "kk"])]
    scores = run_tasks(hashing_encoder, tasks, data_root=shared_data, show_progress=False).scores
    assert len([s for s in scores if s.task == "sts17" and s.main]) == 10
    # trigram overlap works within a language and barely across scripts
    assert value(scores, "en-en") > 50 and abs(value(scores, "ar-en")) < 20


def test_real_sts17_en_matches_sentence_transformers(shared_data: Path, minilm: SentenceTransformerEncoder) -> None:
    """The required cross-check: run_tasks' en-en Spearman equals scipy on plain SentenceTransformer output."""
    from sentence_transformers import SentenceTransformer

    from polyembed.data.registry import get_dataset

    pairs = get_dataset("sts2017").load("en-en", root=shared_data)
    model = SentenceTransformer(minilm.path, device="cpu")
    a = model.encode(pairs.sentences1, convert_to_numpy=True)
    b = model.encode(pairs.sentences2, convert_to_numpy=True)
    cosine = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    reference = 100 * spearmanr(cosine, pairs.scores).statistic
    result = run_tasks(minilm, [get_task("sts17", languages=["en-en"])], data_root=shared_data, show_progress=False)
    assert value(result.scores, "en-en") == pytest.approx(reference, abs=1e-6)
    assert value(result.scores, "en-en") == pytest.approx(87.6, abs=0.05)  # plain sentence-transformers


@pytest.mark.slow
def test_real_stsb_multi_mt_en_de_cross_minilm(shared_data: Path, minilm: SentenceTransformerEncoder) -> None:
    """English MiniLM on en-de cross pairs: 28.5 measured with plain sentence-transformers (~2 min on 2 CPUs)."""
    task = get_task("stsb-multi-mt", languages=["de"])
    scores = run_tasks(minilm, [task], data_root=shared_data, show_progress=False).scores
    assert value(scores, "en-de") == pytest.approx(28.5, abs=0.5)
