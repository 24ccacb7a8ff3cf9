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


INTEGRATORS = {
    "bussi": lambda: md.BussiNVT(dt=0.5, temperature=300.0, tau=20.0),
    "langevin": lambda: md.LangevinNVT(dt=0.5, temperature=300.0, tau=20.0),
    "npt": lambda: md.StochasticCellRescaling(md.BussiNVT(dt=0.5, temperature=300.0, tau=20.0), pressure=1e4,
                                              tau=50.0, anisotropic=True),
}


def run_variant(model, integrator, graph: bool, step_graphs: bool, late: bool = False):
    atoms = water_like()
    pot = md.DeepPotential.for_atoms([model], atoms, 0.5, "cuda")
    pot.graphed = pot._graphed(graph)
    pot.step_graphs = step_graphs
    state = md.init(atoms, pot, temperature=300.0, seed=3)
    stepper = md.Stepper(pot)
    if late:  # segments that overrun their rebuild: cut back and replayed
        stepper.next_stop = lambda step: step + 25
    md.run(state, pot, INTEGRATORS[integrator](), 80, stepper=stepper)
    return state, pot, stepper


@pytest.mark.parametrize("integrator", sorted(INTEGRATORS))
def test_graphed_md_equals_eager_md(integrator):
    """The evaluation replayed from one CUDA graph across the run's builds (extended atoms padded to the capture's
    room), and the whole step replayed from a graph captured after each build (thermostat noise included), give the
    eager run's trajectory (whose fitting nets run on their type's atoms, by lists kept across the run; the graphs
    run every net on every atom); also when segments overrun a rebuild and go back."""
    model = make_model(sel=(24, 24), rcut=4.0, resnet_dt=False)
    eager, eager_pot, _ = run_variant(model, integrator, graph=False, step_graphs=False)
    assert eager_pot.rebuilds > 2
    assert len(eager_pot.type_rows) == 1  # each type's atoms found once, for every step's neighbour data
    for graph, step_graphs, late in [(True, False, False), (True, True, False), (True, True, True)]:
        state, pot, stepper = run_variant(model, integrator, graph, step_graphs, late)
        for key in ("positions", "velocities", "energy", "cell"):
            torch.testing.assert_close(getattr(state, key), getattr(eager, key), rtol=1e-10, atol=1e-9, msg=key)
        assert pot.rebuilds == eager_pot.rebuilds
        assert (stepper.graph is not None) == step_graphs
        assert stepper.replays > 0 or not late
        # a capture per allocation of the skin list's buffers, which the builds refill: one, or two where the NPT
        # run's compressed box needed more room
        assert pot.nlist.generation <= (2 if integrator == "npt" else 1)
        if step_graphs:
            assert stepper.captures == pot.nlist.generation
        else:
            assert pot.graphed.captures <= pot.nlist.generation


def test_graphed_md_by_type_equals_eager_md(monkeypatch):
    """The graphs with each fitting net on its own type's atoms (index lists made before the captures, kept across
    the run's builds) give the eager run's trajectory."""
    from deeppot.infer import graph as graph_module

    monkeypatch.setattr(graph_module, "BY_TYPE_MIN_CENTRES", 0)
    model = make_model(sel=(24, 24), rcut=4.0, resnet_dt=False)
    eager, _, _ = run_variant(model, "bussi", graph=False, step_graphs=False)
    for step_graphs in (False, True):
        state, pot, _ = run_variant(model, "bussi", True, step_graphs)
        assert pot.graphed.by_type(pot.flat)
        for key in ("positions", "velocities", "energy", "cell"):
            torch.testing.assert_close(getattr(state, key), getattr(eager, key), rtol=1e-10, atol=1e-9, msg=key)


def test_deviation_after_graphed_steps_is_at_the_current_positions():
    """Model deviation reads the neighbour data of the last step: after graph replays (and eager rebuild steps in
    between) it must be that of the current positions, as a fresh eager potential computes it there."""
    models = [make_model(seed=k, sel=(24, 24), rcut=4.0, resnet_dt=False) for k in (0, 1)]
    atoms = water_like()
    pot = md.DeepPotential.for_atoms(models, atoms, 0.5, "cuda")
    state = md.init(atoms, pot, temperature=300.0, seed=3)
    stepper = md.Stepper(pot)
    md.run(state, pot, md.BussiNVT(dt=0.5, temperature=300.0, tau=20.0), 60, stepper=stepper)
    assert stepper.graph is not None and pot.rebuilds > 2
    fresh = md.DeepPotential.for_atoms(models, atoms, 0.5, "cuda", graph=False)
    fresh.compute(state.positions.clone(), state.cell.clone(), rebuild=True)
    torch.testing.assert_close(torch.as_tensor(pot.deviation()), torch.as_tensor(fresh.deviation()), rtol=1e-8,
                               atol=1e-10)


@pytest.mark.parametrize("graph", [False, True])
def test_tf32_md_stays_near_float32_md(graph):
    """tf32=True reaches the MD step (eager, and captured in the step's CUDA graph): NVE from one start with a
    float32 model, the trajectory differs from the float32 one by TF32's rounding only."""
    model = make_model(sel=(24, 24), rcut=4.0, resnet_dt=False, precision="float32")
    runs, start = {}, None
    for tf32 in (False, True):
        atoms = water_like()
        pot = md.DeepPotential.for_atoms([model], atoms, 0.5, "cuda", graph=graph, tf32=tf32)
        state = md.init(atoms, pot, temperature=300.0, seed=3)
        start = state.velocities.clone() if start is None else start
        state.velocities = start.clone()
        md.run(state, pot, md.VelocityVerlet(dt=0.5), 40)
        runs[tf32] = state
        assert pot.evaluators[0].tf32 == tf32 and pot.step_graphs == graph
    assert torch.backends.cuda.matmul.allow_tf32 is False
    shift = (runs[True].positions - runs[False].positions).abs().max()
    assert 0 < shift < 1e-3, float(shift)
    torch.testing.assert_close(runs[True].energy, runs[False].energy, rtol=1e-3, atol=1e-4)
