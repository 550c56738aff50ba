"""The locked environment and the version checks: the lock agrees with pyproject.toml and is what is installed,
a known-broken pair of packages stops a command with one line, and `doctor` / `--version` report it."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.version import Version
from typer.testing import CliRunner

from polyembed import environment
from polyembed.cli import app
from polyembed.environment import IncompatibleEnvironmentError, canonical, problems, read_lock, require

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / environment.LOCK_FILE
runner = CliRunner()


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _pyproject_requirements() -> list[Requirement]:
    """Every requirement of pyproject.toml, the core and each extra (`all`, which names polyembed's own extras,
    left out: its packages are those extras')."""
    project = _pyproject()
    lines = project["dependencies"] + [line for extra in project["optional-dependencies"].values() for line in extra]
    return [requirement for requirement in map(Requirement, lines) if canonical(requirement.name) != "polyembed"]


def test_lock_satisfies_every_range_of_pyproject() -> None:
    locked = read_lock(LOCK)
    for requirement in _pyproject_requirements():
        name = canonical(requirement.name)
        assert name in locked, f"{requirement.name} is in pyproject.toml but not in {LOCK.name}: run `make lock`"
        assert requirement.specifier.contains(Version(locked[name]), prereleases=True), (
            f"{LOCK.name} pins {name}=={locked[name]}, outside pyproject.toml's {requirement}: run `make lock`")


def test_lock_is_closed_under_dependencies() -> None:
    """Every package a locked package needs (on this platform, no extras) is locked too: nothing floats."""
    locked = read_lock(LOCK)
    env = {**default_environment(), "extra": ""}
    for name in locked:
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate(env):
                assert canonical(requirement.name) in locked, f"{name} needs {requirement.name}, not in the lock"


def test_installed_environment_is_the_lock() -> None:
    """`make setup` installs exactly the lock: the versions the suite runs with are the locked ones."""
    wrong = {name: (version, environment.installed_version(name)) for name, version in read_lock(LOCK).items()
             if environment.installed_version(name) != version}
    assert not wrong, f"installed versions differ from {LOCK.name} (run `make setup`): {wrong}"


def test_pyproject_keeps_the_known_breaking_upper_bound() -> None:
    transformers = next(r for r in _pyproject_requirements() if r.name == "transformers")
    assert not transformers.specifier.contains("5.24.0"), "transformers 5.24 refuses every peft there is (< 0.22)"


def _versions(**installed: str | None):
    table = {name.replace("_", "-"): version for name, version in installed.items()}
    return lambda name: table.get(name, environment.installed_version(name))


def test_peft_refused_by_transformers_names_both_and_the_fix(monkeypatch) -> None:
    monkeypatch.setattr(environment, "transformers_min_peft", lambda: "0.22.0")
    version_of = _versions(transformers="5.24.0", peft="0.21.2")
    with pytest.raises(IncompatibleEnvironmentError) as caught:
        require(["peft"], "polyembed train modular la", version_of)
    message = str(caught.value)
    assert "\n" not in message
    assert "transformers 5.24.0 needs peft >= 0.22.0" in message and "peft 0.21.2" in message
    locked = read_lock(LOCK)["transformers"]
    assert f"pip install 'transformers=={locked}'" in message


def test_compatible_and_missing_packages(monkeypatch) -> None:
    monkeypatch.setattr(environment, "transformers_min_peft", lambda: "0.20.0")
    assert problems(["peft"], _versions(transformers="5.23.0", peft="0.21.2")) == []
    [missing] = problems(["peft"], _versions(peft=None))
    assert missing.startswith("peft is not installed: pip install 'peft==")


def test_version_outside_declared_range() -> None:
    [line] = problems(["transformers"], _versions(transformers="5.24.0"), pair_checks={})
    assert "transformers 5.24.0 is outside polyembed's supported range" in line and "<5.24" in line


def test_lora_stage_exits_2_with_one_line_before_loading(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(environment, "transformers_min_peft", lambda: "0.22.0")
    real = environment.installed_version
    monkeypatch.setattr(environment, "installed_version",
                        lambda name: {"transformers": "5.24.0", "peft": "0.21.2"}.get(name) or real(name))
    result = runner.invoke(app, ["train", "modular", "la", "--language", "kk", "--output-dir", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    [line] = [text for text in result.output.splitlines() if text.strip()]
    assert line.startswith("error: polyembed train modular la: transformers 5.24.0 needs peft >= 0.22.0")
    assert not (tmp_path / "r").exists()
    # full fine-tuning needs no peft: the same environment gets past the check (and fails later on the flag)
    result = runner.invoke(app, ["train", "modular", "la", "--language", "kk", "--adapter", "full",
                                 "--output-dir", str(tmp_path / "r"), "--max-steps", "0"])
    assert "peft" not in result.output


def test_pipeline_checks_peft_first(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(environment, "transformers_min_peft", lambda: "0.22.0")
    real = environment.installed_version
    monkeypatch.setattr(environment, "installed_version",
                        lambda name: {"peft": "0.21.2"}.get(name) or real(name))
    result = runner.invoke(app, ["train", "modular", "pipeline", "--languages", "kk",
                                 "--output-dir", str(tmp_path / "p")])
    assert result.exit_code == 2 and "polyembed train modular pipeline: transformers" in result.output
    assert not (tmp_path / "p").exists()


def test_version_flag() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"polyembed {environment.polyembed_version()}"


def test_doctor_reports_versions_paths_and_models(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path / "cache"))
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    rows = dict(line.split(None, 1) for line in result.output.splitlines() if "  " in line and
                not line.startswith("model "))
    assert rows["polyembed"].strip() == environment.polyembed_version()
    assert rows["transformers"].strip() == metadata.version("transformers")
    assert rows["cache"].strip() == str(tmp_path / "cache")
    assert "model me5-small        not prepared (polyembed models prepare me5-small)" in result.output
    assert "model minilm-en        prepared" in result.output
    assert result.output.rstrip().endswith("problems: none found")


def test_doctor_exits_1_and_names_a_problem(monkeypatch) -> None:
    real = environment.installed_version
    monkeypatch.setattr(environment, "installed_version", lambda name: None if name == "faiss-cpu" else real(name))
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1
    assert "problem: faiss-cpu is not installed: pip install 'faiss-cpu==" in result.output


def test_doctor_reads_a_missing_extra_as_no_problem(monkeypatch) -> None:
    """The core alone is a complete install: a package of an extra that is not there is a row, not a problem."""
    real = environment.installed_version
    absent = {"onnxruntime", "fastapi"}
    monkeypatch.setattr(environment, "installed_version", lambda name: None if name in absent else real(name))
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    rows = dict(line.split(None, 1) for line in result.output.splitlines() if "  " in line)
    assert rows["onnxruntime"].strip() == "not installed (extra export)"
    assert rows["extras"].strip() == ("installed: alignment, fasttext, mteb, ray; partly installed: export (not "
                                      "onnxruntime), serve (not fastapi) (pip install 'polyembed[EXTRA]')")
    assert result.output.rstrip().endswith("problems: none found")


# --- extras: the core install, and what a command says when it needs an extra that is not there ---

EXTRA_OF = {"fastapi": "serve", "uvicorn": "serve", "uvloop": "serve", "httptools": "serve", "orjson": "serve",
            "prometheus-client": "serve", "onnx": "export", "onnxruntime": "export", "onnxscript": "export",
            "openvino": "export", "nncf": "export", "ray": "ray", "mteb": "mteb", "eflomal": "alignment",
            "gensim": "fasttext"}
"""The optional packages and their extras (the issue's list: none of them is needed to train and evaluate)."""


def test_pyproject_declares_ranges_and_extras() -> None:
    """No exact pin on torch (an install keeps the user's build), the optional packages only in extras, `all`
    gathering every extra, and the installed metadata agreeing (what `require` names)."""
    project = _pyproject()
    core = {canonical(Requirement(line).name): Requirement(line) for line in project["dependencies"]}
    assert str(core["torch"].specifier) == ">=2.6", "a range (transformers 5 disables torch < 2.6), never a pin"
    assert not set(EXTRA_OF) & set(core), "an optional package is in the core dependencies"
    for needed in ("sentence-transformers", "transformers", "datasets", "accelerate", "faiss-cpu", "peft"):
        assert needed in core, f"{needed}: training or evaluation needs it, so it is core"
    extras = project["optional-dependencies"]
    declared = {canonical(Requirement(line).name): extra for extra, lines in extras.items()
                if extra not in environment.GATHERING_EXTRAS for line in lines}
    assert declared == EXTRA_OF
    [gathered] = extras["all"]
    assert Requirement(gathered).extras == set(extras) - set(environment.GATHERING_EXTRAS)
    assert environment.declared_extras() == EXTRA_OF, "installed metadata is stale: run `make setup`"


def test_makefile_lock_resolves_every_extra() -> None:
    """`make lock` pins the core and every extra: the lock CI installs covers all of them."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nlock:", 1)[1].split("\n\n", 1)[0]
    assert "uv pip compile pyproject.toml --all-extras" in recipe


def _missing(*names: str):
    return lambda name: None if name in names else environment.installed_version(name)


def test_require_names_the_extra_in_one_line() -> None:
    with pytest.raises(IncompatibleEnvironmentError) as caught:
        require(("fastapi", "uvicorn", "orjson"), "polyembed serve", _missing("fastapi", "uvicorn"))
    assert str(caught.value) == ("polyembed serve needs the serve extra: pip install 'polyembed[serve]' "
                                 "(not installed: fastapi, uvicorn)")
    with pytest.raises(IncompatibleEnvironmentError) as caught:  # the extra given by the caller wins
        require(("eflomal",), "the eflomal aligner", _missing("eflomal"), extra="alignment")
    assert str(caught.value).startswith("the eflomal aligner needs the alignment extra: "
                                        "pip install 'polyembed[alignment]'")
    require(("fastapi", "onnx"), "polyembed serve", _missing())  # all there: no error


def test_require_mixed_problems_name_each() -> None:
    """A missing core package next to a missing extra: each line says its own fix."""
    with pytest.raises(IncompatibleEnvironmentError) as caught:
        require(("faiss-cpu", "ray"), "polyembed mine", _missing("faiss-cpu", "ray"))
    message = str(caught.value)
    assert message.startswith("polyembed mine: faiss-cpu is not installed: pip install 'faiss-cpu")
    assert "ray is not installed (the ray extra): pip install 'polyembed[ray]'" in message
    assert "\n" not in message


def test_training_options_require_their_extras(monkeypatch) -> None:
    """Options that need an extra name it before anything loads: WACSE's default eflomal aligner, FOCUS's
    fastText token space; a tr-only WACSE run aligns nothing and needs no eflomal."""
    from polyembed.methods.distill.config import DistillConfig
    from polyembed.methods.wacse.config import WacseConfig

    assert "eflomal" in WacseConfig().required_packages()
    assert "eflomal" not in WacseConfig(objectives=["tr"]).required_packages()
    assert "eflomal" not in WacseConfig(aligner="itermax").required_packages()
    focus = DistillConfig(student_vocabulary="transfer", vocabulary_auxiliary="fasttext", adapter="lora")
    assert set(focus.required_packages()) == {"gensim", "peft"}
    assert DistillConfig().required_packages() == ()


def test_train_wacse_without_the_alignment_extra_exits_2(monkeypatch, tmp_path: Path) -> None:
    real = environment.installed_version
    monkeypatch.setattr(environment, "installed_version", lambda name: None if name == "eflomal" else real(name))
    result = runner.invoke(app, ["train", "wacse", "--languages", "kk", "--output-dir", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    [line] = [text for text in result.output.splitlines() if text.strip()]
    assert line == ("error: polyembed train wacse needs the alignment extra: pip install 'polyembed[alignment]' "
                    "(not installed: eflomal)")
    assert not (tmp_path / "r").exists()


def test_extra_checks_in_the_api(monkeypatch, tmp_path: Path) -> None:
    """The API's entry points to optional parts stop with the extra's line before doing anything."""
    from polyembed.alignment import eflomal_align
    from polyembed.eval.mteb_model import MTEBEncoder
    from polyembed.models.onnx_export import export_onnx
    from polyembed.streaming import StreamOptions, encode_to_shards

    monkeypatch.setattr(environment, "installed_version", lambda name: None if name in EXTRA_OF else "99")
    with pytest.raises(IncompatibleEnvironmentError, match=r"^the eflomal aligner needs the alignment extra"):
        eflomal_align([])
    with pytest.raises(IncompatibleEnvironmentError, match=r"^MTEBEncoder needs the mteb extra: pip install "
                                                           r"'polyembed\[mteb\]' \(not installed: mteb\)$"):
        MTEBEncoder("minilm-en")
    with pytest.raises(IncompatibleEnvironmentError, match=r"^polyembed export needs the export extra: .*"
                                                           r"\(not installed: onnx, onnxruntime\)$"):
        export_onnx("minilm-en", tmp_path / "export")
    source = tmp_path / "in.txt"
    source.write_text("a\n", encoding="utf-8")
    with pytest.raises(IncompatibleEnvironmentError, match=r"^backend ray needs the ray extra"):
        encode_to_shards("minilm-en", source, tmp_path / "shards", StreamOptions(workers=2, backend="ray"))
    assert not (tmp_path / "export").exists() and not (tmp_path / "shards").exists()


CORE_ONLY = """
import importlib.abc, sys
OPTIONAL = {optional!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in OPTIONAL:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Block())
from polyembed import environment
environment.installed_version = lambda name, real=environment.installed_version: (
    None if name.replace("-", "_") in OPTIONAL else real(name))
import polyembed, polyembed.api, polyembed.cli, polyembed.eval, polyembed.methods, polyembed.mining
from polyembed.cli import app
from typer.testing import CliRunner
result = CliRunner().invoke(app, ["serve", "-m", "minilm-en"])
print(result.exit_code)
print(result.output.strip())
"""


def test_core_imports_and_serve_without_the_extras() -> None:
    """With every optional package hidden (as in a core-only install), polyembed and its CLI import, and
    `polyembed serve` says which extra to install (tests/test_install.py does it in a real core-only venv)."""
    optional = sorted({name.replace("-", "_") for name in EXTRA_OF} | {"prometheus_client", "starlette"})
    script = CORE_ONLY.format(optional=set(optional))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    code, line = done.stdout.strip().splitlines()[-2:]
    assert code == "2"
    assert line == ("error: polyembed serve needs the serve extra: pip install 'polyembed[serve]' "
                    "(not installed: fastapi, uvicorn, httptools, orjson, prometheus-client)")
