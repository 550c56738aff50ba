"""Output safety: path checks before work, atomic writes with normal permissions, and report publishing
that replaces only polyembed's own files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from polyembed.errors import PolyembedError
from polyembed.outputs import (
    FILES_RECORD,
    MANIFEST_FILE,
    STAGING_PREFIX,
    atomic_write,
    check_output_dir,
    check_output_file,
    default_mode,
    publishing,
    write_output_file,
)


def _tree(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


def test_atomic_write_leaves_nothing_on_failure_and_uses_normal_permissions(tmp_path: Path) -> None:
    target = tmp_path / "out" / "result.json"
    with pytest.raises(RuntimeError), atomic_write(target) as handle:
        handle.write("half")
        raise RuntimeError("boom")
    assert not target.exists()
    assert list((tmp_path / "out").iterdir()) == []
    with atomic_write(target) as handle:
        handle.write("whole")
    assert target.read_text() == "whole"
    assert target.stat().st_mode & 0o777 == default_mode() != 0o600


def test_default_mode_follows_the_umask() -> None:
    old = os.umask(0o027)
    try:
        assert default_mode() == 0o640 and default_mode(directory=True) == 0o750
    finally:
        os.umask(old)


def test_output_checks_refuse_files_and_paths_below_files(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(PolyembedError, match="--out .*afile: exists and is a file"):
        check_output_dir(afile, "--out")
    with pytest.raises(PolyembedError, match="cannot create it below .*afile, which is a file"):
        check_output_dir(afile / "sub" / "deeper", "--out")
    with pytest.raises(PolyembedError, match="is a folder; give a file name"):
        check_output_file(tmp_path, "-o")
    with pytest.raises(PolyembedError, match="which is a file"):
        check_output_file(afile / "v.npy", "-o")
    assert check_output_dir(tmp_path / "new" / "nested") == tmp_path / "new" / "nested"
    assert check_output_file(tmp_path / "new" / "v.npy") == tmp_path / "new" / "v.npy"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # checking creates nothing


def test_output_checks_refuse_an_unwritable_folder(unwritable_dir: Path) -> None:
    with pytest.raises(PolyembedError, match="cannot write in"):
        check_output_dir(unwritable_dir / "report", "--out")
    with pytest.raises(PolyembedError, match="cannot write in"):
        check_output_file(unwritable_dir / "v.npy", "-o")


def test_publishing_keeps_other_files_and_removes_its_own_stale_ones(tmp_path: Path) -> None:
    out = tmp_path / "report"
    with publishing(out) as staging:
        (staging / "plots").mkdir()
        (staging / "plots" / "a.png").write_bytes(b"a1")
        (staging / "results.json").write_text("{}")
    assert json.loads((out / MANIFEST_FILE).read_text())["files"] == ["plots/a.png", "results.json"]
    (out / "thesis.txt").write_text("mine")
    (out / "plots" / "mine.png").write_bytes(b"mine")
    with publishing(out) as staging:
        (staging / "results.json").write_text('{"again": 1}')
    assert not (out / "plots" / "a.png").exists()  # written by the earlier report, not by this one
    assert (out / "plots" / "mine.png").read_bytes() == b"mine" and (out / "thesis.txt").read_text() == "mine"
    assert json.loads((out / "results.json").read_text()) == {"again": 1}
    assert not list(out.glob(f"{STAGING_PREFIX}*"))


def test_publishing_into_the_working_folder_touches_nothing_else(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "n.txt").write_text("n")
    (tmp_path / "thesis.txt").write_text("t")
    with publishing(".") as staging:
        (staging / "report.md").write_text("# report")
    assert (tmp_path / "notes" / "n.txt").read_text() == "n" and (tmp_path / "thesis.txt").read_text() == "t"
    assert (tmp_path / "report.md").read_text() == "# report"


def test_failed_publishing_leaves_nothing_and_removes_the_folders_it_made(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "report"
    with pytest.raises(RuntimeError), publishing(out) as staging:
        (staging / "results.json").write_text("{}")
        raise RuntimeError("task failed")
    assert list(tmp_path.iterdir()) == []
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("k")
    with pytest.raises(RuntimeError), publishing(existing) as staging:
        raise RuntimeError("task failed")
    assert _tree(existing) == {"keep.txt": b"k"}


def test_a_folder_in_the_way_stops_publishing_before_any_file_moves(tmp_path: Path) -> None:
    out = tmp_path / "report"
    (out / "report.md").mkdir(parents=True)
    with pytest.raises(PolyembedError, match="report.md is in the way"), publishing(out) as staging:
        (staging / "results.json").write_text("{}")
        (staging / "report.md").write_text("# r")
    assert _tree(out) == {"report.md": None}


def test_leftovers_of_interrupted_runs_are_removed_but_live_ones_kept(tmp_path: Path) -> None:
    out = tmp_path / "report"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = out / f"{STAGING_PREFIX}{dead.pid}-abc"
    live = out / f"{STAGING_PREFIX}{os.getpid()}-xyz"
    legacy = tmp_path / ".report.partial-k2j3"
    for folder in (stale, live, legacy):
        folder.mkdir()
        (folder / "results.json").write_text("{}")
    with publishing(out) as staging:
        (staging / "report.md").write_text("# r")
    assert not stale.exists() and not legacy.exists() and live.exists()


def test_atomic_dir_replaces_only_on_success_and_can_keep_a_finished_folder(tmp_path: Path) -> None:
    from polyembed.outputs import atomic_dir

    target = tmp_path / "model"
    with atomic_dir(target) as staging:
        (staging / "modules.json").write_text("v1")
    with pytest.raises(RuntimeError), atomic_dir(target) as staging:
        (staging / "modules.json").write_text("half")
        raise RuntimeError("interrupted")
    assert (target / "modules.json").read_text() == "v1" and sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    with atomic_dir(target, keep_if_present="modules.json") as staging:  # another process finished first
        (staging / "modules.json").write_text("v2")
    assert (target / "modules.json").read_text() == "v1"
    with atomic_dir(target) as staging:
        (staging / "modules.json").write_text("v3")
    assert (target / "modules.json").read_text() == "v3" and target.stat().st_mode & 0o777 == default_mode(True)


def _special_files(tmp_path: Path) -> list[Path]:
    """A FIFO, and a character device like /dev/null where this process may make one (root)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    made = [fifo]
    try:
        os.mknod(tmp_path / "fakenull", 0o666 | __import__("stat").S_IFCHR, os.makedev(1, 3))
        made.append(tmp_path / "fakenull")
    except PermissionError:
        pass
    return made


def test_special_files_are_refused_as_outputs_and_never_replaced(tmp_path: Path) -> None:
    for special in _special_files(tmp_path):
        kind = "FIFO" if special.name == "fifo" else "character device"
        with pytest.raises(PolyembedError, match=f"{special.name}: is a {kind}"):
            check_output_file(special, "-o")
        with pytest.raises(PolyembedError, match=f"{special.name}: is a {kind}"):
            check_output_dir(special, "--out")
        with pytest.raises(PolyembedError, match=f"is a {kind}"), atomic_write(special, "wb") as handle:
            handle.write(b"x")
        assert not special.is_file() and special.exists()  # still the special file, not a regular one
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp file left


def test_symbolic_links_as_outputs(tmp_path: Path) -> None:
    (tmp_path / "thesis.txt").write_text("thesis")
    (tmp_path / "link.npy").symlink_to(tmp_path / "thesis.txt")
    with pytest.raises(PolyembedError, match="link.npy: is a symbolic link"):
        check_output_file(tmp_path / "link.npy", "-o")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(PolyembedError, match="loop: is a symbolic link"):
        check_output_file(tmp_path / "loop", "-o")
    with pytest.raises(PolyembedError, match="loop: is a loop of symbolic links"):
        check_output_dir(tmp_path / "loop", "--out")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(PolyembedError, match="dangling: is a symbolic link to nothing"):
        check_output_dir(tmp_path / "dangling", "--out")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "results").symlink_to(tmp_path / "elsewhere")  # a report folder on another disk is fine
    assert check_output_dir(tmp_path / "results", "--out") == tmp_path / "results"
    assert (tmp_path / "thesis.txt").read_text() == "thesis"


def test_a_nul_character_in_a_path_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PolyembedError, match="cannot hold a NUL character"):
        check_output_dir(f"{tmp_path}/a\0b", "--out")
    with pytest.raises(PolyembedError, match="cannot hold a NUL character"):
        check_output_file(f"{tmp_path}/a\0b.npy", "-o")


def test_an_existing_file_is_replaced_only_with_overwrite_and_only_when_polyembed_wrote_it(tmp_path: Path) -> None:
    thesis = tmp_path / "thesis.txt"
    thesis.write_text("thesis")
    with pytest.raises(PolyembedError, match="thesis.txt: exists; pass overwrite"):
        check_output_file(thesis, "-o", overwrite=False)
    with pytest.raises(PolyembedError, match="polyembed did not write it"):
        check_output_file(thesis, "-o", overwrite=True)
    vectors = tmp_path / "v.npy"
    with write_output_file(vectors, "wb") as handle:
        handle.write(b"vectors")
    assert json.loads((tmp_path / FILES_RECORD).read_text())["files"].keys() == {"v.npy"}
    with pytest.raises(PolyembedError, match="exists; pass overwrite"):
        check_output_file(vectors, "-o", overwrite=False)
    assert check_output_file(vectors, "-o", overwrite=True) == vectors  # polyembed's own, unchanged
    vectors.write_bytes(b"the user's own bytes now")
    with pytest.raises(PolyembedError, match="changed since"):
        check_output_file(vectors, "-o", overwrite=True)
    (tmp_path / FILES_RECORD).write_text("[1, 2]")  # a garbage record protects nothing, breaks nothing
    with pytest.raises(PolyembedError, match="polyembed did not write it"):
        check_output_file(vectors, "-o", overwrite=True)
    assert thesis.read_text() == "thesis"


def test_publishing_never_writes_through_a_symbolic_link_in_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.png").write_text("the user's picture")
    out = tmp_path / "report"
    out.mkdir()
    (out / "plots").symlink_to(outside)
    with pytest.raises(PolyembedError, match="plots is a symbolic link"), publishing(out) as staging:
        (staging / "plots").mkdir()
        (staging / "plots" / "a.png").write_text("polyembed's plot")
        (staging / "results.json").write_text("{}")
    assert (outside / "a.png").read_text() == "the user's picture"
    assert not (out / "results.json").exists()
