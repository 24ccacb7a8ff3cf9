"""Integrators: velocity Verlet (NVE), with the Bussi or a Langevin thermostat (NVT), and with stochastic cell
rescaling (NPT). Each is a small object with `dt` (fs), `dof(natoms)` and `step(state, compute)`, where
`compute(state)` refreshes state.forces / energy / virial at the current positions and cell.

Every operation stays on the device and draws its noise from `state.generator`; nothing is read back to the host.
Symbols: v velocities (Å/fs), F forces (eV/Å), m masses (amu), kT in eV, MVV2E = 1 amu Å^2/fs^2 in eV, so the
acceleration is F / (m MVV2E) in Å/fs^2.

References:
- G. Bussi, D. Donadio, M. Parrinello, J. Chem. Phys. 126, 014101 (2007): stochastic velocity rescaling.
- B. Leimkuhler, C. Matthews, Appl. Math. Res. Express 2013, 34 (2013): the BAOAB splitting of Langevin dynamics.
- M. Bernetti, G. Bussi, J. Chem. Phys. 153, 114107 (2020): stochastic cell rescaling (the first-order "Euler"
  scheme of the paper's SimpleMD/GROMACS implementation).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from deeppot.md.state import MDState, kinetic_energy, pressure_tensor, volume
from deeppot.md.units import BAR, KB, MVV2E

__all__ = ["BussiNVT", "LangevinNVT", "StochasticCellRescaling", "VelocityVerlet"]

Compute = Callable[[MDState], None]


def kick(state: MDState, dt: float) -> None:
    """v += dt F / m (dt in fs)."""
    state.velocities = state.velocities + state.forces * (dt / MVV2E) / state.masses[:, None]


def drift(state: MDState, dt: float) -> None:
    """x += dt v."""
    state.positions = state.positions + dt * state.velocities


class VelocityVerlet:
    """NVE: half kick, drift, forces, half kick (symplectic, time-reversible). dt in fs."""

    name = "nve"
    conserves_momentum = True

    def __init__(self, dt: float) -> None:
        if not dt > 0:
            raise ValueError(f"the time step must be positive, got {dt} fs")
        self.dt = float(dt)

    def dof(self, natoms: int) -> int:
        """Degrees of freedom of the kinetic temperature: 3N - 3 (total momentum is zero and conserved)."""
        return max(3 * natoms - 3, 1) if self.conserves_momentum else 3 * natoms

    def verlet(self, state: MDState, compute: Compute) -> None:
        kick(state, self.dt / 2)
        drift(state, self.dt)
        compute(state)
        kick(state, self.dt / 2)

    def step(self, state: MDState, compute: Compute) -> None:
        self.verlet(state, compute)

    def settings(self) -> dict:
        return {"ensemble": self.name, "dt": self.dt}


class BussiNVT(VelocityVerlet):
    """NVT with stochastic velocity rescaling (Bussi, Donadio, Parrinello 2007): the thermostat acts for dt/2 before
    and after the velocity Verlet step, rescaling all velocities by one factor so that the kinetic energy K follows

        dK = (K0 - K) dt / tau + 2 sqrt(K K0 / Nf) dW / sqrt(tau),      K0 = Nf kT / 2,

    integrated exactly (the resampling formula of the paper's appendix; the chi-square variable is a sum of Nf - 1
    squared normals drawn on the device). The total momentum stays zero, so Nf = 3N - 3.
    """

    name = "nvt-bussi"

    def __init__(self, dt: float, temperature: float, tau: float = 100.0) -> None:
        super().__init__(dt)
        if not temperature >= 0 or not tau > 0:
            raise ValueError(f"need temperature >= 0 K and tau > 0 fs, got {temperature} K and {tau} fs")
        self.temperature, self.tau = float(temperature), float(tau)

    def rescale(self, state: MDState, dt: float) -> None:
        nf = self.dof(state.natoms)
        kin = kinetic_energy(state.masses, state.velocities)
        target = 0.5 * nf * KB * self.temperature  # K0
        c = math.exp(-dt / self.tau)
        noise = torch.randn(nf, generator=state.generator, dtype=kin.dtype, device=kin.device)
        r1, rest = noise[0], noise[1:].square().sum()
        new = (kin + (1 - c) * (target * (rest + r1 * r1) / nf - kin)
               + 2 * r1 * torch.sqrt(kin * target / nf * (1 - c) * c))
        alpha = torch.sqrt(new.clamp(min=0) / kin.clamp(min=torch.finfo(kin.dtype).tiny))
        state.velocities = state.velocities * alpha

    def step(self, state: MDState, compute: Compute) -> None:
        self.rescale(state, self.dt / 2)
        self.verlet(state, compute)
        self.rescale(state, self.dt / 2)

    def settings(self) -> dict:
        return {**super().settings(), "temperature": self.temperature, "tau": self.tau}


class LangevinNVT(VelocityVerlet):
    """NVT with Langevin dynamics, BAOAB splitting (Leimkuhler & Matthews 2013): half kick (B), half drift (A), the
    exact Ornstein-Uhlenbeck step of the friction and noise (O)

        v <- c v + sqrt((1 - c^2) kT / m) xi,      c = exp(-dt / tau),

    half drift, forces, half kick. Configurations are sampled with O(dt^2) error (exact for harmonic systems).
    The noise acts on each atom alone, so the total momentum is not conserved: Nf = 3N.
    """

    name = "nvt-langevin"
    conserves_momentum = False

    def __init__(self, dt: float, temperature: float, tau: float = 100.0) -> None:
        super().__init__(dt)
        if not temperature >= 0 or not tau > 0:
            raise ValueError(f"need temperature >= 0 K and tau > 0 fs, got {temperature} K and {tau} fs")
        self.temperature, self.tau = float(temperature), float(tau)

    def ornstein_uhlenbeck(self, state: MDState) -> None:
        c = math.exp(-self.dt / self.tau)
        sigma = torch.sqrt((1 - c * c) * KB * self.temperature / (state.masses * MVV2E))  # (N,) Å/fs
        xi = torch.randn(state.velocities.shape, generator=state.generator, dtype=sigma.dtype, device=sigma.device)
        state.velocities = c * state.velocities + sigma[:, None] * xi

    def step(self, state: MDState, compute: Compute) -> None:
        kick(state, self.dt / 2)
        drift(state, self.dt / 2)
        self.ornstein_uhlenbeck(state)
        drift(state, self.dt / 2)
        compute(state)
        kick(state, self.dt / 2)

    def settings(self) -> dict:
        return {**super().settings(), "temperature": self.temperature, "tau": self.tau}


class StochasticCellRescaling:
    """NPT: stochastic cell rescaling (Bernetti & Bussi 2020) before each step of a thermostatted integrator.

    Isotropic: eps = log V moves by  d eps = -(beta / tau_p)(P0 - P) dt + sqrt(2 kT beta dt / (V tau_p)) xi
    and positions and cell scale by mu = exp(d eps / 3), velocities by 1 / mu. Anisotropic: each Cartesian
    direction a (the cell's x, y, z components; no shear) moves on its own with P_aa in place of P and a third of
    the drift and noise variance: d eps_a = -(beta / 3 tau_p)(P0 - P_aa) dt + sqrt(2 kT beta dt / (3 V tau_p)) xi_a.
    P is the instantaneous pressure (kinetic part from the current velocities, virial of the last forces); beta
    the isothermal compressibility (1/bar; it sets only the relaxation speed), tau_p in fs, P0 in bar. The
    first-order (Euler) form of the paper's SimpleMD and GROMACS code: the forces are not recomputed after the
    scaling, an error of the order of the strain per step.
    """

    def __init__(self, thermostat: BussiNVT | LangevinNVT, pressure: float, tau: float = 1000.0,
                 compressibility: float = 4.5e-5, anisotropic: bool = False) -> None:
        if not tau > 0 or not compressibility > 0:
            raise ValueError(f"need tau_p > 0 fs and compressibility > 0 /bar, got {tau} and {compressibility}")
        self.thermostat, self.pressure, self.tau = thermostat, float(pressure), float(tau)
        self.compressibility, self.anisotropic = float(compressibility), anisotropic
        self.dt, self.temperature = thermostat.dt, thermostat.temperature
        self.name = f"npt-{'aniso' if anisotropic else 'iso'}-{thermostat.name.split('-')[1]}"

    def dof(self, natoms: int) -> int:
        return self.thermostat.dof(natoms)

    def log_strain(self, state: MDState) -> Tensor:
        """d eps (3,): the change of log of each cell length (isotropic: all three equal, d log V / 3)."""
        if state.cell is None:
            raise ValueError("NPT needs a periodic cell")
        kt_over_v = KB * self.temperature / volume(state.cell) / BAR  # bar
        rate = self.compressibility * self.dt / self.tau
        p = torch.diagonal(pressure_tensor(state))  # (3,) bar
        if not self.anisotropic:
            xi = torch.randn((), generator=state.generator, dtype=p.dtype, device=p.device)
            deps = -rate * (self.pressure - p.mean()) + torch.sqrt(2 * kt_over_v * rate) * xi
            return (deps / 3).expand(3)
        xi = torch.randn(3, generator=state.generator, dtype=p.dtype, device=p.device)
        return -rate / 3 * (self.pressure - p) + torch.sqrt(2 * kt_over_v * rate / 3) * xi

    def rescale_cell(self, state: MDState) -> None:
        mu = torch.exp(self.log_strain(state))  # (3,) per Cartesian direction
        state.positions = state.positions * mu
        state.cell = state.cell * mu
        state.velocities = state.velocities / mu

    def step(self, state: MDState, compute: Compute) -> None:
        self.rescale_cell(state)
        self.thermostat.step(state, compute)

    def settings(self) -> dict:
        return {**self.thermostat.settings(), "ensemble": self.name, "pressure": self.pressure, "tau_p": self.tau,
                "compressibility": self.compressibility, "anisotropic": self.anisotropic}
