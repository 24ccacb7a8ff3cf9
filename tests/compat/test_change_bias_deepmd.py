"""`deeppot change-bias` against two computations that share no code with it: NumPy least squares on energies that
DeePMD-kit evaluates, and DeePMD-kit's own `change_out_bias` (its NumPy backend) on the same frames."""

from __future__ import annotations

import copy

import h5py
import numpy as np
import pytest
import torch
from compat.deepmd_ref import (
    SHARED_DATA,
    deepmd_build,
    deepmd_load,
    deepmd_save,
    model_section,
    randomize_model_dict,
)

from deeppot.cli.main import main
from deeppot.io import save_model
from deeppot.model import EnergyModel

pytest.importorskip("deepmd.dpmodel")

NFRAMES = 2  # frames per system (-n)
ALLOY = [f"alloy/valid/sys.{i:03d}" for i in range(4)]  # four compositions: the fit over 3 types is well posed


def systems_frames() -> list[dict[str, np.ndarray]]:
    """The first NFRAMES frames of each alloy validation system, read with NumPy."""
    out = []
    for name in ALLOY:
        path = SHARED_DATA / name
        if not path.is_dir():
            pytest.skip(f"{path} not available")
        atype = np.loadtxt(path / "type.raw", dtype=np.int64).reshape(-1)
        arrays = {key: np.load(path / "set.000" / f"{key}.npy")[:NFRAMES].astype(np.float64)
                  for key in ("coord", "box", "energy")}
        out.append({"coord": arrays["coord"].reshape(NFRAMES, -1, 3), "box": arrays["box"].reshape(NFRAMES, 9),
                     "energy": arrays["energy"].reshape(NFRAMES), "atype": atype})
    return out


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    """A small random alloy model with a far-off bias, as DeePMD-kit and deeppot both read it."""
    torch.manual_seed(0)
    section = model_section("alloy", neuron=[4, 8])
    model = EnergyModel.from_config(copy.deepcopy(section))
    with torch.no_grad():
        model.fitting.out_bias.copy_(torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64))
    path = tmp_path_factory.mktemp("model") / "model.dp"
    save_model(model, path)
    return path


def out_bias_in_file(path) -> np.ndarray:
    """The (ntypes,) energy out_bias of a .dp file, read through DeePMD-kit."""
    return np.asarray(deepmd_load(path).atomic_model.get_out_bias(), np.float64)[0, :, 0]


def counts(frames, ntypes: int) -> np.ndarray:
    return np.concatenate([np.tile(np.bincount(f["atype"], minlength=ntypes), (NFRAMES, 1)) for f in frames])


def run_change_bias(model_file, tmp_path, mode: str) -> np.ndarray:
    out = tmp_path / f"{mode}.dp"
    argv = ["change-bias", str(model_file), "-s", *(str(SHARED_DATA / n) for n in ALLOY), "-n", str(NFRAMES),
            "-m", mode, "-o", str(out), "--device", "cpu"]
    assert main(argv) == 0
    return out_bias_in_file(out)


def deepmd_sample(frames, ntypes: int) -> list[dict[str, np.ndarray]]:
    """DeePMD-kit's stat sample: one dict per system."""
    sample = []
    for f in frames:
        natoms = np.concatenate([[len(f["atype"])] * 2, np.bincount(f["atype"], minlength=ntypes)])
        sample.append({"coord": f["coord"].reshape(NFRAMES, -1), "atype": np.tile(f["atype"], (NFRAMES, 1)),
                       "box": f["box"], "energy": f["energy"][:, None], "natoms": np.tile(natoms, (NFRAMES, 1)),
                       "find_energy": np.float32(1.0)})
    return sample


@pytest.mark.parametrize("mode", ["change", "set"])
def test_matches_numpy_lstsq_and_deepmd(model_file, tmp_path, mode):
    frames = systems_frames()
    ours = run_change_bias(model_file, tmp_path, mode)
    dp_model = deepmd_load(model_file)
    old = out_bias_in_file(model_file)
    labels = np.concatenate([f["energy"] for f in frames])
    if mode == "change":
        predicted = np.concatenate([np.asarray(dp_model.call(f["coord"].reshape(NFRAMES, -1),
                                                             np.tile(f["atype"], (NFRAMES, 1)), f["box"])["energy"],
                                               np.float64).reshape(NFRAMES) for f in frames])
        delta, *_ = np.linalg.lstsq(counts(frames, 3).astype(np.float64), labels - predicted, rcond=None)
        expected = old + delta
    else:
        expected, *_ = np.linalg.lstsq(counts(frames, 3).astype(np.float64), labels, rcond=None)
    np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-8)
    assert np.abs(ours - old).max() > 1.0  # the bias really moved (the model's was far off)
    dp_model.atomic_model.change_out_bias(deepmd_sample(frames, 3),
                                          bias_adjust_mode=f"{mode}-by-statistic")
    theirs = np.asarray(dp_model.atomic_model.get_out_bias(), np.float64)[0, :, 0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-8)


def test_only_out_bias_changes(model_file, tmp_path):
    out = tmp_path / "user.dp"
    assert main(["change-bias", str(model_file), "-b", "-1.5", "-2.5", "-3.5", "-o", str(out)]) == 0
    np.testing.assert_array_equal(out_bias_in_file(out), [-1.5, -2.5, -3.5])
    with h5py.File(model_file) as a, h5py.File(out) as b:
        names = sorted(a.keys())
        assert names == sorted(b.keys())
        changed = [n for n in names if not np.array_equal(a[n][()], b[n][()])]
    assert len(changed) == 1  # the out_bias variable, nothing else


def test_deepmd_written_model(tmp_path):
    """A .dp file written by DeePMD-kit (its own weights, a non-zero fitting bias_atom_e as in TF-converted
    models): change mode adds the fit to out_bias only, and DeePMD-kit reads the result."""
    frames = systems_frames()
    section = model_section("alloy", neuron=[4, 8])
    model_dict = randomize_model_dict(deepmd_build(section).serialize(), seed=3)
    deepmd_save(tmp_path / "dp.dp", model_dict, section)
    ours = run_change_bias(tmp_path / "dp.dp", tmp_path, "change")
    dp_model = deepmd_load(tmp_path / "dp.dp")
    dp_model.atomic_model.change_out_bias(deepmd_sample(frames, 3), bias_adjust_mode="change-by-statistic")
    theirs = np.asarray(dp_model.atomic_model.get_out_bias(), np.float64)[0, :, 0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-8)
    before, after = deepmd_load(tmp_path / "dp.dp"), deepmd_load(tmp_path / "change.dp")
    np.testing.assert_array_equal(after.atomic_model.fitting_net.bias_atom_e,
                                  before.atomic_model.fitting_net.bias_atom_e)
    assert np.abs(before.atomic_model.fitting_net.bias_atom_e).max() > 0
