"""Compressed .dp files (descriptor @version 3 with `compress`), DeePMD-kit interoperability, the CLI, refusals."""

from __future__ import annotations

import copy
import json

import h5py
import numpy as np
import pytest
import torch
from helpers import make_model, random_system

from deeppot.cli.main import main
from deeppot.io import load_model, save_model
from deeppot.io.compress import compress_model
from deeppot.io.dp_file import load_dp
from deeppot.model.tabulate import CompressionError

pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")


def _model(seed=0, **kwargs):
    model = make_model(seed=seed, resnet_dt=False, neuron=[4, 8, 16], sel=[16, 16], **kwargs)
    model.min_nbor_dist.fill_(1.0)
    return model


def _energies(model, frames):
    out = model(*frames)
    return out["atom_energy"].detach().numpy(), out["force"].detach().numpy()


@pytest.mark.parametrize("type_one_side", [True, False])
def test_dp_round_trip(tmp_path, type_one_side):
    model = compress_model(_model(type_one_side=type_one_side))
    save_model(model, tmp_path / "c.dp")
    desc = load_dp(tmp_path / "c.dp")["model"]["descriptor"]
    assert desc["@version"] == 3 and set(desc["compress"]["@variables"]) == {"compress_data", "compress_info"}
    assert desc["embeddings"]["networks"][0] is not None  # the nets travel too
    loaded = load_model(tmp_path / "c.dp")
    assert loaded.descriptor.compressed
    for k in range(model.descriptor.tables.nnets):
        assert torch.equal(loaded.descriptor.tables.data(k), model.descriptor.tables.data(k))
        assert torch.equal(loaded.descriptor.tables.info(k), model.descriptor.tables.info(k))
    frames = random_system(natoms=12, box_len=4.5, seed=1)
    for a, b in zip(_energies(model, frames), _energies(loaded, frames), strict=True):
        np.testing.assert_array_equal(a, b)
    # the uncompressed model is still inside: dropping the tables gives the original nets' results
    loaded.descriptor.tables = None
    save_model(loaded, tmp_path / "u.dp")
    assert load_dp(tmp_path / "u.dp")["model"]["descriptor"]["@version"] == 2
    original = _model(type_one_side=type_one_side)
    for a, b in zip(_energies(original, frames), _energies(loaded, frames), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("type_one_side", "exclude"), [(False, []), (False, [[0, 1]]), (True, [[1, 1]])])
def test_deepmd_kit_reads_and_evaluates_our_compressed_file(tmp_path, type_one_side, exclude):
    """DeePMD-kit's NumPy backend evaluates our tables as we do; with exclude_types too (padding rows reach the
    nets of excluded pairs, so those are tabulated as well)."""
    pytest.importorskip("deepmd.dpmodel")  # DeePMD-kit is the oracle; deepmd_ref imports it only when called
    deepmd_ref = pytest.importorskip("compat.deepmd_ref")
    model = compress_model(_model(type_one_side=type_one_side, exclude_types=exclude), step=0.02, extrapolate=1.5)
    save_model(model, tmp_path / "c.dp")
    theirs = deepmd_ref.deepmd_load(tmp_path / "c.dp")
    assert theirs.atomic_model.descriptor.compress
    coord, atype, box = random_system(natoms=12, box_len=4.0, seed=2, min_dist=0.7)  # some s beyond the table
    _, atom_energy = deepmd_ref.deepmd_energy(theirs, coord.numpy(), atype.numpy(), box.numpy())
    ours = model(coord, atype, box)["atom_energy"].detach().numpy()
    assert np.abs(ours - atom_energy).max() < 1e-12
    if exclude:  # and, inside the table, compressed = uncompressed
        plain = _model(type_one_side=type_one_side, exclude_types=exclude)
        frames = random_system(natoms=12, box_len=4.5, seed=1)
        for a, b in zip(_energies(plain, frames), _energies(model, frames), strict=True):
            assert np.abs(a - b).max() < 1e-9


def test_deepmd_kit_compressed_model_loads_with_its_tables():
    dpmodel = pytest.importorskip("deepmd.dpmodel.descriptor.se_e2_a")
    from deeppot.io.deepmd_dict import model_from_dict, model_to_dict

    data = model_to_dict(_model())
    theirs = dpmodel.DescrptSeA.deserialize(copy.deepcopy(data["descriptor"]))
    theirs.enable_compression(0.9, 4.0, 0.02, 0.2, -1)
    data["descriptor"] = theirs.serialize()
    model = model_from_dict(data)
    assert model.descriptor.compressed
    for k, (table, info) in enumerate(zip(theirs.compress_data, theirs.compress_info, strict=True)):
        np.testing.assert_array_equal(model.descriptor.tables.data(k).numpy(), table)
        np.testing.assert_array_equal(model.descriptor.tables.info(k).numpy(), info)


def test_cli_compress(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_model(_model(), "model.dp")
    assert main(["compress", "-i", "model.dp", "-o", "out.dp", "-s", "0.02", "-e", "4", "-f", "100"]) == 0
    info = load_model("out.dp").descriptor.tables.info_values[0]
    assert info[3:] == (0.02, 0.2, 100.0) and info[2] == 4 * info[1]
    assert not list(tmp_path.glob(".out.dp.*"))  # no temporary file left behind


def test_refuses_resnet_dt(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    model = make_model(resnet_dt=True, neuron=[4, 8, 16])
    model.min_nbor_dist.fill_(1.0)
    with pytest.raises(CompressionError, match="resnet_dt"):
        compress_model(model)
    save_model(model, "model.dp")
    assert main(["compress", "-i", "model.dp", "-o", "out.dp"]) == 1
    assert "resnet_dt" in capsys.readouterr().err
    assert not (tmp_path / "out.dp").exists()


def test_refuses_unknown_min_nbor_dist(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    model = _model()
    model.min_nbor_dist.fill_(-1.0)
    save_model(model, "model.dp")
    assert main(["compress", "-i", "model.dp", "-o", "out.dp"]) == 1
    assert "-t input.json" in capsys.readouterr().err
    with pytest.raises(CompressionError, match="already compressed"):
        compress_model(compress_model(_model()))


def _write_system(path, coord, atype, box):
    (path / "set.000").mkdir(parents=True)
    (path / "type.raw").write_text(" ".join(map(str, atype)))
    (path / "type_map.raw").write_text("O\nH")
    np.save(path / "set.000" / "coord.npy", coord.reshape(len(coord), -1))
    np.save(path / "set.000" / "box.npy", box.reshape(len(box), -1))
    np.save(path / "set.000" / "energy.npy", np.zeros(len(coord)))


def test_min_nbor_dist_from_training_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    coord = np.array([[[0.0, 0.0, 0.0], [1.1, 0.0, 0.0], [0.0, 2.0, 0.0], [2.5, 2.5, 2.5]]])
    box = np.eye(3)[None] * 6.0
    _write_system(tmp_path / "data" / "sys", coord, [0, 1, 1, 0], box)
    model = _model()
    model.min_nbor_dist.fill_(-1.0)
    save_model(model, "model.dp")
    (tmp_path / "input.json").write_text(json.dumps({
        "model": model.config, "learning_rate": {"start_lr": 1e-3},
        "training": {"training_data": {"systems": ["data/sys"]}, "numb_steps": 1}}))
    assert main(["compress", "-i", "model.dp", "-o", "out.dp", "-t", "input.json"]) == 0
    out = load_model("out.dp")
    assert out.min_nbor_dist.item() == pytest.approx(1.1)
    with h5py.File("out.dp") as f:
        assert json.loads(f.attrs["json"])["model"]["descriptor"]["@version"] == 3


def test_min_nbor_dist_from_data_beside_input_json(tmp_path, monkeypatch):
    """-t reads the training systems as `deeppot train` does: from the working directory, else from the folder of
    input.json (here only the latter holds them)."""
    monkeypatch.chdir(tmp_path)
    coord = np.array([[[0.0, 0.0, 0.0], [1.3, 0.0, 0.0], [0.0, 2.0, 0.0], [2.5, 2.5, 2.5]]])
    _write_system(tmp_path / "run" / "data" / "sys", coord, [0, 1, 1, 0], np.eye(3)[None] * 6.0)
    model = _model()
    save_model(model, "model.dp")
    (tmp_path / "run" / "input.json").write_text(json.dumps({
        "model": model.config, "learning_rate": {"start_lr": 1e-3},
        "training": {"training_data": {"systems": ["data/sys"]}, "numb_steps": 1}}))
    assert main(["compress", "-i", "model.dp", "-o", "out.dp", "-t", "run/input.json"]) == 0
    assert load_model("out.dp").min_nbor_dist.item() == pytest.approx(1.3)
