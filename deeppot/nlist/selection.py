"""Neighbour selection shared by every builder (spec §3.2, DeePMD-kit PyTorch semantics).

Each builder produces, per local atom, a row of candidate neighbours (extended index, type, distance); this module
turns candidate rows into the per-type blocked list. One function for all builders keeps their results identical.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch
from torch import Tensor


class NeighborOverflowWarning(UserWarning):
    """A type had more neighbours within rcut than its `sel`: the farthest of them were dropped."""


def select_neighbors(
    rr: Tensor, cand_idx: Tensor, cand_type: Tensor, rcut: float, sel: Sequence[int]
) -> tuple[Tensor, Tensor]:
    """Pick the `sum(sel)` nearest candidates within `rcut` and split them into per-type blocks.

    Args:
        rr: (..., ncand) candidate distances; `inf` marks slots that are no neighbour (padding, self, type < 0).
        cand_idx: (..., ncand) int64 extended index of each candidate.
        cand_type: (..., ncand) int64 type of each candidate.
        rcut: cutoff; `r == rcut` is kept.
        sel: maximal neighbours per type.

    Returns:
        nlist (..., nnei) int64: block t (width sel[t]) holds the type-t neighbours among the `nnei` nearest, in
        ascending distance (ties by extended index), -1 padded at the end of the block.
        count (..., ntypes) int64: neighbours of each type within rcut among all candidates (for overflow checks).
    """
    r_near, order = nearest(rr, cand_idx, sum(sel))
    idx_near = torch.gather(cand_idx, -1, order)
    t_near = torch.gather(cand_type, -1, order).masked_fill(r_near > rcut, -1)  # also drops inf
    nlist = split_by_type(idx_near, t_near, sel)
    within = rr <= rcut
    count = torch.stack([(within & (cand_type == t)).sum(-1) for t in range(len(sel))], dim=-1)
    return nlist, count


def distance(centre: Tensor, neighbour: Tensor) -> Tensor:
    """|neighbour - centre| over the last axis (broadcasting). Every builder measures distances with this one
    expression, so equal inputs give bitwise equal distances and the builders order ties the same way."""
    return torch.linalg.norm(neighbour - centre, dim=-1)


def nearest(rr: Tensor, cand_idx: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The k nearest candidates of each row in ascending (distance, extended index) order.

    Args:
        rr: (..., ncand) distances.
        cand_idx: (..., ncand) extended index of each candidate (the tie-breaker).
        k: how many to keep.

    Returns:
        values, columns (..., min(k, ncand)). As in DeePMD-kit a top-k picks the set (which of several atoms tied
        at the k-th distance stays is the top-k's choice, spec §3.2); the order inside the set does not depend on
        the candidates' column order. A top-k plus sorts of width k is much cheaper than a full sort of wide rows.
    """
    k = min(k, rr.shape[-1])
    if k < rr.shape[-1]:
        cols = torch.topk(rr, k, dim=-1, largest=False, sorted=False).indices
    else:
        cols = torch.arange(k, device=rr.device).expand(rr.shape)
    order = torch.sort(torch.gather(cand_idx, -1, cols), dim=-1, stable=True).indices
    cols = torch.gather(cols, -1, order)
    values, order = torch.sort(torch.gather(rr, -1, cols), dim=-1, stable=True)
    return values, torch.gather(cols, -1, order)


def split_by_type(idx: Tensor, itype: Tensor, sel: Sequence[int], overflow: bool = False):
    """Distance-sorted neighbours -> per-type blocks (the type split of spec §3.2 step 3), without a sort and without
    host syncs: each entry's rank inside its type comes from a running count, and one scatter puts it in place.

    Args:
        idx: (..., k) int64 neighbour indices in ascending distance.
        itype: (..., k) int64 their types, -1 for dropped slots.
        sel: block widths.
        overflow: also return whether some row had more type-t entries than sel[t] for some t (0-dim bool).

    Returns:
        (..., sum(sel)) int64: slot s of block t holds the s-th type-t entry of `idx`, or -1 [, the overflow flag].
    """
    nnei, k = sum(sel), idx.shape[-1]
    over = torch.zeros((), dtype=torch.bool, device=idx.device)
    # Entries that get no slot go to columns of their own past nnei: the scatter then writes no place twice.
    pos = (nnei + torch.arange(k, device=idx.device)).expand(idx.shape)
    start = 0
    for t, width in enumerate(sel):
        is_t = itype == t
        rank = torch.cumsum(is_t, dim=-1) - 1  # (..., k) rank of each type-t entry among type t
        pos = torch.where(is_t & (rank < width), start + rank, pos)
        if overflow and k > 0:
            over = over | (rank[..., -1:] >= width).any()  # rank of the row's last entry = count - 1
        start += width
    out = idx.new_full((*idx.shape[:-1], nnei + k), -1).scatter_(-1, pos, idx)
    return (out[..., :nnei], over) if overflow else out[..., :nnei]


def overflowed(count: Tensor, atype_loc: Tensor, sel: Sequence[int]) -> Tensor:
    """Whether a real centre (type >= 0) has more neighbours of a type than its sel: count (..., nloc, ntypes),
    atype_loc (..., nloc) -> 0-dim bool on the device, without a host sync (a CUDA graph can capture it; sel stays
    Python ints, so nothing is copied from the host)."""
    over = torch.stack([count[..., t] > width for t, width in enumerate(sel)], dim=-1)
    return (over & (atype_loc >= 0)[..., None]).any()


def warn_overflow(count: Tensor, sel: Sequence[int], rcut: float, max_report: int = 5) -> None:
    """Emit one NeighborOverflowWarning naming the worst (frame, atom, type) overflows, if any.

    Args:
        count: (nf, nloc, ntypes) neighbours of each type within rcut.
        sel: per-type capacity.
        rcut: cutoff (for the message).
        max_report: how many cases the message lists.

    This reads one scalar back from the device (a host sync): call it in build steps, not in a hot loop.
    """
    sel_t = torch.tensor(list(sel)).to(count.device, non_blocking=True)  # no wait for the GPU's queue
    excess = (count - sel_t).clamp(min=0)
    if excess.numel() == 0 or not bool(excess.max() > 0):
        return
    nbad = int((excess > 0).sum())
    top = torch.topk(excess.flatten(), min(max_report, nbad))
    nloc, ntypes = count.shape[1], count.shape[2]
    lines = []
    for flat in top.indices.cpu().tolist():
        f, rest = divmod(flat, nloc * ntypes)
        i, t = divmod(rest, ntypes)
        n = int(count[f, i, t])
        lines.append(f"frame {f} atom {i}: {n} neighbours of type {t} within rcut {rcut} "
                     f"but sel[{t}] = {sel[t]} ({n - sel[t]} dropped)")
    head = f"neighbour list overflow in {nbad} (frame, atom, type) case(s); worst: "
    tail = "; raise sel (the nearest sum(sel) neighbours are kept, so other types may lose neighbours too)"
    warnings.warn(head + "; ".join(lines) + tail, NeighborOverflowWarning, stacklevel=3)


def format_nlist(
    ext_coord: Tensor,
    ext_atype: Tensor,
    raw_nlist: Tensor,
    nloc: int,
    rcut: float,
    sel: Sequence[int],
    check_overflow: bool = True,
) -> Tensor:
    """Normalise an externally supplied neighbour list (e.g. LAMMPS, radius rcut + skin, unsorted, -1 padded).

    Args:
        ext_coord: (nf, nall, 3) extended coordinates.
        ext_atype: (nf, nall) int64 extended types (-1: never a neighbour).
        raw_nlist: (nf, nloc, nraw) int64 indices into the extended atoms, any order, -1 padded, any width.
        nloc: number of local atoms (the first nloc extended atoms).
        rcut: cutoff; entries farther away are dropped.
        sel: per-type block widths.
        check_overflow: warn when a type has more than sel[t] neighbours (costs a host sync).

    Returns:
        nlist (nf, nloc, sum(sel)) int64 with the same rule as the builders: sort by distance, drop r > rcut, keep
        the sum(sel) nearest, split by type.
    """
    nf = ext_coord.shape[0]
    with torch.no_grad():
        valid = raw_nlist >= 0
        j = raw_nlist.clamp(min=0)
        nbr = torch.gather(ext_coord, 1, j.reshape(nf, -1, 1).expand(-1, -1, 3)).reshape(*j.shape, 3)
        rr = distance(ext_coord[:, :nloc, None, :], nbr)
        jtype = torch.gather(ext_atype, 1, j.reshape(nf, -1)).reshape(j.shape)
        self_idx = torch.arange(nloc, device=j.device)[None, :, None]
        rr = rr.masked_fill(~valid | (jtype < 0) | (j == self_idx), float("inf"))
        nlist, count = select_neighbors(rr, j, jtype, rcut, sel)
        return mask_virtual_centres(nlist, count, ext_atype[:, :nloc], sel, rcut, check_overflow)


def mask_virtual_centres(
    nlist: Tensor, count: Tensor, atype_loc: Tensor, sel: Sequence[int], rcut: float, check_overflow: bool
) -> Tensor:
    """Blank the rows of virtual centres (type < 0) and warn about overflows of the others.

    nlist (nf, nloc, nnei), count (nf, nloc, ntypes), atype_loc (nf, nloc) -> nlist.
    """
    virtual = (atype_loc < 0)[..., None]
    if check_overflow:
        warn_overflow(count.masked_fill(virtual, 0), sel, rcut)
    return nlist.masked_fill(virtual, -1)
