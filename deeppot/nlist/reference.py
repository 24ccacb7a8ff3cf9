"""O(N^2) neighbour list in plain PyTorch: the test oracle (DeePMD-kit `build_neighbor_list`, spec §3.2)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from deeppot.nlist.selection import NeighborOverflowWarning, distance, mask_virtual_centres, select_neighbors

__all__ = ["NeighborOverflowWarning", "build_nlist_reference", "pair_distances", "reference_rows"]


def build_nlist_reference(
    ext_coord: Tensor,
    ext_atype: Tensor,
    nloc: int,
    rcut: float,
    sel: Sequence[int],
    check_overflow: bool = True,
) -> Tensor:
    """Neighbour list of the first `nloc` extended atoms from all pairwise distances.

    Args:
        ext_coord: (nf, nall, 3) extended coordinates; the first nloc atoms are the centres.
        ext_atype: (nf, nall) int64 types; type < 0 is never a neighbour (and a centre of type < 0 gets no list).
        nloc: number of centres.
        rcut: cutoff radius (r == rcut is kept).
        sel: maximal neighbours per type.
        check_overflow: emit a NeighborOverflowWarning when a type has more than sel[t] neighbours within rcut.

    Returns:
        nlist (nf, nloc, sum(sel)) int64 indices into the extended atoms: the sum(sel) nearest within rcut, split
        into per-type blocks of width sel[t], ascending distance, -1 padded.
    """
    nlist, count = reference_rows(ext_coord, ext_atype, nloc, rcut, sel)
    return mask_virtual_centres(nlist, count, ext_atype[:, :nloc], sel, rcut, check_overflow)


def reference_rows(ext_coord: Tensor, ext_atype: Tensor, nloc: int, rcut: float, sel: Sequence[int]
                   ) -> tuple[Tensor, Tensor]:
    """`build_nlist_reference` before its virtual centres are blanked: nlist (nf, nloc, nnei) and the neighbours
    of each type within rcut, count (nf, nloc, ntypes); no host sync (a CUDA graph can capture it)."""
    nf, nall, _ = ext_coord.shape
    with torch.no_grad():
        rr = pair_distances(ext_coord, ext_atype, nloc)
        cand_idx = torch.arange(nall, device=ext_coord.device).expand(nf, nloc, nall)
        cand_type = ext_atype[:, None, :].expand(nf, nloc, nall)
        return select_neighbors(rr, cand_idx, cand_type, rcut, sel)


def pair_distances(ext_coord: Tensor, ext_atype: Tensor, nloc: int) -> Tensor:
    """The distance of every extended atom from each of the first nloc, (nf, nloc, nall), inf where that atom is the
    centre itself or of type < 0 (never a neighbour)."""
    nall = ext_coord.shape[1]
    # The (nf, nloc, nall, 3) differences are materialised on purpose: `distance` is the one expression all
    # builders share (cdist would be faster but rounds differently, and ties would then order differently).
    rr = distance(ext_coord[:, :nloc, None, :], ext_coord[:, None, :, :])
    idx = torch.arange(nall, device=ext_coord.device)
    is_self = idx[None, :] == torch.arange(nloc, device=ext_coord.device)[:, None]  # (nloc, nall)
    return rr.masked_fill(is_self | (ext_atype < 0)[:, None, :], float("inf"))
