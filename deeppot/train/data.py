"""Training data on the device: per-system frames, their cached pair geometry, and batch sampling (spec §1.3-1.5).

Training frames never move, so each frame's neighbour list and pair vectors are built once, on first use, and
reused at every later step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from deeppot.data import FrameSampler, System, nbatches, resolve_batch_sizes, system_probs
from deeppot.model import PairData
from deeppot.model.energy_model import type_groups
from deeppot.nlist import build_neighbor_data

log = logging.getLogger(__name__)

LABEL_KEYS = ("energy", "force", "virial", "atom_ener", "atom_pref")
BUILD_CHUNK = 16  # frames per neighbour-list call: bounds the memory of the builder


@dataclass
class Batch:
    pairs: PairData
    labels: dict[str, Tensor]  # energy (nf,), force (nf, nloc, 3), virial (nf, 9), atom_ener, atom_pref (nf, nloc)
    find: dict[str, float]
    natoms: int
    system: int


class SystemFrames:
    """One system on the device: labels as tensors, pair geometry built lazily per frame and cached."""

    def __init__(self, system: System, rcut: float, sel: list[int], device: torch.device) -> None:
        self.system, self.rcut, self.sel, self.device = system, rcut, list(sel), device
        self.labels = {k: torch.as_tensor(system.labels[k], device=device) for k in LABEL_KEYS}
        self.find = {k: float(system.find[k]) for k in LABEL_KEYS}
        self.atype = torch.as_tensor(system.atype, device=device)
        self.groups = type_groups(self.atype, len(sel))
        nf, nloc, nnei = system.nframes, system.natoms, sum(sel)
        self._rij = torch.zeros(nf, nloc, nnei, 3, dtype=torch.float64, device=device)
        self._nlist_loc = torch.full((nf, nloc, nnei), -1, dtype=torch.long, device=device)
        self._neighbor_type = torch.full((nf, nloc, nnei), -1, dtype=torch.long, device=device)
        self._built = np.zeros(nf, dtype=bool)  # host-side bookkeeping: no device sync to check it

    @property
    def nframes(self) -> int:
        return self.system.nframes

    @property
    def natoms(self) -> int:
        return self.system.natoms

    def build(self, frames: np.ndarray) -> None:
        """Build the neighbour data of the frames not built yet."""
        todo = np.unique(frames[~self._built[frames]])
        for start in range(0, len(todo), BUILD_CHUNK):
            self._build_chunk(todo[start:start + BUILD_CHUNK])

    def _build_chunk(self, frames: np.ndarray) -> None:
        s = self.system
        coord = torch.as_tensor(s.coord[frames], device=self.device)
        box = None if s.box is None else torch.as_tensor(s.box[frames], device=self.device)
        atype = self.atype[None].expand(len(frames), -1)
        nd = build_neighbor_data(coord, atype, box, self.rcut, self.sel)
        pairs = PairData.from_neighbors(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping, self.rcut)
        index = torch.as_tensor(frames, device=self.device)
        self._rij[index] = pairs.rij
        self._nlist_loc[index] = pairs.nlist_loc
        self._neighbor_type[index] = pairs.neighbor_type
        self._built[frames] = True

    def batch(self, frames: np.ndarray, system_index: int = 0) -> Batch:
        self.build(frames)
        index = torch.as_tensor(frames, device=self.device)
        center_type = self.atype[None].expand(len(frames), -1)
        pairs = PairData(self._rij[index], self._nlist_loc[index], center_type, self._neighbor_type[index],
                         self.groups)
        labels = {k: v[index] for k, v in self.labels.items()}
        return Batch(pairs, labels, self.find, self.natoms, system_index)


class DataSampler:
    """Picks a system by probability, then the next shuffled batch of that system (DeePMD-kit PT semantics)."""

    def __init__(self, frames: list[SystemFrames], batch_size, sys_probs, auto_prob: str, seed: int | None) -> None:
        self.frames = frames
        sizes = resolve_batch_sizes(batch_size, [f.natoms for f in frames])
        kept = [i for i, b in enumerate(sizes) if b is not None]
        self.frames = [frames[i] for i in kept]
        self.batch_sizes = [sizes[i] for i in kept]
        self.nbatch = [nbatches(f.nframes, b) for f, b in zip(self.frames, self.batch_sizes, strict=True)]
        self.probs = system_probs(self.nbatch, sys_probs, auto_prob)
        seeds = np.random.SeedSequence(seed).spawn(len(self.frames) + 1)
        self.rng = np.random.default_rng(seeds[0])
        self.samplers = [FrameSampler(f.nframes, b, np.random.default_rng(s))
                         for f, b, s in zip(self.frames, self.batch_sizes, seeds[1:], strict=True)]

    def next(self) -> Batch:
        k = int(self.rng.choice(len(self.frames), p=self.probs))
        return self.frames[k].batch(next(self.samplers[k]), k)

    def summary(self) -> list[str]:
        lines = [f"{'system':<40} {'natoms':>6} {'bch_sz':>6} {'n_bch':>6} {'prob':>9} {'pbc':>3}"]
        for f, b, n, p in zip(self.frames, self.batch_sizes, self.nbatch, self.probs, strict=True):
            pbc = "F" if f.system.box is None else "T"
            lines.append(f"{f.system.path[-40:]:<40} {f.natoms:>6} {b:>6} {n:>6} {p:9.3e} {pbc:>3}")
        return lines

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "samplers": [s.state_dict() for s in self.samplers]}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        for sampler, s in zip(self.samplers, state["samplers"], strict=True):
            sampler.load_state_dict(s)
