"""One MD step between neighbour-list builds, as a function of device tensors, and its CUDA-graph replay.

Between two builds of the skin list every step does the same work on the same shapes: the integrator's kicks, drift
and thermostat, the neighbour update, the evaluation, and the `Stepper`'s bookkeeping (`Track`). For a small
system that is ~100 kernel launches of a few microseconds each, so the step is bound by the host. `StepGraph`
captures the step once and replays it in place; the skin list keeps its build in fixed-capacity buffers
(`SkinNeighborList(static=True)`), so a graph is captured again only when a build outgrows them. The state's moving
tensors and the track become static buffers that each replay overwrites (callbacks that keep a state tensor
beyond the call must clone it). The thermostats' noise comes from the state's generator, registered with the
graph, so a replayed run draws the same numbers as an eager one; `tests/gpu/test_md_gpu.py` checks that graphed
and eager runs agree.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from deeppot.cuda_graph import capture

log = logging.getLogger(__name__)

# A step is run with a fresh neighbour list when the step before it used this fraction of the skin (planned: the
# segment ends there, no step is run twice), or when the step itself used all of it (found after the fact: the
# segment is cut back to that step, which runs again). Planning a little early costs a few more builds, each far
# cheaper than a step run twice and the steps after it thrown away.
NEAR = 0.9


@dataclass
class Track:
    """What a segment tracks on the device: `first`, the first step the rebuild rule rebuilds (-1: none); `near`,
    whether the last step used NEAR of the skin; `used`, its skin_used; `step`, the next step's number; `kept`, the
    moving state before step `first` (or the current one while there is none)."""

    first: Tensor  # () int64
    near: Tensor  # () bool
    used: Tensor  # () float
    step: Tensor  # () int64
    kept: dict[str, Tensor]

    @classmethod
    def start(cls, state) -> Track:
        dev = state.device
        return cls(torch.full((), -1, dtype=torch.int64, device=dev), torch.zeros((), dtype=torch.bool, device=dev),
                   torch.zeros((), dtype=state.positions.dtype, device=dev),
                   torch.full((), state.step, dtype=torch.int64, device=dev), state.moving())

    def read(self) -> tuple[int, bool, float]:
        """(first, near, used) on the host: the one read of a segment."""
        first, near, used = torch.stack([self.first.to(self.used.dtype), self.near.to(self.used.dtype),
                                         self.used]).tolist()
        return int(first), bool(near), used


def optimistic_step(potential, state, integrator, track: Track) -> None:
    """One step on the current neighbour data, recording in `track` whether the rebuild rule wanted a build (the
    state before the first such step is kept, so that the segment can go back to it). No host synchronisation."""
    fresh = track.first < 0  # no rebuild due yet: the state before this step may be the one to go back to
    track.kept = {name: torch.where(fresh, value, track.kept[name]) for name, value in state.moving().items()}

    def compute(s) -> None:
        used = potential.skin_used(s.positions, s.cell)
        track.first = torch.where((track.first < 0) & (track.near | (used > 1)), track.step, track.first)
        track.near, track.used = used >= NEAR, used
        s.energy, s.forces, s.virial = potential.compute(s.positions, s.cell, False)

    integrator.step(state, compute)
    track.step = track.step + 1


class StepGraph:
    """`optimistic_step` captured on the potential's neighbour buffers (valid until a build outgrows them).

        graph = StepGraph(potential, state, integrator)   # warm-up on copies, then the capture
        track = graph.start(state)                          # the state's moving tensors become the graph's buffers
        graph.replay()                                      # one step, in place; track.read() at the segment's end
    """

    def __init__(self, potential, state, integrator) -> None:
        self.potential, self.integrator, self.generation = potential, integrator, potential.nlist.generation
        self.buffers = {name: value.clone() for name, value in state.moving().items()}
        self.track = Track.start(replace(state, **self.buffers))
        self.track.kept = {name: value.clone() for name, value in self.buffers.items()}
        evaluations, rng = potential.evaluations, state.generator.get_state()
        potential.capturing = True
        try:
            self._capture(potential, state, integrator, rng)
        finally:
            potential.capturing = False
            potential.evaluations = evaluations
        self.flat = potential.flat  # the neighbour data the replays refresh (deviation() reads it)
        log.debug("captured an MD step of %d atoms", state.natoms)

    def _capture(self, potential, state, integrator, rng: Tensor) -> None:
        side = torch.cuda.Stream(state.device)
        side.wait_stream(torch.cuda.current_stream(state.device))
        with torch.cuda.stream(side):  # compile, tune and warm the allocator outside the capture, on copies
            warm = replace(state, **{name: value.clone() for name, value in self.buffers.items()})
            optimistic_step(potential, warm, integrator, replace(self.track, kept=dict(self.track.kept)))
        torch.cuda.current_stream(state.device).wait_stream(side)
        state.generator.set_state(rng)
        self.graph = torch.cuda.CUDAGraph()
        self.graph.register_generator_state(state.generator)
        live, track = replace(state, **self.buffers), replace(self.track, kept=dict(self.track.kept))
        with capture(self.graph):
            optimistic_step(potential, live, integrator, track)
            for name, buffer in self.buffers.items():
                buffer.copy_(getattr(live, name))
            for name in ("first", "near", "used", "step"):
                getattr(self.track, name).copy_(getattr(track, name))
            for name, buffer in self.track.kept.items():
                buffer.copy_(track.kept[name])

    def valid(self, potential, integrator) -> bool:
        """Whether the graph still reads the potential's neighbour buffers (refilled in place by builds that fit)."""
        return potential.nlist.generation == self.generation and integrator is self.integrator

    def start(self, state) -> Track:
        """Point the state's moving tensors at the buffers (holding its current values) and reset the track for a
        segment starting at state.step (device work only: copies and fills)."""
        for name, buffer in self.buffers.items():
            value = getattr(state, name)
            if value is not buffer:
                buffer.copy_(value)
                setattr(state, name, buffer)
            self.track.kept[name].copy_(buffer)
        self.track.first.fill_(-1)
        self.track.near.fill_(False)
        self.track.used.zero_()
        self.track.step.fill_(state.step)
        self.potential.flat = self.flat  # an eager step in between (a rebuild) had put its own data there
        return self.track

    def replay(self) -> None:
        self.graph.replay()
        self.potential.evaluations += 1


class ComputeGraph:
    """`potential.compute` on the current neighbour data, with its `skin_used`, captured for repeated calls on one
    system from outside an MD loop (the ASE calculator): each call copies the positions and cell into the graph's
    buffers and one replay gives, packed in one tensor for one read, [skin_used, energy, forces (N x 3), virial
    (3 x 3)]. A skin_used over 1 means the list may have missed a pair: the caller rebuilds and computes eagerly.
    Valid until a build outgrows the neighbour buffers (`valid`)."""

    def __init__(self, potential, positions: Tensor, cell: Tensor | None) -> None:
        self.potential, self.generation = potential, potential.nlist.generation
        self.positions, self.cell = positions.clone(), None if cell is None else cell.clone()
        evaluations = potential.evaluations
        potential.capturing = True
        try:
            side = torch.cuda.Stream(positions.device)
            side.wait_stream(torch.cuda.current_stream(positions.device))
            with torch.cuda.stream(side):  # compile, tune and warm the allocator outside the capture
                self._packed()
            torch.cuda.current_stream(positions.device).wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with capture(self.graph):
                self.output = self._packed()
        finally:
            potential.capturing = False
            potential.evaluations = evaluations
        self.flat = potential.flat  # the neighbour data the replays refresh
        self.replays = 0

    def _packed(self) -> Tensor:
        used = self.potential.skin_used(self.positions, self.cell)
        energy, forces, virial = self.potential.compute(self.positions, self.cell, False)
        return torch.cat([used.reshape(1), energy.reshape(1), forces.reshape(-1), virial.reshape(-1)])

    def valid(self, potential) -> bool:
        return potential is self.potential and potential.nlist.generation == self.generation

    def __call__(self, positions: Tensor, cell: Tensor | None) -> Tensor:
        """The packed outputs at these positions and cell (the graph's buffer: the next call overwrites it)."""
        self.positions.copy_(positions)
        if cell is not None:
            self.cell.copy_(cell)
        self.graph.replay()
        self.potential.flat = self.flat
        self.potential.evaluations += 1
        self.replays += 1
        return self.output


__all__ = ["NEAR", "ComputeGraph", "StepGraph", "Track", "optimistic_step"]
