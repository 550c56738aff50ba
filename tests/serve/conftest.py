"""The serve tests' model: a tiny sentence-transformer built once per module."""

from __future__ import annotations

import pytest

import polyembed
from tests.helpers import tiny_sentence_transformer


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return tiny_sentence_transformer(tmp_path_factory.mktemp("serve") / "tiny", seed=0)


@pytest.fixture(scope="module")
def encoder(tiny_folder):
    return polyembed.load_model(str(tiny_folder))
