"""`DeepPot.eval_descriptor` (DeePMD-kit's): the fitting net's input, checked through the fitting net's output,
invariances, batching and dtypes (float64, CPU). DeePMD-kit's own descriptor: tests/compat/test_deep_pot_parity.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import make_model, random_system

from deeppot.infer import DeepPot, deep_pot

pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")


def frames(nframes: int = 3, natoms: int = 11, seed: int = 2):
    coord, atype, box = random_system(natoms=natoms, nframes=nframes, box_len=4.6, seed=seed)
    return coord.numpy(), box.numpy().reshape(nframes, 9), atype.numpy()


@pytest.mark.parametrize("type_one_side", [True, False])
@pytest.mark.parametrize("periodic", [True, False])
def test_the_fitting_net_of_the_descriptor_is_the_atomic_energy(type_one_side, periodic):
    model = make_model(type_one_side=type_one_side, seed=5)
    coord, cells, atype = frames()
    cells = cells if periodic else None
    dp = DeepPot(model, "cpu")
    desc = dp.eval_descriptor(coord, cells, atype)
    assert desc.shape == (3, 11, 16 * 4) and desc.dtype == np.float64
    atom_energy = dp.eval(coord, cells, atype, atomic=True)[3][..., 0]
    types = torch.as_tensor(np.tile(atype, (3, 1)))
    with torch.no_grad():
        from_desc = model.fitting(torch.as_tensor(desc), types, None).numpy()
    np.testing.assert_allclose(from_desc, atom_energy, rtol=1e-12, atol=1e-12)


def test_invariant_under_rotation_translation_and_permutation():
    dp = DeepPot(make_model(type_one_side=False, seed=7), "cpu")
    coord, cells, atype = frames(nframes=1, natoms=9, seed=8)
    desc = dp.eval_descriptor(coord, cells, atype)[0]
    rot = np.linalg.qr(np.random.default_rng(3).normal(size=(3, 3)))[0]
    perm = np.random.default_rng(1).permutation(9)
    rotated = dp.eval_descriptor(coord @ rot, (cells.reshape(3, 3) @ rot).reshape(1, 9), atype)[0]
    permuted = dp.eval_descriptor((coord[0] + 0.37)[perm][None], cells, atype[perm])[0]
    np.testing.assert_allclose(rotated, desc, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(permuted, desc[perm], rtol=1e-10, atol=1e-12)
    assert np.abs(desc).max() > 1e-5  # not trivially zero


def test_batches_of_frames_and_dtypes(monkeypatch):
    dp = DeepPot(make_model(seed=3), "cpu")
    coord, cells, atype = frames(nframes=4, seed=4)
    whole = dp.eval_descriptor(coord, cells, atype)
    monkeypatch.setattr(deep_pot, "DESCRIPTOR_BATCH_ATOMS", 11)  # one frame a batch
    np.testing.assert_array_equal(dp.eval_descriptor(coord, cells, atype), whole)
    fp32 = dp.eval_descriptor(coord, cells, atype, dtype="fp32")
    assert fp32.dtype == np.float32
    np.testing.assert_array_equal(fp32, whole.astype(np.float32))
    assert DeepPot(make_model(seed=3, precision="float32"), "cpu").eval_descriptor(coord, cells, atype).dtype \
        == np.float32  # native: the model's precision
    with pytest.raises(ValueError, match="dtype must be 'native', 'fp32' or 'fp64'"):
        dp.eval_descriptor(coord, cells, atype, dtype="float16")
    with pytest.raises(ValueError, match="atom type 5 of atom 0"):
        dp.eval_descriptor(coord, cells, np.where(np.arange(11) == 0, 5, atype))


def test_the_output_layer_of_the_last_hidden_layer_is_the_atomic_energy():
    model = make_model(type_one_side=False, seed=6)
    coord, cells, atype = frames(seed=5)
    dp = DeepPot(model, "cpu")
    hidden = dp.eval_fitting_last_layer(coord, cells, atype)
    assert hidden.shape == (3, 11, 16)
    atom_energy = dp.eval(coord, cells, atype, atomic=True)[3][..., 0]
    fitting = model.fitting
    with torch.no_grad():
        for t in range(fitting.ntypes):
            rows = hidden[:, atype == t]
            energy = fitting.nets.layers[-1].forward_one(torch.as_tensor(rows), t)[..., 0].numpy()
            bias = float(fitting.bias_atom_e[t] + fitting.out_bias[t])
            np.testing.assert_allclose(energy + bias, atom_energy[:, atype == t], rtol=1e-12, atol=1e-12)
