"""The cell list's candidate pairs in one Triton kernel: the fast twin of `deeppot.nlist.cell_list.pair_rows`.

A build of the cell list (`deeppot.nlist.cell_list`) finds, for every centre, the atoms within rcut among those of
the bins within reach: 25-49 runs of bins contiguous in the bin-sorted order (`_segments`). The PyTorch twin lists
every (centre, candidate) pair of those runs as a ragged array (~800 a water atom at rcut 8, 79 million pairs for
98,304 atoms), measures each, keeps those within rcut and packs them into rows: a dozen passes over gigabytes of
pairs. Here one program per centre walks its runs, measures each candidate in registers and appends the kept ones to
its row in the same order (a running count and a prefix sum), so only the rows reach memory. A first launch counts
each row, the second writes them into rows as wide as the fullest.
The kernel keeps pairs up to rcut (1 + MARGIN): its distance need not equal `deeppot.nlist.selection.distance`
bit for bit, and the caller measures the kept pairs with that expression and applies rcut exactly.
Tests: tests/kernels/test_cell_pairs.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from deeppot.kernels import embedding

MARGIN = 1e-5  # relative: covers the float32 cut-off argument and any rounding of the kernel's own distance
BLOCK = 32  # candidates measured at once: a bin run holds ~30 atoms at water's density (rcut 6-8, bins of rcut / 2)

if embedding.triton is not None:
    import triton
    import triton.language as tl

    from deeppot.kernels.selection import append_by_type, block_meta, close_blocks, cutoff

    COUNT, WRITE, SELECT = 0, 1, 2  # what a walk of the runs does with the kept candidates (MODE)

    @triton.jit
    def _row_pairs_kernel(pos_ptr, type_ptr, sorted_pos_ptr, sorted_type_ptr, order_ptr, seg_start_ptr, seg_len_ptr,
                          rows_ptr, count_ptr, offset, width, cut2, rcut_ptr, NSEG: tl.constexpr, MODE: tl.constexpr,
                          BLOCK: tl.constexpr, NTYPES: tl.constexpr = 1, TYPES_PAD: tl.constexpr = 2,
                          SEL: tl.constexpr = (0,), START: tl.constexpr = (0, 0), SEL_PAD: tl.constexpr = 2):
        row = tl.program_id(0).to(tl.int64)
        centre = offset + row
        cx, cy, cz = tl.load(pos_ptr + centre * 3), tl.load(pos_ptr + centre * 3 + 1), tl.load(pos_ptr + centre * 3 + 2)
        lane, tix = tl.arange(0, BLOCK), tl.arange(0, TYPES_PAD)
        kept = tl.zeros([], tl.int32)
        counts = tl.zeros([TYPES_PAD], tl.int32)  # SELECT: neighbours of each type so far
        real_centre = True
        if MODE == 2:  # SELECT: a virtual centre gets an empty row, as from `select_in_candidate_order`
            real_centre = tl.load(type_ptr + centre) >= 0
        for s in range(NSEG):  # (2 reach + 1)^2 runs: a compile-time constant
            start = tl.load(seg_start_ptr + row * NSEG + s)
            length = tl.load(seg_len_ptr + row * NSEG + s)
            k0 = 0
            while k0 < length:  # (a loop over range(0, length) fails in Triton's interpreter)
                live = k0 + lane < length
                at = start + k0 + lane
                dx = tl.load(sorted_pos_ptr + at * 3, mask=live, other=0.0) - cx
                dy = tl.load(sorted_pos_ptr + at * 3 + 1, mask=live, other=0.0) - cy
                dz = tl.load(sorted_pos_ptr + at * 3 + 2, mask=live, other=0.0) - cz
                j = tl.load(order_ptr + at, mask=live, other=-1)
                jtype = tl.load(sorted_type_ptr + at, mask=live, other=-1)
                keep = live & (jtype >= 0) & (j != centre) & (dx * dx + dy * dy + dz * dz <= cut2)
                if MODE == 2:  # measured as the selection kernel measures, at rcut exactly
                    within = keep & real_centre & (tl.sqrt(dx * dx + dy * dy + dz * dz) <= tl.load(rcut_ptr))
                    counts = append_by_type(rows_ptr + row * width, j, jtype, within, counts, tix, NTYPES, SEL,
                                            START)
                if MODE == 1:
                    rank = kept + tl.cumsum(keep.to(tl.int32), axis=0) - 1
                    tl.store(rows_ptr + row * width + rank, j, mask=keep)
                kept += tl.sum(keep.to(tl.int32), axis=0)
                k0 += BLOCK
        if MODE == 0:
            tl.store(count_ptr + row, kept)
        if MODE == 2:
            close_blocks(rows_ptr + row * width, count_ptr, counts, tix, NTYPES, SEL, START, SEL_PAD)


def pair_rows(pos: Tensor, pos_sorted: Tensor, type_sorted: Tensor, order: Tensor, seg_start: Tensor,
              seg_len: Tensor, offset: int, rcut: float) -> Tensor:
    """Each centre's candidates within rcut (1 + MARGIN), in run order, as extended indices (ncentre, kmax), -1
    padded; arguments as `deeppot.nlist.cell_list.pair_rows`. One host sync (kmax)."""
    ncentre, nseg = seg_start.shape
    if ncentre == 0:
        return torch.full((0, 0), -1, dtype=torch.int64, device=pos.device)
    args = _walk_args(pos, None, pos_sorted, type_sorted, order, seg_start, seg_len)
    cut2 = (rcut * (1 + MARGIN)) ** 2
    count = torch.zeros(ncentre, dtype=torch.int32, device=pos.device)
    _row_pairs_kernel[(ncentre,)](*args, count, count, offset, 0, cut2, count, NSEG=nseg, MODE=COUNT, BLOCK=BLOCK,
                                  num_warps=1)
    width = int(count.max())
    rows = torch.full((ncentre, width), -1, dtype=torch.int64, device=pos.device)
    if width > 0:
        _row_pairs_kernel[(ncentre,)](*args, rows, count, offset, width, cut2, count, NSEG=nseg, MODE=WRITE,
                                      BLOCK=BLOCK, num_warps=1)
    return rows


def select_pairs(pos: Tensor, ext_atype: Tensor, pos_sorted: Tensor, type_sorted: Tensor, order: Tensor,
                 seg_start: Tensor, seg_len: Tensor, rcut: float, sel: Sequence[int]) -> tuple[Tensor, Tensor]:
    """`pair_rows` of all the frame's centres followed by `deeppot.kernels.selection.select_in_candidate_order`, in
    one walk of the runs: each kept candidate within rcut goes straight to its type block (nlist (nloc, sum(sel)),
    -1 padded, and the overflow flag, 0-dim bool), so no row of candidates is stored and no width read back.
    ext_atype (nall,) the extended atoms' types (a virtual centre gets an empty row); the rest as `pair_rows`."""
    ncentre, nseg = seg_start.shape
    nlist = torch.empty(ncentre, sum(sel), dtype=torch.int64, device=pos.device)
    over = torch.zeros(1, dtype=torch.int32, device=pos.device)
    if ncentre == 0 or sum(sel) == 0:
        return nlist.fill_(-1), over[0].bool()
    args = _walk_args(pos, ext_atype, pos_sorted, type_sorted, order, seg_start, seg_len)
    _row_pairs_kernel[(ncentre,)](*args, nlist, over, 0, sum(sel), (rcut * (1 + MARGIN)) ** 2,
                                  cutoff(float(rcut), pos.dtype, pos.device), NSEG=nseg, MODE=SELECT, BLOCK=BLOCK,
                                  **block_meta(sel), num_warps=1)
    return nlist, over[0].bool()


def _walk_args(pos: Tensor, ext_atype: Tensor | None, *sorted_and_runs: Tensor) -> list[Tensor]:
    """The kernel's first tensors, contiguous (without ext_atype, which only SELECT reads, pos stands in)."""
    return [pos.contiguous(), pos if ext_atype is None else ext_atype.contiguous(),
            *(t.contiguous() for t in sorted_and_runs)]


__all__ = ["pair_rows", "select_pairs"]
