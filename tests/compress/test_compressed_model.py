"""Compressed against uncompressed models (float64): energies, forces and virials through every evaluation path."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from helpers import make_model, random_system

from deeppot.infer import DeepPot
from deeppot.model.env_mat import smooth_switch
from deeppot.nlist import build_neighbor_data

pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")

# (name, ntypes, type_one_side, sel, neuron, box_len, natoms): water-, copper- and alloy-like random systems
SYSTEMS = [
    ("water", 2, True, [32, 32], [8, 16, 32], 5.0, 24),
    ("copper", 1, True, [48], [6, 12, 24], 5.2, 20),
    ("alloy", 3, False, [20, 20, 20], [5, 10, 20], 5.4, 24),
]


def _pair(name, step=0.01, extrapolate=5.0, r_min_table=1.4, min_dist=0.85, seed=0):
    """An uncompressed model, its compressed copy and a system. The tables assume r_min = r_min_table while atoms
    come as close as min_dist, so some s lie beyond `upper` (second stride); neighbours reach rcut."""
    _, ntypes, one_side, sel, neuron, box_len, natoms = next(s for s in SYSTEMS if s[0] == name)
    model = make_model(seed=seed, resnet_dt=False, type_one_side=one_side, ntypes=ntypes, sel=sel, neuron=neuron)
    with torch.no_grad():  # a narrow radial spread, so that close pairs reach far into the table
        model.descriptor.dstd[..., 0] = 0.3
    compressed = copy.deepcopy(model)
    compressed.descriptor.enable_compression(r_min_table, step, extrapolate)
    coord, atype, box = random_system(natoms=natoms, ntypes=ntypes, box_len=box_len, nframes=2, seed=seed,
                                      min_dist=min_dist)
    return model, compressed, (coord, atype, box)


def _max_errors(ref, out, natoms):
    return {"energy/atom": ((out["energy"] - ref["energy"]).abs().max() / natoms).item(),
            "atom_energy": (out["atom_energy"] - ref["atom_energy"]).abs().max().item(),
            "force": (out["force"] - ref["force"]).abs().max().item(),
            "virial/atom": ((out["virial"] - ref["virial"]).abs().max() / natoms).item()}


def _s_values(model, coord, atype, box):
    """Normalised s of every real neighbour slot, with the table range of the net that embeds it (one-sided)."""
    d = model.descriptor
    nd = build_neighbor_data(coord, atype[None].expand(coord.shape[0], -1), box, d.rcut, d.sel)
    nloc = coord.shape[1]
    index = nd.nlist.clamp(min=0)
    centres = nd.ext_coord[:, :nloc]
    nb = torch.gather(nd.ext_coord, 1, index.reshape(index.shape[0], -1, 1).expand(-1, -1, 3)).reshape(
        *index.shape, 3)
    r = (nb - centres[:, :, None]).norm(dim=-1)
    rij = r[nd.nlist >= 0]
    ctype = atype[None, :, None].expand_as(nd.nlist)[nd.nlist >= 0]
    s = (smooth_switch(rij, d.rcut_smth, d.rcut) / rij - d.davg[ctype, 0, 0]) / d.dstd[ctype, 0, 0]
    return s, r[nd.nlist >= 0]


@pytest.mark.parametrize("name", [s[0] for s in SYSTEMS])
def test_compressed_equals_uncompressed_default_stride(name):
    model, compressed, (coord, atype, box) = _pair(name)
    s, r = _s_values(model, coord, atype, box)
    info = compressed.descriptor.tables.info_values[0]
    assert (s > info[1]).any(), "no neighbour in the second-stride region: the test would not cover it"
    assert (r > model.rcut - 0.3).any(), "no neighbour near rcut"
    ref, out = model(coord, atype, box), compressed(coord, atype, box)
    err = _max_errors(ref, out, coord.shape[1])
    print(name, err)
    assert err["energy/atom"] < 1e-7 and err["atom_energy"] < 1e-7, err
    assert err["force"] < 1e-6 and err["virial/atom"] < 1e-6, err


@pytest.mark.parametrize("name", [s[0] for s in SYSTEMS])
def test_finer_stride_is_tighter(name):
    model, compressed, (coord, atype, box) = _pair(name, step=0.002)
    err = _max_errors(model(coord, atype, box), compressed(coord, atype, box), coord.shape[1])
    print(name, err)
    assert err["atom_energy"] < 1e-10 and err["force"] < 1e-9, err


def test_tables_are_what_runs():
    """A 0.1 % change of one table moves the energy: the compressed model does not fall back to the nets."""
    model, compressed, (coord, atype, box) = _pair("water")
    with torch.no_grad():
        compressed.descriptor.tables.data_1.mul_(1.001)
    err = _max_errors(model(coord, atype, box), compressed(coord, atype, box), coord.shape[1])
    assert err["atom_energy"] > 1e-6, err


@pytest.mark.parametrize("name", ["water", "alloy"])
def test_paths_agree_on_compressed_models(name):
    """The hand-written derivative, autograd, forward_lower and DeepPot's evaluator give one compressed model."""
    _, compressed, (coord, atype, box) = _pair(name)
    ref = compressed(coord, atype, box)
    autograd = copy.deepcopy(compressed)
    autograd.analytic_forces = False
    nd = build_neighbor_data(coord, atype[None].expand(2, -1), box, compressed.rcut, compressed.sel)
    lower = compressed.forward_lower(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    dp = DeepPot(compressed, device="cpu", fused=False)
    e, f, v = dp.eval(coord.numpy(), box.numpy(), atype.numpy())[:3]
    for out in (autograd(coord, atype, box), lower):
        err = _max_errors(ref, out, coord.shape[1])
        assert max(err.values()) < 1e-12, err
    np.testing.assert_allclose(e.reshape(-1), ref["energy"].numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(f.reshape(2, -1, 3), ref["force"].numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(v.reshape(2, 9), ref["virial"].numpy(), rtol=0, atol=1e-10)


def test_forces_are_the_gradient_beyond_the_table():
    """Atoms so close that s passes extrapolate*upper (linear extrapolation): the forces equal the autograd path's
    and central finite differences of the energy."""
    _, compressed, (coord, atype, box) = _pair("water", extrapolate=1.05, r_min_table=2.5)
    coord, box = coord[:1], box[:1]
    s, _ = _s_values(compressed, coord, atype, box)
    assert (s > compressed.descriptor.tables.info_values[0][2]).any()
    force = compressed(coord, atype, box)["force"]
    autograd = copy.deepcopy(compressed)
    autograd.analytic_forces = False
    assert (autograd(coord, atype, box)["force"] - force).abs().max() < 1e-12
    eps = 1e-5
    for atom, axis in [(0, 0), (3, 1), (7, 2), (11, 0), (17, 1), (22, 2)]:
        shift = torch.zeros_like(coord)
        shift[0, atom, axis] = eps
        diff = compressed(coord + shift, atype, box)["energy"] - compressed(coord - shift, atype, box)["energy"]
        assert abs(-diff.item() / (2 * eps) - force[0, atom, axis].item()) < 1e-7
