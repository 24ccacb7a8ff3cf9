"""Training data on the device: frames, their cached pair geometry, and batch sampling (spec §1.3-1.5).

Training frames never move, so each frame's neighbour list and pair vectors are built once and reused at every step.
Systems with the same atom types (same `type.raw` after sorting) share one `FrameStore`: their frames are
concatenated, so a batch of any of them is a gather from one set of tensors (what a captured CUDA graph needs).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from deeppot.data import FrameSampler, System, nbatches, resolve_batch_sizes, system_probs
from deeppot.model import PairData
from deeppot.model.energy_model import type_groups
from deeppot.model.fitting import TypeRows
from deeppot.model.slots import slot_layout
from deeppot.nlist import build_neighbor_data

log = logging.getLogger(__name__)

LABEL_KEYS = ("energy", "force", "virial", "atom_ener", "atom_pref")
BUILD_CHUNK = 16  # frames per neighbour-list call: bounds the memory of the builder


@dataclass
class Batch:
    pairs: PairData
    labels: dict[str, Tensor]  # energy (nf,), force (nf, nloc, 3), virial (nf, 9), atom_ener, atom_pref (nf, nloc)
    find: dict[str, Tensor]    # 0-d float64 tensors: 1 where the label exists on disk
    natoms: int


class FrameStore:
    """Frames of all systems with one atype vector, concatenated on the device.

    Pair geometry is built lazily (on first use of a frame) or all at once with `build_all`.
    Per frame, packed in one row (`field`): rij (nloc, nnei, 3) float64, nlist_loc and neighbor_type (nloc, nnei),
    labels, find flags.
    widths: keep that many slots per type of each sel-wide list and a stand-in for the rest (`deeppot.model.slots`);
    the rest must be padding in every frame (the run's neighbour statistics say so), which each build checks.
    """

    def __init__(self, systems: list[System], rcut: float, sel: list[int], device: torch.device,
                 widths: tuple[int, ...] | None = None) -> None:
        self.systems, self.rcut, self.sel, self.device, self.widths = systems, rcut, list(sel), device, widths
        self.layout = None if widths is None else slot_layout(sel, widths, device)
        self.offsets = np.cumsum([0] + [s.nframes for s in systems])
        nf, nloc, nnei = int(self.offsets[-1]), systems[0].natoms, sum(sel if widths is None else self.layout.sel)
        # everything of a frame in one row of 8-byte words, so that a batch is one gather (each gather is a kernel
        # of a graphed step; five of them were ~4 us each): (name, dtype, shape per frame, first word)
        fields = [("rij", torch.float64, (nloc, nnei, 3)), ("nlist_loc", torch.long, (nloc, nnei)),
                  ("neighbor_type", torch.long, (nloc, nnei)),
                  *((k, torch.float64, systems[0].labels[k].shape[1:]) for k in LABEL_KEYS),
                  ("find", torch.float64, (len(LABEL_KEYS),))]  # find: per frame, as systems in a store may differ
        starts = np.cumsum([0] + [math.prod(shape) for _, _, shape in fields])
        self.fields = {name: (dtype, shape, int(start)) for (name, dtype, shape), start in
                       zip(fields, starts[:-1], strict=True)}
        self.rows = torch.zeros(nf, int(starts[-1]), dtype=torch.long, device=device)
        self.field(self.rows, "nlist_loc").fill_(-1)
        self.field(self.rows, "neighbor_type").fill_(-1)
        for k in LABEL_KEYS:
            self._put(slice(None), k, torch.as_tensor(np.concatenate([s.labels[k] for s in systems])))
        flags = [np.repeat([[float(s.find[k]) for k in LABEL_KEYS]], s.nframes, axis=0) for s in systems]
        self._put(slice(None), "find", torch.as_tensor(np.concatenate(flags)))
        self.atype = torch.as_tensor(systems[0].atype, device=device)
        self.groups = type_groups(self.atype, len(sel))
        self.type_rows: dict[int, TypeRows] = {}  # by batch size, made once (a graphed step's tensors stay put)
        self.built = np.zeros(nf, dtype=bool)  # host-side bookkeeping: no device sync to check it

    def field(self, rows: Tensor, name: str) -> Tensor:
        """A view of field `name` of the frames in `rows` (gathered or all), in its dtype and shape."""
        dtype, shape, start = self.fields[name]
        return rows[:, start:start + math.prod(shape)].view(dtype).reshape(-1, *shape)

    def _put(self, index, name: str, values: Tensor) -> None:
        dtype, shape, start = self.fields[name]
        flat = values.to(self.device, dtype).reshape(values.shape[0], -1).view(torch.long)
        self.rows[index, start:start + math.prod(shape)] = flat

    @property
    def rij(self) -> Tensor:
        return self.field(self.rows, "rij")

    @property
    def natoms(self) -> int:
        return self.systems[0].natoms

    def build(self, frames: np.ndarray) -> None:
        """Build the neighbour data of the (global) frames not built yet."""
        todo = np.unique(frames[~self.built[frames]])
        for start in range(0, len(todo), BUILD_CHUNK):
            self._build_chunk(todo[start:start + BUILD_CHUNK])

    def build_all(self) -> None:
        self.build(np.arange(len(self.built)))

    def _build_chunk(self, frames: np.ndarray) -> None:
        sys_of = np.searchsorted(self.offsets, frames, side="right") - 1
        coord = np.stack([self.systems[s].coord[f - self.offsets[s]] for s, f in zip(sys_of, frames, strict=True)])
        boxes = [self.systems[s].box for s in sys_of]
        box = None if boxes[0] is None else np.stack([b[f - self.offsets[s]] for b, s, f in
                                                      zip(boxes, sys_of, frames, strict=True)])
        coord_t = torch.as_tensor(coord, device=self.device)
        box_t = None if box is None else torch.as_tensor(box, device=self.device)
        nd = build_neighbor_data(coord_t, self.atype[None].expand(len(frames), -1), box_t, self.rcut, self.sel)
        pairs = self._trimmed(PairData.from_neighbors(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping, self.rcut),
                              frames)
        index = torch.as_tensor(frames, device=self.device)
        for name in ("rij", "nlist_loc", "neighbor_type"):
            self._put(index, name, getattr(pairs, name))
        self.built[frames] = True

    def _trimmed(self, pairs: PairData, frames: np.ndarray) -> PairData:
        """The kept slots of sel-wide pairs; an error if a dropped slot holds a neighbour (a host sync, as the
        list builder's own overflow check). Neighbours come first in their blocks, so counts say it."""
        if self.layout is None:
            return pairs
        types = torch.arange(len(self.sel), device=self.device)
        count = (pairs.neighbor_type[..., None] == types).sum(2)  # (nf, nloc, ntypes)
        over = (count > torch.tensor(self.widths, device=self.device)).flatten(1).any(1)
        if bool(over.any()):
            f = int(over.nonzero()[0])
            s = int(np.searchsorted(self.offsets, frames[f], side="right") - 1)
            raise ValueError(f"{self.systems[s].path}: frame {frames[f] - self.offsets[s]} has more neighbours "
                             f"than the lists' widths {list(self.widths)} (from the neighbour statistics); "
                             "train with --skip-neighbor-stat (full lists) or check the data")
        kept = self.layout.index
        return PairData(pairs.rij.index_select(2, kept), pairs.nlist_loc.index_select(2, kept), pairs.center_type,
                        pairs.neighbor_type.index_select(2, kept), layout=self.layout)

    def _type_rows(self, nf: int) -> TypeRows | None:
        """Each type's atoms as its fitting net's rows in batches of nf frames; None for one type (nothing to
        gain: every atom is its net's)."""
        if sum(g.numel() > 0 for g in self.groups) < 2:
            return None
        if nf not in self.type_rows:
            self.type_rows[nf] = TypeRows(self.groups, nf, self.atype.numel())
        return self.type_rows[nf]

    def gather(self, index: Tensor) -> Batch:
        """The batch of (global) frames `index` (1-D long tensor on the device); no host sync."""
        rows = self.rows[index]
        center_type = self.atype[None].expand(index.shape[0], -1)
        pairs = PairData(self.field(rows, "rij"), self.field(rows, "nlist_loc"), center_type,
                         self.field(rows, "neighbor_type"), self.groups, self.layout, self._type_rows(index.shape[0]))
        labels = {k: self.field(rows, k) for k in LABEL_KEYS}  # views of the gathered rows
        flags = self.field(rows, "find")[0]  # one system per batch: the first frame's
        find = {k: flags[i] for i, k in enumerate(LABEL_KEYS)}
        return Batch(pairs, labels, find, self.natoms)


def make_stores(systems: list[System], rcut: float, sel: list[int], device: torch.device,
                widths: tuple[int, ...] | None = None) -> tuple[list[FrameStore], list[tuple[int, int]]]:
    """Group systems by atype vector (and periodicity) into stores; returns them and, per system, (store, offset)."""
    keys: dict[bytes, list[int]] = {}
    for i, s in enumerate(systems):
        keys.setdefault(s.atype.astype(np.int64).tobytes() + bytes([s.box is None]), []).append(i)
    stores, where = [], [(0, 0)] * len(systems)
    for members in keys.values():
        store = FrameStore([systems[i] for i in members], rcut, sel, device, widths)
        for j, i in enumerate(members):
            where[i] = (len(stores), int(store.offsets[j]))
        stores.append(store)
    return stores, where


class DataSampler:
    """Picks a system by probability, then the next shuffled batch of that system (DeePMD-kit PT semantics)."""

    def __init__(self, systems: list[System], rcut: float, sel: list[int], device: torch.device, batch_size,
                 sys_probs, auto_prob: str, seed: int | None, widths: tuple[int, ...] | None = None) -> None:
        sizes = resolve_batch_sizes(batch_size, [s.natoms for s in systems])
        self.systems = [s for s, b in zip(systems, sizes, strict=True) if b is not None]
        self.batch_sizes = [b for b in sizes if b is not None]
        self.stores, self.where = make_stores(self.systems, rcut, sel, device, widths)
        self.device = device
        self.nbatch = [nbatches(s.nframes, b) for s, b in zip(self.systems, self.batch_sizes, strict=True)]
        self.probs = system_probs(self.nbatch, sys_probs, auto_prob)
        self.reseed(seed)

    def reseed(self, seed: int | list[int] | None) -> None:
        """Fresh random streams: system choice and one shuffle per system (`seed`: SeedSequence entropy)."""
        seeds = np.random.SeedSequence(seed).spawn(len(self.systems) + 1)
        self.rng = np.random.default_rng(seeds[0])
        self.samplers = [FrameSampler(s.nframes, b, np.random.default_rng(q))
                         for s, b, q in zip(self.systems, self.batch_sizes, seeds[1:], strict=True)]

    def next_index(self) -> tuple[int, np.ndarray]:
        """(store id, global frame indices in that store) of the next batch; the store's frames are built."""
        k = int(self.rng.choice(len(self.systems), p=self.probs))
        store_id, offset = self.where[k]
        frames = next(self.samplers[k]) + offset
        self.stores[store_id].build(frames)
        return store_id, frames

    def next(self) -> Batch:
        store_id, frames = self.next_index()
        # pageable host -> device copy that does not wait for the device
        return self.stores[store_id].gather(torch.from_numpy(frames).to(self.device, non_blocking=True))

    def build_all(self) -> None:
        for store in self.stores:
            store.build_all()

    def summary(self) -> list[str]:
        lines = [f"{'system':<40} {'natoms':>6} {'bch_sz':>6} {'n_bch':>6} {'prob':>9} {'pbc':>3}"]
        for s, b, n, p in zip(self.systems, self.batch_sizes, self.nbatch, self.probs, strict=True):
            pbc = "F" if s.box is None else "T"
            lines.append(f"{s.path[-40:]:<40} {s.natoms:>6} {b:>6} {n:>6} {p:9.3e} {pbc:>3}")
        return lines

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "samplers": [s.state_dict() for s in self.samplers]}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        for sampler, s in zip(self.samplers, state["samplers"], strict=True):
            sampler.load_state_dict(s)
