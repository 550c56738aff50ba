"""Choosing a model's prompt by name (sentence-transformers' `prompt_name`): e5 encodes queries and passages with
different prefixes, and the default stays the model's own."""

from __future__ import annotations

import numpy as np
import pytest

from polyembed.errors import PolyembedError
from polyembed.models.encoder import with_prompt
from polyembed.models.encoding import encode
from polyembed.models.loading import load_model


@pytest.fixture(scope="module")
def me5():
    return load_model("me5-small")


def test_a_named_prompt_is_what_sentence_transformers_gives(me5) -> None:
    texts = ["The house is red.", "Das Haus ist rot."]
    passage = with_prompt(me5, "passage")
    expected = me5.model.encode(texts, prompt_name="passage", convert_to_numpy=True)
    np.testing.assert_allclose(passage.encode(texts), expected, atol=1e-6)
    assert passage.prompt == "passage: " and passage.name == "me5-small (prompt passage)"
    assert me5.prompt == "query: " and me5.name == "me5-small"  # the loaded model keeps its default
    default = encode(me5, texts, normalize=False)
    assert not np.allclose(default, expected, atol=1e-3)  # the prompts do differ
    assert with_prompt(me5, "query") is me5  # the default prompt named: nothing changes
    np.testing.assert_allclose(encode(me5, texts, prompt_name="passage", normalize=False), expected, atol=1e-6)


def test_an_unknown_prompt_names_the_model_s_prompts(me5, minilm) -> None:
    with pytest.raises(PolyembedError, match=r"nope: not a prompt of me5-small \(its prompts are .*passage, query\)"):
        with_prompt(me5, "nope")
    with pytest.raises(PolyembedError, match=r"passage: not a prompt of minilm-en \(its prompts are "):
        with_prompt(minilm, "passage")


def test_the_encode_command_takes_a_prompt_name(tmp_path, me5) -> None:
    from typer.testing import CliRunner

    from polyembed.cli import app

    (tmp_path / "a.txt").write_text("The house is red.\n")
    result = CliRunner().invoke(app, ["encode", str(tmp_path / "a.txt"), "-m", "me5-small", "--language", "en",
                                      "--prompt-name", "passage", "-o", str(tmp_path / "v.npy")])
    assert result.exit_code == 0, result.output
    expected = me5.model.encode(["The house is red."], prompt_name="passage", convert_to_numpy=True,
                                normalize_embeddings=True)
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), expected, atol=1e-5)
