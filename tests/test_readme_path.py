"""A newcomer's path through README.md, run: install -> quickstart -> bring a new language -> evaluate -> serve.

The commands are read from README.md's own ```bash blocks, found by their section heading (nothing here is a copy
of them), and run in the README's order through the CLI (in-process, as tests/test_cli.py runs it), in a working
folder of the test's own, so that the README's relative paths (my.en, sentences.txt, runs/yo, results/yo) are
used as written. Only what must change to run on tiny data in seconds is changed, each by a visible mapping:

- MODELS: a built-in model the README names -> a tiny random BERT built by tests.helpers (me5-small is 470 MB);
- ADDED: options appended where a command's defaults are built-in models or a long run (`train new-language`
  trains me5-small against minilm-en for 200 steps);
- the data root ($POLYEMBED_DATA, as the README says) is a tiny one the test writes in each dataset's real layout,
  and the user's files (my.en, my.yo, sentences.txt) are tiny files the test writes;
- `serve` runs to the point where uvicorn would listen on the README's port; the app it would serve is asked for
  embeddings through a TestClient, as tests/serve/test_app.py asks it.

Each command must keep the shape the mappings expect (EXPECTED: the options it uses; MODELS: the models it names;
the sequence of commands in each section): a README edit that changes one fails here, quoting the command, so the
path cannot silently stop being run. Not run: `pip install` (tests/test_install.py installs the wheel into a fresh
environment; here the install step checks that the README installs this checkout, with extras that exist) and the
Evaluate section's `--suite` commands (a suite reads a dozen registry datasets; tests/eval/test_suites.py checks
the suites, tests/test_readme.py that the commands parse).
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from polyembed.cli import app
from tests.helpers import PAIRS, TRAINING_TEXTS, tiny_sentence_transformer
from tests.test_readme import BASH_BLOCK, _polyembed_commands

pytestmark = pytest.mark.usefixtures("offline_cache")

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

INSTALL, QUICKSTART, NEW_LANGUAGE, EVALUATE, USE = (
    "Install", "Five-minute quickstart", "Bring a new language", "Evaluate", "Encode, mine, serve, export")
"""The README sections the path goes through (their `## ` headings)."""

MODELS = {"me5-small": "base"}
"""A built-in model the README names -> the tiny model the test builds in its place (a key of the `tiny` fixture).
A model named by a path under runs/ is the one the path trained, used as it is."""

ADDED = {
    ("train", "new-language"): ["--student", "{base}", "--teacher", "{teacher}", "--max-steps", "4",
                                "--batch-size", "8", "--precision", "fp32"],
}
"""Options appended to a README command: its defaults (student me5-small, teacher minilm-en, 200 steps of 32 pairs)
in tiny form."""

EXPECTED: dict[tuple[str, ...], set[str]] = {
    ("doctor",): set(),
    ("models", "list"): set(),
    ("data", "list"): set(),
    ("tasks",): set(),
    ("encode",): {"-m", "-o"},
    ("eval",): {"-m", "--tasks", "--languages", "--suite", "-o", "--baseline"},
    ("train", "new-language"): {"--parallel-files", "-o"},
    ("serve",): {"-m", "--port"},
    ("export",): {"-m", "-o"},
    ("push",): {"--dry-run"},
}
"""The options each README command of the path may use: one more (or a new command) is a README change this test
must learn about before it runs it."""

KNOWN_GAPS: dict[tuple[str, ...], str] = {}
"""README commands of the path that fail today, with the error they fail with (none now). The rest of the path
still runs; the test is then reported as xfail, naming the gap. Any other outcome fails, and so does a listed
command working (its outcome is checked like the others', then the test asks for the entry to go)."""


USER_LANGUAGE = "yo"
MAFAND_CODE = "yor"  # the same language in MAFAND-MT's codes: its row in `eval --baseline`'s comparison
DIMENSION = 32  # the tiny models'


# ------------------------------------------------------------------------------------------- reading the README


def _section(name: str) -> str:
    """The text of README.md's `## name` section (to the next `## ` heading); fails when the heading is gone."""
    readme = README.read_text(encoding="utf-8")
    found = re.search(rf"^## {re.escape(name)}\n(.*?)(?=^## |\Z)", readme, re.DOTALL | re.MULTILINE)
    assert found is not None, f"README.md has no '## {name}' section any more: the newcomer's path lost a step"
    return found.group(1)


def _commands(section: str) -> list[list[str]]:
    """Every `polyembed` command of a section's bash blocks, in order."""
    return [args for block in BASH_BLOCK.findall(_section(section)) for args in _polyembed_commands(block)]


def _command_name(args: Sequence[str]) -> tuple[str, ...]:
    for words in sorted(EXPECTED, key=len, reverse=True):
        if tuple(args[:len(words)]) == words:
            return words
    raise AssertionError(f"README command `polyembed {shlex.join(args)}` is new to the newcomer's path: add it to "
                         "EXPECTED in tests/test_readme_path.py (and run it)")


def _names(commands: list[list[str]]) -> list[tuple[str, ...]]:
    return [_command_name(args) for args in commands]


def _value(args: Sequence[str], option: str) -> str:
    return args[args.index(option) + 1]


def _runnable(args: Sequence[str], tiny: dict[str, Path]) -> list[str]:
    """A README command as the test runs it: its shape checked against EXPECTED, MODELS mapped, ADDED appended."""
    name = _command_name(args)
    shown = f"README command `polyembed {shlex.join(args)}`"
    options = {token for token in args[len(name):] if token.startswith("-") and token != "-"}
    assert options <= EXPECTED[name], (f"{shown} uses {sorted(options - EXPECTED[name])}: teach "
                                       "tests/test_readme_path.py's EXPECTED what they need on tiny data")
    runnable = list(args)
    for index, token in enumerate(args):
        if index and args[index - 1] in ("-m", "--baseline") and not token.startswith("runs/"):
            assert token in MODELS, f"{shown} names the model '{token}', which MODELS does not map to a tiny one"
            runnable[index] = str(tiny[MODELS[token]])
    return runnable + [part.format(**{key: str(value) for key, value in tiny.items()}) for part in ADDED.get(name, [])]


# ------------------------------------------------------------------------------------------ tiny models and data


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny models that stand in for built-ins, and a tiny data root in the registry's layouts."""
    root = tmp_path_factory.mktemp("readme-path")
    return {"base": tiny_sentence_transformer(root / "base", seed=0),
            "teacher": tiny_sentence_transformer(root / "teacher", seed=1),
            "data": _tiny_data_root(root / "data")}


def _write(path: Path, lines: Sequence[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _tiny_data_root(data: Path) -> Path:
    """Eight rows of each dataset the path's evaluations read (sts2017, tatoeba, mafand-mt), in the real data
    root's layout. Every file has sentences of its own, as the real sets do (encode's language identifier trains on
    tatoeba and mafand-mt, holding out their test rows)."""
    from polyembed.data.readers.sts import STS2017_TRACKS
    from polyembed.data.registry import TATOEBA_LANGUAGES, get_dataset

    english = [en for en, _ in PAIRS[:8]]

    def other(*tags: str) -> list[str]:
        return [f"{translation} {' '.join(tags)}" for _, translation in PAIRS[:8]]

    for track in STS2017_TRACKS.values():
        stem = f"track{track.track}.{track.file_pair}.txt"
        _write(data / "sts2017" / "STS2017.eval.v1.1" / f"STS.input.{stem}",
               [f"{a}\t{b}" for a, b in zip(english, english[::-1], strict=True)])
        _write(data / "sts2017" / "STS2017.gs" / f"STS.gs.{stem}", [str(i % 6) for i in range(8)])
    for language in TATOEBA_LANGUAGES:
        _write(data / "tatoeba" / f"tatoeba.{language}-eng.{language}", other(language))
        _write(data / "tatoeba" / f"tatoeba.{language}-eng.eng", english)
    for language in get_dataset("mafand-mt").languages:
        for split in ("dev", "test"):
            _write(data / "mafand-mt" / f"en-{language}" / f"{split}.{language}", other(language, split))
            _write(data / "mafand-mt" / f"en-{language}" / f"{split}.en", english)
    return data


# -------------------------------------------------------------------------------------------------- the path


def _run(args: list[str], known_gaps: list[str] | None = None) -> str | None:
    """The output of `polyembed ARGS`, which must succeed; with `known_gaps`, a KNOWN_GAPS command may instead fail
    with its known error: it is added to the list, and None returned."""
    result = CliRunner().invoke(app, args)
    gap = KNOWN_GAPS.get(_command_name(args)) if known_gaps is not None else None
    if gap is not None and result.exit_code == 2 and gap in result.output:
        known_gaps.append(f"`polyembed {shlex.join(args)}`: {gap}")
        return None
    assert result.exit_code == 0, f"`polyembed {shlex.join(args)}` exited {result.exit_code}:\n{result.output}"
    return result.output


def test_the_install_step_installs_this_checkout_with_extras_that_exist() -> None:
    lines = [shlex.split(line, comments=True) for block in BASH_BLOCK.findall(_section(INSTALL))
             for line in block.splitlines()]
    commands = [command for command in lines if command]
    assert commands and all(command[:2] == ["pip", "install"] and len(command) == 3 for command in commands), commands
    targets = [command[2] for command in commands]
    assert targets[0] == ".", f"the README's first install is {targets[0]!r}, not this checkout's core"
    extras = {extra for target in targets for group in re.findall(r"^\.\[(.*)\]$", target)
              for extra in group.split(",")}
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "serve" in extras and extras <= set(declared["optional-dependencies"]), extras
    import polyembed.serve  # noqa: F401 - the path's last step needs the serve extra, installed here


def test_the_newcomers_path_runs_as_the_readme_writes_it(
        tiny: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn
    from fastapi.testclient import TestClient

    import polyembed
    from polyembed.data.root import ENV_VAR

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ENV_VAR, str(tiny["data"]))  # "a data root: --data-root, else $POLYEMBED_DATA"
    # the user's files: sentences to encode, and bitext for the new language (80 pairs)
    _write(tmp_path / "sentences.txt", TRAINING_TEXTS[:5])
    _write(tmp_path / "my.en", [en for en, _ in PAIRS])
    _write(tmp_path / f"my.{USER_LANGUAGE}", [other for _, other in PAIRS])

    # the quickstart: every command of the section, in order
    quickstart = _commands(QUICKSTART)
    assert _names(quickstart) == [("doctor",), ("models", "list"), ("data", "list"), ("encode",), ("eval",),
                                  ("tasks",)]
    for args in quickstart:
        _run(_runnable(args, tiny))
    encoded, evaluated = quickstart[3], quickstart[4]
    assert np.load(tmp_path / _value(encoded, "-o")).shape == (len(TRAINING_TEXTS[:5]), DIMENSION)
    results = json.loads((tmp_path / _value(evaluated, "-o") / "results.json").read_text(encoding="utf-8"))
    assert [task["task"] for task in results["tasks"]] == _value(evaluated, "--tasks").split(",")

    # bring a new language: 1. train on the user's files alone
    train, evaluate, *use = steps = _commands(NEW_LANGUAGE)
    assert _names(steps) == [("train", "new-language"), ("eval",), ("serve",), ("export",), ("push",)]
    assert _value(train, "--parallel-files") == f"{USER_LANGUAGE}=my.en,my.{USER_LANGUAGE}", train
    output = _run(_runnable(train, tiny))
    run = _value(train, "-o")
    model = tmp_path / run / "model"
    assert (model / "modules.json").is_file(), output
    assert "before/after on held-out pairs" in output and f"| held-out-retrieval | {USER_LANGUAGE} (" in output, output
    assert polyembed.encode(polyembed.load_model(str(model)), ["Hello, world!"]).shape == (1, DIMENSION)

    # 2. what it gained and what it cost, against the model it started from
    assert _value(evaluate, "-m") == f"{run}/model" and "--baseline" in evaluate, evaluate
    assert "mafand-retrieval" in _value(evaluate, "--tasks").split(","), evaluate
    output = _run(_runnable(evaluate, tiny))
    assert re.search(r"mafand-retrieval +accuracy +[\d.]+ -> +[\d.]+", output), output  # before -> after, per task
    report = (tmp_path / _value(evaluate, "-o") / "report.md").read_text(encoding="utf-8")
    assert f"| mafand-retrieval | {MAFAND_CODE} |" in report, report  # the user's language: before, after, change
    assert f"| mafand-retrieval | {MAFAND_CODE} |" in (model / "README.md").read_text(encoding="utf-8")

    # evaluate: the section's commands on the tasks the tiny data root holds (the suites are not run)
    evaluations = _commands(EVALUATE)
    assert [_value(args, "--suite") if "--suite" in args else _value(args, "--tasks") for args in evaluations] == [
        "default", "full", "tatoeba"], evaluations
    chosen = evaluations[2]
    _run(_runnable(chosen, tiny))
    results = json.loads((tmp_path / _value(chosen, "-o") / "results.json").read_text(encoding="utf-8"))
    [tatoeba] = results["tasks"]
    assert {row["subset"] for row in tatoeba["scores"]} >= set(_value(chosen, "--languages").split(","))

    # encode with the trained model (the first command of "Encode, mine, serve, export": a file, not a stream)
    use_section = _commands(USE)
    encode = use_section[0]
    assert encode[:2] == ["encode", "sentences.txt"] and _value(encode, "-m") == f"{run}/model", encode
    _run(_runnable(encode, tiny))
    vectors = np.load(tmp_path / _value(encode, "-o"))
    assert vectors.shape == (len(TRAINING_TEXTS[:5]), DIMENSION)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)

    # 3. use it: serve, export, push --dry-run
    started: dict = {}
    monkeypatch.setattr(uvicorn, "run", lambda served, **options: started.update(app=served, **options))
    known_gaps: list[str] = []
    for args in use:
        output = _run(_runnable(args, tiny), known_gaps)
        if output is None:
            continue
        if args[0] == "serve":
            assert args in use_section, f"'{USE}' serves the new model otherwise than '{NEW_LANGUAGE}' does"
            assert (started["host"], started["port"]) == ("127.0.0.1", int(_value(args, "--port")))
            with TestClient(started["app"]) as client:
                answer = client.post("/v1/embeddings", json={"input": TRAINING_TEXTS[:2], "model": "any"})
            assert answer.status_code == 200, answer.text
            served = np.array([item["embedding"] for item in answer.json()["data"]], dtype=np.float32)
            assert np.allclose(served, vectors[:2], atol=1e-5)  # what encode wrote for the same sentences
        elif args[0] == "export":
            exported = tmp_path / _value(args, "-o") / "onnx" / "model.onnx"
            onnx_vectors = polyembed.encode(polyembed.load_model(str(exported)), TRAINING_TEXTS[:2])
            assert np.allclose(onnx_vectors, vectors[:2], atol=1e-4)
        else:
            assert "dry run: would push" in output and "README.md" in output, output
        assert _command_name(args) not in KNOWN_GAPS, f"`polyembed {shlex.join(args)}` works: drop its KNOWN_GAPS"
    assert started, "the README's new-language path no longer serves the model"
    if known_gaps:
        pytest.xfail("the rest of the path ran and passed; known gaps: " + "; ".join(known_gaps))


def test_a_readme_command_of_another_shape_fails_loudly(tiny: dict[str, Path]) -> None:
    assert _runnable(["encode", "x.txt", "-m", "me5-small", "-o", "v.npy"], tiny)[3] == str(tiny["base"])
    with pytest.raises(AssertionError, match="--max-steps"):
        _runnable(["train", "new-language", "--parallel-files", "yo=a,b", "--max-steps", "9"], tiny)
    with pytest.raises(AssertionError, match="mpnet-en"):
        _runnable(["encode", "x.txt", "-m", "mpnet-en", "-o", "v.npy"], tiny)
    with pytest.raises(AssertionError, match="new to the newcomer's path"):
        _runnable(["mine", "a.txt", "b.txt"], tiny)
    with pytest.raises(AssertionError, match="no '## Nowhere' section"):
        _section("Nowhere")
