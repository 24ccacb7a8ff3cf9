"""Forces and virial against finite differences of the energy (float64)."""

from __future__ import annotations

import pytest
import torch
from helpers import make_model, random_system


def energy(model, coord, atype, box):
    return model(coord, atype, box)["energy"]


@pytest.mark.parametrize("type_one_side", [True, False])
def test_forces_equal_central_differences(type_one_side):
    model = make_model(type_one_side=type_one_side)
    coord, atype, box = random_system(natoms=10, box_len=4.5)  # box smaller than 2 rcut: images matter
    force = model(coord, atype, box)["force"]
    h = 1e-5
    fd = torch.zeros_like(force)
    for i in range(coord.shape[1]):
        for a in range(3):
            plus, minus = coord.clone(), coord.clone()
            plus[0, i, a] += h
            minus[0, i, a] -= h
            fd[0, i, a] = -(energy(model, plus, atype, box) - energy(model, minus, atype, box))[0] / (2 * h)
    rel = (force - fd).norm() / fd.norm()
    assert rel < 1e-6, rel


@pytest.mark.parametrize("type_one_side", [True, False])
def test_virial_equals_strain_derivative(type_one_side):
    """Deform x -> x (I + eps) and box -> box (I + eps); then virial[b, a] = -dE/d eps[a, b] (spec App. B.5)."""
    model = make_model(type_one_side=type_one_side, seed=3)
    coord, atype, box = random_system(natoms=10, box_len=4.5, seed=4)
    virial = model(coord, atype, box)["virial"].reshape(3, 3)
    h = 1e-5
    fd = torch.zeros(3, 3, dtype=torch.float64)
    for a in range(3):
        for b in range(3):
            e = []
            for sign in (1, -1):
                strain = torch.eye(3, dtype=torch.float64)
                strain[a, b] += sign * h
                e.append(energy(model, coord @ strain, atype, box @ strain)[0])
            fd[b, a] = -(e[0] - e[1]) / (2 * h)
    assert (virial - fd).norm() / fd.norm() < 1e-6
    assert torch.allclose(virial, virial.T, atol=1e-9 * virial.abs().max().item())  # rotation-invariant model


def test_atomic_outputs_sum_to_totals():
    model = make_model(type_one_side=False)
    coord, atype, box = random_system(natoms=10, box_len=4.5, nframes=2)
    out = model(coord, atype, box, do_atomic_virial=True)
    torch.testing.assert_close(out["atom_energy"].sum(-1), out["energy"])
    torch.testing.assert_close(out["atom_virial"].sum(1), out["virial"])
    torch.testing.assert_close(out["force"].sum(1), torch.zeros(2, 3, dtype=torch.float64), atol=1e-10, rtol=0)


def test_energy_and_forces_continuous_across_rcut():
    """Move one atom from just inside to just outside rcut of its only neighbour."""
    model = make_model()
    rcut = model.rcut
    atype = torch.tensor([0, 1, 1])
    results = []
    for r in (rcut - 1e-6, rcut + 1e-6):
        coord = torch.tensor([[[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [r, 0.0, 0.0]]], dtype=torch.float64)
        results.append(model(coord, atype, None))
    inside, outside = results
    assert abs(inside["energy"] - outside["energy"]).item() < 1e-9
    assert (inside["force"] - outside["force"]).abs().max().item() < 1e-7
    # and the atom really does interact further in: the test would not notice a model that ignores it
    coord = torch.tensor([[[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [rcut - 0.5, 0.0, 0.0]]], dtype=torch.float64)
    assert abs(model(coord, atype, None)["energy"] - outside["energy"]).item() > 1e-6
