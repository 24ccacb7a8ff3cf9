"""The ASE calculator on a GPU (skipped without CUDA): by default it keeps a skin neighbour list and replays each
call between builds from a CUDA graph (`deeppot.md.step_graph.ComputeGraph`); along an ASE trajectory with
rebuilds it gives what a fresh list in every call gives."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("ase")

from ase import units
from ase.md.verlet import VelocityVerlet
from helpers import make_model
from md_helpers import water_like

from deeppot.calculator import DP
from deeppot.infer import DeepPot

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_default_calculator_replays_a_graph_on_a_kept_list(precision):
    dp = DeepPot(make_model(sel=(24, 24), rcut=4.0, resnet_dt=False, precision=precision), device="cuda")
    atoms = water_like(natoms=48)
    atoms.calc = DP(dp)  # skin "auto": a kept list of 2 Å on the GPU
    fresh = DP(dp, skin=None)
    rng = np.random.default_rng(0)
    atoms.set_momenta(rng.normal(scale=0.3, size=(len(atoms), 3)))
    dyn = VelocityVerlet(atoms, timestep=2.0 * units.fs)  # hot and fast: rebuilds within 40 steps
    tol = {"float64": (1e-10, 1e-12), "float32": (2e-5, 1e-5)}[precision]
    for _ in range(8):
        dyn.run(5)
        forces, energy = atoms.get_forces(), atoms.get_potential_energy()
        np.testing.assert_allclose(energy, fresh.get_potential_energy(atoms), rtol=tol[0])
        np.testing.assert_allclose(forces, fresh.get_forces(atoms), rtol=tol[0], atol=tol[1])
        np.testing.assert_allclose(atoms.get_stress(), fresh.get_stress(atoms), rtol=tol[0], atol=tol[1])
    pot, graph = atoms.calc.potential, atoms.calc.graph
    assert pot.graphed is not None and pot.graphed.captures == 1  # the evaluation of rebuild calls
    assert graph is not None and graph.valid(pot) and graph.replays > 20  # the calls between builds
    assert 1 < pot.rebuilds < pot.evaluations
