"""Selection of the DeePMD neighbour list from a skin list's candidates, every step, without host syncs.

`select_from_candidates` is DeePMD's rule (the nearest sum(sel) within rcut, per-type blocks in ascending distance,
spec §3.2); `select_in_candidate_order` keeps every candidate within rcut in candidate order, without the sort (what
MD uses: the energy is a sum over a block's slots); `unsorted_selection` picks it or its one-kernel twin
(`deeppot.kernels.selection`) by device; `cell_neighbors` applies it to the cell list's rows at rcut (on a GPU in the
cell list's own walk of its bins). Both split by type with `deeppot.nlist.selection.split_by_type`, the
sort-free split of every builder. `evaluation_neighbors` applies the unsorted rule to the cell list's neighbours
within rcut: the list of a one-off evaluation (`deeppot.infer.Evaluator`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from deeppot.nlist import NeighborData, build_neighbor_data, choose_method, extend_coords
from deeppot.nlist.cell_list import (
    BinnedFrame,
    bin_frame,
    bin_runs,
    gpu_kernels,
    pad_frames,
    pair_rows,
    wrapped_cells,
)
from deeppot.nlist.reference import pair_distances
from deeppot.nlist.selection import distance, split_by_type, warn_overflow

__all__ = [
    "candidate_types",
    "cell_neighbors",
    "evaluation_neighbors",
    "select_all_pairs",
    "select_from_candidates",
    "select_in_bins",
    "select_in_candidate_order",
    "unsorted_selection",
]


def select_from_candidates(
    ext_coord: Tensor,
    ext_atype: Tensor,
    candidates: Tensor,
    cand_type: Tensor,
    rcut: float,
    sel: Sequence[int],
    check_overflow: bool = False,
) -> Tensor:
    """`deeppot.nlist.format_nlist` for a candidate list whose types are known, without host syncs.

    Args:
        ext_coord: (nf, nall, 3) extended positions; the first nloc are the centres.
        ext_atype: (nf, nall) int64 types (centres of type < 0 get an empty row).
        candidates: (nf, nloc, ncand) int64 extended indices, never the centre itself, ascending in each row with the
            -1 padding last (`compact_candidates`); another order gives the same neighbours, ties in another order.
        cand_type: (nf, nloc, ncand) int64 their types, -1 for padding (never a neighbour).
        rcut: cutoff (r == rcut is kept).
        sel: maximal neighbours per type.
        check_overflow: warn when a type has more than sel[t] candidates within rcut (a host sync).

    Returns:
        nlist (nf, nloc, sum(sel)) int64: the sum(sel) nearest within rcut, split into per-type blocks of ascending
        distance (ties by extended index), -1 padded; the rule of every builder (spec §3.2). Of atoms tied at the
        sum(sel)-th distance (only when a row overflows), the lowest indices stay, where format_nlist's top-k picks.
    """
    nloc = candidates.shape[1]
    with torch.no_grad():
        j, rr = candidate_distances(ext_coord, candidates)
        rr = rr.masked_fill((cand_type < 0) | (rr > rcut), float("inf"))
        # One stable sort: columns ascend by extended index, so equal distances stay in index order (`nearest`'s
        # tie rule) and the first sum(sel) columns are the nearest.
        r_near, cols = torch.sort(rr, dim=-1, stable=True)
        nnei = sum(sel)
        r_near, cols = r_near[..., :nnei], cols[..., :nnei]
        t_near = torch.gather(cand_type, -1, cols).masked_fill(torch.isinf(r_near), -1)
        nlist = split_by_type(torch.gather(j, -1, cols), t_near, sel)
        virtual = (ext_atype[:, :nloc] < 0)[..., None]
        if check_overflow:
            within = torch.isfinite(rr)
            count = torch.stack([(within & (cand_type == t)).sum(-1) for t in range(len(sel))], dim=-1)
            warn_overflow(count.masked_fill(virtual, 0), sel, rcut)
        return nlist.masked_fill(virtual, -1)


def candidate_distances(ext_coord: Tensor, candidates: Tensor) -> tuple[Tensor, Tensor]:
    """The candidates' indices with the padding at 0 (nf, nloc, ncand) and their distances from the centres."""
    nf, nloc, ncand = candidates.shape
    j = candidates.clamp(min=0)
    nbr = torch.gather(ext_coord, 1, j.reshape(nf, -1, 1).expand(-1, -1, 3)).reshape(nf, nloc, ncand, 3)
    return j, distance(ext_coord[:, :nloc, None, :], nbr)


def unsorted_selection(device: torch.device, all_pairs: bool = False):
    """`select_in_candidate_order` (or with all_pairs `select_all_pairs`), or on a CUDA device with Triton its
    one-kernel twin (`deeppot.kernels.selection`, equal entry for entry)."""
    if gpu_kernels(device):
        from deeppot.kernels import selection

        return selection.select_all_pairs if all_pairs else selection.select_in_candidate_order
    return select_all_pairs if all_pairs else select_in_candidate_order


def select_in_candidate_order(ext_coord: Tensor, ext_atype: Tensor, candidates: Tensor, cand_type: Tensor,
                              rcut: float, sel: Sequence[int]) -> tuple[Tensor, Tensor]:
    """Every candidate within rcut, per-type blocks in candidate order: `select_from_candidates` without its sort.

    The energy is a sum over the slots of a block (whose statistics are the same for every slot), so while no
    type exceeds its sel this list gives the energies of DeePMD's list to rounding. Arguments as
    `select_from_candidates`. Returns nlist (nf, nloc, sum(sel)) and a 0-dim bool on the device: whether some row
    had more neighbours of a type than its sel (it then keeps the lowest-index ones, not the nearest).
    """
    nloc = candidates.shape[1]
    with torch.no_grad():
        j, rr = candidate_distances(ext_coord, candidates)
        within = (cand_type >= 0) & (rr <= rcut)
        within &= (ext_atype[:, :nloc] >= 0)[..., None]  # virtual centres get an empty row
        return split_by_type(j, torch.where(within, cand_type, -1), sel, overflow=True)


def select_all_pairs(ext_coord: Tensor, ext_atype: Tensor, nloc: int, rcut: float, sel: Sequence[int]
                     ) -> tuple[Tensor, Tensor]:
    """`select_in_candidate_order` with every extended atom but the centre a candidate: the O(N^2) builder's
    neighbours (`deeppot.nlist.reference`) in extended-index order, without its top-k and two sorts a row. No host
    sync. Returns nlist (nf, nloc, sum(sel)) and the overflow flag (0-dim bool on the device)."""
    nf, nall = ext_atype.shape
    with torch.no_grad():
        within = (pair_distances(ext_coord, ext_atype, nloc) <= rcut) & (ext_atype[:, :nloc] >= 0)[..., None]
        itype = torch.where(within, ext_atype[:, None, :], -1)
        idx = torch.arange(nall, device=ext_atype.device).expand(nf, nloc, nall)
        return split_by_type(idx, itype, sel, overflow=True)


def candidate_types(ext_atype: Tensor, candidates: Tensor) -> Tensor:
    """The type of each candidate (nf, nloc, ncand) int64, -1 for padding; ext_atype (nf, nall)."""
    nf = candidates.shape[0]
    cand_type = torch.gather(ext_atype, 1, candidates.clamp(min=0).reshape(nf, -1)).reshape(candidates.shape)
    return cand_type.masked_fill(candidates < 0, -1)


def cell_neighbors(coord: Tensor, atype: Tensor, box: Tensor | None, rcut: float, sel: Sequence[int],
                   host_box: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """`build_candidates` at rcut (unsorted) followed by `select_in_candidate_order`, frame by frame; on a GPU one
    kernel a frame walks the bins' runs and puts each neighbour in its type block as it goes
    (`deeppot.kernels.cell_pairs.select_pairs`: no row of candidates stored, no row width read back). Arguments as
    `evaluation_neighbors`. Returns ext_coord, ext_atype, mapping (padded as `build_candidates` pads them), nlist
    (nf, nloc, sum(sel)) and the overflow flag (0-dim bool on the device)."""
    coord, cells = wrapped_cells(coord, box, host_box)
    nloc = atype.shape[1]
    frames, lists, flags = [], [], []
    for f in range(atype.shape[0]):
        frame = bin_frame(coord[f], atype[f], cells[f], rcut)
        nlist, over = select_in_bins(frame, nloc, rcut, sel)
        frames.append(frame[:3])
        lists.append(nlist.reshape(nloc, -1))
        flags.append(over)
    return *pad_frames(frames, rcut), torch.stack(lists), torch.stack(flags).any()


def select_in_bins(frame: BinnedFrame, nloc: int, rcut: float, sel: Sequence[int]) -> tuple[Tensor, Tensor]:
    """Every neighbour within rcut of the frame's first nloc atoms, per-type blocks in the order the bins hold them,
    and the overflow flag: `pair_rows` and `select_in_candidate_order`, or on a GPU their one-launch twin
    (`deeppot.kernels.cell_pairs.select_pairs`)."""
    pos = frame.ext_coord.detach()
    if gpu_kernels(pos.device):
        from deeppot.kernels.cell_pairs import select_pairs

        return select_pairs(pos, frame.ext_atype, frame.pos_sorted, frame.type_sorted, frame.bins, nloc, rcut, sel)
    seg_start, seg_len = bin_runs(frame.bins, nloc)
    rows = pair_rows(pos, frame.pos_sorted, frame.type_sorted, frame.bins.order, seg_start, seg_len, 0, rcut)[None]
    return select_in_candidate_order(pos[None], frame.ext_atype[None], rows,
                                     candidate_types(frame.ext_atype[None], rows), rcut, sel)


def evaluation_neighbors(coord: Tensor, atype: Tensor, box: Tensor | None, rcut: float, sel: Sequence[int],
                         host_box: Tensor | None = None, sort: bool = False) -> NeighborData:
    """Neighbour data for one evaluation of these frames (arguments as `deeppot.nlist.build_neighbor_data`).

    Every neighbour within rcut, each block in candidate order: for small systems every periodic image in
    extended-index order (`select_all_pairs`), for large ones the cell list's rows in the order the bins hold them
    (`cell_neighbors`). While no type exceeds its sel
    these are the neighbours of DeePMD's list, so the energies are the same to rounding, without DeePMD's selection
    (a top-k and two sorts a row: 2.4 ms of the 98,304-atom water build, run 194). When a type does (one host sync
    to know), the frames get DeePMD's list instead, which keeps the nearest and warns. host_box: the box already
    on the host, when the caller has it (the choice of builder and the image layers then read it without a sync).
    sort: DeePMD's list whatever the size, for a model whose slots are not interchangeable
    (`deeppot.model.slots.interchangeable_slots`).
    """
    method = choose_method(coord, box if host_box is None else host_box, rcut)
    if sort:
        return build_neighbor_data(coord, atype, box, rcut, sel, method=method)
    if method == "reference":
        ext_coord, ext_atype, mapping = extend_coords(coord, atype, box, rcut, host_box)
        nlist, over = unsorted_selection(coord.device, all_pairs=True)(ext_coord, ext_atype, coord.shape[1], rcut,
                                                                      sel)
    else:
        ext_coord, ext_atype, mapping, nlist, over = cell_neighbors(coord, atype, box, rcut, sel, host_box)
    if bool(over):
        return build_neighbor_data(coord, atype, box, rcut, sel, method=method)
    return NeighborData(ext_coord, ext_atype, mapping, nlist)
