"""`MDState`: what moves during a run, resident on one device, and the observables computed from it.

Positions stay unwrapped (continuous in time): the skin neighbour list measures displacements from them, and
wrapping happens only when frames are written. One system per state (no batch of replicas).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from deeppot.md.units import BAR, KB, MVV2E

__all__ = ["MDState", "Thermo", "kinetic_energy", "kinetic_tensor", "maxwell_boltzmann", "thermo", "volume"]


@dataclass
class MDState:
    """Positions, velocities and the potential's outputs of one system, float64 on the device.

    positions (N, 3) Å unwrapped; velocities (N, 3) Å/fs; forces (N, 3) eV/Å; energy () eV; virial (3, 3) eV
    (DeePMD's sign: pressure = (2 K + tr W) / 3V); masses (N,) amu; atype (N,) int64 model types; cell (3, 3) Å rows
    or None without periodic boundaries; step: steps done (host int); generator: the noise of the stochastic
    thermostats and barostats (a torch.Generator on the device, so seeded runs repeat).
    """

    positions: Tensor
    velocities: Tensor
    forces: Tensor
    energy: Tensor
    virial: Tensor
    masses: Tensor
    atype: Tensor
    cell: Tensor | None
    symbols: list[str]
    generator: torch.Generator
    step: int = 0

    # what a step changes (with `step` and the generator)
    MOVING: ClassVar[tuple[str, ...]] = ("positions", "velocities", "forces", "energy", "virial", "cell")

    @property
    def natoms(self) -> int:
        return self.positions.shape[0]

    @property
    def device(self) -> torch.device:
        return self.positions.device

    def moving(self) -> dict[str, Tensor]:
        """The tensors a step replaces (steps never modify a tensor in place, so these stay valid)."""
        return {name: getattr(self, name) for name in self.MOVING if getattr(self, name) is not None}


@dataclass(frozen=True)
class Thermo:
    """Observables at one step, on the host: the columns of thermo.out."""

    step: int
    time_fs: float
    temperature: float  # K, 2 K / (dof kB)
    potential: float  # eV
    kinetic: float  # eV
    pressure: float  # bar (nan without a cell)
    volume: float  # Å^3 (nan without a cell)

    @property
    def total(self) -> float:
        return self.potential + self.kinetic


def kinetic_tensor(masses: Tensor, velocities: Tensor) -> Tensor:
    """sum_i m_i v_i (x) v_i (3, 3) in eV (twice the kinetic energy tensor)."""
    return torch.einsum("i,ia,ib->ab", masses, velocities, velocities) * MVV2E


def kinetic_energy(masses: Tensor, velocities: Tensor) -> Tensor:
    """0.5 sum_i m_i v_i^2 () in eV."""
    return 0.5 * MVV2E * (masses[:, None] * velocities.square()).sum()


def volume(cell: Tensor) -> Tensor:
    return torch.linalg.det(cell).abs()


def pressure_tensor(state: MDState) -> Tensor:
    """(sum m v (x) v + W) / V (3, 3) in bar: the instantaneous pressure tensor (kinetic part included)."""
    return (kinetic_tensor(state.masses, state.velocities) + state.virial) / volume(state.cell) / BAR


def thermo(state: MDState, dof: int, dt: float) -> Thermo:
    """The observables of `state` read back to the host in one transfer (a host sync: call it at thermo steps)."""
    kin = kinetic_energy(state.masses, state.velocities)
    nan = torch.full((), float("nan"), dtype=kin.dtype, device=kin.device)
    pres = nan if state.cell is None else torch.diagonal(pressure_tensor(state)).mean()
    vol = nan if state.cell is None else volume(state.cell)
    energy, kinetic, p, v = torch.stack([state.energy, kin, pres, vol]).tolist()
    return Thermo(state.step, state.step * dt, 2 * kinetic / (dof * KB), energy, kinetic, p, v)


def maxwell_boltzmann(masses: Tensor, temperature: float, generator: torch.Generator) -> Tensor:
    """Velocities (N, 3) Å/fs drawn at `temperature` K with zero total momentum, then rescaled so that the
    kinetic temperature over 3N - 3 degrees of freedom is exactly `temperature` (as LAMMPS' velocity create)."""
    n = masses.shape[0]
    sigma = torch.sqrt(KB * temperature / (masses * MVV2E))  # (N,) Å/fs
    noise = torch.randn(n, 3, generator=generator, dtype=masses.dtype, device=masses.device)
    v = remove_momentum(masses, noise * sigma[:, None])
    if temperature <= 0 or n < 2:
        return torch.zeros_like(v)
    current = 2 * kinetic_energy(masses, v) / ((3 * n - 3) * KB)
    return v * torch.sqrt(temperature / current)


def remove_momentum(masses: Tensor, velocities: Tensor) -> Tensor:
    """Velocities minus the centre-of-mass velocity (zero total momentum)."""
    com = (masses[:, None] * velocities).sum(0) / masses.sum()
    return velocities - com
