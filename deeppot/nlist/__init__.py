"""Neighbour data: coordinates -> extended atoms (periodic images) and per-type blocked neighbour lists.

Two builders with one result (spec §3): `"reference"`, the O(N^2) oracle of plain PyTorch ops, and `"cell"`, a
cell list that scales linearly to 10^5 atoms. They index different extended arrays (the cell list keeps only the
ghosts near the cell) but select the same neighbours: compare them through `mapping` and displacement vectors.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from torch import Tensor

from deeppot.nlist.cell_list import build_cell_list
from deeppot.nlist.ghosts import as_box, extend_coords, nbuff_for, wrap_coords
from deeppot.nlist.reference import build_nlist_reference
from deeppot.nlist.selection import NeighborOverflowWarning, format_nlist

__all__ = [
    "REFERENCE_MAX_PAIRS",
    "NeighborData",
    "NeighborOverflowWarning",
    "build_cell_list",
    "build_neighbor_data",
    "build_nlist_reference",
    "choose_method",
    "extend_coords",
    "format_nlist",
    "reference_pairs",
    "wrap_coords",
]

log = logging.getLogger(__name__)

# "auto" uses the O(N^2) reference while it is cheaper than the cell list's per-frame bookkeeping (host syncs, small
# kernels). On a CPU both cost time in proportion to their work, frame by frame: the reference wins below about
# 6e4 (local, extended) pairs per frame (~40 atoms in a cell with one image layer). On a GPU the dense ops of a
# whole batch run at once while the cell list pays ~4 ms per frame (H200: 16 frames x 192 atoms, 1.6e7 pairs,
# reference 3.7 ms, cell 56 ms; 1 frame x 1000 atoms, 2.7e7 pairs, 3.9 vs 3.6 ms), so the limit applies to the
# batch and also bounds the reference's memory (~60 bytes a pair).
REFERENCE_MAX_PAIRS = {"cpu": 60_000, "cuda": 20_000_000}


@dataclass
class NeighborData:
    """Extended atoms and the neighbour list of the local atoms."""

    ext_coord: Tensor  # (nf, nall, 3) first nloc atoms are the local atoms (wrapped into the cell)
    ext_atype: Tensor  # (nf, nall) int64; -1 for padding atoms that are never neighbours
    mapping: Tensor  # (nf, nall) int64 local owner of each extended atom
    nlist: Tensor  # (nf, nloc, nnei) int64 indices into the extended atoms, -1 padded


def reference_pairs(coord: Tensor, box: Tensor | None, rcut: float) -> int:
    """Pairs the O(N^2) reference examines per frame: nloc * nall with every periodic image of the cell.

    coord: (nf, nloc, 3); box: (nf, 3, 3), (nf, 9) or None. Reads the box on the host (a sync if it is on a GPU).
    """
    nf, nloc = coord.shape[:2]
    nall = nloc
    if box is not None:
        nbuff = nbuff_for(as_box(box, nf, box.dtype), rcut)
        nall = nloc * math.prod(2 * n + 1 for n in nbuff)
    return nloc * nall


def choose_method(coord: Tensor, box: Tensor | None, rcut: float) -> Literal["reference", "cell"]:
    """The builder "auto" picks, from `reference_pairs` and REFERENCE_MAX_PAIRS: per frame on the CPU, per batch
    on a GPU."""
    pairs = reference_pairs(coord, box, rcut)
    if coord.is_cuda:
        return "reference" if coord.shape[0] * pairs <= REFERENCE_MAX_PAIRS["cuda"] else "cell"
    return "reference" if pairs <= REFERENCE_MAX_PAIRS["cpu"] else "cell"


def build_neighbor_data(
    coord: Tensor,
    atype: Tensor,
    box: Tensor | None,
    rcut: float,
    sel: Sequence[int],
    method: Literal["auto", "reference", "cell"] = "auto",
    check_overflow: bool = True,
) -> NeighborData:
    """Wrap, extend with periodic images and build the neighbour list (spec §3).

    Args:
        coord: (nf, nloc, 3) positions, float32 or float64.
        atype: (nf, nloc) int64 types (type < 0: virtual atom).
        box: (nf, 3, 3) or (nf, 9) cell row vectors, or None for a non-periodic system.
        rcut: cutoff radius.
        sel: maximal neighbours per type; nnei = sum(sel).
        method: "reference" (extend_coords + O(N^2) list), "cell" (cell list) or "auto" (`choose_method`).
        check_overflow: warn (NeighborOverflowWarning) when a type has more than sel[t] neighbours; a host sync.

    Returns:
        NeighborData; ext_coord is differentiable with respect to coord (and box).
    """
    if coord.ndim != 3 or coord.shape[-1] != 3 or atype.shape != coord.shape[:2]:
        raise ValueError(f"expected coord (nf, nloc, 3) and atype (nf, nloc), got {tuple(coord.shape)} and "
                         f"{tuple(atype.shape)}")
    if not rcut > 0 or len(sel) == 0 or min(sel) < 0:
        raise ValueError(f"expected rcut > 0 and a non-empty sel of non-negative ints, got rcut={rcut}, sel={sel}")
    if method == "auto":
        method = choose_method(coord, box, rcut)
        log.debug("neighbour list: %s builder for nloc=%d", method, coord.shape[1])
    if method == "reference":
        ext_coord, ext_atype, mapping = extend_coords(coord, atype, box, rcut)
        nlist = build_nlist_reference(ext_coord, ext_atype, coord.shape[1], rcut, sel, check_overflow)
    elif method == "cell":
        ext_coord, ext_atype, mapping, nlist = build_cell_list(coord, atype, box, rcut, sel, check_overflow)
    else:
        raise ValueError(f"unknown neighbour-list method {method!r}; expected 'auto', 'reference' or 'cell'")
    return NeighborData(ext_coord, ext_atype, mapping, nlist)
