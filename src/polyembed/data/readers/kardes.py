"""Kardes-NLU CSV rows (STS, XCOPA, XNLI): BOM-tolerant, unnamed index column, required columns checked."""

from __future__ import annotations

from pathlib import Path

from polyembed.data.io import iter_csv
from polyembed.errors import DataError, UnknownLanguageError

KARDES_FOLDERS = {"az": "azeri", "kk": "kazakh", "ky": "kyrgyz", "ug": "uyghur", "uz": "uzbek"}

REQUIRED_COLUMNS = {
    "sts": ("sentence1", "sentence2", "score", "s1_translation", "s2_translation"),
    "xcopa": (
        "id",
        "asks-for",
        "most-plausible-alternative",
        "p",
        "a1",
        "a2",
        "p_translation",
        "a1_translation",
        "a2_translation",
    ),
    "xnli": ("gold_label", "sentence1", "sentence2", "s1_translation", "s2_translation"),
}


def kardes_file(folder: Path, kind: str, language: str, split: str) -> Path:
    """Path of e.g. kazakh/sts.test.kk.csv; unknown language codes are a clear error."""
    if language not in KARDES_FOLDERS:
        raise UnknownLanguageError(
            f"Kardes-NLU has no language '{language}' (has {', '.join(KARDES_FOLDERS)}; English is in every file)"
        )
    return Path(folder) / KARDES_FOLDERS[language] / f"{kind}.{split}.{language}.csv"


def read_kardes_rows(folder: Path, kind: str, language: str, split: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, row as dict) for one Kardes-NLU file; missing columns or empty cells raise DataError."""
    path = kardes_file(folder, kind, language, split)
    rows = iter_csv(path)
    try:
        _, header = next(rows)
    except StopIteration:
        raise DataError(path, 1, "empty file (expected a header)") from None
    header = [name.strip() for name in header]
    missing = [name for name in REQUIRED_COLUMNS[kind] if name not in header]
    if missing:
        raise DataError(path, 1, f"missing column(s) {', '.join(missing)} in header {header}")
    out: list[tuple[int, dict[str, str]]] = []
    for line, fields in rows:
        if not any(field.strip() for field in fields):
            continue
        if len(fields) != len(header):
            raise DataError(path, line, f"expected {len(header)} fields, found {len(fields)}")
        row = dict(zip(header, fields, strict=True))
        for name in REQUIRED_COLUMNS[kind]:
            if not row[name].strip():
                raise DataError(path, line, f"empty '{name}'")
        out.append((line, row))
    return out


NLI_LABELS = ("entailment", "neutral", "contradiction")


def read_kardes_xnli(folder: Path, language: str) -> list[dict[str, str]]:
    """Kardes-NLU XNLI test rows of one Turkic language (the only split the source has): `gold_label`, the
    English `sentence1`/`sentence2` and their translations `s1_translation`/`s2_translation`.

    Training sources read entailment pairs from it (paraphrase-like, as NLI entailment is for SimCSE) and both
    sentences with their translations (bitext); the evaluation suite has no XNLI task, so no score is affected.
    """
    out = []
    for line, row in read_kardes_rows(folder, "xnli", language, "test"):
        if row["gold_label"].strip() not in NLI_LABELS:
            raise DataError(kardes_file(folder, "xnli", language, "test"), line,
                            f"gold_label '{row['gold_label']}' is none of {', '.join(NLI_LABELS)}")
        out.append({name: row[name].strip() for name in REQUIRED_COLUMNS["xnli"]})
    return out
