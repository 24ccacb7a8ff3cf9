"""HDF5 systems wherever the command line takes systems: the same results as from the npy folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import h5py
import numpy as np
from helpers import make_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
from test_trainer import tiny_input

from deeppot.cli.main import main
from deeppot.io import load_model, save_model


def write_pair(tmp_path, nframes=3):
    """The same small water-like system as an npy folder and as group /w of an HDF5 file."""
    rng = np.random.default_rng(0)
    natoms = 6
    grid = np.stack(np.meshgrid(*[np.arange(2)] * 3, indexing="ij"), -1).reshape(-1, 3)[:natoms] * 2.5
    arrays = {"coord": (grid[None] + rng.uniform(-0.3, 0.3, (nframes, natoms, 3))).reshape(nframes, -1),
              "box": np.tile(np.eye(3).reshape(9) * 5.0, (nframes, 1)), "energy": rng.normal(size=nframes),
              "force": rng.normal(size=(nframes, natoms * 3))}
    folder = tmp_path / "npy"
    (folder / "set.000").mkdir(parents=True)
    (folder / "type.raw").write_text("0 1 1 0 1 1")
    (folder / "type_map.raw").write_text("O H")
    with h5py.File(tmp_path / "d.hdf5", "w") as f:
        group = f.create_group("w")
        group.create_dataset("type.raw", data=np.array([0, 1, 1, 0, 1, 1]))
        group.create_dataset("type_map.raw", data=np.array(["O", "H"], "S"))
        for key, value in arrays.items():
            np.save(folder / "set.000" / f"{key}.npy", value)
            group.create_dataset(f"set.000/{key}.npy", data=value)
    return folder, f"{tmp_path / 'd.hdf5'}#/w"


def test_dp_test_and_neighbor_stat_on_hdf5(tmp_path, caplog):
    caplog.set_level("INFO", logger="deeppot")
    folder, spec = write_pair(tmp_path)
    save_model(make_model(), tmp_path / "m.dp")
    for name, source in (("npy", str(folder)), ("h5", spec)):
        assert main(["test", "-m", str(tmp_path / "m.dp"), "-s", source, "-d", str(tmp_path / name)]) == 0
    for suffix in (".e.out", ".f.out"):
        np.testing.assert_array_equal(np.loadtxt(tmp_path / f"npy{suffix}"), np.loadtxt(tmp_path / f"h5{suffix}"))
    lines = []
    for source in (str(folder), str(tmp_path / "d.hdf5")):  # the bare file: all its systems
        caplog.clear()
        assert main(["neighbor-stat", "-s", source, "-r", "4.0", "--device", "cpu"]) == 0
        lines.append([r.getMessage() for r in caplog.records if r.getMessage().startswith(("min_nbor", "max_nbor"))])
    assert lines[0] == lines[1] and len(lines[0]) == 2


def test_change_bias_on_hdf5(tmp_path):
    folder, spec = write_pair(tmp_path)
    save_model(make_model(), tmp_path / "m.dp")
    outs = []
    for name, source in (("npy", str(folder)), ("h5", spec)):
        out = tmp_path / f"{name}.dp"
        assert main(["change-bias", str(tmp_path / "m.dp"), "-s", source, "-o", str(out)]) == 0
        outs.append(load_model(out).fitting.out_bias)
    assert outs[0].tolist() == outs[1].tolist()
    assert outs[0].tolist() != make_model().fitting.out_bias.tolist()


def test_train_on_hdf5_equals_npy(tmp_path, monkeypatch):
    """training_data.systems as `file.h5#/group`, relative to the folder of input.json: the same learning curve
    as from the npy folder (same frames, same seed)."""
    write_pair(tmp_path / "in", nframes=4)  # in/npy and in/d.hdf5#/w
    curves = []
    for name, systems in (("npy", "npy"), ("h5", "d.hdf5#/w")):
        work = tmp_path / name
        work.mkdir()
        monkeypatch.chdir(work)
        config = tiny_input([systems], None, steps=4)
        (tmp_path / "in" / f"{name}.json").write_text(json.dumps(config))
        assert main(["train", str(tmp_path / "in" / f"{name}.json"), "--device", "cpu"]) == 0
        curves.append(np.loadtxt(work / "lcurve.out"))
    np.testing.assert_array_equal(curves[0], curves[1])
