"""`deeppot embed` (DeePMD-kit 3.2's `dp embed`): one HDF5 file, a group a system in DeePMD-kit's layout, equal to
`DeepPot.eval_embedding`; the structural feature through a one-type model's output layer is its bias-free energy."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import torch
from test_dp_test import ATYPE_A, CONFIG, write_system

from deeppot.cli.main import main
from deeppot.infer import DeepPot
from deeppot.model import EnergyModel


def test_one_group_a_system(model_file: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    a = write_system(tmp_path / "x" / "sys", ATYPE_A, 3, seed=1)
    b = write_system(tmp_path / "y" / "sys", ATYPE_A, 2, seed=2, nopbc=True)
    (tmp_path / "list.txt").write_text("x/sys\ny/sys\n")
    assert main(["embed", "-m", "model.dp", "-f", "list.txt", "-o", "emb/e.hdf5", "--device", "cpu"]) == 0
    dp = DeepPot(model_file, "cpu")
    with h5py.File(tmp_path / "emb" / "e.hdf5") as h5:
        assert list(h5.attrs["type_map"].astype(str)) == ["O", "H"]
        assert sorted(h5) == ["sys", "sys_1"]  # DeePMD-kit's names for a repeated folder name
        for name, arrays, cells in (("sys", a, a["box"].reshape(3, 9)), ("sys_1", b, None)):
            group = h5[name]
            want = dp.eval_embedding(arrays["coord"], cells, ATYPE_A)
            for key, value in zip(("descriptor", "atomic_feature", "structural_feature"), want, strict=True):
                assert group[key].dtype == np.float32 and group[key].compression == "gzip"
                np.testing.assert_array_equal(group[key][()], value, err_msg=key)
            nframes = len(arrays["energy"])
            np.testing.assert_array_equal(group["atom_types"][()], np.tile(ATYPE_A, (nframes, 1)))
            assert group.attrs["system"] == ("x/sys" if name == "sys" else "y/sys")
            assert group.attrs["nframes"] == nframes
    assert [p.name for p in (tmp_path / "emb").iterdir()] == ["e.hdf5"]  # no temporary file left


def test_structural_feature_through_the_output_layer_is_the_energy() -> None:
    """DeePMD-kit's note on eval_embedding: for one fitting net, the output layer of the structural feature is the
    bias-free total energy."""
    config = {**CONFIG, "type_map": ["Cu"], "descriptor": {**CONFIG["descriptor"], "sel": [40]}}
    torch.manual_seed(1)
    model = EnergyModel.from_config(config)
    dp = DeepPot(model, "cpu")
    rng = np.random.default_rng(0)
    coord = np.stack(np.meshgrid(*[np.arange(2)] * 3, indexing="ij"), -1).reshape(1, 8, 3) * 2.0
    coord = coord + rng.uniform(-0.2, 0.2, (2, 8, 3))
    cells = np.tile(np.eye(3).ravel() * 4.0, (2, 1))
    _, atomic, structural = dp.eval_embedding(coord, cells, np.zeros(8, int), dtype="fp64")
    np.testing.assert_allclose(structural, atomic.sum(axis=1), rtol=1e-14)
    output = model.fitting.nets.layers[-1]
    with torch.no_grad():
        matrix, bias = output.matrix[0].numpy(), output.bias[0, 0].numpy()
    energy = dp.eval(coord, cells, np.zeros(8, int))[0][:, 0]
    atom_bias = float(model.fitting.bias_atom_e[0] + model.fitting.out_bias[0])
    np.testing.assert_allclose(structural @ matrix + 8 * (bias + atom_bias), energy[:, None], rtol=1e-12)
