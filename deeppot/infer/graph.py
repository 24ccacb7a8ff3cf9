"""`GraphedEvaluation`: `Evaluator.evaluate_neighbors` replayed from a CUDA graph; `GraphedCall`: a whole
`DeepPot.eval` call of a small system, or of one periodic frame of up to 131,072 atoms, list build included,
replayed likewise (`DeepPot(graph=True)`, the default on a GPU).

A small system is bound by kernel launches, not arithmetic: the 192-atom water frame runs ~100 kernels of a few
microseconds each. MD and repeated evaluation call the same shapes again and again (a skin neighbour list keeps
nall and the list's width until its next build), so the whole evaluation is captured once per set of shapes and
replayed: one launch instead of a hundred. Each call copies the new neighbour data into the captured input
buffers (device to device; the shapes must match) and replays; a call with other shapes captures again.

What the graph needs of the pair stage: static shapes and no host synchronisation. On many centres the fused stage
runs each fitting net on its own type's atoms, by index lists that the neighbour data keeps (made before the capture;
a replay copies the new data's lists in, and a composition of other type counts captures again); on few centres it
runs every net on every atom (one chain of batched products: fewer kernels, no lists). The PyTorch stage is
sync-free as it is.

Each build of a skin list changes the number of extended atoms (ghosts come and go). For one frame the graph is
captured with room for `GROWTH` times the extended atoms it first saw, and later data with fewer fills the first
rows (the list never points past them), so an MD run replays one graph across its builds.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from deeppot.cuda_graph import capture
from deeppot.infer.candidates import unsorted_selection
from deeppot.infer.deep_pot import Evaluator, host_copy, packed_outputs
from deeppot.infer.evaluate import FlatNeighbors, chunks, of_centre_type
from deeppot.infer.static_cells import GHOST_ROOM, CellPlan, ghost_count, plan_cells, static_cell_neighbors
from deeppot.nlist import REFERENCE_MAX_PAIRS, reference_pairs
from deeppot.nlist.ghosts import extend_with_shifts, image_shifts, nbuff_for
from deeppot.nlist.reference import reference_rows
from deeppot.nlist.selection import mask_virtual_centres, overflowed

log = logging.getLogger(__name__)

_INPUTS = ("ext_coord", "ext_atype", "nlist", "owner", "center_type")
_EXTENDED = ("ext_coord", "ext_atype", "owner")  # rows per extended atom
GROWTH = 1.25  # room for extended atoms in a one-frame capture
# From this many centres the fused stage's nets run on their own type's atoms in a graph (run 182, H200, water
# float32, ms a replay, every net on every atom / by type: 192 atoms 0.366 / 0.414, 1,536 0.68 / 0.62, 12,288
# 2.14 / 2.04, 98,304 15.2 / 13.0; float64 and compressed alike): between the two smallest sizes measured.
BY_TYPE_MIN_CENTRES = 1024
# The whole calls `GraphedCall` captures: fewer centres than this (its fitting nets run every net on every atom,
# ~5% slower than by type at 1,536 and 12,288 atoms in run 182), and at most this many (centre, extended atom)
# pairs for the list's one-kernel walk of every periodic image (`select_all_pairs`: no (nloc, nall) array; 1,536
# water atoms are 6.4e7). A model that needs DeePMD's sorted list keeps the reference's limit (its sorts store
# every pair).
GRAPH_MAX_CENTRES = 4096
GRAPH_MAX_PAIRS = 10**8
# One-frame calls larger than whole calls but up to this many atoms replay their evaluation stage (the list built
# eagerly): run 212 (H100, water float32) timed the stage eagerly / replayed at 2.99 / 2.04 ms for 12,288 atoms and
# 13.15 / 13.02 for 98,304, where the kernels' arithmetic dominates and a graph's memory pool is not worth keeping.
STAGE_MAX_CENTRES = 32768
# A periodic frame's whole call, with the cell list of static sizes and each fitting net on its own type's atoms,
# up to this many atoms (the graph keeps its evaluation's memory: ~3 GB at 98,304 water atoms in float32) and from
# CELLS_MIN_CENTRES on, where it replaces the walk of every image: run 227 (H100, one water frame, ms a call, every
# image / cells) 192 atoms 0.570 / 0.687 in float32 and 0.740 / 0.892 in float64, 1,536 atoms 1.469 / 1.186 and
# 2.251 / 1.859. Between the two sizes it was not measured: the step is at BY_TYPE_MIN_CENTRES, where the cells'
# call starts running each fitting net on its own type's atoms.
CELLS_MAX_CENTRES = 131072
CELLS_MIN_CENTRES = BY_TYPE_MIN_CENTRES


@dataclass
class _Captured:
    graph: torch.cuda.CUDAGraph
    inputs: FlatNeighbors  # the static buffers the graph reads
    outputs: dict[str, Tensor]  # the static buffers the graph writes


class GraphedEvaluation:
    """Energy, forces and virials of prebuilt neighbour data (the outputs of `Evaluator.evaluate_neighbors`),
    replayed from a CUDA graph captured for the data's shapes.

        graphed = GraphedEvaluation(evaluator)
        out = graphed(flat)          # flat: FlatNeighbors on the evaluator's CUDA device

    The returned tensors belong to the graph: the next call overwrites them (clone what you keep). One graph is
    kept (the latest shapes); `captures` counts the captures.
    """

    def __init__(self, evaluator: Evaluator, atomic: bool = False) -> None:
        if evaluator.device.type != "cuda":
            raise ValueError(f"CUDA graphs need a CUDA device; the evaluator runs on {evaluator.device}")
        self.evaluator, self.atomic = evaluator, atomic
        stage = evaluator.pair_stage
        self.pair_stage = functools.partial(stage, sync_free=True) if evaluator.fused else stage
        self.captured: _Captured | None = None
        self.captures = 0

    def __call__(self, flat: FlatNeighbors) -> dict[str, Tensor]:
        if self.captured is None or not _fits(self.captured.inputs, flat) or not _rows_fit(self.captured.inputs, flat):
            self.captured = self._capture(flat)
        else:
            rows = flat.ext_coord.shape[0]
            for name in _INPUTS:
                static = getattr(self.captured.inputs, name)
                (static[:rows] if name in _EXTENDED else static).copy_(getattr(flat, name), non_blocking=True)
            for key, lists in self.captured.inputs.type_rows.items():
                for static, new in zip(lists, flat.type_rows[key], strict=True):
                    static.copy_(new, non_blocking=True)
        self.captured.graph.replay()
        return self.captured.outputs

    def by_type(self, flat: FlatNeighbors) -> bool:
        """Whether the fitting nets run on their own type's atoms: a fused stage, several types, many centres."""
        return self.evaluator.fused and self.evaluator.model.descriptor.ntypes > 1 and \
            flat.ncentre >= BY_TYPE_MIN_CENTRES

    def run_eager(self, flat: FlatNeighbors) -> dict[str, Tensor]:
        """The evaluation the graph replays, run eagerly (sync-free once flat has its centres by type: it can be
        captured in a larger graph)."""
        if self.by_type(flat):
            return self.evaluator.evaluate_neighbors(flat, self.atomic, ordered=False)
        return self.evaluator.evaluate_neighbors(flat, self.atomic, self.pair_stage)

    def _capture(self, flat: FlatNeighbors) -> _Captured:
        self.captured = None  # free the old graph's memory first
        static = FlatNeighbors(**{f.name: getattr(flat, f.name) for f in fields(FlatNeighbors)})
        static.type_rows = {}  # its own lists, made by the warm-up below; a replay copies flat's in
        for name in _INPUTS:
            setattr(static, name, getattr(flat, name).clone())
        if flat.nf == 1:  # room for more extended atoms: padding rows that no list entry points to
            rows = flat.ext_coord.shape[0]
            room = int(GROWTH * rows) + 1 - rows
            static.ext_coord = torch.cat([static.ext_coord, static.ext_coord.new_zeros(room, 3)])
            static.ext_atype = torch.cat([static.ext_atype, static.ext_atype.new_full((room,), -1)])
            static.owner = torch.cat([static.owner, static.owner.new_zeros(room)])
        side = torch.cuda.Stream(self.evaluator.device)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # compiles the kernels and warms the allocator outside the capture
            self.run_eager(static)
        torch.cuda.current_stream().wait_stream(side)
        for key in static.type_rows:  # flat's own lists too: an MD step that captures flat eagerly finds them made
            flat.rows_by_type(*key)
        graph = torch.cuda.CUDAGraph()
        with capture(graph):
            outputs = self.run_eager(static)
        self.captures += 1
        log.debug("captured the evaluation of %d centres (%d extended atoms)", static.ncentre,
                  static.ext_coord.shape[0])
        return _Captured(graph, static, outputs)


def _fits(static: FlatNeighbors, flat: FlatNeighbors) -> bool:
    """Whether flat replays the graph captured on `static`: the same shapes, or for one frame no more extended
    atoms than the capture has room for."""
    rows, room = flat.ext_coord.shape[0], static.ext_coord.shape[0]
    return (static.nf, static.nloc) == (flat.nf, flat.nloc) and (rows == room or (flat.nf == 1 and rows <= room)) \
        and all(getattr(static, name).shape == getattr(flat, name).shape for name in ("nlist", "center_type"))


def _rows_fit(static: FlatNeighbors, flat: FlatNeighbors) -> bool:
    """Whether flat's centres of each type (made now if new: a host sync) have the captured lists' lengths."""
    return all([len(r) for r in flat.rows_by_type(*key)] == [len(r) for r in lists]
               for key, lists in static.type_rows.items())


@dataclass
class _CallGraph:
    key: tuple
    graph: torch.cuda.CUDAGraph
    inputs: tuple[Tensor | None, ...]  # coord, atype, box, its inverse[, reach, rows]: the buffers the graph reads
    shifts: Tensor | None  # the image shifts it reads: kept with it (freed, their memory would be reused)
    values: Tensor  # the outputs of `DeepPot.eval` flattened, then the overflow flag (1: sel; 2: ghost slots)
    staged: tuple[Tensor | None, ...] = ()  # pinned host buffers the inputs are copied in through
    sources: tuple[Tensor | None, ...] = ()  # the host tensors copied in last

    def copy_in(self, host: tuple[Tensor | None, ...]) -> None:
        """Copy the host's inputs into the graph's buffers through pinned memory (the copy to the GPU then runs
        while the graph is launched): the positions always, the rest only when it is another object than last
        time. Those are `GraphedCall`'s kept tensors (the types, the boxes and what is made from them: the same
        object while the values are equal), and they stay the same from call to call of a run (each copy from
        pageable memory held the host for tens of microseconds while the GPU waited, run 220). No wait for the
        previous call's copies: its outputs waited for them."""
        if not self.staged:
            self.staged = tuple(None if t is None else torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
                                for t in host)
            self.sources = (None,) * len(host)
        for i, (static, pinned, new) in enumerate(zip(self.inputs, self.staged, host, strict=True)):
            if static is None or (i > 0 and new is self.sources[i]):
                continue
            pinned.copy_(new)
            static.copy_(pinned, non_blocking=True)
        self.sources = host


class _KeptBox(NamedTuple):
    """The boxes of the latest call as `GraphedCall` keeps them, with what is made from them on the host."""

    box: Tensor  # (nf, 3, 3)
    inverse: Tensor  # their inverses (on the GPU, about ten small kernels a replay)
    plans: dict  # (atoms, dtype) -> `plan_cells` of the first box: its plan and slab reach


def _same(a: Tensor, b: Tensor) -> bool:
    return a is b or (a.shape == b.shape and np.array_equal(a.numpy(), b.numpy()))


class GraphedCall:
    """Whole `DeepPot.eval` calls on a small system, list build included, replayed from a CUDA graph.

    A 192-atom water call launches a few hundred small kernels (the list, the evaluation, the outputs): 4-7 ms a
    call eagerly, 0.66-0.77 ms replayed (H100, run 207). The list over every periodic image (`select_all_pairs`)
    has static shapes for a given frame count, atom count and number of image layers, and with the image shifts made
    beforehand no host sync, so the whole call can be captured and replayed: copy the positions in, replay, copy the
    outputs out. Calls the graph serves: fewer than GRAPH_MAX_CENTRES centres and at most GRAPH_MAX_PAIRS pairs in
    all (its fitting nets run every net on every atom: no per-type lists). A shape is captured when two calls in a
    row have it (a one-off call is not worth a capture); the latest graph is kept.

    A list that overflows sel is noticed on the device (a flag in the outputs): the call then returns None, and
    `DeepPot.eval` repeats it eagerly, which keeps the same neighbours and warns which atoms overflowed.

    One periodic frame of CELLS_MIN_CENTRES to CELLS_MAX_CENTRES atoms (or fewer, with too many pairs for the walk
    of every image) is captured whole with the cell list of static sizes instead (`deeppot.infer.static_cells`:
    ghost slots for GHOST_ROOM times the ghosts of the frame captured; a frame with more is repeated eagerly and
    captured again) and, from BY_TYPE_MIN_CENTRES atoms, each fitting net on its own type's atoms (the centres of
    each type copied in from the host's types). Other frames of
    at most STAGE_MAX_CENTRES atoms (no box, or a model that needs DeePMD's sorted list) get their list built
    eagerly and their evaluation replayed (`GraphedEvaluation`, `stage`; `staged` counts those calls), under the
    same rule.
    """

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator
        stage = evaluator.pair_stage
        self.pair_stage = functools.partial(stage, sync_free=True) if evaluator.fused else stage
        self.captured: _CallGraph | None = None
        self.stage: GraphedEvaluation | None = None  # mid-size frames' evaluation stage
        self.seen: tuple | None = None  # the key of the last call not replayed
        self.types: Tensor | None = None  # the latest types, kept (`_kept_types`)
        self.rows: list[Tensor] | None = None  # their `_host_rows`, once asked for
        self.boxes: _KeptBox | None = None  # the latest boxes, kept (`_kept_box`)
        self.captures = self.replays = self.staged = 0  # replays: calls answered by the whole-call graph

    def __call__(self, coord: Tensor, atype: Tensor, box: Tensor | None, atomic: bool) -> np.ndarray | None:
        """coord (nf, natoms, 3) float64, atype (nf, natoms) int64, box (nf, 3, 3) float64 or None, on the host:
        `DeepPot.eval`'s outputs flattened (`packed_outputs`), or None where no graph serves the call."""
        atype, kept = self._kept_types(atype), self._kept_box(box)
        box = None if kept is None else kept.box
        key, host = self.key(coord, box, atomic), (coord, atype, box, None if kept is None else kept.inverse)
        if key is not None and key[0] == "cells":  # the slab's reach from this box, the centres of each type
            rows = self._host_rows(atype) if self._by_type(coord.shape[1]) else []
            key = self._held_plan((*key, tuple(len(r) for r in rows)))
            host = (*host, self._plan(kept, coord.shape[1], coord.dtype)[1], *rows)
        if key is None or (key != self.seen and not self._holds(key)):
            self.seen = key
            return None
        if key[0] == "stage":
            return self._staged_call(coord, atype, box, atomic)
        if self.captured is None or self.captured.key != key:
            self.captured = self._capture(key, host, atomic)
        self.captured.copy_in(host)
        self.captured.graph.replay()
        values = host_copy(self.captured.values)
        if values[-1]:
            if values[-1] >= 2:  # more ghosts than slots: capture again, from this frame's count
                self.captured = None
            return None
        self.replays += 1
        return values[:-1]

    def key(self, coord: Tensor, box: Tensor | None, atomic: bool) -> tuple | None:
        """What a graph is captured for: ("whole", frames, atoms, image layers, atomic) for a whole call with every
        image listed, ("cells", atoms, `CellPlan`, atomic) for one with a cell list of static sizes (to which the
        call adds its centres' counts per type), ("stage", atoms, atomic) for a mid-size frame's evaluation stage;
        None where no graph serves."""
        nf, natoms = coord.shape[:2]
        rcut, sorted_lists = self.evaluator.model.rcut, self.evaluator.sorted_lists
        cells = nf == 1 and box is not None and not sorted_lists and natoms <= CELLS_MAX_CENTRES
        if nf * natoms < GRAPH_MAX_CENTRES and not (cells and natoms >= CELLS_MIN_CENTRES):
            limit = REFERENCE_MAX_PAIRS["cuda"] if sorted_lists else GRAPH_MAX_PAIRS
            if nf * reference_pairs(coord, box, rcut) <= limit:
                return "whole", nf, natoms, None if box is None else tuple(nbuff_for(box, rcut)), atomic
        if cells:
            return "cells", natoms, self._plan(self._kept_box(box), natoms, coord.dtype)[0], atomic
        return ("stage", natoms, atomic) if nf == 1 and natoms <= STAGE_MAX_CENTRES else None

    def _kept_types(self, atype: Tensor) -> Tensor:
        """A kept copy of these host types (nf, natoms): the same object while the values are equal (also when the
        caller changed its own array in place)."""
        if self.types is None or not _same(self.types, atype):
            self.types, self.rows = atype.clone(), None
        return self.types

    def _kept_box(self, box: Tensor | None) -> _KeptBox | None:
        """The kept copy of these host boxes (nf, 3, 3) with their inverses, made again only when the values
        change (the box of an MD run at constant volume does not)."""
        if box is not None and (self.boxes is None or not _same(self.boxes.box, box)):
            self.boxes = _KeptBox(box.clone(), torch.from_numpy(np.linalg.inv(box.numpy())), {})
        return None if box is None else self.boxes

    def _plan(self, kept: _KeptBox, natoms: int, dtype: torch.dtype) -> tuple[CellPlan, Tensor]:
        """`plan_cells` of the kept box, made once per atom count and dtype."""
        if (natoms, dtype) not in kept.plans:
            kept.plans[natoms, dtype] = plan_cells(kept.box[0], natoms, self.evaluator.model.rcut, dtype)
        return kept.plans[natoms, dtype]

    def _held_plan(self, key: tuple) -> tuple:
        """A "cells" key, or the kept graph's where its list serves this frame too (`CellPlan.serves`: a box that
        changed a little needs no new capture)."""
        held = None if self.captured is None else self.captured.key
        if held is not None and held[0] == "cells" and held[1] == key[1] and held[3:] == key[3:] and \
                held[2].serves(key[2]):
            return held
        return key

    def _by_type(self, ncentre: int) -> bool:
        """Whether a whole call's fitting nets run on their own type's atoms (as the eager call's do)."""
        return self.evaluator.fused and self.evaluator.model.descriptor.ntypes > 1 and ncentre >= BY_TYPE_MIN_CENTRES

    def _host_rows(self, atype: Tensor) -> list[Tensor]:
        """The centres of each type (`FlatNeighbors.rows_by_type`), chunk by chunk, of the first frame of the host's
        types (nf, natoms): the index lists a by-type call reads. Kept with the kept types (the same objects while
        they are equal)."""
        types = self._kept_types(atype)[0].numpy()  # new types: their rows are made again
        if self.rows is None:
            ntypes = self.evaluator.model.descriptor.ntypes
            parts = [types[start:stop] for start, stop in chunks(len(types), self.evaluator.chunk_atoms)]
            self.rows = [torch.from_numpy(np.flatnonzero(of_centre_type(part, t))) for part in parts
                         for t in range(ntypes)]
        return self.rows

    def _holds(self, key: tuple) -> bool:
        """Whether a graph for key is kept: the whole call's, or the stage's for these atoms."""
        if key[0] == "stage":
            return self.stage is not None and self.stage.atomic == key[2] and self.stage.captured is not None and \
                self.stage.captured.inputs.nloc == key[1]
        return self.captured is not None and self.captured.key == key

    def _staged_call(self, coord: Tensor, atype: Tensor, box: Tensor | None, atomic: bool) -> np.ndarray:
        """A mid-size frame: its list built eagerly (`Evaluator.host_neighbors`), its evaluation replayed (captured
        again where the list's shapes change: `GraphedEvaluation`)."""
        if self.stage is None or self.stage.atomic != atomic:
            self.stage = None  # free the old graph's memory first
            self.stage = GraphedEvaluation(self.evaluator, atomic)
        out = self.stage(self.evaluator.host_neighbors(coord, atype, box))
        self.staged += 1
        return host_copy(packed_outputs(out, atomic))

    def _capture(self, key: tuple, host: tuple[Tensor | None, ...], atomic: bool) -> _CallGraph:
        self.captured = None  # free the old graph's memory first
        dev = self.evaluator.device
        inputs = tuple(None if t is None else t.to(dev) for t in host)
        shifts = None
        if key[0] == "cells":  # one bin more each way, for the boxes of later frames (`_held_plan`)
            key = (key[0], key[1], key[2].padded(), *key[3:])
            capacity = int(GHOST_ROOM * ghost_count(inputs[0], inputs[2], inputs[4], key[2])) + 64
            call = functools.partial(self._cell_call, plan=key[2], capacity=capacity, atomic=atomic)
        else:
            shifts = None if host[2] is None else image_shifts(list(key[3]), dev)
            call = functools.partial(self._call, shifts=shifts, atomic=atomic)
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # compiles the kernels and warms the allocator outside the capture
            call(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with capture(graph):
            values = call(*inputs)
        self.captures += 1
        log.debug("captured whole calls of %d frames of %d atoms (%s)", *host[0].shape[:2], key[0])
        return _CallGraph(key, graph, inputs, shifts, values)

    def _call(self, coord: Tensor, atype: Tensor, box: Tensor | None, inverse: Tensor | None, *,
              shifts: Tensor | None, atomic: bool) -> Tensor:
        """The call the graph replays (the evaluator's own steps for such frames, without host syncs)."""
        ext_coord, ext_atype, mapping = extend_with_shifts(coord, atype, box, shifts, inverse)
        nlist, over = self._rows(ext_coord, ext_atype, atype)
        return self._outputs(ext_coord, ext_atype, nlist, mapping, atomic, over)

    def _cell_call(self, coord: Tensor, atype: Tensor, box: Tensor, inverse: Tensor, reach: Tensor, *rows: Tensor,
                   plan: CellPlan, capacity: int, atomic: bool) -> Tensor:
        """A whole call of one frame with the cell list of static sizes, without host syncs; rows: `_host_rows`
        on the device, or none (every net on every atom)."""
        model = self.evaluator.model
        *data, over, outgrown = static_cell_neighbors(coord, atype, box, reach, model.rcut, model.sel, plan,
                                                      capacity, inverse)
        ext_coord, ext_atype, mapping, nlist = data
        ntypes = model.descriptor.ntypes
        type_rows = {(a, b, ntypes): list(rows[i * ntypes:(i + 1) * ntypes])
                     for i, (a, b) in enumerate(chunks(coord.shape[1], self.evaluator.chunk_atoms))} if rows else None
        return self._outputs(ext_coord, ext_atype, nlist, mapping, atomic, over.to(torch.int64) + 2 * outgrown,
                             type_rows)

    def _outputs(self, ext_coord: Tensor, ext_atype: Tensor, nlist: Tensor, mapping: Tensor, atomic: bool,
                 flag: Tensor, type_rows: dict | None = None) -> Tensor:
        """The evaluation of the list (each fitting net on its type's atoms where type_rows are given, else every net
        on every atom), its outputs flattened (`packed_outputs`) and then the flag."""
        flat = FlatNeighbors.from_frames(ext_coord, ext_atype, nlist, mapping, type_rows)
        out = self.evaluator.evaluate_neighbors(flat, atomic, None if type_rows else self.pair_stage, ordered=False)
        return torch.cat([packed_outputs(out, atomic), flag.to(torch.float64).reshape(1)])

    def _rows(self, ext_coord: Tensor, ext_atype: Tensor, atype: Tensor) -> tuple[Tensor, Tensor]:
        """The list of `evaluation_neighbors` for such frames (DeePMD's sorted one where the model needs it) and
        whether a type overflowed its sel."""
        model, nloc = self.evaluator.model, atype.shape[1]
        if not self.evaluator.sorted_lists:
            return unsorted_selection(ext_coord.device, all_pairs=True)(ext_coord, ext_atype, nloc, model.rcut,
                                                                         model.sel)
        nlist, count = reference_rows(ext_coord, ext_atype, nloc, model.rcut, model.sel)
        nlist = mask_virtual_centres(nlist, count, atype, model.sel, model.rcut, check_overflow=False)
        return nlist, overflowed(count, atype, model.sel)


__all__ = ["GraphedCall", "GraphedEvaluation"]
