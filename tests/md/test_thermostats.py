"""NVT and NPT sample their ensembles: Bussi and Langevin give the canonical mean and variance of the kinetic
temperature; stochastic cell rescaling drives the mean pressure to the target. On the Lennard-Jones test
potential (32 argon atoms), so long runs stay cheap."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from md_helpers import Recorder, argon, block_error

from deeppot import md
from deeppot.md.testing import LennardJones

T0 = 80.0  # K; argon near its triple point


def sample_temperature(integrator, steps: int, seed: int = 3) -> tuple[np.ndarray, int]:
    pot = LennardJones(rcut=5.2)
    atoms = argon()
    state = md.init(atoms, pot, temperature=2 * T0, seed=seed)  # start hot: the thermostat must do the work
    rec = Recorder(every=2)
    md.run(state, pot, integrator, steps, callbacks=[rec])
    return rec.column("temperature", skip=steps // 10), integrator.dof(len(atoms))


@pytest.mark.parametrize("integrator", [md.BussiNVT(dt=5.0, temperature=T0, tau=100.0),
                                        md.LangevinNVT(dt=5.0, temperature=T0, tau=200.0)], ids=["bussi", "langevin"])
def test_kinetic_temperature_is_canonical(integrator):
    """The kinetic energy of a canonical ensemble is Gamma-distributed: <T> = T0, var(T) = 2 T0^2 / Nf.

    Tolerances: the mean within 4 block-averaged standard errors (plus 1% for the time-step error); the relative
    std sqrt(Nf / 2) std(T) / T0 within 15% of 1 (4500 samples every 2 steps, correlated over ~20-40 steps:
    the estimate of the std itself scatters by ~5%)."""
    temps, dof = sample_temperature(integrator, steps=10000)
    mean, err = temps.mean(), block_error(temps)
    assert abs(mean - T0) < 4 * err + 0.01 * T0, f"<T> = {mean:.2f} +- {err:.2f} K, target {T0} K"
    ratio = temps.std() / (T0 * np.sqrt(2 / dof))
    assert abs(ratio - 1) < 0.15, f"std(T) = {temps.std():.2f} K is {ratio:.3f} x the canonical value"


@pytest.mark.parametrize("anisotropic", [False, True], ids=["iso", "aniso"])
def test_cell_rescaling_reaches_the_target_pressure(anisotropic):
    """Started at ~1.7 kbar, the barostat brings the mean instantaneous pressure (kinetic + virial) to P0 = 1 kbar,
    which is its exact NPT average; tolerance: 4 block-averaged standard errors (~20-50 bar). Runs of 40000 steps
    gave 1013 +- 18 and 992 +- 16 bar (iso, two seeds), 973 +- 21 bar (aniso)."""
    pot, p0 = LennardJones(rcut=5.2), 1000.0  # the box stays above 2 rcut = 10.4 Å (minimum image)
    state = md.init(argon(), pot, temperature=T0, seed=3)
    integrator = md.StochasticCellRescaling(md.BussiNVT(dt=5.0, temperature=T0, tau=100.0), pressure=p0, tau=500.0,
                                            compressibility=1e-4, anisotropic=anisotropic)
    rec = Recorder(every=2)
    md.run(state, pot, integrator, 8000, callbacks=[rec])
    pressure, volume = rec.column("pressure", skip=1000), rec.column("volume", skip=1000)
    assert rec.rows[0].pressure > 1500  # far from the target at the start
    assert volume.mean() > 1.1 * rec.rows[0].volume  # the cell expanded to relieve it
    assert abs(pressure.mean() - p0) < 4 * block_error(pressure), (
        f"<P> = {pressure.mean():.1f} +- {block_error(pressure):.1f} bar, target {p0} bar")
    cell = state.cell.numpy()
    assert np.allclose(cell, np.diag(np.diag(cell)))  # only x, y, z scale: the cube stays orthorhombic
    if not anisotropic:
        assert np.allclose(np.diag(cell), cell[0, 0], rtol=1e-12)


def test_lennard_jones_forces_and_virial_are_energy_derivatives():
    """The test potential's own check: forces = -dU/dx and virial = -dU/d(strain) by central differences."""
    pot = LennardJones(rcut=5.2)
    atoms = argon()
    atoms.rattle(0.2, seed=1)
    x = torch.tensor(atoms.positions)
    cell = torch.tensor(atoms.cell.array)
    _, forces, virial = pot.compute(x, cell, rebuild=False)
    h = 1e-5
    for i, a in [(0, 0), (5, 1), (17, 2)]:
        dx = torch.zeros_like(x)
        dx[i, a] = h
        numeric = -(pot.energy(x + dx, cell) - pot.energy(x - dx, cell)) / (2 * h)
        assert abs(float(forces[i, a] - numeric)) < 1e-7 * max(1.0, abs(float(numeric)))
    for a, b in [(0, 0), (1, 2), (2, 1)]:
        strain = torch.zeros(3, 3, dtype=torch.float64)
        strain[a, b] = h
        up, down = torch.eye(3, dtype=torch.float64) + strain, torch.eye(3, dtype=torch.float64) - strain
        numeric = -(pot.energy(x @ up, cell @ up) - pot.energy(x @ down, cell @ down)) / (2 * h)
        assert abs(float(virial[a, b] - numeric)) < 1e-7 * max(1.0, abs(float(numeric)))
