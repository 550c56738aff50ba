"""Run configs: YAML with file:line errors, type checks, CLI overrides and per-item line numbers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from polyembed.config import ConfigOrigin, build_config, dump_config, option, read_yaml_mapping
from polyembed.errors import DataError, PolyembedError
from polyembed.methods.distill.config import DEMO_LANGUAGES, DistillConfig


def write(tmp_path: Path, text: str, name: str = "run.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_file() -> None:
    config, origin = build_config(DistillConfig)
    assert config == DistillConfig()
    assert config.languages == DEMO_LANGUAGES and config.batch_size == 64
    assert origin.path is None and origin.where("languages") == "option languages"


def test_option_copies_list_defaults_and_keeps_help() -> None:
    a, b = DistillConfig(), DistillConfig()
    a.languages.append("xx")
    assert b.languages == DEMO_LANGUAGES and "xx" not in DEMO_LANGUAGES

    @dataclasses.dataclass
    class Small:
        items: list[str] = option(["a"], "Some items.")
        count: int = option(2, "How many.")

    fields = {f.name: f for f in dataclasses.fields(Small)}
    assert fields["items"].metadata["help"] == "Some items." and fields["count"].metadata["help"] == "How many."
    assert Small().items is not Small().items and Small().count == 2


def test_file_values_are_read_with_their_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "teacher: minilm-en\nbatch_size: 16\nlanguages: [de, fr]\nmax_pairs_per_source: null\n")
    config, origin = build_config(DistillConfig, path)
    assert config.batch_size == 16 and config.languages == ["de", "fr"] and config.max_pairs_per_source is None
    assert config.student == DistillConfig().student  # not in the file: default
    assert origin.key_lines == {"teacher": 1, "batch_size": 2, "languages": 3, "max_pairs_per_source": 4}
    assert origin.where("batch_size") == f"{path}:2"
    assert origin.where("languages", 1) == f"{path}:3"  # flow list: items share the key's line


def test_unknown_key_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "teacher: minilm-en\nbatch_size: 16\nlearnin_rate: 0.001\n")
    with pytest.raises(DataError) as info:
        build_config(DistillConfig, path)
    assert info.value.line == 3 and f"{path}:3:" in str(info.value)
    assert "learnin_rate: unknown option" in str(info.value) and "learning_rate" in str(info.value)


def test_wrong_type_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "seed: 1\n\nbatch_size: many\n")
    with pytest.raises(DataError, match=r"run\.yaml:3: batch_size: expected int, got 'many'"):
        build_config(DistillConfig, path)
    path = write(tmp_path, "languages:\n  - de\n  - 7\n")
    with pytest.raises(DataError, match=r"run\.yaml:1: languages: expected a list of str, got"):
        build_config(DistillConfig, path)


def test_invalid_yaml_names_a_line(tmp_path: Path) -> None:
    path = write(tmp_path, "seed: 1\nlanguages: [de, fr\nbatch_size: 3\n")
    with pytest.raises(DataError, match="invalid YAML") as info:
        build_config(DistillConfig, path)
    assert info.value.line is not None and info.value.line >= 2
    assert f"{path}:{info.value.line}:" in str(info.value)
    path = write(tmp_path, "seed: 1\n  batch_size: 3\n")
    with pytest.raises(DataError, match=r"run\.yaml:2: invalid YAML"):
        read_yaml_mapping(path)


def test_file_must_be_a_mapping_and_exist(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"run\.yaml:1: a config file must be a mapping"):
        build_config(DistillConfig, write(tmp_path, "- de\n- fr\n"))
    with pytest.raises(DataError, match="missing.yaml: file not found"):
        build_config(DistillConfig, tmp_path / "missing.yaml")
    values, origin = read_yaml_mapping(write(tmp_path, "# only a comment\n", "empty.yaml"))
    assert values == {} and origin.key_lines == {}


def test_overrides_win_and_are_reported_as_flags(tmp_path: Path) -> None:
    path = write(tmp_path, "languages:\n  - de\n  - fr\nbatch_size: 16\nseed: 4\n")
    config, origin = build_config(DistillConfig, path, {"languages": ["sw"], "batch_size": None, "seed": 9})
    assert config.languages == ["sw"] and config.seed == 9
    assert config.batch_size == 16  # None means 'not given': the file's value stays
    assert origin.where("languages") == "flag --languages"
    assert origin.where("languages", 0) == "flag --languages"
    assert origin.where("seed") == "flag --seed" and origin.where("batch_size") == f"{path}:4"
    assert origin.from_cli == {"languages", "seed"}


def test_wrong_override_type_is_a_flag_error(tmp_path: Path) -> None:
    with pytest.raises(PolyembedError, match="--max-steps: expected") as info:
        build_config(DistillConfig, None, {"max_steps": "ten"})
    assert not isinstance(info.value, DataError)


def test_unknown_override_is_a_polyembed_error() -> None:
    with pytest.raises(PolyembedError, match="langauges"):
        build_config(DistillConfig, None, {"langauges": ["de"]})


def test_list_items_keep_their_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "seed: 1\nlanguages:\n  - de\n  - xx\ndatasets: [multi30k]\n")
    config, origin = build_config(DistillConfig, path)
    assert config.languages == ["de", "xx"]
    assert origin.item_lines["languages"] == [3, 4]
    assert origin.item_lines["datasets"] == [5]
    assert origin.where("languages", 1).endswith(":4") and origin.where("languages", 1) == f"{path}:4"
    assert origin.where("languages") == f"{path}:2"
    assert origin.where("languages", 5) == f"{path}:2"  # out of range: the key's line
    error = origin.error("languages", "unknown language 'xx'", 1)
    assert isinstance(error, DataError) and str(error) == f"{path}:4: languages: unknown language 'xx'"


def test_item_lines_from_file_starting_with_the_list(tmp_path: Path) -> None:
    path = write(tmp_path, "languages:\n  - de\n  - xx\n")
    _, origin = build_config(DistillConfig, path)
    assert origin.item_lines["languages"] == [2, 3]
    assert origin.where("languages", 1).endswith(":3")


def test_origin_error_for_cli_key() -> None:
    origin = ConfigOrigin(path=Path("x.yaml"), key_lines={"seed": 2}, from_cli={"max_steps"})
    error = origin.error("max_steps", "must be positive")
    assert type(error) is PolyembedError and str(error) == "--max-steps: must be positive"
    assert str(origin.error("seed", "bad")) == "x.yaml:2: seed: bad"
    assert origin.where("output_dir") == "x.yaml"  # a key without a line: just the file


def test_numeric_type_rules(tmp_path: Path) -> None:
    config, _ = build_config(DistillConfig, write(tmp_path, "learning_rate: 1\nepochs: 2\nwarmup_ratio: 0.5\n"))
    assert config.learning_rate == 1 and config.epochs == 2
    for text in ("batch_size: true\n", "seed: 1.5\n", "learning_rate: yes\n", "max_steps: false\n"):
        with pytest.raises(DataError, match=r"run\.yaml:1: .*expected"):
            build_config(DistillConfig, write(tmp_path, text))
    # PyYAML reads 2e-5 (no dot) as text; float options take it as the number it means.
    config, _ = build_config(DistillConfig, write(tmp_path, "learning_rate: 2e-5\nwarmup_ratio: 1E-1\n"))
    assert config.learning_rate == 2e-5 and config.warmup_ratio == 0.1
    for text in ("learning_rate: fast\n", "learning_rate: inf\n", "batch_size: 1e3\n"):
        with pytest.raises(DataError, match=r"run\.yaml:1: .*expected"):
            build_config(DistillConfig, write(tmp_path, text))
    config, _ = build_config(DistillConfig, write(tmp_path, "max_steps: 10\ngroup_by_length: false\n"))
    assert config.max_steps == 10 and config.group_by_length is False


def test_dump_config_round_trips(tmp_path: Path) -> None:
    config, _ = build_config(
        DistillConfig, write(tmp_path, "languages: [de, zh]\nmax_pairs_per_source: 500\nlearning_rate: 0.0001\n")
    )
    text = dump_config(config)
    assert yaml.safe_load(text) == dataclasses.asdict(config)
    assert list(yaml.safe_load(text)) == [f.name for f in dataclasses.fields(DistillConfig)]  # field order kept
    again, _ = build_config(DistillConfig, write(tmp_path, text, "dumped.yaml"))
    assert again == config


def test_ranges_and_choices_apply_to_yaml_and_flags_alike(tmp_path: Path) -> None:
    cases = {
        "max_steps": (-5, 0),
        "epochs": (-1, 0),
        "batch_size": (0,),
        "learning_rate": (-1, 0),
        "eval_steps": (-3, 0),
        "warmup_ratio": (1, -0.1),
        "save_total_limit": (0,),
        "dropout": (1.0,),
        "seed": (-1,),
    }
    for key, values in cases.items():
        for value in values:
            first = "epochs: 1" if key == "seed" else "seed: 1"  # a key given twice is an error of its own
            path = write(tmp_path, f"{first}\n{key}: {value}\n")
            with pytest.raises(DataError, match=rf"run\.yaml:2: {key}: {value} is out of range: expected a value"):
                build_config(DistillConfig, path)
            with pytest.raises(PolyembedError, match=rf"^--{key.replace('_', '-')}: {value} is out of range"):
                build_config(DistillConfig, None, {key: value})
    with pytest.raises(DataError, match=r"run\.yaml:1: precision: expected one of auto, bf16, fp32, got 'fp16'"):
        build_config(DistillConfig, write(tmp_path, "precision: fp16\n"))
    with pytest.raises(PolyembedError, match="--best-metric: expected one of mse, translation, sts"):
        build_config(DistillConfig, None, {"best_metric": "loss"})
    config, _ = build_config(DistillConfig, None, {"max_steps": 1, "warmup_ratio": 0.0, "learning_rate": 1e-9})
    assert config.max_steps == 1 and config.warmup_ratio == 0.0


def test_undecodable_and_unreadable_config_files_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_bytes(b"seed: 1\nlanguages: [d\xe9]\n")
    with pytest.raises(DataError, match=r"run\.yaml:2: not valid UTF-8"):
        build_config(DistillConfig, path)
    path.write_bytes(b"seed: 1\nbatch_size: 4\nlanguages: [de\x01]\n")
    with pytest.raises(DataError, match=r"run\.yaml:3: invalid YAML: character U\+0001 is not allowed"):
        build_config(DistillConfig, path)
    path.write_text("seed: 1\nwhen: 2024-02-30\n", encoding="utf-8")  # a date PyYAML cannot build
    with pytest.raises(DataError, match=r"run\.yaml: invalid YAML"):
        build_config(DistillConfig, path)
    with pytest.raises(DataError, match="is a folder"):
        build_config(DistillConfig, tmp_path)
    path.write_text("1: x\n", encoding="utf-8")  # a key that is not text
    with pytest.raises(DataError, match=r"run\.yaml:1: 1: unknown option"):
        build_config(DistillConfig, path)


def test_key_value_options_are_parsed_one_way() -> None:
    from polyembed.config import parse_key_values, parse_option_value

    assert parse_key_values(["max-steps=400", "learning_rate=2e-5", "pivot=no", "datasets=[a, b]", "x=null",
                             "flag=true", "name=de=x"], "--set") == {
        "max_steps": 400, "learning_rate": 2e-5, "pivot": "no", "datasets": ["a", "b"], "x": None, "flag": True,
        "name": "de=x",
    }
    assert parse_option_value("inf") == "inf" and parse_option_value("[1, 2.5]") == [1, 2.5]
    with pytest.raises(PolyembedError, match="--task-arg expects KEY=VALUE, got 'novalue'"):
        parse_key_values(["novalue"], "--task-arg")


@dataclasses.dataclass
class _Floats:
    rates: list[float] = option([], "Some rates.")
    rate: float | None = option(None, "One rate.")


def test_a_list_of_floats_is_checked_item_by_item(tmp_path: Path) -> None:
    config, _ = build_config(_Floats, write(tmp_path, "rates: [0.05, 1e-1]\nrate: 2e-5\n"))
    assert config.rates == [0.05, 0.1] and config.rate == 2e-5
    with pytest.raises(DataError, match=r"run.yaml:1: rates: expected a list of float"):
        build_config(_Floats, write(tmp_path, "rates: [0.05, high]\n"))
    with pytest.raises(PolyembedError, match="rate: nan is out of range"):
        build_config(_Floats, None, {"rate": float("nan")})


def test_a_key_given_twice_is_refused_at_its_line(tmp_path: Path) -> None:
    """PyYAML keeps the last of two equal keys silently; a second output_dir further down must not win."""
    path = write(tmp_path, "seed: 1\noutput_dir: runs/mine\nmax_steps: 3\noutput_dir: /home\n")
    with pytest.raises(DataError, match=r"run\.yaml:4: output_dir: given twice \(first at line 2\)"):
        build_config(DistillConfig, path, {})
    nested = write(tmp_path, "seed: 1\nparallel_files:\n  - a\nlora:\n  r: 1\n  r: 2\n", name="nested.yaml")
    with pytest.raises(DataError, match=r"nested\.yaml:6: r: given twice"):
        build_config(DistillConfig, nested, {})
