"""The cell list's candidate pairs in one Triton kernel: the fast twin of `deeppot.nlist.cell_list.pair_rows`.

A build of the cell list (`deeppot.nlist.cell_list`) finds, for every centre, the atoms within rcut among those of
the bins within reach: 25-49 runs of bins contiguous in the bin-sorted order (`bin_runs`). The PyTorch twin lists
every (centre, candidate) pair of those runs as a ragged array (~800 a water atom at rcut 8, 79 million pairs for
98,304 atoms), measures each, keeps those within rcut and packs them into rows: a dozen passes over gigabytes of
pairs. Here one program per centre walks its runs, measures each candidate in registers and appends the kept ones to
its row in the same order (a running count and a prefix sum), so only the rows reach memory. A first launch counts
each row, the second writes them into rows as wide as the fullest.
The kernel keeps pairs up to rcut (1 + MARGIN): its distance need not equal `deeppot.nlist.selection.distance`
bit for bit, and the caller measures the kept pairs with that expression and applies rcut exactly.
`select_pairs` is a one-off evaluation's list in one launch (the twin: `pair_rows`, then
`deeppot.infer.candidates.select_in_candidate_order`): each program finds its centre's runs from the bins itself,
walks them and puts every candidate within rcut (measured as the selection kernel measures it) into its type block.
Run 209 (H100): the list of 98,304 water atoms 4.2 -> 3.3 ms with runs from `bin_runs` and rows no longer stored.
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

    from deeppot.kernels.selection import append_by_type, close_blocks, cutoff, run_selection

    @triton.jit
    def _measure(sorted_pos_ptr, sorted_type_ptr, order_ptr, at, live, centre, cx, cy, cz):
        """The candidates at bin-order positions `at` (where live) of one centre: their extended indices, types
        (-1 where not live) and squared distances."""
        dx = tl.load(sorted_pos_ptr + at * 3, mask=live, other=0.0) - cx
        dy = tl.load(sorted_pos_ptr + at * 3 + 1, mask=live, other=0.0) - cy
        dz = tl.load(sorted_pos_ptr + at * 3 + 2, mask=live, other=0.0) - cz
        j = tl.load(order_ptr + at, mask=live, other=-1)
        jtype = tl.load(sorted_type_ptr + at, mask=live, other=-1)
        return j, tl.where(j != centre, jtype, -1), dx * dx + dy * dy + dz * dz

    @triton.jit
    def _row_pairs_kernel(pos_ptr, sorted_pos_ptr, sorted_type_ptr, order_ptr, seg_start_ptr, seg_len_ptr, rows_ptr,
                          count_ptr, offset, width, cut2, NSEG: tl.constexpr, WRITE: tl.constexpr,
                          BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        centre = offset + row
        cx, cy, cz = tl.load(pos_ptr + centre * 3), tl.load(pos_ptr + centre * 3 + 1), tl.load(pos_ptr + centre * 3 + 2)
        lane = tl.arange(0, BLOCK)
        kept = tl.zeros([], tl.int32)
        for s in range(NSEG):  # (2 reach + 1)^2 runs: a compile-time constant
            start = tl.load(seg_start_ptr + row * NSEG + s)
            length = tl.load(seg_len_ptr + row * NSEG + s)
            k0 = 0
            while k0 < length:  # (a loop over range(0, length) fails in Triton's interpreter)
                live = k0 + lane < length
                j, jtype, d2 = _measure(sorted_pos_ptr, sorted_type_ptr, order_ptr, start + k0 + lane, live, centre,
                                        cx, cy, cz)
                keep = (jtype >= 0) & (d2 <= cut2)
                if WRITE:
                    rank = kept + tl.cumsum(keep.to(tl.int32), axis=0) - 1
                    tl.store(rows_ptr + row * width + rank, j, mask=keep)
                kept += tl.sum(keep.to(tl.int32), axis=0)
                k0 += BLOCK
        if not WRITE:
            tl.store(count_ptr + row, kept)

    @triton.jit
    def _select_walk_kernel(pos_ptr, type_ptr, sorted_pos_ptr, sorted_type_ptr, order_ptr, bin_cell_ptr,
                            bin_start_ptr, bin_count_ptr, nlist_ptr, over_ptr, nx, ny, nz, nnei, rcut_ptr,
                            REACH: tl.constexpr, BLOCK: tl.constexpr, NTYPES: tl.constexpr, TYPES_PAD: tl.constexpr,
                            SEL: tl.constexpr, START: tl.constexpr, SEL_PAD: tl.constexpr):
        """`_row_pairs_kernel`'s walk with each centre's runs found here, as `deeppot.nlist.cell_list.bin_runs`
        finds them (the same runs in the same order), and each candidate within rcut put in its type block, as
        `deeppot.kernels.selection` measures and places it."""
        centre = tl.program_id(0).to(tl.int64)
        cx, cy, cz = tl.load(pos_ptr + centre * 3), tl.load(pos_ptr + centre * 3 + 1), tl.load(pos_ptr + centre * 3 + 2)
        bx, by, bz = (tl.load(bin_cell_ptr + centre * 3), tl.load(bin_cell_ptr + centre * 3 + 1),
                      tl.load(bin_cell_ptr + centre * 3 + 2))
        real_centre = tl.load(type_ptr + centre) >= 0  # a virtual centre gets an empty row
        rcut = tl.load(rcut_ptr)
        lane, tix = tl.arange(0, BLOCK), tl.arange(0, TYPES_PAD)
        out = nlist_ptr + centre * nnei
        counts = tl.zeros([TYPES_PAD], tl.int32)  # neighbours of each type so far
        for s in range(0, (2 * REACH + 1) * (2 * REACH + 1)):  # the (y, z) bin rows within reach, y major
            y = by + s // (2 * REACH + 1) - REACH
            z = bz + s % (2 * REACH + 1) - REACH
            inside = (y >= 0) & (y < ny) & (z >= 0) & (z < nz) & real_centre
            bin_row = (tl.minimum(tl.maximum(z, 0), nz - 1) * ny + tl.minimum(tl.maximum(y, 0), ny - 1)) * nx
            first = bin_row + tl.maximum(bx - REACH, 0)
            last = bin_row + tl.minimum(bx + REACH, nx - 1)
            start = tl.load(bin_start_ptr + first)
            length = tl.where(inside, tl.load(bin_start_ptr + last) + tl.load(bin_count_ptr + last) - start, 0)
            k0 = 0
            while k0 < length:
                live = k0 + lane < length
                j, jtype, d2 = _measure(sorted_pos_ptr, sorted_type_ptr, order_ptr, start + k0 + lane, live, centre,
                                        cx, cy, cz)
                within = (jtype >= 0) & (tl.sqrt(d2) <= rcut)
                counts = append_by_type(out, j, jtype, within, counts, tix, NTYPES, SEL, START)
                k0 += BLOCK
        close_blocks(out, over_ptr, counts, tix, NTYPES, SEL, START, SEL_PAD)


def pair_rows(pos: Tensor, pos_sorted: Tensor, type_sorted: Tensor, order: Tensor, seg_start: Tensor,
              seg_len: Tensor, offset: int, rcut: float) -> Tensor:
    """Each centre's candidates within rcut (1 + MARGIN), in run order, as extended indices (ncentre, kmax), -1
    padded; arguments as `deeppot.nlist.cell_list.pair_rows`. One host sync (kmax)."""
    ncentre, nseg = seg_start.shape
    if ncentre == 0:
        return torch.full((0, 0), -1, dtype=torch.int64, device=pos.device)
    args = [pos.contiguous(), pos_sorted.contiguous(), type_sorted.contiguous(), order.contiguous(),
            seg_start.contiguous(), seg_len.contiguous()]
    cut2 = (rcut * (1 + MARGIN)) ** 2
    count = torch.zeros(ncentre, dtype=torch.int32, device=pos.device)
    _row_pairs_kernel[(ncentre,)](*args, count, count, offset, 0, cut2, NSEG=nseg, WRITE=False, BLOCK=BLOCK,
                                  num_warps=1)
    width = int(count.max())
    rows = torch.full((ncentre, width), -1, dtype=torch.int64, device=pos.device)
    if width > 0:
        _row_pairs_kernel[(ncentre,)](*args, rows, count, offset, width, cut2, NSEG=nseg, WRITE=True,
                                      BLOCK=BLOCK, num_warps=1)
    return rows


def select_pairs(pos: Tensor, ext_atype: Tensor, pos_sorted: Tensor, type_sorted: Tensor, bins, nloc: int,
                 rcut: float, sel: Sequence[int]) -> tuple[Tensor, Tensor]:
    """`pair_rows` of a frame's nloc centres followed by `deeppot.kernels.selection.select_in_candidate_order`, in
    one launch: a program a centre finds its runs of bins (those of `deeppot.nlist.cell_list.bin_runs`), walks
    them and puts each candidate within rcut straight into its type block. No candidate row is stored and no width
    read back. pos (nall, 3) and ext_atype (nall,) the extended atoms, the first nloc the centres (a virtual one
    gets an empty row); pos_sorted, type_sorted in bin order; bins the frame's `deeppot.nlist.cell_list.Bins`.
    Returns nlist (nloc, sum(sel)) int64, -1 padded, and the overflow flag (0-dim bool on the device)."""
    inputs = (pos, ext_atype, pos_sorted, type_sorted, bins.order, bins.cell, bins.start, bins.count)
    rest = (*bins.dims, sum(sel), cutoff(float(rcut), pos.dtype, pos.device))
    return run_selection(_select_walk_kernel, (nloc,), sel, inputs, rest, REACH=bins.reach, BLOCK=BLOCK, num_warps=1)


__all__ = ["pair_rows", "select_pairs"]
