"""`polyembed data translate`: the file handling with a deterministic translation function, and the model
plumbing with a tiny seq2seq model built here (its output is noise; only shapes and the CLI path are checked)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyembed.cli import app
from polyembed.data.translate import load_translator, translate_file
from polyembed.errors import DataError, PolyembedError


def _shout(sentences):
    return [s.upper() + "!" for s in sentences]


def test_text_becomes_bitext_and_each_distinct_sentence_is_translated_once(tmp_path: Path) -> None:
    seen: list[str] = []

    def counting(sentences):
        seen.extend(sentences)
        return _shout(sentences)

    text = tmp_path / "en.txt"
    text.write_text("a dog runs\na cat sleeps\na dog runs\n", encoding="utf-8")
    result = translate_file(text, tmp_path / "out.tsv", counting, batch_size=2, show_progress=False)
    assert (result.rows, result.sentences) == (3, 2) and sorted(seen) == ["a cat sleeps", "a dog runs"]
    assert (tmp_path / "out.tsv").read_text(encoding="utf-8").splitlines() == [
        "a dog runs\tA DOG RUNS!", "a cat sleeps\tA CAT SLEEPS!", "a dog runs\tA DOG RUNS!"]


def test_paraphrase_pairs_translate_both_columns_or_cross_lingually(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a dog runs\ta dog is running\n", encoding="utf-8")
    translate_file(pairs, tmp_path / "mono.tsv", _shout, show_progress=False)
    assert (tmp_path / "mono.tsv").read_text(encoding="utf-8") == "A DOG RUNS!\tA DOG IS RUNNING!\n"
    translate_file(pairs, tmp_path / "cross.tsv", _shout, cross_lingual=True, show_progress=False)
    assert (tmp_path / "cross.tsv").read_text(encoding="utf-8").splitlines() == [
        "A DOG RUNS!\ta dog is running", "A DOG IS RUNNING!\ta dog runs"]


def test_bad_input_names_the_line_and_writes_nothing(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a dog runs\ta dog is running\nonly one column\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"pairs.tsv:2: expected two tab-separated"):
        translate_file(pairs, tmp_path / "out.tsv", _shout, show_progress=False)
    text = tmp_path / "en.txt"
    text.write_text("a dog runs\n\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"en.txt:2: empty line"):
        translate_file(text, tmp_path / "out.tsv", _shout, show_progress=False)
    text.write_text("a dog runs\na cat\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"en.txt:2: the model translated 'a cat' to an empty string"):
        translate_file(text, tmp_path / "out.tsv", lambda batch: ["x" if s == "a dog runs" else "" for s in batch],
                       show_progress=False)
    assert not (tmp_path / "out.tsv").exists()


@pytest.fixture(scope="module")
def tiny_seq2seq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-layer BART with a word-level tokenizer that knows the language code `kaz_Cyrl`; it translates every
sentence to "dog dog ..." (a logit bias), which is all the plumbing tests need."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("seq2seq") / "model"
    specials = ["<pad>", "<s>", "</s>", "<unk>", "kaz_Cyrl"]
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(["a dog runs", "a cat sleeps", "the sea is blue"],
                                  trainers.WordLevelTrainer(special_tokens=specials))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")
    fast.save_pretrained(folder)
    config = BartConfig(vocab_size=fast.vocab_size, d_model=16, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                        decoder_ffn_dim=32, max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
                        eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2)
    torch.manual_seed(0)
    network = BartForConditionalGeneration(config)
    with torch.no_grad():  # an untrained model may stop at once: make it say "dog" until max_length
        network.final_logits_bias[0, fast.convert_tokens_to_ids("dog")] = 100.0
    network.save_pretrained(folder)
    return folder


def test_a_huggingface_seq2seq_model_translates_batches(tiny_seq2seq: Path) -> None:
    translate = load_translator(str(tiny_seq2seq), target_code="kaz_Cyrl", max_length=8)
    out = translate(["a dog runs", "the sea is blue"])
    assert len(out) == 2 and all(text.startswith("dog") for text in out)
    with pytest.raises(PolyembedError, match="no language code 'xx_Latn'"):
        load_translator(str(tiny_seq2seq), target_code="xx_Latn")


def test_the_cli_loads_the_model_by_path(tiny_seq2seq: Path, tmp_path: Path) -> None:
    text = tmp_path / "en.txt"
    text.write_text("a dog runs\nthe sea is blue\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["data", "translate", str(text), "-o", str(tmp_path / "kk.tsv"), "-m",
                                      str(tiny_seq2seq), "--max-length", "8"])
    assert result.exit_code == 0, result.output
    rows = (tmp_path / "kk.tsv").read_text(encoding="utf-8").splitlines()
    assert [row.split("\t")[0] for row in rows] == ["a dog runs", "the sea is blue"]
    assert all(row.split("\t")[1].startswith("dog dog") for row in rows)
    missing = CliRunner().invoke(app, ["data", "translate", str(tmp_path / "none.txt"), "-o",
                                       str(tmp_path / "x.tsv"), "-m", str(tiny_seq2seq)])
    assert missing.exit_code != 0 and "none.txt: no such file" in missing.output
