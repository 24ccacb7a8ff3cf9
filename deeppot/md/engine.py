"""The MD loop: `init` a state from ASE atoms and a potential, `run` an integrator for some steps with callbacks.

    state = md.init(atoms, potential, temperature=300, seed=1)
    md.run(state, potential, md.BussiNVT(dt=0.5, temperature=300), steps=1000,
           callbacks=[md.ThermoWriter("thermo.out", every=100)])

Host syncs. The loop never reads a device value back per step. The neighbour list is updated without a build
step after step while the device records the first step that the rebuild rule of `Stepper` rebuilds (the step
after one that used 90% of the skin, or one that used all of it) and the state before it; that step number is
read at the end of each segment of steps. Segments are planned to end just before a rebuild; one that went past it
goes back and runs that step again with a rebuild, so the result is exactly that of a loop that checks every step,
rebuilds included. Segments also end at every callback step, where the thermo values are read once for all
callbacks, and the energy and temperature are checked at every segment end.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import torch
from ase import Atoms
from torch import Tensor

from deeppot.md.integrators import VelocityVerlet
from deeppot.md.potential import Potential, atom_types
from deeppot.md.state import MDState, Thermo, kinetic_energy, maxwell_boltzmann, remove_momentum, thermo
from deeppot.md.step_graph import NEAR, StepGraph, Track, optimistic_step
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
    """Runs segments of steps with sync-free neighbour updates; one host read ends each segment.

    The rule (a function of the trajectory alone, so a restart repeats it): step s is run with a rebuilt list when
    skin_used(s - 1) >= NEAR or skin_used(s) > 1 (`Potential.skin_used`: 0 at a build, > 1 when the list may miss
    a pair). During a segment the device tracks `first`, the first step the rule rebuilds (-1: none), and a copy of
    the state before it (`torch.where` on the moving tensors); the generator state before each step is kept on the
    host (no sync). The read at the segment's end gives `first`, whether the last step reached NEAR (then the next
    step rebuilds) and its skin_used. Segment lengths extrapolate skin_used linearly from the last build to NEAR,
    (3/4 of the way, then closer at each read), so a segment usually ends on the step before a rebuild; a `first`
    inside the segment cuts it back (a replay).
    The rate is measured from the last build (or the first read of a new stepper); until a read measures it,
    segments double from `interval`. At most `max_interval` steps a segment.
    Where the potential asks for it (`DeepPotential.step_graphs`), the whole step is replayed from a CUDA graph
    (`deeppot.md.step_graph`; `graphs=False` keeps eager steps): the state's moving tensors are then buffers that
    each step overwrites in place.
    """

    def __init__(self, potential: Potential, interval: int = 4, max_interval: int = 100, graphs: bool = True) -> None:
        self.potential, self.interval, self.max_interval = potential, interval, max_interval
        self.host_reads = 0  # reads at segment ends
        self.replays = 0  # segments cut back to a step that the rule rebuilds
        self.last_build: int | None = None
        self.anchor: tuple[int, float] | None = None  # (step, skin_used): the last build's, or the first read's
        self.rate: float | None = None  # skin_used per step since the anchor, at the last read
        self.rebuild_next: bool | None = None  # None: not known yet (a new stepper, e.g. after a restart)
        self.graphs = graphs  # replay steps from CUDA graphs where the potential evaluates through one
        self.graph: StepGraph | None = None
        self.captures = 0  # step graphs captured

    def next_stop(self, step: int) -> int:
        """Where the segment starting at `step` should end."""
        if self.rebuild_next or self.rate is None:
            return step + (1 if self.rebuild_next else self.interval)
        used = self.anchor[1] + self.rate * (step - self.anchor[0])
        # 3/4 of the way to NEAR: the read there refines the rate, so segments close in on the rebuild step
        ahead = int(0.75 * (NEAR - used) / self.rate) if self.rate > 0 else self.max_interval
        return step + max(1, min(ahead, self.max_interval))

    def advance(self, state: MDState, integrator: VelocityVerlet, stop: int) -> None:
        """Steps towards step `stop` (stopping early after a rebuild), following the rebuild rule above."""
        if self.rebuild_next is None:  # the step before this one decides (one read)
            used = float(self.potential.skin_used(state.positions, state.cell))
            self.rebuild_next, self.anchor = used >= NEAR, self.anchor or (state.step, used)
        if self.rebuild_next:
            self._step_with_build(state, integrator)
            return
        start, rng = state.step, []
        track, step = self._segment(state, integrator)
        while state.step < stop:
            rng.append(state.generator.get_state())
            step()
            state.step += 1
        self.host_reads += 1
        first, last_near, last_used = track.read()
        if first >= 0:
            self._rebuild_step(state, integrator, first, track.kept, rng[first - start])
            return
        self.rebuild_next = last_near
        self.interval = min(2 * self.interval, self.max_interval)
        if state.step > self.anchor[0]:
            self.rate = (last_used - self.anchor[1]) / (state.step - self.anchor[0])

    def _segment(self, state: MDState, integrator: VelocityVerlet) -> tuple[Track, Callable[[], None]]:
        """The track of a segment and its step: a replay of the step's CUDA graph where the potential evaluates
        through one (`StepGraph`, captured again when a build outgrew the neighbour buffers), else the eager step."""
        if self.graphs and getattr(self.potential, "step_graphs", False):
            if self.graph is None or not self.graph.valid(self.potential, integrator):
                self.graph = None  # free the old graph's memory first
                try:
                    self.graph = StepGraph(self.potential, state, integrator)
                    self.captures += 1
                except RuntimeError as error:  # e.g. an operation that cannot be captured: run eagerly
                    log.warning("MD steps run eagerly: the step could not be captured in a CUDA graph (%s)", error)
                    self.graphs = False
            if self.graph is not None:
                return self.graph.start(state), self.graph.replay
        track = Track.start(state)
        return track, lambda: optimistic_step(self.potential, state, integrator, track)

    def _step_with_build(self, state: MDState, integrator: VelocityVerlet) -> None:
        integrator.step(state, lambda s: evaluate(self.potential, s, rebuild=True))
        self._built(state.step)
        state.step += 1

    def _rebuild_step(self, state: MDState, integrator: VelocityVerlet, step: int, kept: dict, rng: Tensor) -> None:
        """Go back to the state before `step` and run that step with a neighbour-list build."""
        for name, value in kept.items():
            setattr(state, name, value.clone())  # a copy: the step graph's buffers are overwritten in place
        state.step = step
        state.generator.set_state(rng)
        self.replays += 1
        self._step_with_build(state, integrator)

    def _built(self, step: int) -> None:
        if self.last_build is not None:  # until a read measures it, the last gap gives the rate
            self.rate = NEAR / max(step - self.last_build, 1)
        self.last_build, self.anchor, self.rebuild_next = step, (step, 0.0), False


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
