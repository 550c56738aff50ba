from pathlib import Path

import pytest

from polyembed.data import DATASETS, DatasetNotFoundError, PolyembedError, data_root, get_dataset
from polyembed.data.root import set_data_root


def test_every_dataset_names_source_licence_and_an_importable_reader() -> None:
    assert len(DATASETS) >= 14
    for info in DATASETS.values():
        assert info.source.startswith("https://"), info.name
        assert info.licence and info.languages and info.splits
        assert callable(info.reader_function()), info.name


def test_missing_dataset_error_names_path_and_source(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError) as info:
        get_dataset("tatoeba").path(tmp_path)
    message = str(info.value)
    assert str(tmp_path / "tatoeba") in message and "github.com/facebookresearch/LASER" in message


def test_data_root_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYEMBED_DATA", str(tmp_path))
    assert data_root() == tmp_path.resolve()
    monkeypatch.setenv("POLYEMBED_DATA", str(tmp_path / "nope"))
    with pytest.raises(PolyembedError, match="POLYEMBED_DATA"):
        data_root()
    other = tmp_path / "other"
    other.mkdir()
    set_data_root(other)
    try:
        assert data_root() == other.resolve()
    finally:
        set_data_root(None)
    with pytest.raises(PolyembedError, match="not a directory"):
        set_data_root(tmp_path / "missing")


def test_unknown_dataset_lists_known() -> None:
    with pytest.raises(PolyembedError, match="sts2017"):
        get_dataset("nope")
