"""The locked environment and the version checks: the lock agrees with pyproject.toml and is what is installed,
a known-broken pair of packages stops a command with one line, and `doctor` / `--version` report it."""

from __future__ import annotations

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


def _pyproject_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = project["dependencies"] + [line for extra in project["optional-dependencies"].values() for line in extra]
    return [Requirement(line) for line in lines]


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
    monkeypatch.setattr(environment, "installed_version", lambda name: None if name == "onnxruntime" else real(name))
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1
    assert "problem: onnxruntime is not installed: pip install 'onnxruntime==" in result.output
