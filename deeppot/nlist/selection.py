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


def split_by_type(idx: Tensor, itype: Tensor, sel: Sequence[int]) -> Tensor:
    """Distance-sorted neighbours -> per-type blocks (the type split of spec §3.2 step 3).

    Args:
        idx: (..., k) int64 neighbour indices in ascending distance.
        itype: (..., k) int64 their types, -1 for dropped slots.
        sel: block widths.

    Returns:
        (..., sum(sel)) int64: slot s of block t holds the s-th type-t entry of `idx`, or -1.
    """
    ntypes, nnei = len(sel), sum(sel)
    device = idx.device
    if idx.shape[-1] == 0:
        return torch.full((*idx.shape[:-1], nnei), -1, dtype=torch.int64, device=device)
    # Group entries by type; the stable sort keeps ascending distance inside each type.
    key = torch.where(itype >= 0, itype, ntypes)
    key, order = torch.sort(key, dim=-1, stable=True)
    grouped = torch.gather(idx, -1, order)
    n_of_type = (key[..., :, None] == torch.arange(ntypes, device=device)).sum(-2)  # (..., ntypes)
    first_of_type = torch.cumsum(n_of_type, dim=-1) - n_of_type
    # Static layout of the output slots: the type block of each slot and its rank inside the block.
    slot_type = torch.tensor([t for t, width in enumerate(sel) for _ in range(width)], device=device)
    slot_rank = torch.tensor([s for width in sel for s in range(width)], device=device)
    filled = slot_rank < n_of_type[..., slot_type]
    pos = (first_of_type[..., slot_type] + slot_rank).clamp(max=idx.shape[-1] - 1)
    return torch.where(filled, torch.gather(grouped, -1, pos), -1)


def warn_overflow(count: Tensor, sel: Sequence[int], rcut: float, max_report: int = 5) -> None:
    """Emit one NeighborOverflowWarning naming the worst (frame, atom, type) overflows, if any.

    Args:
        count: (nf, nloc, ntypes) neighbours of each type within rcut.
        sel: per-type capacity.
        rcut: cutoff (for the message).
        max_report: how many cases the message lists.

    This reads one scalar back from the device (a host sync): call it in build steps, not in a hot loop.
    """
    excess = (count - torch.tensor(list(sel), device=count.device)).clamp(min=0)
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
