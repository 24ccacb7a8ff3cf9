"""Neighbour statistics of frames (spec §3.3): the most type-t neighbours within rcut of any atom, and the smallest
pair distance.

Counts use `r < rcut` strictly and include periodic images of the atom itself, as DeePMD-kit's `NeighborStat`
does (the neighbour list keeps `r == rcut`; a pair exactly at rcut has zero weight, so this changes no model).
Two paths with one result: the O(N^2) distances of `extend_coords` for small cells, and the cell list's candidate
pairs (`deeppot.nlist.cell_list`) for large ones, so memory stays linear in the atom count.
"""

from __future__ import annotations

import itertools
import math
from typing import Literal

import torch
from torch import Tensor

from deeppot.nlist import choose_method
from deeppot.nlist.cell_list import (  # the builder's steps
    _candidate_pairs,
    _chunk_bounds,
    bin_frame,
    bin_runs,
    wrapped_cells,
)
from deeppot.nlist.ghosts import as_box, extend_coords

__all__ = ["frame_neighbor_stat"]

_CELL_CHUNK_PAIRS = 2**22  # candidate pairs per chunk of centres on the cell-list path (~100 bytes a pair)


def frame_neighbor_stat(coord: Tensor, atype: Tensor, box: Tensor | None, rcut: float, ntypes: int,
                        mixed_type: bool = False,
                        method: Literal["auto", "reference", "cell"] = "auto") -> tuple[Tensor, Tensor]:
    """Per frame: the largest neighbour count of each type over the atoms, and the smallest pair distance.

    Args:
        coord: (nf, nloc, 3) positions; atype (nf, nloc) int64 types (type < 0: virtual, never counted);
        box: (nf, 3, 3) or (nf, 9) cell row vectors, or None without periodic boundaries.
        rcut: cutoff radius; ntypes: number of types counted.
        mixed_type: count all types as one (DeePMD-kit's --mixed-type / --one-type).
        method: "reference" (all pairs), "cell" (cell list) or "auto" (`choose_method` of the neighbour list).

    Returns:
        max_count (nf, ntypes) int64, or (nf, 1) with mixed_type; min_dist (nf,) float64, inf where an atom has
        no other atom in reach (the reference path sees every image within rcut of the cell, the cell list only
        those within about rcut of each atom: both agree whenever the smallest distance is below rcut).
    """
    if method == "auto":
        method = choose_method(coord, box, rcut)
    ngroups = 1 if mixed_type else ntypes
    group = atype.clamp(min=-1) if not mixed_type else torch.where(atype >= 0, 0, -1)
    if method == "reference":
        return _stat_reference(coord, group, box, rcut, ngroups)
    if method != "cell":
        raise ValueError(f"unknown neighbour-statistics method {method!r}; expected 'auto', 'reference' or 'cell'")
    boxes = None if box is None else as_box(box, coord.shape[0], coord.dtype)
    stats = [_stat_cell_frame(coord[f:f + 1], group[f], None if boxes is None else boxes[f:f + 1], rcut, ngroups)
             for f in range(coord.shape[0])]
    return torch.stack([s[0] for s in stats]), torch.stack([s[1] for s in stats])


def _stat_reference(coord: Tensor, group: Tensor, box: Tensor | None, rcut: float,
                    ngroups: int) -> tuple[Tensor, Tensor]:
    nloc = coord.shape[1]
    ext_coord, ext_group, _ = extend_coords(coord, group, box, rcut)
    dist = torch.cdist(ext_coord[:, :nloc], ext_coord)  # (nf, nloc, nall)
    diag = torch.arange(nloc, device=coord.device)
    dist[:, diag, diag] = math.inf  # an atom is not its own neighbour (its images are)
    virtual = (ext_group[:, None, :] < 0) | (group[:, :, None] < 0)  # neither centre nor neighbour
    dist = dist.masked_fill(virtual, math.inf)
    within = dist < rcut
    count = torch.stack([(within & (ext_group[:, None, :] == t)).sum(-1) for t in range(ngroups)], dim=-1)
    return count.amax(dim=1), dist.amin(dim=(1, 2)).to(torch.float64)


def _stat_cell_frame(coord: Tensor, group: Tensor, box: Tensor | None, rcut: float,
                     ngroups: int) -> tuple[Tensor, Tensor]:
    """One frame with the cell list: coord (1, nloc, 3), group (nloc,), box (1, 3, 3) | None."""
    coord, cells = wrapped_cells(coord, box)
    frame = bin_frame(coord[0], group, cells[0], rcut)
    ext_coord, pos_sorted, group_sorted = frame.ext_coord, frame.pos_sorted, frame.type_sorted
    nloc = coord.shape[1]
    seg_start, seg_len = bin_runs(frame.bins, nloc)
    count = torch.zeros(nloc * ngroups, dtype=torch.int64, device=coord.device)
    min_dist = torch.full((), math.inf, dtype=torch.float64, device=coord.device)
    for a, b in itertools.pairwise(_chunk_bounds(seg_len, _CELL_CHUNK_PAIRS)):
        row, at = _candidate_pairs(seg_start[a:b], seg_len[a:b], int(seg_len[a:b].sum()))
        centre = row + a
        rr = torch.linalg.norm(pos_sorted[at] - ext_coord[centre], dim=-1)
        real = (frame.bins.order[at] != centre) & (group_sorted[at] >= 0) & (group[centre] >= 0)
        rr = rr.masked_fill(~real, math.inf)
        if rr.numel():
            min_dist = torch.minimum(min_dist, rr.min().to(torch.float64))
        within = (rr < rcut).nonzero().squeeze(1)
        slot = centre[within] * ngroups + group_sorted[at[within]]
        count.index_add_(0, slot, torch.ones_like(slot))
    return count.reshape(nloc, ngroups).amax(dim=0), min_dist
