"""The `deeppot` command end to end on tiny data: train -> freeze -> test -> plot, and user errors."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "train"))
from test_trainer import small_system, tiny_input

from deeppot.cli.main import main
from deeppot.io import load_model


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_train_freeze_test_plot(tmp_path, monkeypatch, capsys, precision):
    monkeypatch.chdir(tmp_path)
    config = tiny_input([small_system(tmp_path, "train")], [small_system(tmp_path, "valid", nframes=3)],
                        steps=4, precision=precision)
    (tmp_path / "input.json").write_text(json.dumps(config))
    assert main(["train", "input.json"]) == 0
    out_json = json.loads((tmp_path / "out.json").read_text())
    assert json.loads((tmp_path / "input_v2_compat.json").read_text()) == config  # a v2 input: as it was given
    assert out_json["model"]["descriptor"]["sel"] == [16, 32]
    assert out_json["training"]["max_ckpt_keep"] == 5  # defaults are filled
    assert main(["freeze", "-o", "model.dp"]) == 0
    model = load_model(tmp_path / "model.dp")
    assert model.descriptor.dtype.__repr__().endswith(precision)
    assert model.config["info"] == {"observed_type": ["H", "O"]}  # the data's types, by atomic number
    capsys.readouterr()
    assert main(["test", "-m", "model.dp", "-s", "valid", "-d", "detail", "--plot", "parity.png"]) == 0
    report = capsys.readouterr().out
    assert "Energy RMSE/Natoms" in report and "Force  RMSE" in report
    predicted = np.loadtxt(tmp_path / "detail.e.out")
    assert predicted.shape == (3, 2)
    assert main(["plot", "lcurve.out", "-o", "curves.png"]) == 0
    for png in ("parity.png", "curves.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def write_input(tmp_path, change) -> None:
    config = tiny_input([small_system(tmp_path, "train")], None, steps=2)
    change(config)
    (tmp_path / "input.json").write_text(json.dumps(config))


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c["training"].update(disp_frequency=10),
     "training.disp_frequency: unknown key 'disp_frequency'; did you mean 'disp_freq'?"),
    (lambda c: c["model"]["descriptor"].update(rcut_smth=6.0),
     "model.descriptor.rcut_smth: must be smaller than rcut"),
    (lambda c: c["model"]["descriptor"].update(sel=[16]),
     "model.descriptor.sel: needs one entry per type in type_map (2), got 1"),
    (lambda c: c["model"]["descriptor"].update(type="se_atten"),
     "model.descriptor.type: descriptor 'se_atten' is not supported"),
    (lambda c: c["training"]["training_data"].update(systems=["no/such/dir"]), "no/such/dir"),
])
def test_config_errors_are_one_clear_line(tmp_path, monkeypatch, capsys, change, message):
    monkeypatch.chdir(tmp_path)
    write_input(tmp_path, change)
    assert main(["train", "input.json"]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "lcurve.out").exists()  # nothing started


def test_bad_json_names_file_and_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "input.json").write_text('{"model": {,}}')
    assert main(["train", "input.json"]) == 1
    err = capsys.readouterr().err
    assert "input.json" in err and "line 1" in err


def test_convert_dp_to_yaml_and_back(tmp_path, monkeypatch):
    import torch
    from helpers import make_model, random_system

    from deeppot.io import save_model

    monkeypatch.chdir(tmp_path)
    model = make_model(type_one_side=False)
    save_model(model, tmp_path / "a.dp")
    assert main(["convert", "a.dp", "b.yaml"]) == 0
    assert main(["convert-backend", "b.yaml", "c.dp"]) == 0  # DeePMD-kit's name for it
    coord, atype, box = random_system()
    torch.testing.assert_close(load_model(tmp_path / "c.dp")(coord, atype, box)["energy"],
                               model(coord, atype, box)["energy"], rtol=1e-14, atol=0)


def test_convert_refuses_torchscript_with_advice(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "frozen.pth").write_bytes(b"not really a model")
    assert main(["convert", "frozen.pth", "out.dp"]) == 1
    assert "dp convert-backend" in capsys.readouterr().err


def energies_of(path, frames) -> np.ndarray:
    return load_model(path)(*frames)["energy"].detach().numpy()


@pytest.mark.parametrize("flag", ["-i", "-f"])
def test_init_from_a_frozen_model(tmp_path, monkeypatch, flag):
    """A second run from the first run's frozen model, at a learning rate too small to move a weight: it freezes
    to the same model; without the flag its own seed gives another one."""
    from helpers import random_system

    monkeypatch.chdir(tmp_path)
    write_input(tmp_path, lambda c: None)
    assert main(["train", "input.json"]) == 0 and main(["freeze", "-o", "first.dp"]) == 0

    config = json.loads((tmp_path / "input.json").read_text())
    config["model"]["descriptor"]["seed"] = config["model"]["fitting_net"]["seed"] = 11
    config["learning_rate"].update(start_lr=1e-30, stop_lr=1e-30)
    (tmp_path / "input.json").write_text(json.dumps(config))
    assert main(["train", "input.json", flag, "first.dp"]) == 0 and main(["freeze", "-o", "second.dp"]) == 0
    assert main(["train", "input.json"]) == 0 and main(["freeze", "-o", "fresh.dp"]) == 0
    coord, atype, box = random_system(natoms=12, nframes=2)
    frames = (coord, atype, box)
    first = energies_of(tmp_path / "first.dp", frames)
    np.testing.assert_allclose(energies_of(tmp_path / "second.dp", frames), first, rtol=1e-12)
    assert np.abs(energies_of(tmp_path / "fresh.dp", frames) - first).max() > 1e-6 * np.abs(first).max()
