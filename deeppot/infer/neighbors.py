"""Neighbour list with a Verlet skin, for molecular dynamics and large-system inference.

`SkinNeighborList.build` runs the O(N) cell list once with radius rcut + skin: it wraps the atoms, adds every
periodic image within rcut + skin of the cell (ghost = owner atom + integer lattice shift) and keeps, per local atom,
a row of candidates: every atom within rcut + skin, in ascending index order (`deeppot.nlist.cell_list.
build_candidates`; rows as wide as the fullest, so no candidate is ever cut off). `update` then serves new
positions of the same atoms without rebuilding: every extended atom is put back at `coord[owner] + shift @ box`
(so ghosts follow their owners, and a new box of the same shape moves them with it), and the DeePMD list (the
`sum(sel)` nearest within rcut, per-type blocks, spec §3.2) is re-selected from the candidates. `update` and
`needs_rebuild` issue no host synchronisation and have static shapes, so an MD step can be captured in a CUDA graph
with them.

When is the candidate list still complete? Write x_i for the position of extended atom i at the build, x'_i now,
M = B^-1 B' for the deformation of the box B -> B' (row vectors: x' ~ x M), and A_i = x'_i - x_i M for the motion of
a local atom beyond the affine deformation (A_i = coord'_i - coord_i when the box is unchanged). A ghost g of owner o
moves with it, x'_g = x'_o + s B', so every pair, of any image, obeys r'_ig = r_ig M + A_o - A_i. If r'_ig <= rcut,
then sigma_min(M) r_ig <= rcut + 2 max|A|, and the pair was a candidate (r_ig <= rcut + skin) as long as

    2 max_i |A_i| <= (1 - |E|) (rcut + skin) - rcut,      E = B^-1 (B' - B),

since sigma_min(M) = sigma_min(I + E) >= 1 - |E|_2, with |E| an upper bound of the spectral norm computed without
an SVD (`spectral_norm_bound`). For a fixed box this is the familiar "no atom moved more than skin / 2";
`needs_rebuild` tests exactly this (conservative for expansions, which bring no pair closer). No
minimum-image convention enters: the coordinates an MD code passes are unwrapped and continuous (an atom leaving the
cell keeps going, it does not jump back), so coord' - coord is the true displacement; a code that wraps its atoms
between steps gets a displacement of about a box vector at each wrap, and so a rebuild, which is safe but wasteful.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from deeppot.infer.candidates import candidate_types, select_from_candidates, unsorted_selection
from deeppot.nlist import NeighborData
from deeppot.nlist.cell_list import build_candidates
from deeppot.nlist.ghosts import as_box, frac_to_cart
from deeppot.nlist.selection import NeighborOverflowWarning

__all__ = ["SkinNeighborList", "SkinReference", "spectral_norm_bound"]

@dataclass
class SkinReference:
    """What `build` keeps: the extended atoms as owner + lattice shift, the candidates and the reference state."""

    ext_atype: Tensor  # (nf, nall) int64; -1 for padding atoms
    mapping: Tensor  # (nf, nall) int64 owner (local atom) of each extended atom
    owner_index: Tensor  # (nf, nall, 3) mapping expanded for the gather of owner positions
    shift: Tensor | None  # (nf, nall, 3) lattice shift from the owner's *input* position (whole numbers)
    padding: Tensor | None  # (nf, nall, 1) bool: padding atoms (frames with fewer ghosts), kept where they are
    pad_coord: Tensor | None  # (nf, nall, 3) positions of the padding atoms (beyond rcut of every real atom)
    candidates: Tensor  # (nf, nloc, ncand) int64 extended indices within rcut + skin at the build, ascending, -1 last
    cand_type: Tensor  # (nf, nloc, ncand) int64 type of each candidate, -1 for empty slots
    coord: Tensor  # (nf, nloc, 3) input positions at the build (detached)
    box: Tensor | None  # (nf, 3, 3) box at the build
    box_inv: Tensor | None  # (nf, 3, 3) its inverse
    frac: Tensor | None  # (nf, nloc, 3) coord @ box_inv (unwrapped fractional coordinates at the build)
    sel: tuple[int, ...]  # the model's sel (block widths of the list)


class SkinNeighborList:
    """DeePMD neighbour lists for a moving system: one O(N) build, then sync-free updates until `needs_rebuild`.

    Typical MD loop (eager; in a CUDA graph, capture `update` and read `needs_rebuild` every few steps):

        nl = SkinNeighborList(rcut=6.0, sel=[46, 92], skin=2.0)
        data = nl.build(coord, atype, box)
        for step in ...:
            ...move coord (unwrapped)...
            data = nl.neighbors(coord, atype, box)  # update, or build again when needed (one host sync)

    Args:
        rcut: cutoff of the model's list.
        sel: maximal neighbours per type within rcut; nnei = sum(sel).
        skin: extra radius of the candidate list; updates stay exact while no atom moves more than skin / 2.
        sort: True gives DeePMD's list (the nearest sum(sel), each block in ascending distance); False gives every
            neighbour within rcut in candidate order (`select_in_candidate_order`): the same set while no type
            exceeds its sel, so the same energies to rounding, without a sort per step (for MD). An overflow is
            recorded on the device and warned of at the next build.

        static: keep the build's tensors in fixed-capacity buffers (25% room for extended atoms and candidates) and
            copy later builds into them while they fit, so that a CUDA graph that captured `update` (and whatever
            consumes it) stays valid across builds; `generation` counts the (re)allocations.

    Otherwise every build may change nall (ghosts come and go) and the candidate width, so a CUDA graph that
    captured `update` is captured again after a build (`generation` then counts the builds).
    """

    def __init__(self, rcut: float, sel: Sequence[int], skin: float, sort: bool = True, static: bool = False):
        if not rcut > 0 or not skin >= 0 or len(sel) == 0 or min(sel) < 0:
            raise ValueError(f"expected rcut > 0, skin >= 0 and a non-empty sel of non-negative ints, got "
                             f"rcut={rcut}, skin={skin}, sel={sel}")
        self.rcut, self.skin, self.sel = float(rcut), float(skin), list(sel)
        self.sort, self.static = sort, static
        self.builds = 0  # how many times `build` ran
        self.generation = 0  # how many times the reference tensors were allocated (each build unless static)
        self.ref: SkinReference | None = None
        self.overflow: Tensor | None = None  # unsorted updates: whether a type exceeded its sel since the last report

    def build(self, coord: Tensor, atype: Tensor, box: Tensor | None = None, check_overflow: bool = True
              ) -> NeighborData:
        """Build the candidate list at these positions and return the DeePMD list there.

        Args:
            coord: (nf, nloc, 3) positions (unwrapped is fine).
            atype: (nf, nloc) int64 types (type < 0: virtual atom).
            box: (nf, 3, 3) or (nf, 9) cell row vectors, or None (non-periodic).
            check_overflow: warn when a type has more than sel[t] neighbours within rcut (host sync; a build syncs
                anyway).

        Returns:
            NeighborData at `coord`, as `update(coord, box)` gives it: the first nloc extended atoms are the local
            atoms wrapped into the cell, ghosts are images within rcut + skin of it.
        """
        if coord.ndim != 3 or coord.shape[-1] != 3 or atype.shape != coord.shape[:2]:
            raise ValueError(f"expected coord (nf, nloc, 3) and atype (nf, nloc), got {tuple(coord.shape)} and "
                             f"{tuple(atype.shape)}")
        boxes = None if box is None else as_box(box, coord.shape[0], coord.dtype).detach()
        self._report_overflow()
        coord_ref = coord.detach()
        ext_coord, ext_atype, mapping, cand = build_candidates(coord_ref, atype, boxes, self.rcut + self.skin)
        ref = make_reference(coord_ref, boxes, ext_coord, ext_atype, mapping, cand, self.sel)
        if self.static:
            ref, fresh = into_buffers(self.ref, ref)
        self.ref, self.generation = ref, self.generation + (fresh if self.static else 1)
        self.builds += 1
        return self.update(coord, box, check_overflow=check_overflow)

    def update(self, coord: Tensor, box: Tensor | None = None, check_overflow: bool = False) -> NeighborData:
        """The DeePMD list at new positions of the built atoms, from the candidates (no host sync by default).

        Args:
            coord: (nf, nloc, 3) positions, continuous with those of the build (unwrapped).
            box: (nf, 3, 3) or (nf, 9) new box of the same shape, or None to keep the box of the build.
            check_overflow: warn when a type has more than sel[t] neighbours within rcut: a host sync.

        Returns:
            NeighborData with the extended layout of the build; ext_coord is differentiable in coord and box. Exact
            while `needs_rebuild(coord, box)` is false.
        """
        ref = self._reference(coord, box)
        ext_coord = extended_positions(ref, coord, self._box(coord, box))
        if self.sort:
            nlist = select_from_candidates(ext_coord, ref.ext_atype, ref.candidates, ref.cand_type, self.rcut,
                                           ref.sel, check_overflow)
        else:
            nlist, over = unsorted_selection(ext_coord.device)(ext_coord, ref.ext_atype, ref.candidates,
                                                                ref.cand_type, self.rcut, ref.sel)
            if self.overflow is None:
                self.overflow = torch.zeros((), dtype=torch.bool, device=over.device)
            self.overflow.logical_or_(over)  # in place: a CUDA graph that captured this keeps accumulating
            if check_overflow:
                self._report_overflow()
        return NeighborData(ext_coord, ref.ext_atype, ref.mapping, nlist)

    def _report_overflow(self) -> None:
        """Warn when an unsorted update since the last report had more neighbours of a type than sel (host sync)."""
        if self.overflow is not None and bool(self.overflow):
            warnings.warn(f"neighbour list overflow: some atom had more neighbours of a type within rcut "
                          f"{self.rcut} than sel {self.sel}; the unsorted list kept the lowest-index ones, not the "
                          f"nearest (raise sel)", NeighborOverflowWarning, stacklevel=3)
            self.overflow.zero_()

    def needs_rebuild(self, coord: Tensor, box: Tensor | None = None) -> Tensor:
        """Whether the candidates may miss a neighbour at (coord, box): 0-dim bool on the device, no host sync.

        True when 2 max|A_i| > (1 - |B^-1 (B' - B)|)(rcut + skin) - rcut (module docstring; |.| an upper bound of
        the spectral norm), i.e. for a fixed box when an atom moved more than skin / 2 since the build. coord is
        unwrapped, so no minimum image is taken.
        """
        return self.skin_used(coord, box) > 1

    def skin_used(self, coord: Tensor, box: Tensor | None = None) -> Tensor:
        """2 max|A_i| over its bound in `needs_rebuild` (0-dim, the largest over frames; no host sync): 0 at the
        build, above 1 when a neighbour may be missed (inf when the strain alone uses the whole skin). For a fixed
        box, the largest move since the build over skin / 2."""
        ref = self._reference(coord, box)
        move = coord.detach() - ref.coord  # (nf, nloc, 3)
        limit = torch.full((coord.shape[0],), self.skin / 2, dtype=coord.dtype, device=coord.device)
        if ref.box is not None and box is not None:
            dbox = as_box(box, coord.shape[0], coord.dtype).detach() - ref.box  # (nf, 3, 3)
            move = move - frac_to_cart(ref.frac, dbox[:, None])  # A_i: the part beyond the affine deformation
            strain = spectral_norm_bound(ref.box_inv @ dbox)  # (nf,) >= |B^-1 dB|_2
            limit = ((1 - strain) * (self.rcut + self.skin) - self.rcut) / 2
        largest = torch.linalg.vector_norm(move, dim=-1).amax(dim=-1)  # (nf,)
        beyond = torch.where(largest > limit, float("inf"), 0.0)  # a bound of 0 or below: stale once anything moves
        return torch.where(limit > 0, largest / limit.clamp(min=torch.finfo(limit.dtype).tiny), beyond).amax()

    def neighbors(self, coord: Tensor, atype: Tensor, box: Tensor | None = None) -> NeighborData:
        """`update`, after a `build` when there is none yet, the shapes changed or `needs_rebuild` says so.

        Reads `needs_rebuild` on the host (one sync per call): for eager loops; a CUDA-graph loop calls `update`
        inside the graph and checks `needs_rebuild` outside it.
        """
        ref = self.ref
        if ref is not None and box is None:
            box = ref.box  # None keeps the build's box, as in `update`
        stale = ref is None or ref.coord.shape != coord.shape or (ref.box is None) != (box is None)
        if stale or bool(self.needs_rebuild(coord, box)):
            return self.build(coord, atype, box)
        return self.update(coord, box)

    def _reference(self, coord: Tensor, box: Tensor | None) -> SkinReference:
        if self.ref is None:
            raise RuntimeError("SkinNeighborList: call build() before update() or needs_rebuild()")
        if coord.shape != self.ref.coord.shape:
            raise ValueError(f"coord {tuple(coord.shape)} does not match the build's {tuple(self.ref.coord.shape)}")
        if box is not None and self.ref.box is None:
            raise ValueError("a box was given, but the list was built for a non-periodic system")
        return self.ref

    def _box(self, coord: Tensor, box: Tensor | None) -> Tensor | None:
        """The box in force: the given one as (nf, 3, 3) (differentiable), else the build's."""
        return self.ref.box if box is None else as_box(box, coord.shape[0], coord.dtype)


def spectral_norm_bound(mat: Tensor) -> Tensor:
    """An upper bound of the spectral norm of (..., 3, 3) matrices without an SVD (which would sync on a GPU):
    min(Frobenius norm, sqrt(max column sum * max row sum)); exact for diagonal matrices. -> (...,)."""
    frobenius = torch.linalg.matrix_norm(mat)
    absolute = mat.abs()
    return torch.minimum(frobenius, (absolute.sum(-2).amax(-1) * absolute.sum(-1).amax(-1)).sqrt())


def make_reference(coord: Tensor, box: Tensor | None, ext_coord: Tensor, ext_atype: Tensor, mapping: Tensor,
                   cand: Tensor, sel: Sequence[int]) -> SkinReference:
    """SkinReference from a cell-list build: the lattice shift of every extended atom from its owner's input
    position is read back from the positions, rounded to whole numbers (exact: the error is ~1e-12 of a cell).

    coord (nf, nloc, 3) and box (nf, 3, 3) | None as given to the build; ext_coord (nf, nall, 3), ext_atype and
    mapping (nf, nall), cand (nf, nloc, ncand) from `build_candidates`.
    """
    nf, nall = mapping.shape
    owner_index = mapping[..., None].expand(nf, nall, 3)
    owner = torch.gather(coord, 1, owner_index)
    real = ext_atype >= 0
    if box is None:
        shift = box_inv = frac = None
    else:
        box_inv = torch.linalg.inv(box)
        shift = torch.round((ext_coord.detach() - owner) @ box_inv).masked_fill(~real[..., None], 0)
        frac = coord @ box_inv
    padding = pad_coord = None
    if not bool(real.all()):  # frames with fewer ghosts than the largest were padded by the cell list
        padding, pad_coord = ~real[..., None], ext_coord.detach()
    cand_type = candidate_types(ext_atype, cand)
    return SkinReference(ext_atype, mapping, owner_index, shift, padding, pad_coord, cand, cand_type, coord, box,
                         box_inv, frac, tuple(sel))


ROOM = 1.25  # static references: room for this many times the extended atoms and candidates of the first build


def into_buffers(old: SkinReference | None, new: SkinReference) -> tuple[SkinReference, bool]:
    """`new` padded to fixed capacities: copied into `old`'s tensors (the same objects, so CUDA graphs that read them
    stay valid) when it fits, else into new tensors with ROOM. Returns the reference and whether it is new.

    Padding extended atoms are of type -1 at their owner 0 with no shift (`padding` marks them, so `update` puts
    them at `pad_coord`); padding candidates are -1. Nothing refers to either.
    """
    nf, nall = new.mapping.shape
    ncand = new.candidates.shape[-1]
    fits = old is not None and old.mapping.shape[0] == nf and (old.shift is None) == (new.shift is None) and \
        nall <= old.mapping.shape[1] and ncand <= old.candidates.shape[-1]
    room_atoms = old.mapping.shape[1] if fits else math.ceil(ROOM * nall)
    room_cand = old.candidates.shape[-1] if fits else math.ceil(ROOM * ncand)
    grow = lambda t, width, fill, dim=1: torch.cat(  # noqa: E731
        [t, t.new_full((*t.shape[:dim], width - t.shape[dim], *t.shape[dim + 1:]), fill)], dim=dim)
    mapping = grow(new.mapping, room_atoms, 0)
    pad_coord = new.coord.new_zeros(nf, nall, 3) if new.pad_coord is None else new.pad_coord  # read where padding
    padded = SkinReference(
        grow(new.ext_atype, room_atoms, -1), mapping, mapping[..., None].expand(nf, room_atoms, 3),
        None if new.shift is None else grow(new.shift, room_atoms, 0.0),
        grow((new.ext_atype < 0)[..., None], room_atoms, True),  # make_reference's padding, now always kept
        grow(pad_coord, room_atoms, 0.0), grow(new.candidates, room_cand, -1, dim=2),
        grow(new.cand_type, room_cand, -1, dim=2), new.coord, new.box, new.box_inv, new.frac, new.sel)
    if not fits:
        return padded, True
    for name in ("ext_atype", "mapping", "shift", "padding", "pad_coord", "candidates", "cand_type", "coord", "box",
                 "box_inv", "frac"):
        if getattr(old, name) is not None:
            getattr(old, name).copy_(getattr(padded, name))
    return old, False


def extended_positions(ref: SkinReference, coord: Tensor, box: Tensor | None) -> Tensor:
    """Every extended atom at its owner's new position plus its lattice shift in the current box.

    coord (nf, nloc, 3), box (nf, 3, 3) | None -> ext_coord (nf, nall, 3); differentiable in coord and box.
    """
    ext_coord = torch.gather(coord, 1, ref.owner_index)
    if ref.shift is not None:
        ext_coord = ext_coord + frac_to_cart(ref.shift.to(coord.dtype), box[:, None])
    if ref.padding is not None:
        ext_coord = torch.where(ref.padding, ref.pad_coord.to(coord.dtype), ext_coord)
    return ext_coord
