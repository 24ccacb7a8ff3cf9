"""MD on a GPU against the same run on the CPU (skipped without CUDA): positions and energy after NVE steps with
neighbour-list rebuilds, float64, fused kernels on the GPU."""

from __future__ import annotations

import pytest
import torch
from helpers import make_model
from md_helpers import water_like

from deeppot import md

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def test_gpu_nve_run_equals_cpu_run():
    model = make_model(sel=(24, 24), rcut=4.0, resnet_dt=False)  # resnet_dt False: the fused kernels run on CUDA
    states, rebuilds, start = {}, {}, None
    for device in ("cpu", "cuda"):
        atoms = water_like()
        pot = md.DeepPotential.for_atoms([model], atoms, 0.5, device)
        state = md.init(atoms, pot, temperature=300.0, seed=3)
        start = state.velocities.clone() if start is None else start  # the same start (generators differ)
        state.velocities = start.to(device)
        md.run(state, pot, md.VelocityVerlet(dt=0.5), 60)
        states[device], rebuilds[device] = state, pot.rebuilds
    cpu, gpu = states["cpu"], states["cuda"]
    assert pot.evaluators[0].fused
    assert rebuilds["cpu"] == rebuilds["cuda"] > 1
    torch.testing.assert_close(gpu.positions.cpu(), cpu.positions, rtol=0, atol=1e-9)
    torch.testing.assert_close(gpu.energy.cpu(), cpu.energy, rtol=1e-10, atol=1e-10)


def test_graphed_md_equals_eager_md():
    """The evaluation replayed from one CUDA graph across the run's neighbour-list builds (extended atoms padded to
    the capture's room) gives the eager run's trajectory."""
    model = make_model(sel=(24, 24), rcut=4.0, resnet_dt=False)
    states, pots = {}, {}
    for graph in (False, True):
        atoms = water_like()
        pot = md.DeepPotential.for_atoms([model], atoms, 0.5, "cuda")
        pot.graphed = pot._graphed(graph)
        state = md.init(atoms, pot, temperature=300.0, seed=3)
        md.run(state, pot, md.BussiNVT(dt=0.5, temperature=300.0, tau=20.0), 80)
        states[graph], pots[graph] = state, pot
    assert pots[True].graphed is not None and pots[False].graphed is None
    assert pots[True].rebuilds == pots[False].rebuilds > 2
    assert pots[True].graphed.captures <= 2  # not one per build
    torch.testing.assert_close(states[True].positions, states[False].positions, rtol=0, atol=1e-9)
    torch.testing.assert_close(states[True].energy, states[False].energy, rtol=1e-10, atol=1e-10)
