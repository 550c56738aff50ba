"""The word-alignment task: AER, precision and recall per gold set from a model's token embeddings; encoders
without token embeddings get a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyembed.errors import PolyembedError
from polyembed.eval.registry import get_task
from polyembed.eval.runner import run_tasks
from polyembed.models.loading import load_model
from tests.helpers import tiny_sentence_transformer


@pytest.mark.realdata
def test_aer_precision_and_recall_per_gold_set(shared_data: Path, tmp_path: Path) -> None:
    model = load_model(str(tiny_sentence_transformer(tmp_path / "tiny", seed=0)))
    task = get_task("word-alignment", languages=["en-fr", "de-en"], max_pairs=5, method="argmax", layer=1)
    result = run_tasks(model, [task], data_root=shared_data, show_progress=False)
    values = {(s.subset, s.metric): s for s in result.scores}
    for subset in ("en-fr", "de-en"):
        assert values[(subset, "aer")].main and values[(subset, "aer")].n == 5
        assert all(0 <= values[(subset, metric)].value <= 100 for metric in ("aer", "precision", "recall"))
        assert values[(subset, "aer")].extra["seconds_per_1000_pairs"] > 0
    assert values[("avg", "aer")].value == pytest.approx(
        (values[("en-fr", "aer")].value + values[("de-en", "aer")].value) / 2)


@pytest.mark.realdata
def test_an_encoder_without_token_embeddings_is_a_clear_error(shared_data: Path, hashing_encoder) -> None:
    task = get_task("word-alignment", languages=["de-en"], max_pairs=2)
    with pytest.raises(PolyembedError, match="no token embeddings to align words with"):
        run_tasks(hashing_encoder, [task], data_root=shared_data, show_progress=False)


def test_bad_options_are_named() -> None:
    with pytest.raises(PolyembedError, match="method 'best'"):
        get_task("word-alignment", method="best")
    with pytest.raises(PolyembedError, match="no language/subset xx-en"):
        get_task("word-alignment", languages=["xx-en"])
