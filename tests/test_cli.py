"""The CLI's error contract: clear one-line errors, non-zero exit, no partial results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyembed.cli import app

runner = CliRunner()


def _no_results(path: Path) -> bool:
    return not path.exists() or not any(path.rglob("results.json"))


def test_wrong_data_root_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["eval", "-m", "minilm-en", "--tasks", "sts17", "--data-root",
                                 str(tmp_path / "nowhere"), "--out", str(out)])
    assert result.exit_code == 2
    assert "error:" in result.output and "nowhere" in result.output and "not a directory" in result.output
    assert _no_results(out)


def test_missing_dataset_names_path_and_source(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["eval", "-m", "minilm-en", "--tasks", "sts17", "--data-root", str(tmp_path),
                                 "--out", str(out)])
    assert result.exit_code == 2
    assert str(tmp_path / "sts2017") in result.output and "https://" in result.output
    assert _no_results(out)


def test_corrupted_file_reports_file_and_line(tmp_path: Path, shared_data: Path) -> None:
    root = tmp_path / "data"
    shutil.copytree(shared_data / "sts2017", root / "sts2017")
    gold = root / "sts2017" / "STS2017.gs" / "STS.gs.track5.en-en.txt"
    lines = gold.read_text().splitlines()
    lines[41] = "not-a-number"
    gold.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["eval", "-m", "minilm-en", "--tasks", "sts17", "--data-root", str(root),
                                 "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "STS.gs.track5.en-en.txt:42" in result.output
    assert _no_results(out) and not list(tmp_path.glob(".out.partial-*"))


def test_unknown_task_and_suite(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "--tasks", "nope", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "unknown task 'nope'" in result.output
    result = runner.invoke(app, ["eval", "--suite", "nope", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "unknown suite 'nope'" in result.output


def test_encode_writes_npy(tmp_path: Path) -> None:
    import numpy as np

    source = tmp_path / "in.txt"
    source.write_text("Hello world.\nDas ist ein Haus.\n", encoding="utf-8")
    result = runner.invoke(app, ["encode", str(source), "-m", "minilm-en", "-o", str(tmp_path / "v.npy")])
    assert result.exit_code == 0, result.output
    vectors = np.load(tmp_path / "v.npy")
    assert vectors.shape == (2, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert "de:1" in result.output and "en:1" in result.output


def test_encode_bad_input_names_line(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_bytes(b"fine\n\xff\xfe broken\n")
    result = runner.invoke(app, ["encode", str(source), "-m", "minilm-en", "-o", str(tmp_path / "v.npy")])
    assert result.exit_code == 2 and "in.txt:2" in result.output
    assert not (tmp_path / "v.npy").exists()


@pytest.mark.parametrize("command", [["models", "list"], ["data", "list"], ["tasks"]])
def test_listing_commands(command: list[str]) -> None:
    result = runner.invoke(app, command)
    assert result.exit_code == 0, result.output
    assert result.output.strip()


def test_task_options_reach_the_task(tmp_path: Path, shared_data: Path) -> None:
    import json

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "news.en").write_text("The cat sleeps.\nIt is raining today.\nI like green tea.\n", encoding="utf-8")
    (corpus / "news.de").write_text("Die Katze schläft.\nHeute regnet es.\nIch mag grünen Tee.\n", encoding="utf-8")
    out = tmp_path / "out"
    result = runner.invoke(app, ["eval", "-m", "minilm-en", "--tasks", "parallel-retrieval", "--task-arg",
                                 f"directory={corpus}", "--task-arg", "pivot=en", "--out", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "results.json").read_text())["tasks"][0]["scores"]
    assert {row["subset"] for row in rows} >= {"de"}
    result = runner.invoke(app, ["eval", "--tasks", "tatoeba", "--languages", "xxx", "--out", str(out)])
    assert result.exit_code == 2 and "xxx" in result.output
    result = runner.invoke(app, ["eval", "--tasks", "tatoeba", "--task-arg", "novalue", "--out", str(out)])
    assert result.exit_code == 2 and "KEY=VALUE" in result.output


def test_eval_into_a_folder_with_unrelated_files_leaves_them_untouched(tmp_path: Path, shared_data: Path) -> None:
    """`polyembed eval -m minilm-en --tasks sts17 --languages en-en --out DIR`: DIR's own files and folders
    survive, twice over."""
    import json

    out = tmp_path / "thesis"
    (out / "notes").mkdir(parents=True)
    (out / "thesis.txt").write_text("three years of work\n")
    (out / "notes" / "ideas.md").write_text("- more data\n")
    for _ in range(2):  # a second run replaces its own report, still nothing else
        result = runner.invoke(app, ["eval", "-m", "minilm-en", "--tasks", "sts17", "--languages", "en-en",
                                      "--out", str(out)])
        assert result.exit_code == 0, result.output
    assert (out / "thesis.txt").read_text() == "three years of work\n"
    assert (out / "notes" / "ideas.md").read_text() == "- more data\n"
    scores = json.loads((out / "results.json").read_text())["tasks"][0]["scores"]
    en = [row["value"] for row in scores if row["subset"] == "en-en" and row["metric"] == "spearman"]
    assert abs(en[0] - 87.59) < 0.1  # the reference point measured with plain sentence-transformers
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "notes", "plots", "report.md", "results.json", "thesis.txt"
    ]
    assert (out / "results.json").stat().st_mode & 0o777 == 0o666 & ~_umask()


def test_eval_on_the_users_own_files_needs_no_data_root(tmp_path: Path, no_data_root: None) -> None:
    """parallel-retrieval on a folder of the user's own line-aligned files reads no registry dataset."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "news.en").write_text("The cat sleeps.\nIt is raining today.\n", encoding="utf-8")
    (corpus / "news.de").write_text("Die Katze schläft.\nHeute regnet es.\n", encoding="utf-8")
    result = runner.invoke(app, ["eval", "-m", "minilm-en", "--tasks", "parallel-retrieval", "--task-arg",
                                 f"directory={corpus}", "--out", str(tmp_path / "r"), "--no-plots"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "r" / "results.json").is_file()
    named = runner.invoke(app, ["eval", "-m", "minilm-en", "--tasks", "parallel-retrieval", "--task-arg",
                                "dataset=multi30k", "--out", str(tmp_path / "r2")])
    assert named.exit_code == 2 and "no data root" in named.output  # a named dataset still needs one
    assert not (tmp_path / "r2").exists()


def test_eval_into_the_working_folder_keeps_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "news.en").write_text("The cat sleeps.\nIt is raining today.\n", encoding="utf-8")
    (corpus / "news.de").write_text("Die Katze schläft.\nHeute regnet es.\n", encoding="utf-8")
    (tmp_path / "thesis.txt").write_text("mine")
    result = runner.invoke(app, ["eval", "-m", "minilm-en", "--tasks", "parallel-retrieval", "--task-arg",
                                 f"directory={corpus}", "--out", ".", "--no-plots"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "thesis.txt").read_text() == "mine" and (corpus / "news.de").exists()
    assert (tmp_path / "results.json").is_file()


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_transfer_vocabulary_per_language_from_files(tmp_path: Path) -> None:
    import json

    german = tmp_path / "de.txt"
    german.write_text("".join(f"der Hund sieht das Haus Nummer {i}.\n" for i in range(40)), encoding="utf-8")
    zulu = tmp_path / "zu.txt"
    zulu.write_text("".join(f"inja ibona indlu {i}.\n" for i in range(40)), encoding="utf-8")
    out = tmp_path / "models"
    result = runner.invoke(
        app,
        ["models", "transfer-vocabulary", f"deu={german}", f"zu={zulu}", "--per-language", "--vocabulary-size", "80",
         "--vocabulary-auxiliary", "fasttext", "-m", "minilm-en", "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    index = json.loads((out / "polyembed_languages.json").read_text())
    assert sorted(index["languages"]) == ["de", "zu"]
    assert index["languages"]["de"]["report"]["auxiliary"].startswith("fastText CBOW")
    assert (out / "de" / "modules.json").is_file() and (out / "zu" / "tokenizer.json").is_file()


HELP_IMPORTS = """
import sys
from typer.testing import CliRunner
from polyembed.cli import app
heavy = ("torch", "transformers", "sentence_transformers", "polyembed.methods.distill")
assert CliRunner().invoke(app, ["--help"]).exit_code == 0
print(",".join(name for name in heavy if name in sys.modules))
listing = CliRunner().invoke(app, ["train", "--help"]).output
print(",".join(name for name in ("distill", "modular", "wacse", "emmax") if name in listing))
assert CliRunner().invoke(app, ["train", "distill", "--help"]).exit_code == 0
print(",".join(name for name in heavy if name in sys.modules))
"""


def test_the_help_leaves_the_training_stack_unimported_until_train_is_asked_for() -> None:
    """`polyembed --help` and every command but `train` start without the training methods; `polyembed train
    --help` and `train distill --help` register every method (their options) without importing torch,
    transformers and sentence-transformers (seconds of start-up): a run imports them."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", HELP_IMPORTS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    before, listed, after = done.stdout.splitlines()
    assert before == "" and listed == "distill,modular,wacse,emmax"
    assert after == "polyembed.methods.distill"


def test_train_help_shows_each_option_s_default_choices_and_range(monkeypatch: pytest.MonkeyPatch) -> None:
    """The help is rendered by Rich, which drops square-bracketed text as markup: what the options allow must
    read as plain text."""
    import typer.rich_utils

    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 400)  # read from TERMINAL_WIDTH once, at its import
    result = CliRunner().invoke(app, ["train", "distill", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    lines = {line.split()[1]: line for line in result.output.splitlines() if line.strip().startswith("│ --")}
    assert "Range: >= 1. Config default: 64." in lines["--batch-size"]
    assert "One of: auto, bf16, fp32. Config default: auto." in lines["--precision"]
    assert "Range: >= 0 and < 1. Config default: 0.1." in lines["--warmup-ratio"]


def test_quiet_leaves_stderr_empty(tmp_path: Path) -> None:
    """-q: no progress notes, no progress bars (ours or the libraries'); the result line stays on stdout."""
    import os
    import subprocess
    import sys

    (tmp_path / "a.txt").write_text("Hello world.\nA house.\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    quiet = subprocess.run([sys.executable, "-m", "polyembed", "-q", "encode", str(tmp_path / "a.txt"), "-m",
                            "minilm-en", "--language", "en", "-o", str(tmp_path / "v.npy")],
                           capture_output=True, text=True, env=env, timeout=300)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert "encoded 2 sentences" in quiet.stdout


def test_list_options_take_commas_a_repeated_flag_or_both() -> None:
    from polyembed.cli_app import _split
    from polyembed.cli_train import commas_split

    assert _split(["de,sw", "kk", " ", "yo, ha"]) == ["de", "sw", "kk", "yo", "ha"]
    assert _split("de, sw") == ["de", "sw"] and _split([""]) is None and _split(None) is None
    assert commas_split("skip_la") and commas_split("datasets") and commas_split("languages")
    assert not commas_split("parallel_files") and not commas_split("encoders")  # 'de=a.en,a.de' is one value


def test_every_writing_command_takes_dash_o_and_the_old_out_still_works(tmp_path: Path) -> None:
    """One name for one setting: -o/--output on every command that writes (train: -o/--output-dir); the old
    --out is read as --output for one more version, and not shown in the help."""
    runner = CliRunner()
    for command in (["eval"], ["demo"], ["models", "prune"], ["models", "transfer-vocabulary"], ["encode"],
                    ["mine"], ["export"], ["align"], ["data", "translate"], ["train", "distill"]):
        shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "400"}).output
        assert " -o " in shown and "--out " not in shown, command
    (tmp_path / "afile").write_text("x")
    old = runner.invoke(app, ["eval", "--tasks", "sts17", "--out", str(tmp_path / "afile")])
    new = runner.invoke(app, ["eval", "--tasks", "sts17", f"--output={tmp_path / 'afile'}"])
    assert old.exit_code == new.exit_code == 2
    warning, *rest = old.stderr.splitlines(keepends=True)
    assert warning.startswith("warning: --out is deprecated: it is now --output")
    assert "--output " in old.stderr and "".join(rest) == new.stderr


def test_choices_are_shown_in_the_help() -> None:
    """An option with a fixed set of values lists them (not `<str>`)."""
    runner = CliRunner()
    for command, shown in ((["encode"], "<float16|float32>"), (["mine"], "<forward|backward|intersect|max>"),
                           (["serve"], "<auto|torch|onnx|onnx-int8|openvino|openvino-int8>"),
                           (["eval"], "<fp32|bf16|fp16|auto>"),
                           (["models", "transfer-vocabulary"], "<random|decompose>")):
        assert shown in runner.invoke(app, [*command, "--help"], env={"COLUMNS": "400"}).output, command
