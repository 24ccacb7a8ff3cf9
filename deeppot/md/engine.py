"""The MD loop: `init` a state from ASE atoms and a potential, `run` an integrator for some steps with callbacks.

    state = md.init(atoms, potential, temperature=300, seed=1)
    md.run(state, potential, md.BussiNVT(dt=0.5, temperature=300), steps=1000,
           callbacks=[md.ThermoWriter("thermo.out", every=100)])

Host syncs. The loop never reads a device value back per step. The neighbour list is updated without a build
step after step while the device records the first step that needed a rebuild (an atom moved more than skin / 2)
and the state before it; that step number is read at the end of each segment of steps (`Stepper`). If there is
one, the run goes back to it and runs it again with a rebuild, so the result is exactly that of a loop that checks
every step, rebuilds included. Segments also end at every callback step, where the thermo values are read once
for all callbacks, and the energy and temperature are checked at every segment end.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import torch
from ase import Atoms
from torch import Tensor

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
    """Runs segments of steps with sync-free neighbour updates; a segment in which some step needed a rebuild is
    cut back to that step, which is run again with a rebuild.

    During a segment two things are tracked on the device: `first`, the first step whose neighbour data may be
    incomplete (-1: none), and a copy of the state before that step (`torch.where` on the moving tensors); the
    generator state before each step is kept on the host (no sync). One host read of `first` ends the segment.
    Segment lengths (`next_stop`) follow the last gap between rebuilds: one segment to 3/4 of the expected gap, then
    segments of 1/8 of it, so a rebuild costs about three reads and one step run twice; before the first gap is
    known, segments double from `interval`. At most `max_interval` steps a segment.
    """

    def __init__(self, potential: Potential, interval: int = 4, max_interval: int = 100) -> None:
        self.potential, self.interval, self.max_interval = potential, interval, max_interval
        self.host_reads = 0  # reads of `first`: one per segment
        self.replays = 0  # segments cut back to a step that needed a rebuild
        self.last_build: int | None = None
        self.gap: int | None = None  # steps between the last two rebuilds

    def next_stop(self, step: int) -> int:
        """Where the segment starting at `step` should end."""
        if self.gap is None:
            return step + self.interval
        quiet = self.last_build + (3 * self.gap) // 4  # a rebuild is unlikely before this step
        length = quiet - step if step < quiet else max(1, self.gap // 8)
        return step + min(length, self.max_interval)

    def advance(self, state: MDState, integrator: VelocityVerlet, stop: int) -> None:
        """Steps towards step `stop` (stopping early after a rebuild), with results equal to checking the neighbour
        list at every step."""
        start, rng = state.step, []
        first = torch.full((), -1, dtype=torch.int64, device=state.device)
        kept = state.moving()

        def optimistic(s: MDState) -> None:
            nonlocal first
            first = torch.where((first < 0) & self.potential.stale(s.positions, s.cell), s.step, first)
            evaluate(self.potential, s, rebuild=False)

        while state.step < stop:
            fresh = first < 0  # no stale step yet: the state before this step may be the one to go back to
            kept = {name: torch.where(fresh, value, kept[name]) for name, value in state.moving().items()}
            rng.append(state.generator.get_state())
            integrator.step(state, optimistic)
            state.step += 1
        self.host_reads += 1
        step = int(first)  # the one host read of the segment
        if step < 0:
            self.interval = min(2 * self.interval, self.max_interval)
            return
        self._rebuild_step(state, integrator, step, kept, rng[step - start])

    def _rebuild_step(self, state: MDState, integrator: VelocityVerlet, step: int, kept: dict, rng: Tensor) -> None:
        """Go back to the state before `step` and run that step with a neighbour-list build."""
        for name, value in kept.items():
            setattr(state, name, value)
        state.step = step
        state.generator.set_state(rng)
        integrator.step(state, lambda s: evaluate(self.potential, s, rebuild=True))
        state.step += 1
        self.replays += 1
        if self.last_build is not None:
            self.gap = step - self.last_build
        self.last_build = step


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
        stop = min(end, stepper.next_stop(state.step), *(_next_multiple(state.step, cb.every) for cb in callbacks))
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
