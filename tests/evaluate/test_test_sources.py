"""Where `deeppot test` finds its systems (DeePMD-kit's `-s`, `-f/--datafile`, `--train-data`, `--valid-data`), and
the command's `-a/--atomic` report equal to `run_test`'s on the same systems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_dp_test import ATYPE_A, ATYPE_B, CONFIG, write_system

from deeppot.cli.main import main
from deeppot.data import DataError
from deeppot.evaluate import run_test, systems_to_test
from deeppot.io import load_model

LABELS = ("energy", "force", "virial", "atom_ener")


def write_input(path: Path, training: dict) -> Path:
    config = {"model": CONFIG, "learning_rate": {"type": "exp", "start_lr": 1e-3}, "loss": {"type": "ener"},
              "training": {"numb_steps": 1, **training}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """data/sysA, data/sysB, and data/valid holding v1 and v2, each with atomic energies."""
    for name, atype in (("sysA", ATYPE_A), ("sysB", ATYPE_B), ("valid/v1", ATYPE_A), ("valid/v2", ATYPE_B)):
        write_system(tmp_path / "data" / name, atype, 2, seed=len(name), labels=LABELS)
    return tmp_path / "data"


def test_input_json_systems_are_read_from_its_folder(data: Path, tmp_path: Path, monkeypatch) -> None:
    training = {"training_data": {"systems": ["../data/sysA", "../data/sysB"]},
                "validation_data": {"systems": "../data/valid"}}
    input_json = write_input(tmp_path / "run" / "input.json", training)
    monkeypatch.chdir(data / "valid")  # the paths are from input.json's folder, not the working one (as DeePMD-kit)
    got = systems_to_test(train_json=str(input_json))
    assert [Path(p).resolve() for p in got] == [data / "sysA", data / "sysB"]
    got = systems_to_test(valid_json=str(input_json))
    assert [Path(p).resolve() for p in got] == [data / "valid" / "v1", data / "valid" / "v2"]
    training["training_data"]["systems"] = ["v2"]  # nothing there from input.json's folder: from here
    input_json = write_input(tmp_path / "run" / "input.json", training)
    assert systems_to_test(train_json=str(input_json)) == ["v2"]


def test_input_json_rglob_patterns_and_missing_section(data: Path, tmp_path: Path) -> None:
    training = {"training_data": {"systems": [str(data)], "rglob_patterns": ["v2"]}}
    input_json = write_input(tmp_path / "input.json", training)
    assert systems_to_test(train_json=str(input_json)) == [str(data / "valid" / "v2")]
    with pytest.raises(DataError, match=r"input.json: no training.validation_data.systems"):
        systems_to_test(valid_json=str(input_json))


def test_datafile_and_folder_sources(data: Path, tmp_path: Path) -> None:
    datafile = tmp_path / "systems.txt"
    datafile.write_text(f"{data / 'sysB'}\n\n  {data / 'sysA'}  \n")
    assert systems_to_test(datafile=str(datafile)) == [str(data / "sysB"), str(data / "sysA")]  # order kept
    assert systems_to_test(str(data / "valid")) == [str(data / "valid" / "v1"), str(data / "valid" / "v2")]
    datafile.write_text("\n")
    with pytest.raises(DataError, match=r"systems\.txt: lists no system"):
        systems_to_test(datafile=str(datafile))
    with pytest.raises(DataError, match="cannot read the list of systems"):
        systems_to_test(datafile=str(tmp_path / "absent.txt"))


def test_command_with_datafile_and_atomic(model_file: Path, data: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    model = load_model(model_file)
    (tmp_path / "systems.txt").write_text(f"{data / 'sysA'}\n{data / 'sysB'}\n")
    assert main(["test", "-m", "model.dp", "-f", "systems.txt", "-a", "--device", "cpu"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if not line[:2].isdigit()]  # no log lines
    expected = run_test(model, [str(data / "sysA"), str(data / "sysB")], atomic=True, log=lambda _: None).lines
    assert printed == expected
    assert sum(line.startswith("Atomic ener RMSE") for line in printed) == 2


def test_command_takes_one_source(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:  # argparse: -s and -f are mutually exclusive
        main(["test", "-m", "model.dp", "-s", "data", "-f", "systems.txt"])
    assert exit_info.value.code == 2
