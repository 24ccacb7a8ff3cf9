"""The per-step neighbour selection of MD in one Triton kernel: the fast twin of
`deeppot.infer.candidates.select_in_candidate_order`.

Between builds of the Verlet-skin list, every MD step turns each centre's candidates (those within rcut + skin at
the build) into the DeePMD list: the candidates within rcut, per-type blocks of width sel, in candidate order. The
PyTorch twin does it in ~15 kernels over (nloc, ncand) arrays (a gather of the positions, distances, a running
count per type, a scatter; 3.9 ms for 98,304 water atoms on an H100); here one program per centre keeps its row
in registers: one pass over the candidates, one store per slot. The rank of a candidate in its block is a prefix
sum over the row, exactly as in the twin, so the two lists are equal entry for entry.
Tests: tests/kernels/test_selection.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from itertools import accumulate

import torch
from torch import Tensor

from deeppot.kernels import embedding

if embedding.triton is not None:
    import triton
    import triton.language as tl

    @triton.jit
    def _coordinate(ptr, atom, c, live):
        return tl.load(ptr + atom * 3 + c, mask=live, other=0.0)

    @triton.jit
    def append_by_type(out, j, jtype, within, counts, tix, NTYPES: tl.constexpr, SEL: tl.constexpr,
                       START: tl.constexpr):
        """Store the neighbours `within` of a block of candidates (indices j, types jtype) into their type blocks of
        one row `out`, after the counts (TYPES_PAD,) of each type so far: the place of each is a prefix sum, as in
        `deeppot.nlist.selection.split_by_type`. Returns the counts with this block's added."""
        for t in tl.static_range(NTYPES):
            is_t = within & (jtype == t)
            rank = tl.sum(tl.where(tix == t, counts, 0), axis=0) + tl.cumsum(is_t.to(tl.int32), axis=0) - 1
            tl.store(out + START[t] + rank, j.to(tl.int64), mask=is_t & (rank < SEL[t]))
            counts += tl.where(tix == t, tl.sum(is_t.to(tl.int32), axis=0), 0)
        return counts

    @triton.jit
    def close_blocks(out, over_ptr, counts, tix, NTYPES: tl.constexpr, SEL: tl.constexpr, START: tl.constexpr,
                     SEL_PAD: tl.constexpr):
        """Pad each type block of the row `out` after its counts[t] neighbours with -1, and raise the flag at
        over_ptr if some type had more than its sel."""
        slot = tl.arange(0, SEL_PAD)
        over = tl.zeros([], tl.int1)
        for t in tl.static_range(NTYPES):
            count = tl.sum(tl.where(tix == t, counts, 0), axis=0)
            tl.store(out + START[t] + slot, tl.full([SEL_PAD], -1, tl.int64), mask=(slot >= count) & (slot < SEL[t]))
            over = over | (count > SEL[t])
        tl.atomic_max(over_ptr, 1, mask=over, sem="relaxed")

    @triton.jit
    def _select_kernel(ext_coord_ptr, ext_atype_ptr, cand_ptr, cand_type_ptr, nlist_ptr, over_ptr, nloc, nall,
                       ncand, nnei, rcut_ptr, NCAND: tl.constexpr, NTYPES: tl.constexpr, TYPES_PAD: tl.constexpr,
                       SEL: tl.constexpr, START: tl.constexpr, SEL_PAD: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)  # centre i of frame f: row = f * nloc + i
        base = (row // nloc) * nall  # the frame's first extended atom
        centre = base + row % nloc
        c = tl.arange(0, NCAND)
        live = c < ncand
        j = tl.load(cand_ptr + row * ncand + c, mask=live, other=-1)
        jtype = tl.load(cand_type_ptr + row * ncand + c, mask=live, other=-1)
        real = live & (j >= 0) & (jtype >= 0) & (tl.load(ext_atype_ptr + centre) >= 0)
        at = base + tl.where(real, j, 0)
        dx = _coordinate(ext_coord_ptr, at, 0, real) - tl.load(ext_coord_ptr + centre * 3)
        dy = _coordinate(ext_coord_ptr, at, 1, real) - tl.load(ext_coord_ptr + centre * 3 + 1)
        dz = _coordinate(ext_coord_ptr, at, 2, real) - tl.load(ext_coord_ptr + centre * 3 + 2)
        within = real & (tl.sqrt(dx * dx + dy * dy + dz * dz) <= tl.load(rcut_ptr))
        out, tix = nlist_ptr + row * nnei, tl.arange(0, TYPES_PAD)
        counts = append_by_type(out, j, jtype, within, tl.zeros([TYPES_PAD], tl.int32), tix, NTYPES, SEL, START)
        close_blocks(out, over_ptr, counts, tix, NTYPES, SEL, START, SEL_PAD)

    @triton.jit
    def _all_pairs_kernel(ext_coord_ptr, ext_atype_ptr, nlist_ptr, over_ptr, nloc, nall, nnei, rcut_ptr,
                          BLOCK: tl.constexpr, NTYPES: tl.constexpr, TYPES_PAD: tl.constexpr, SEL: tl.constexpr,
                          START: tl.constexpr, SEL_PAD: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)  # centre i of frame f: row = f * nloc + i
        base, i = (row // nloc) * nall, row % nloc
        centre = base + i
        cx = tl.load(ext_coord_ptr + centre * 3)
        cy = tl.load(ext_coord_ptr + centre * 3 + 1)
        cz = tl.load(ext_coord_ptr + centre * 3 + 2)
        real_centre = tl.load(ext_atype_ptr + centre) >= 0
        rcut = tl.load(rcut_ptr)
        out, tix = nlist_ptr + row * nnei, tl.arange(0, TYPES_PAD)
        counts = tl.zeros([TYPES_PAD], tl.int32)  # neighbours of each type so far: the next block's ranks start there
        start = 0
        while start < nall:  # a while loop: Triton 3.6's interpreter cannot run a for loop to a runtime bound
            j = start + tl.arange(0, BLOCK)
            jtype = tl.load(ext_atype_ptr + base + j, mask=(j < nall) & real_centre, other=-1)
            real = (jtype >= 0) & (j != i)
            dx = _coordinate(ext_coord_ptr, base + j, 0, real) - cx
            dy = _coordinate(ext_coord_ptr, base + j, 1, real) - cy
            dz = _coordinate(ext_coord_ptr, base + j, 2, real) - cz
            within = real & (tl.sqrt(dx * dx + dy * dy + dz * dz) <= rcut)
            counts = append_by_type(out, j, jtype, within, counts, tix, NTYPES, SEL, START)
            start += BLOCK
        close_blocks(out, over_ptr, counts, tix, NTYPES, SEL, START, SEL_PAD)


ALL_PAIRS_BLOCK = 1024  # extended atoms a program of `select_all_pairs` reads at once


def block_meta(sel: Sequence[int]) -> dict:
    """The compile-time arguments of `append_by_type` and `close_blocks` for these block widths."""
    return {"NTYPES": len(sel), "TYPES_PAD": triton.next_power_of_2(max(len(sel), 2)), "SEL": tuple(sel),
            "START": tuple(accumulate(sel, initial=0)), "SEL_PAD": triton.next_power_of_2(max(*sel, 2))}


@functools.cache
def cutoff(rcut: float, dtype: torch.dtype, device: torch.device) -> Tensor:
    """rcut in the coordinates' precision on the device (as the twin compares it), made once: no host-to-device
    copy inside a CUDA-graph capture."""
    return torch.tensor([rcut], dtype=dtype, device=device)


def select_in_candidate_order(ext_coord: Tensor, ext_atype: Tensor, candidates: Tensor, cand_type: Tensor,
                              rcut: float, sel: Sequence[int]) -> tuple[Tensor, Tensor]:
    """nlist (nf, nloc, sum(sel)) int64 and the overflow flag (0-dim bool), as the PyTorch twin returns them.

    ext_coord (nf, nall, 3) float; ext_atype (nf, nall) int64; candidates, cand_type (nf, nloc, ncand) int64, -1
    padded. No host synchronisation: the launch can be captured in a CUDA graph.
    """
    nf, nloc, ncand = candidates.shape
    inputs = (ext_coord.detach(), ext_atype, candidates, cand_type)
    rest = (nloc, ext_coord.shape[1], ncand, sum(sel), cutoff(float(rcut), ext_coord.dtype, ext_coord.device))
    return run_selection(_select_kernel, (nf, nloc), sel, inputs, rest,
                         NCAND=triton.next_power_of_2(max(ncand, 2)), num_warps=4)


def select_all_pairs(ext_coord: Tensor, ext_atype: Tensor, nloc: int, rcut: float, sel: Sequence[int]
                     ) -> tuple[Tensor, Tensor]:
    """The twin of `deeppot.infer.candidates.select_all_pairs`: one program a centre walks every extended atom in
    blocks, keeping each type's count so far (no (nloc, nall) array is made). No host synchronisation."""
    nf, nall = ext_atype.shape
    rest = (nloc, nall, sum(sel), cutoff(float(rcut), ext_coord.dtype, ext_coord.device))
    return run_selection(_all_pairs_kernel, (nf, nloc), sel, (ext_coord.detach(), ext_atype), rest,
                         BLOCK=ALL_PAIRS_BLOCK, num_warps=4)


def run_selection(kernel, rows: tuple[int, ...], sel: Sequence[int], inputs: Sequence[Tensor], rest: Sequence,
                  **meta) -> tuple[Tensor, Tensor]:
    """Launch a selecting kernel, one program a row: kernel(*inputs, nlist, over, *rest, block_meta(sel), **meta).
    Returns nlist (*rows, sum(sel)) int64 (all -1 where there is no row or no slot) and the overflow flag (0-dim
    bool on the device)."""
    device = inputs[0].device
    nlist = torch.empty(*rows, sum(sel), dtype=torch.int64, device=device)
    over = torch.zeros(1, dtype=torch.int32, device=device)
    if math.prod(rows) == 0 or sum(sel) == 0:
        return nlist.fill_(-1), over[0].bool()
    kernel[(math.prod(rows),)](*(t.contiguous() for t in inputs), nlist, over, *rest, **block_meta(sel), **meta)
    return nlist, over[0].bool()


__all__ = ["select_all_pairs", "select_in_candidate_order"]
