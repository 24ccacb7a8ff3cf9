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
from deeppot.md.units import BAR, KB

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


def run_npt(p0: float, anisotropic: bool = False, steps: int = 8000, seed: int = 3,
            tau_p: float = 500.0) -> tuple[Recorder, md.MDState]:
    pot = LennardJones(rcut=5.2)  # the box stays above 2 rcut = 10.4 Å (minimum image)
    state = md.init(argon(), pot, temperature=T0, seed=seed)
    integrator = md.StochasticCellRescaling(md.BussiNVT(dt=5.0, temperature=T0, tau=100.0), pressure=p0, tau=tau_p,
                                            compressibility=1e-4, anisotropic=anisotropic)
    rec = Recorder(every=2)
    md.run(state, pot, integrator, steps, callbacks=[rec])
    return rec, state


def check_mean_pressure(rec: Recorder, p0: float) -> None:
    """The mean instantaneous pressure (kinetic + virial) is P0 in the isothermal-isobaric ensemble; tolerance:
    4 block-averaged standard errors (20-50 bar here)."""
    pressure = rec.column("pressure", skip=1000)
    assert abs(pressure.mean() - p0) < 4 * block_error(pressure), (
        f"<P> = {pressure.mean():.1f} +- {block_error(pressure):.1f} bar, target {p0} bar")


def test_isotropic_cell_rescaling_reaches_the_target_pressure():
    """Started far from P0 = 1 kbar, the barostat expands the cell and the mean pressure reaches P0."""
    rec, state = run_npt(1000.0)
    assert rec.rows[0].pressure > 1500  # far from the target at the start
    check_mean_pressure(rec, 1000.0)
    assert rec.column("volume", skip=1000).mean() > 1.1 * rec.rows[0].volume  # the cell expanded
    cell = state.cell.numpy()
    assert np.allclose(cell, np.eye(3) * cell[0, 0], rtol=1e-12)  # the cube stays a cube


@pytest.mark.slow
def test_volume_fluctuations_give_the_compressibility():
    """In the isothermal-isobaric ensemble <dV^2> / (kT <V>) = -(1/<V>) d<V>/dP exactly: the volume fluctuations at
    1000 bar against the response between 700 and 1300 bar (tau_p = 100 fs for quick decorrelation; 30000 steps
    a run give each side to ~5%; tolerance 20%: a barostat noise variance off by a factor 2 breaks it)."""
    volumes = {}
    for p0 in (700.0, 1000.0, 1300.0):
        rec, _ = run_npt(p0, steps=30000, tau_p=100.0)
        check_mean_pressure(rec, p0)
        volumes[p0] = rec.column("volume", skip=500)
    v = volumes[1000.0]
    fluctuation = v.var() / (KB * T0 * v.mean()) * BAR  # 1/bar
    response = (volumes[700.0].mean() - volumes[1300.0].mean()) / (600.0 * v.mean())
    assert abs(fluctuation / response - 1) < 0.2, f"compressibility {fluctuation:.3g} vs {response:.3g} /bar"


def test_anisotropic_cell_rescaling_reaches_the_target_pressure():
    """x, y, z move on their own and the mean pressure reaches P0; the cell stays orthorhombic."""
    rec, state = run_npt(1000.0, anisotropic=True)
    check_mean_pressure(rec, 1000.0)
    cell = state.cell.numpy()
    assert np.allclose(cell, np.diag(np.diag(cell)))
    assert np.ptp(np.diag(cell)) > 1e-3  # the lengths did move independently


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
