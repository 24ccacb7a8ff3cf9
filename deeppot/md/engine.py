"""The MD loop: `init` a state from ASE atoms and a potential, `run` an integrator for some steps with callbacks.

    state = md.init(atoms, potential, temperature=300, seed=1)
    md.run(state, potential, md.BussiNVT(dt=0.5, temperature=300), steps=1000,
           callbacks=[md.ThermoWriter("thermo.out", every=100)])

Host syncs. The loop never reads a device value back per step. The neighbour list is updated without a build
step after step while a flag, OR-ed on the device, records whether any step needed a rebuild (an atom moved more
than skin / 2); the flag is read at the end of each segment of steps. If it is set, the segment is undone (the
state and the generator state were copied at its start) and run again checking the list every step, so the result
is exactly that of a loop that checks every step, rebuilds included. The segment length adapts (doubling after a
clean segment, halving after a replay, at most `max_interval`) and segments also end at every callback step,
where the thermo values are read once for all callbacks.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import torch
from ase import Atoms

from deeppot.md.integrators import VelocityVerlet
from deeppot.md.potential import Potential, atom_types
from deeppot.md.state import MDState, Thermo, kinetic_energy, maxwell_boltzmann, remove_momentum, thermo
from deeppot.md.units import FS, KB

__all__ = ["Callback", "MDError", "init", "run"]

log = logging.getLogger(__name__)


class MDError(RuntimeError):
    """The dynamics went wrong (NaN energy, exploding temperature): the run stops, earlier restart files stay."""


class Callback(Protocol):
    every: int  # called after steps that are multiples of `every` (and at the start of `run` when step % every == 0)

    def __call__(self, state: MDState, thermo: Thermo) -> None: ...


def init(atoms: Atoms, potential: Potential, temperature: float | None = None, seed: int = 0) -> MDState:
    """A state on the potential's device from ASE atoms: float64 positions, masses (ASE's, i.e.
    ase.data.atomic_masses unless set), the cell when any direction is periodic; velocities from the atoms when
    they have any, else Maxwell-Boltzmann at `temperature` K (zero if None), with zero total momentum; forces
    computed (a neighbour-list build). `seed` seeds the state's generator (velocities and all later noise)."""
    device = potential.device
    f64 = {"dtype": torch.float64, "device": device}
    generator = torch.Generator(device=device).manual_seed(seed)
    masses = torch.tensor(atoms.get_masses(), **f64)
    given = atoms.get_velocities()
    if given is not None and np.abs(given).max(initial=0) > 0:
        velocities = remove_momentum(masses, torch.tensor(given * FS, **f64))  # ASE velocity -> Å/fs
    else:
        velocities = maxwell_boltzmann(masses, temperature or 0.0, generator)
    cell = torch.tensor(atoms.cell.array, **f64) if atoms.pbc.any() else None
    zeros = torch.zeros(len(atoms), 3, **f64)
    symbols = atoms.get_chemical_symbols()
    atype = atom_types(symbols, potential.type_map).to(device)
    state = MDState(torch.tensor(atoms.positions, **f64), velocities, zeros, zeros.new_zeros(()),
                    zeros.new_zeros(3, 3), masses, atype, cell, symbols, generator)
    evaluate(potential, state, rebuild=True)
    return state


def evaluate(potential: Potential, state: MDState, rebuild: bool) -> None:
    state.energy, state.forces, state.virial = potential.compute(state.positions, state.cell, rebuild)


class Stepper:
    """Runs segments of steps with sync-free neighbour updates, replaying a segment that needed a rebuild."""

    def __init__(self, potential: Potential, interval: int = 4, max_interval: int = 100) -> None:
        self.potential, self.interval, self.max_interval = potential, interval, max_interval
        self.replays = 0  # segments run twice

    def advance(self, state: MDState, integrator: VelocityVerlet, stop: int) -> None:
        """Steps up to step `stop`, with results equal to checking the neighbour list at every step."""
        saved = state.snapshot()
        flag = torch.zeros((), dtype=torch.bool, device=state.device)

        def optimistic(s: MDState) -> None:
            nonlocal flag
            flag = flag | self.potential.stale(s.positions, s.cell)
            evaluate(self.potential, s, rebuild=False)

        self._steps(state, integrator, stop, optimistic)
        if not bool(flag):  # the one host read of the segment
            self.interval = min(2 * self.interval, self.max_interval)
            return
        state.restore(saved)
        self.replays += 1
        self.interval = max(1, self.interval // 2)
        self._steps(state, integrator, stop, self.checked)

    def checked(self, state: MDState) -> None:
        evaluate(self.potential, state, rebuild=bool(self.potential.stale(state.positions, state.cell)))

    @staticmethod
    def _steps(state: MDState, integrator: VelocityVerlet, stop: int, compute) -> None:
        while state.step < stop:
            integrator.step(state, compute)
            state.step += 1


def run(state: MDState, potential: Potential, integrator: VelocityVerlet, steps: int,
        callbacks: Sequence[Callback] = (), max_temperature: float | None = None,
        stepper: Stepper | None = None) -> MDState:
    """Advance `state` (in place) by `steps` steps of `integrator`, calling each callback every `cb.every` steps.

    max_temperature K: stop with MDError above it (default: 10x the thermostat's temperature, at least 5000 K);
    a non-finite energy or temperature stops the run too. Checked at every host sync (segment ends).
    """
    stepper = stepper or Stepper(potential)
    limit = max_temperature or max(10 * getattr(integrator, "temperature", 0.0), 5000.0)
    dof, end = integrator.dof(state.natoms), state.step + steps
    _call(callbacks, state, dof, integrator.dt, start=True)
    while state.step < end:
        stop = min(end, state.step + stepper.interval, *(_next_multiple(state.step, cb.every) for cb in callbacks))
        stepper.advance(state, integrator, stop)
        check_health(state, dof, limit)
        _call(callbacks, state, dof, integrator.dt)
    return state


def _next_multiple(step: int, every: int) -> int:
    return (step // every + 1) * every


def _call(callbacks: Sequence[Callback], state: MDState, dof: int, dt: float, start: bool = False) -> None:
    due = [cb for cb in callbacks if state.step % cb.every == 0 and (not start or getattr(cb, "at_start", True))]
    if due:
        values = thermo(state, dof, dt)
        for cb in due:
            cb(state, values)


def check_health(state: MDState, dof: int, max_temperature: float) -> None:
    """MDError when the energy or kinetic energy is not finite or the temperature exceeds the limit (a host sync)."""
    energy, kinetic = torch.stack([state.energy, kinetic_energy(state.masses, state.velocities)]).tolist()
    temperature = 2 * kinetic / (dof * KB)
    if not (math.isfinite(energy) and math.isfinite(temperature)):
        raise MDError(f"step {state.step}: the energy ({energy}) or temperature ({temperature}) is not finite; "
                      f"atoms too close, a time step too large or a model outside its data")
    if temperature > max_temperature:
        raise MDError(f"step {state.step}: the temperature {temperature:.4g} K exceeds {max_temperature:.4g} K; "
                      f"the dynamics is exploding (time step too large, or atoms too close)")
