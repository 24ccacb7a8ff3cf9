"""NVT and NPT sample their ensembles: Bussi and Langevin give the canonical mean and variance of the kinetic
temperature; stochastic cell rescaling drives the mean pressure to the target. On the Lennard-Jones test
potential (32 argon atoms), so long runs stay cheap."""

from __future__ import annotations

import numpy as np
import pytest
from md_helpers import Recorder, argon, block_error

from deeppot import md
from deeppot.md.testing import LennardJones

T0 = 80.0  # K; argon near its triple point


def sample_temperature(integrator, steps: int, seed: int = 3) -> tuple[np.ndarray, int]:
    pot = LennardJones(rcut=5.2)
    atoms = argon()
    state = md.init(atoms, pot, temperature=2 * T0, seed=seed)  # start hot: the thermostat must do the work
    rec = Recorder()
    md.run(state, pot, integrator, steps, callbacks=[rec])
    return rec.column("temperature", skip=steps // 10), integrator.dof(len(atoms))


@pytest.mark.parametrize("integrator", [md.BussiNVT(dt=5.0, temperature=T0, tau=100.0),
                                        md.LangevinNVT(dt=5.0, temperature=T0, tau=200.0)], ids=["bussi", "langevin"])
def test_kinetic_temperature_is_canonical(integrator):
    """The kinetic energy of a canonical ensemble is Gamma-distributed: <T> = T0, var(T) = 2 T0^2 / Nf.

    Tolerances: the mean within 4 block-averaged standard errors (plus 1% for the time-step error); the relative
    std sqrt(Nf / 2) std(T) / T0 within 15% of 1 (with ~16000 samples correlated over ~50 steps, the estimate of
    the std itself scatters by ~5%)."""
    temps, dof = sample_temperature(integrator, steps=18000)
    mean, err = temps.mean(), block_error(temps)
    assert abs(mean - T0) < 4 * err + 0.01 * T0, f"<T> = {mean:.2f} +- {err:.2f} K, target {T0} K"
    ratio = temps.std() / (T0 * np.sqrt(2 / dof))
    assert abs(ratio - 1) < 0.15, f"std(T) = {temps.std():.2f} K is {ratio:.3f} x the canonical {T0 * np.sqrt(2 / dof):.2f} K"
