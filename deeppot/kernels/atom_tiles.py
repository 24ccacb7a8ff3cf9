"""The inference kernels of `deeppot.kernels.descriptor` with several centre atoms per program.

One program per atom makes every embedding GEMM BLOCK (16-32) rows tall and holds the net's weights in registers
(255 of them a thread: few programs fit on a multiprocessor). Here a program takes ATOMS consecutive centres and
walks each neighbour-type block in chunks of SLOTS slots of every one of them, so a GEMM is ATOMS x SLOTS rows tall,
and it re-reads the weights from cache every chunk instead of keeping them live (faster in both kernels, run 40);
with f16x3 products, W2's and W3's parts go to shared memory once a net by TMA instead (`HOLD_WEIGHTS`).
Row r of a chunk is slot r % SLOTS of the program's atom r // SLOTS.

- T: the per-atom contraction R^T G becomes one GEMM with a block-diagonal left side (row 4a + c holds column c
  of atom a's rows, zero elsewhere), so the accumulator's rows are the ATOMS atoms' four rows of T; the f16x3
  kernel on shared rows runs it transposed, G^T R (`TRANSPOSED_T`).
- dE/dr_ij: t_bar G_j^T and (R_j t_bar) . dG_j/ds need each row's own atom's t_bar: row reductions over a
  (ATOMS, SLOTS, M1) view of the chunk against (ATOMS, 1, M1) t_bar rows. (GEMMs against all the program's t_bar
  rows and a pick of each row's own columns were 3-90x slower, run 39.)

Atoms of a program may differ in type (two-sided nets depend on the centre type): the program runs each centre
type present among its atoms, the others' rows masked. Same interface and results as the one-atom kernels.
Float64 programs read the centre types as int64: Triton 3.6 sizes a GEMM operand's registers by the narrowest
tensor load it descends from, and an int32 tensor load (the types, run 40; a per-row reach, run 54) gave the
float64 GEMMs a layout its lowering rejects ("fp64 don't support largeK MMA"); the tops are scalar int32 loads.
Each block is walked up to the furthest reach of the tile's atoms of the type at hand (`deeppot.kernels.reach`).
The gradient kernel stores dE/dR_ij and `env_rows.back_to_pairs` takes it to dE/dr_ij; in the precisions of `ROWS`
both kernels read each slot's environment row, made once beforehand (`shared_rows`), instead of computing it.
Tests: tests/kernels/test_descriptor.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import torch
from torch import Tensor

from deeppot.kernels import embedding
from deeppot.kernels.activation import TANH_SCALE
from deeppot.kernels.env_rows import back_to_pairs, env_rows_once, net_args
from deeppot.kernels.precision import has_tma, scaled, within_stacked_limit
from deeppot.kernels.reach import Reach, add_tail, block_layout, suffix_table, tile_tops
from deeppot.kernels.scatter import back_and_scatter

# (ATOMS, SLOTS, warps) of each kernel per precision, measured fastest on an H100 (98,304 water atoms; float32:
# runs 40-41; float64 with the branch-free tanh, run 153: T 20.2 ms against 22.7-23.2 on (2, 16, 8), 21.8 on
# (1, 16, 4); the stacked gradient 31.9 against 32.6 on (1, 16, 4), 35.3 on (2, 16, 8)). Without hoisting
# (`GRAD_HOIST`) the float64 gradient is faster on (1, 16, 4) (run 253, H200, trained weights cast, ms: water 27.00 ->
# 26.43, copper 23.66 -> 23.48; (1, 8, 2) 40.0, T on (2, 8, 8) 28.8 against 20.6). A kernel not here would keep its
# one-atom twin (`covers`).
TILES = {torch.float32: {"t": (4, 16, 4), "grad": (8, 8, 4)}, torch.float64: {"t": (2, 8, 4), "grad": (1, 16, 4)}}
# float32 with "f16x3" products (`embedding._mm`): the float16 parts take half the registers (ptxas: the gradient
# at (4, 16, 4) spills 604 B against 900), and the gradient is fastest on (4, 16, 4) (run 144: 8.10 ms against
# 8.43 at (8, 8, 4); tf32x3 12.25 at (8, 8, 4), 13.57 at (4, 16, 4)). The gradient on (2, 32, 4) was 3% faster
# for water (run 174: 4.62-4.84 ms against 4.82-4.95) but made copper's whole calls 3% slower (run 175); with the
# weights' parts made once, again 5% faster alone (run 236: 4.48 against 4.71 ms) and copper's calls 4-7% slower.
F16X3_TILES = {"t": (4, 16, 4), "grad": (4, 16, 4)}
# The f16x3 gradient's tile where its tiles walk less than GRAD_TILE_GAIN times the default's slots for the centres
# at hand (`gradient_tile`; the Evaluator asks once per ordered neighbour data, `deeppot.infer.order`). Run 258
# (H100, centres in that order): the alloy's gradient 4.04 -> 3.57 ms on (8, 8, 4), its tiles walking 0.88 of the
# default's slots; water's 3.75 on both (0.98); copper's 3.17 -> 3.30 (1.0: its counts fill 16-slot chunks). None:
# always the default.
GRAD_TILE = (8, 8, 4)
GRAD_TILE_GAIN = 0.93
# The gradient tiles push value and tangent through each layer as one stacked GEMM in float64 only: it spilled
# fewer registers in ptxas for float32 too, but ran slower there (run 89: 12.0 -> 13.0 ms at 8 x 8).
STACKED = {torch.float64}
# The f16x3 kernels read W2's and W3's parts once a net, by TMA straight into shared memory, where the GEMMs take
# them through all of the net's chunks (`_held_weights`). Loaded through registers every chunk (the weights would not
# stay in shared memory across chunks otherwise), they took more time (run 250, H200, trained models, list prebuilt,
# medians, ms a call: water 11.93 -> 11.62, the gradient kernel 4.39 -> 4.11; copper 10.69 -> 10.27; the alloy
# 14.65 -> 14.26; the same outputs). TMA loads every chunk instead, each waited for before its GEMM, were slower.
HOLD_WEIGHTS = True
# The held layers whose two parts are one shared-memory tile [hi; lo], multiplied by two GEMMs of twice the depth
# (`embedding._mm_stacked`) instead of three with a wait and a rescale between each: T's layers take values
# (|x| < 2 after tanh and skip), the gradient's second layer also the tangent (1 - x^2) w1, at most |W1| in size
# (`_one_box`). Run 251 (H200, trained models, list prebuilt, ms a call, this / two tiles a layer): water 11.53,
# 11.56 / 11.69, 11.71 (the gradient kernel 3.99, 4.03 / 4.14, 4.14; T 3.38, 3.41 / 3.44, 3.44); copper 10.17,
# 10.21 / 10.33, 10.35; the gradient's third layer in one tile too: 4.31-4.35 ms (ptxas: 292 B spilled, not 204).
ONE_BOX = {"t": (2, 3), "grad": (2,)}
# Float32 layers take their biases (and T's first layer its weights) times `activation.TANH_SCALE`, so that the
# factor of tanh's 2^x, their product's scale and the bias are one multiply-add, and T's layers fold the skip into
# tanh's constant (`activation._tanh_prescaled`). sm_90 SASS of water's f16x3 loops: T 2,019 -> 1,786 instructions,
# the gradient 2,560 -> 2,424.
PRESCALED = True
# Whether the gradient kernel's chunk loop lets the compiler hoist its loop-invariant work out of the loop (Triton's
# loop-invariant code motion): kept live across the chunks, that work made ptxas spill (sm_90, water's f16x3 loop:
# 156 B, 39 local loads and stores a chunk; not hoisted, 88 B and 15 loads, 30 instructions more; float64 80 -> 24 B).
# Run 252 (H200, trained models, list prebuilt, two rounds in one process, gradient kernel ms, hoisted / not): water
# float32 4.01, 3.99 / 3.91, 3.92, copper 3.24 / 3.23; the same weights in float64, water 30.5 / 27.0 (the call 59.2 /
# 55.7), copper 27.3 / 23.7 (54.7 / 51.1); the same outputs.
GRAD_HOIST = False
# Precisions whose kernels read each slot's environment row from `env_rows.env_rows_once` (made once, one slot a
# lane) instead of computing it in every thread that holds the row: sm_90 SASS of water's float32 f16x3 (4, 16, 4)
# loops, T 3,842 -> 2,813 instructions (88 B spilled -> 0), gradient 4,509 -> 3,335; float64's (2, 8, 4) loops do
# not shrink (2,924 -> 3,003, 3,508 -> 3,606), so float64 computes its rows in the kernels.
ROWS = {torch.float32}
# Whether the f16x3 T kernel reading the shared rows runs its last layer and contraction transposed (`_t_chunk_t`):
# G^T comes out of the last layer's GEMM as the contraction's left operand in registers, where R^T @ G (16 rows,
# mma.sync) took G's parts through shared memory and ptxas moved the operands register by register. sm_90 SASS of the
# chunk loop (`benchmarks/kernel_sass.py --atom-tiles`): water 1,785 -> 1,594 instructions (MOV 311 -> 73), copper
# 1,782 -> 1,587, the alloy 1,780 -> 1,591, none spilled. Run 267 (H100, trained models, list prebuilt, two rounds,
# ms): T water 3.26, 3.27 -> 3.05, 3.10, copper 2.84, 2.85 -> 2.72, 2.75; whole calls water 10.33, 10.33 -> 10.21,
# 10.17, copper 9.56, 9.43 -> 9.29, 9.17. (With the rows computed in the kernel it faulted on the GPU, run 267: it
# runs only on shared rows, as every f16x3 call does.)
TRANSPOSED_T = True
# The kernels whose chunks read the shared rows one chunk ahead (`_read_ahead`), T's where TRANSPOSED_T: each chunk's
# first row loads were 5.7% of T's stall samples and ~4% of the gradient's (run 251, ncu). sm_90 SASS of water's
# f16x3 loop: transposed T 1,594 -> 1,602 instructions, none spilled; the gradient 2,454 -> 2,513, spills 88 -> 100
# B. Run 267 (as above, ms, transposed T / both reading ahead): T water 3.05, 3.10 / 3.05, 3.07, copper 2.72, 2.75 /
# 2.57, 2.59; the gradient water 3.71, 3.77 / 3.70, 3.72, copper 3.19, 3.23 / 3.15, 3.19; whole calls water 10.21,
# 10.17 / 10.07, 10.08, copper 9.29, 9.17 / 9.05, 9.02. Programs walking their tiles net by net in the gradient, each
# reading a net's held weights once (run 267's `_per_net_grad_kernel`), gained nothing: water 10.28, 10.29 against
# 10.33, 10.33; not kept.
READ_AHEAD = frozenset({"t", "grad"})
# Whether the T kernel adds the tail (`reach.add_tail`: what the slots past its tops add) before it stores T, for
# models without exclude_types, instead of `reach`'s tail kernel after it (it always does where it writes D too,
# `descriptor.D_IN_T_KERNEL`).
FUSED_TAIL = True


def covers(dtype: torch.dtype, kernel: str) -> bool:
    """Whether kernel ("t" or "grad") of this precision runs as atom tiles."""
    return kernel in TILES.get(dtype, {})

if embedding.triton is not None:
    import triton
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    from deeppot.kernels.activation import _P2LOG2E, _tanh, _tanh_prescaled
    from deeppot.kernels.descriptor_matrix import _descriptor_rows
    from deeppot.kernels.embedding import (
        _chunk_weights,
        _columns,
        _dense_jet,
        _held_parts,
        _jet_outputs,
        _mm,
        _mm_t,
        _row_concat,
    )
    from deeppot.kernels.env_rows import _chunk_rows, _dense, _load_four, _row_at, _store_four

    @triton.jit
    def _stacked_jet(x, dx, w, b, KIND: tl.constexpr, PRECISION: tl.constexpr):
        """`_dense_jet`'s outputs with value and tangent through one GEMM of twice the rows."""
        rows: tl.constexpr = x.shape[0]
        k: tl.constexpr = x.shape[1]
        xs = tl.reshape(tl.permute(tl.join(x, dx), (2, 0, 1)), (2 * rows, k))
        zu = _mm(xs, w, PRECISION)
        z, u = tl.split(tl.permute(tl.reshape(zu, (2, rows, w.shape[1])), (1, 2, 0)))
        return _jet_outputs(x, dx, _tanh(z + b[None, :]), u, KIND)[1:]

    @triton.jit
    def _tile(type_ptr, n, ATOMS: tl.constexpr, SLOTS: tl.constexpr):
        """This program's first centre, and per chunk row its atom (within the tile), centre, type, reality and
        slot within the chunk."""
        first = tl.program_id(0).to(tl.int64) * ATOMS
        owner = tl.arange(0, ATOMS * SLOTS) // SLOTS
        centre = first + owner
        real = centre < n
        ctype = tl.load(type_ptr + centre, mask=real, other=-1)
        return first, owner, centre, real, ctype, tl.arange(0, ATOMS * SLOTS) % SLOTS

    @triton.jit
    def _tile_t_bar(tbar_ptr, first, n, nnei, col, col_ok, ATOMS: tl.constexpr, M: tl.constexpr):
        """The four rows of dE/dT (n, 4, M) of the program's atoms divided by nnei (T's own factor: a pass over
        dE/dT in PyTorch took 0.07 ms a 98,304-atom call, run 175), each (ATOMS, M columns col); 0 past n."""
        atom = first + tl.arange(0, ATOMS)
        tb = tbar_ptr + (atom * 4 * M)[:, None] + col[None, :]
        ok = (atom < n)[:, None] & col_ok[None, :]
        scale = 1.0 / tl.cast(nnei, tbar_ptr.dtype.element_ty)  # in float64 for float64 kernels
        return (tl.load(tb, mask=ok, other=0.0) * scale, tl.load(tb + M, mask=ok, other=0.0) * scale,
                tl.load(tb + 2 * M, mask=ok, other=0.0) * scale, tl.load(tb + 3 * M, mask=ok, other=0.0) * scale)

    @triton.jit
    def _t_chunk(acc, rij_ptr, stat_ptr, geo_ptr, rows_ptr, centre, ctype, slot, live, nnei, nstat, corner,
                 w1, b1, w2, b2, w3, b3, SKIP2: tl.constexpr, SKIP3: tl.constexpr, PRECISION: tl.constexpr,
                 ROWS: tl.constexpr, PRESCALED: tl.constexpr, TRANSPOSED: tl.constexpr, read, AHEAD: tl.constexpr):
        """acc (RT, M1) += the block-diagonal R^T of one chunk @ its G; TRANSPOSED: `_t_chunk_t`'s acc^T, from the
        rows read one chunk ahead if AHEAD (`_read_ahead`)."""
        if TRANSPOSED:
            return _t_chunk_t(acc, rows_ptr, centre, slot, live, nnei, corner, w1, b1, w2, b2, w3, b3, SKIP2, SKIP3,
                              PRECISION, read, AHEAD)
        else:
            s, rx, ry, rz = _chunk_rows(rij_ptr, stat_ptr, geo_ptr, rows_ptr, centre, ctype, slot, live, nnei, nstat,
                                        ROWS)
            if PRESCALED:  # W1 and b1 too: T needs no tangent
                g = _tanh_prescaled(s[:, None] * w1[None, :] + b1[None, :], 1.0)
            else:
                g = _tanh(s[:, None] * w1[None, :] + b1[None, :])
            g = _dense(_dense(g, w2, b2, SKIP2, PRECISION, PRESCALED), w3, b3, SKIP3, PRECISION, PRESCALED)
            rt = _block_diagonal(corner, s[None, :], rx[None, :], ry[None, :], rz[None, :])
            return acc + _mm(rt, g, PRECISION)

    @triton.jit
    def _block_diagonal(corner, s, rx, ry, rz):
        """The chunk's block-diagonal R^T: (s, rx, ry, rz) of each row (broadcast along T's rows) at corner 0-3, zero
        elsewhere."""
        return tl.where(corner == 0, s, tl.where(corner == 1, rx, tl.where(corner == 2, ry, tl.where(
            corner == 3, rz, 0.0))))

    @triton.jit
    def _dense_t(x, w, b, KIND: tl.constexpr):
        """`env_rows._dense` (PRESCALED) on x^T (k, rows): its outputs (n, rows), the skip concatenated along rows."""
        z = _mm_t(w, x, _P2LOG2E) + b[:, None]
        if KIND == 2:  # the skip added to each half of z: x's layout converted once, not concatenated first
            k: tl.constexpr = x.shape[0]
            rows: tl.constexpr = x.shape[1]
            top, bottom = tl.split(tl.permute(tl.reshape(z, (2, k, rows)), (1, 2, 0)))
            one_plus = x + 1.0
            return _row_concat(_tanh_prescaled(top, one_plus), _tanh_prescaled(bottom, one_plus))
        elif KIND == 1:
            return _tanh_prescaled(z, x + 1.0)
        else:
            return _tanh_prescaled(z, 1.0)

    @triton.jit
    def _t_chunk_t(acc, rows_ptr, centre, slot, live, nnei, corner, w1, b1, w2, b2, w3, b3, SKIP2: tl.constexpr,
                   SKIP3: tl.constexpr, PRECISION: tl.constexpr, read, AHEAD: tl.constexpr):
        """`_t_chunk` with its last layer and contraction transposed: acc (M1, RT) += G^T @ the block-diagonal R
        (rows, RT), G^T = W3^T x2^T out of the last layer's GEMM, already the contraction's left operand in
        registers, where R^T @ G took G's parts through shared memory. (The first two layers transposed too made
        the loop longer: their skips' and the first GEMM's operand's layouts.)"""
        if AHEAD:
            s, r = read
        else:
            s, r = _t_rows(rows_ptr, centre, slot, live, nnei, corner)
        g = _tanh_prescaled(s[:, None] * w1[None, :] + b1[None, :], 1.0)
        g = _dense_t(tl.trans(_dense(g, w2, b2, SKIP2, PRECISION, True)), w3, b3, SKIP3)
        return acc + _mm(g, r, PRECISION)

    @triton.jit
    def _t_rows(rows_ptr, centre, slot, live, nnei, corner):
        """A chunk's s and its block-diagonal R (rows, RT) read straight from the rows, in R's own layout."""
        at = rows_ptr + _row_at(centre * nnei + slot, 4)
        r = tl.load(at[:, None] + 32 * corner, mask=live[:, None] & (corner >= 0) & (corner < 4), other=0.0)
        return tl.load(at, mask=live, other=0.0), r

    @triton.jit
    def _read_ahead(rows_ptr, centre, slot, live, nnei, corner, AHEAD: tl.constexpr):
        """What a chunk reads of the rows made beforehand, issued one chunk before it is used, so that the loads'
        latency passes under a chunk's arithmetic: 1, T's (s, R) (`_t_rows`); 2, the gradient's (s, x, y, z); 0,
        nothing (read in the chunk)."""
        if AHEAD == 1:
            return _t_rows(rows_ptr, centre, slot, live, nnei, corner)
        elif AHEAD == 2:
            return _load_four(rows_ptr, centre * nnei + slot, live, 4)
        else:
            return 0

    @triton.jit
    def _t_start(trow, owner, col, dtype: tl.constexpr, TRANSPOSED: tl.constexpr):
        """Where each chunk row's R goes in the block-diagonal R^T (RT, rows) or, TRANSPOSED, R (rows, RT): component
        c of row r at T row 4 * owner(r) + c; and T's zero accumulator, (RT, M1) or (M1, RT)."""
        if TRANSPOSED:
            return trow[None, :] - 4 * owner[:, None], (col[:, None] + trow[None, :] * 0).to(dtype) * 0.0
        else:
            return trow[:, None] - 4 * owner[None, :], (trow[:, None] + col[None, :] * 0).to(dtype) * 0.0

    @triton.jit
    def _tiled_t_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, top_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr,
                        w3_ptr, b3_ptr, rows_ptr, t_ptr, n, nnei, nstat,
                        N1: tl.constexpr, N2: tl.constexpr, N3: tl.constexpr, L1: tl.constexpr,
                        L2: tl.constexpr, L3: tl.constexpr, SKIP2: tl.constexpr, SKIP3: tl.constexpr,
                        NTYPES: tl.constexpr, ONE_SIDE: tl.constexpr, ATOMS: tl.constexpr, SLOTS: tl.constexpr,
                        RT: tl.constexpr, MAX_SEL: tl.constexpr, PRECISION: tl.constexpr, ROWS: tl.constexpr,
                        PRESCALED: tl.constexpr, tail_ptr, first_ptr, tail_rows, desc_ptr, pos_ptr,
                        TAIL: tl.constexpr = False, DESC: tl.constexpr = False, HAS_POS: tl.constexpr = False,
                        M2: tl.constexpr = 16, MP: tl.constexpr = 128, KP: tl.constexpr = 16,
                        TRANSPOSED: tl.constexpr = False, AHEAD: tl.constexpr = 0):
        HELD: tl.constexpr = isinstance(w2_ptr, tl.tensor_descriptor)  # `HOLD_WEIGHTS`
        first, owner, centre, real, ctype, lane = _tile(type_ptr, n, ATOMS, SLOTS)
        col, col_ok = _columns(L3[0], L3[1], L3[2])
        trow = tl.arange(0, RT)  # the 4 x ATOMS rows of T (RT >= 16 of them, the rest zero padding)
        corner, acc = _t_start(trow, owner, col, rij_ptr.dtype.element_ty, TRANSPOSED)
        for tc in range(1 if ONE_SIDE else NTYPES):
            mine = real if ONE_SIDE else real & (ctype == tc)
            if tl.max(mine.to(tl.int32), axis=0) > 0:
                for b in range(NTYPES):
                    k = b if ONE_SIDE else tc + b * NTYPES
                    start = tl.load(starts_ptr + b)
                    top = tl.load(top_ptr + (tl.program_id(0) * (1 if ONE_SIDE else NTYPES) + tc) * NTYPES + b)
                    held2, held3 = _held_parts(w2_ptr, w3_ptr, k, L1, L2, L3)  # once a net (`HOLD_WEIGHTS`)
                    ahead = _read_ahead(rows_ptr, centre, start + lane, mine & (lane < top), nnei, corner, AHEAD)
                    for j0 in range(0, MAX_SEL, SLOTS):
                        if j0 < top:
                            w1, b1, w2, b2, w3, b3 = _chunk_weights(w1_ptr, b1_ptr, held2, b2_ptr, held3, b3_ptr, k,
                                                                    N1, N2, N3, L1, L2, L3, PRECISION, HELD)
                            read, ahead = ahead, _read_ahead(rows_ptr, centre, start + j0 + SLOTS + lane,
                                                             mine & (j0 + SLOTS + lane < top), nnei, corner, AHEAD)
                            acc = _t_chunk(acc, rij_ptr, stat_ptr, geo_ptr, rows_ptr, centre, ctype,
                                           start + j0 + lane, mine & (j0 + lane < top), nnei, nstat, corner,
                                           w1, b1, w2, b2, w3, b3, SKIP2, SKIP3, PRECISION, ROWS, PRESCALED,
                                           TRANSPOSED, read, AHEAD)
        if TRANSPOSED:
            acc = tl.trans(acc)
        atom = first + trow // 4
        out = t_ptr + (atom * 4 + trow % 4)[:, None] * N3 + col[None, :]
        ok = ((trow < 4 * ATOMS) & (atom < n))[:, None] & col_ok[None, :]
        if TAIL:
            acc += _tile_tail(tail_ptr, type_ptr, top_ptr, first_ptr, tail_rows, atom, trow % 4, col, col_ok,
                              (trow < 4 * ATOMS) & (atom < n), N3, NTYPES, ONE_SIDE)
        tl.store(out, acc * tl.load(geo_ptr + 3), mask=ok)
        if DESC:  # D of the tile's atoms from the T just stored (read back by this program's threads)
            tl.debug_barrier()
            mine = first + tl.arange(0, ATOMS)
            real_atom = mine < n
            rows = tl.load(pos_ptr + mine, mask=real_atom, other=0) if HAS_POS else mine
            _descriptor_rows(t_ptr, t_ptr, mine, real_atom, desc_ptr, rows, N3, M2, MP, KP, ATOMS, False)

    @triton.jit
    def _tile_tail(tail_ptr, type_ptr, top_ptr, first_ptr, tail_rows, atom, c, col, col_ok, row_ok, N3: tl.constexpr,
                   NTYPES: tl.constexpr, ONE_SIDE: tl.constexpr):
        """What the slots after the tile's tops add to nnei T (`reach.add_tail`'s suffix-table rows) in the
        accumulator's layout: row 4 a + c of the tile gets row c of atom a's rows, summed over the blocks."""
        ctype = tl.load(type_ptr + atom, mask=row_ok, other=0).to(tl.int64)
        ok = row_ok[:, None] & col_ok[None, :]
        tail = tl.zeros(ok.shape, dtype=tail_ptr.dtype.element_ty)
        for b in tl.static_range(NTYPES):
            if ONE_SIDE:
                top = top_ptr + tl.program_id(0) * NTYPES + b + ctype * 0
            else:
                top = top_ptr + (tl.program_id(0) * NTYPES + ctype) * NTYPES + b
            row = ctype * tail_rows + tl.load(first_ptr + b) + tl.load(top, mask=row_ok, other=0)
            tail += tl.load(tail_ptr + (row * 4 * N3 + c * N3)[:, None] + col[None, :], mask=ok, other=0.0)
        return tail

    @triton.jit
    def _per_atom(x, tb, ATOMS: tl.constexpr, SLOTS: tl.constexpr):
        """sum over columns of x (ATOMS * SLOTS, M) times each row's own atom's row of tb (ATOMS, M)."""
        m: tl.constexpr = x.shape[1]
        return tl.reshape(tl.sum(tl.reshape(x, (ATOMS, SLOTS, m)) * tb[:, None, :], axis=2), (ATOMS * SLOTS,))

    @triton.jit
    def _grad_chunk(rij_ptr, stat_ptr, geo_ptr, rows_ptr, q_ptr, centre, ctype, slot, live, nnei, nstat,
                    tb0, tb1, tb2, tb3, w1, b1, w2, b2, w3, b3, ATOMS: tl.constexpr, SLOTS: tl.constexpr,
                    SKIP2: tl.constexpr, SKIP3: tl.constexpr, PRECISION: tl.constexpr, STACK: tl.constexpr,
                    ROWS: tl.constexpr, PRESCALED: tl.constexpr, read, AHEAD: tl.constexpr):
        """dE/dR_ij of one chunk's rows (`deeppot.kernels.env_rows._env_row_grad` with per-row t_bar), stored by
        `_row_at` for `back_to_pairs`: keeping the pair vector, switch and 1/(r+p) alive through the products to
        finish dE/dr_ij here spilled registers (ptxas) and took the kernel 6-9% longer (run 163). With STACK the
        value and its tangent go through each layer as one GEMM of twice the rows; AHEAD: the rows read a chunk
        ahead (`_read_ahead`)."""
        if AHEAD:
            s, rx, ry, rz = read
        else:
            s, rx, ry, rz = _chunk_rows(rij_ptr, stat_ptr, geo_ptr, rows_ptr, centre, ctype, slot, live, nnei, nstat,
                                        ROWS)
        g = _tanh(s[:, None] * w1[None, :] + b1[None, :])
        dg = (1.0 - g * g) * w1[None, :]
        if STACK:
            g, dg = _stacked_jet(g, dg, w2, b2, SKIP2, PRECISION)
            g, dg = _stacked_jet(g, dg, w3, b3, SKIP3, PRECISION)
        else:
            g, dg = _dense_jet(g, dg, w2, b2, SKIP2, PRECISION, PRESCALED=PRESCALED)[3:]
            g, dg = _dense_jet(g, dg, w3, b3, SKIP3, PRECISION, PRESCALED=PRESCALED)[3:]
        q0 = _per_atom(g, tb0, ATOMS, SLOTS) + s * _per_atom(dg, tb0, ATOMS, SLOTS) \
            + rx * _per_atom(dg, tb1, ATOMS, SLOTS) + ry * _per_atom(dg, tb2, ATOMS, SLOTS) \
            + rz * _per_atom(dg, tb3, ATOMS, SLOTS)
        _store_four(q_ptr, centre * nnei + slot, q0, _per_atom(g, tb1, ATOMS, SLOTS), _per_atom(g, tb2, ATOMS, SLOTS),
                    _per_atom(g, tb3, ATOMS, SLOTS), live, 4)

    @triton.jit
    def _tiled_grad_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, top_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr,
                           w3_ptr, b3_ptr, rows_ptr, tbar_ptr, q_ptr, n, nnei, nstat,
                           N1: tl.constexpr, N2: tl.constexpr, N3: tl.constexpr, L1: tl.constexpr,
                           L2: tl.constexpr, L3: tl.constexpr, SKIP2: tl.constexpr, SKIP3: tl.constexpr,
                           NTYPES: tl.constexpr, ONE_SIDE: tl.constexpr, ATOMS: tl.constexpr, SLOTS: tl.constexpr,
                           MAX_SEL: tl.constexpr, PRECISION: tl.constexpr, STACK: tl.constexpr,
                           ROWS: tl.constexpr, PRESCALED: tl.constexpr, HOIST: tl.constexpr,
                           AHEAD: tl.constexpr = 0):
        HELD: tl.constexpr = isinstance(w2_ptr, tl.tensor_descriptor)  # `HOLD_WEIGHTS`
        # tb_c (ATOMS, M1): row c of the program's atoms' t_bar / nnei
        first, _, centre, real, ctype, lane = _tile(type_ptr, n, ATOMS, SLOTS)
        col, col_ok = _columns(L3[0], L3[1], L3[2])
        tb0, tb1, tb2, tb3 = _tile_t_bar(tbar_ptr, first, n, nnei, col, col_ok, ATOMS, N3)
        for tc in range(1 if ONE_SIDE else NTYPES):
            mine = real if ONE_SIDE else real & (ctype == tc)
            if tl.max(mine.to(tl.int32), axis=0) > 0:
                for b in range(NTYPES):
                    k = b if ONE_SIDE else tc + b * NTYPES
                    start = tl.load(starts_ptr + b)
                    top = tl.load(top_ptr + (tl.program_id(0) * (1 if ONE_SIDE else NTYPES) + tc) * NTYPES + b)
                    held2, held3 = _held_parts(w2_ptr, w3_ptr, k, L1, L2, L3)  # once a net (`HOLD_WEIGHTS`)
                    ahead = _read_ahead(rows_ptr, centre, start + lane, mine & (lane < top), nnei, 0, AHEAD)
                    for j0 in tl.range(0, MAX_SEL, SLOTS, disable_licm=not HOIST):  # `GRAD_HOIST`
                        if j0 < top:
                            w1, b1, w2, b2, w3, b3 = _chunk_weights(w1_ptr, b1_ptr, held2, b2_ptr, held3, b3_ptr, k,
                                                                    N1, N2, N3, L1, L2, L3, PRECISION, HELD)
                            read, ahead = ahead, _read_ahead(rows_ptr, centre, start + j0 + SLOTS + lane,
                                                             mine & (j0 + SLOTS + lane < top), nnei, 0, AHEAD)
                            _grad_chunk(rij_ptr, stat_ptr, geo_ptr, rows_ptr, q_ptr, centre, ctype,
                                        start + j0 + lane, mine & (j0 + lane < top), nnei, nstat,
                                        tb0, tb1, tb2, tb3, w1, b1, w2, b2, w3, b3, ATOMS, SLOTS, SKIP2, SKIP3,
                                        PRECISION, STACK, ROWS, PRESCALED, read, AHEAD)


def _tile_of(precision: str, dtype: torch.dtype, kernel: str, tile: tuple | None = None) -> tuple[int, int, int]:
    """(ATOMS, SLOTS, warps) of a kernel at these products and precision, unless a tile is given."""
    return tile or (F16X3_TILES if precision == "f16x3" else TILES[dtype])[kernel]


def gradient_tile(d, counts: Tensor, center_type: Tensor, precision: str, dtype: torch.dtype) -> tuple | None:
    """The f16x3 gradient kernel's tile for centres with these neighbour counts (n, nblocks), in the order they
    are evaluated: `GRAD_TILE` where its tiles walk GRAD_TILE_GAIN fewer slots than the default's (one host sync),
    else None (the default)."""
    if GRAD_TILE is None or precision != "f16x3" or dtype != torch.float32 or not len(counts):
        return None
    walked = []
    for atoms, slots, _ in (F16X3_TILES["grad"], GRAD_TILE):
        tops = tile_tops(d, Reach(counts, counts, {}), center_type, atoms, _per_type(d))
        walked.append(((tops + slots - 1) // slots * slots).sum() * atoms)
    default, small = torch.stack(walked).tolist()
    return GRAD_TILE if small < GRAD_TILE_GAIN * default else None


def _tiled_args(d, rij: Tensor, center_type: Tensor, precision: str, kernel: str, reach: Reach | None,
                rows: Tensor | None = None, tile: tuple | None = None) -> tuple[list, dict, Tensor]:
    """The kernel's tensors up to its weights, then the slots' rows if made (`shared_rows`; else a placeholder the
    kernel does not read), its constants and the tiles' tops; tile: (ATOMS, SLOTS, warps) if not the default."""
    atoms, slots, warps = _tile_of(precision, rij.dtype, kernel, tile)
    tops = tile_tops(d, reach, center_type, atoms, _per_type(d))
    tensors, meta = net_args(d, rij, center_type, precision, tops)
    if rij.dtype == torch.float64:  # see the module's docstring
        tensors[1] = center_type.to(torch.int64)
    meta.update(ATOMS=atoms, SLOTS=slots, num_warps=warps, ROWS=rows is not None)
    meta["PRESCALED"] = PRESCALED and rij.dtype == torch.float32
    if meta["PRESCALED"]:  # the nets' last six: the factor `activation._tanh_prescaled` folds in
        for at in (-6, -5, -3, -1) if kernel == "t" else (-3, -1):  # W1 stays as it is for the gradient's tangent
            tensors[at] = scaled(tensors[at], TANH_SCALE)
    if HOLD_WEIGHTS and meta["PRECISION"] == "f16x3" and has_tma(rij.device):  # the kernels see descriptors
        _held_weights(tensors, meta, _one_box(d, kernel))
    if kernel == "t":  # rows of the T accumulator: 4 an atom, at least 16 (the GEMM's smallest M)
        meta["RT"] = max(16, triton.next_power_of_2(4 * atoms))
        meta["TRANSPOSED"] = TRANSPOSED_T and meta["PRESCALED"] and meta["PRECISION"] == "f16x3" and meta["ROWS"]
        meta["AHEAD"] = 1 if "t" in READ_AHEAD and meta["TRANSPOSED"] else 0
    else:
        meta.update(STACK=rij.dtype in STACKED, HOIST=GRAD_HOIST,
                    AHEAD=2 if "grad" in READ_AHEAD and meta["ROWS"] else 0)
    return [*tensors, tensors[0] if rows is None else rows], meta, tops


def _one_box(d, kernel: str) -> tuple[int, ...]:
    """The layers of `ONE_BOX` whose inputs stay within `precision.STACKED_LIMIT`: the gradient kernel's second
    layer takes the tangent (1 - x^2) w1."""
    layers = ONE_BOX.get(kernel, ())
    if kernel == "grad" and layers:
        assert layers == (2,), "the gradient's third layer takes a tangent that |W1| does not bound"
        return layers if within_stacked_limit(d.nets.layers[0].matrix) else ()
    return layers


def _held_weights(tensors: list, meta: dict, one_box: tuple[int, ...]) -> None:
    """W2's and W3's float16 parts (`precision.padded_parts`: (nets, 2, P_in, P_out)) as TMA descriptors, in place
    in the kernel's arguments, whose last six are the nets' (`net_args`): blocks of one part, or of both for the
    layers in one_box."""
    for layer, at, p_in, p_out in ((2, -4, meta["L1"][0], meta["L2"][0]), (3, -2, meta["L2"][0], meta["L3"][0])):
        box = [(2 if layer in one_box else 1) * p_in, p_out]
        tensors[at] = TensorDescriptor.from_tensor(tensors[at].reshape(-1, p_out), box)


def _per_type(d) -> int:
    """Two-sided programs walk their atoms' types one at a time, so their tops are per type."""
    return 0 if d.type_one_side else d.ntypes


def shared_rows(d, rij: Tensor, center_type: Tensor, reach: Reach | None, precision: str = "tf32x3",
                grad_tile: tuple | None = None) -> dict:
    """The slots' environment rows made once for both kernels of a pair stage (`rows=`), for precisions in
    `ROWS`; nothing otherwise. grad_tile: the gradient kernel's, if not the default."""
    if rij.dtype not in ROWS or not (covers(rij.dtype, "t") and covers(rij.dtype, "grad")):
        return {}
    tiles = []
    for kernel in ("t", "grad"):
        atoms = _tile_of(precision, rij.dtype, kernel, grad_tile if kernel == "grad" else None)[0]
        tiles.append((tile_tops(d, reach, center_type, atoms, _per_type(d)), atoms))
    return {"rows": env_rows_once(d, rij, center_type, *tiles, per_type=not d.type_one_side)}


def descriptor_t(d, rij: Tensor, center_type: Tensor, precision: str = "tf32x3", reach: Reach | None = None,
                 rows: Tensor | None = None, desc: tuple[Tensor, Tensor | None] | None = None) -> Tensor:
    """As `deeppot.kernels.descriptor.descriptor_t`; `rows`: the slots' `shared_rows`, if made. `desc`: (D, pos)
    where the kernel also writes D = T^T T< (`descriptor_matrix.descriptor_from_t`) of atom i into row pos[i]
    of D (row i when pos is None), and adds the tail itself (models without exclude_types: `tail_in_kernel`)."""
    tensors, meta, tops = _tiled_args(d, rij, center_type, precision, "t", reach, rows)
    n, nnei = rij.shape[:2]
    t_mat = rij.new_empty(n, 4, meta["N3"])
    extra = epilogue_args(d, t_mat, reach, desc, meta, meta["N3"])
    _tiled_t_kernel[(len(tops),)](*tensors, t_mat, n, nnei, d.davg.numel(), **meta, **extra)
    if reach is not None and not meta.get("TAIL"):
        add_tail(d, t_mat, center_type, tops, meta["ATOMS"], _per_type(d), reach.last)
    return t_mat


def tail_in_kernel(d) -> bool:
    """Whether the T kernel can add the tail itself (`reach.add_tail` uses its table alone)."""
    return not d.exclude_types


def epilogue_args(d, t_mat: Tensor, reach: Reach | None, desc: tuple[Tensor, Tensor | None] | None,
                  meta: dict, m1: int) -> dict:
    """A T kernel's epilogue arguments (suffix table, its blocks' first rows, rows per type, D, pos), and its
    constants into meta (this module's T kernel and the compressed one's; TAIL set where the kernel adds the tail,
    else the caller does); m1, T's width. Placeholders, never read, where the kernel has no epilogue."""
    if desc is None and not (FUSED_TAIL and reach is not None and tail_in_kernel(d)):
        return dict(tail_ptr=t_mat, first_ptr=t_mat, tail_rows=0, desc_ptr=t_mat, pos_ptr=t_mat)
    assert tail_in_kernel(d), "exclude_types: the tail needs `reach.add_tail_reference`"
    table = suffix_table(d) if reach is not None else t_mat
    out, pos = desc if desc is not None else (t_mat, None)
    meta.update(TAIL=reach is not None, DESC=desc is not None, HAS_POS=pos is not None)
    if desc is not None:
        m2 = out.shape[1] // m1
        meta.update(M2=m2, MP=triton.next_power_of_2(m1), KP=max(16, triton.next_power_of_2(m2)))
    return dict(tail_ptr=table, first_ptr=block_layout(tuple(d.sel), t_mat.device)[2],
                tail_rows=table.shape[1] if reach is not None else 0, desc_ptr=out,
                pos_ptr=t_mat if pos is None else pos)


def pair_grad_from_t_bar(d, rij: Tensor, center_type: Tensor, t_bar: Tensor, precision: str = "tf32x3",
                         reach: Reach | None = None, rows: Tensor | None = None, into: tuple | None = None,
                         tile: tuple | None = None) -> Tensor | None:
    """As `deeppot.kernels.descriptor.pair_grad_from_t_bar`; `rows`: the slots' `shared_rows`, if made (the
    kernel overwrites them with dE/dR_ij); `into`: (force, virial, owner, start), where the forces and virials go
    (`scatter.back_and_scatter`) instead of dE/dr_ij being returned (None then); tile: as `_tiled_args`."""
    tensors, meta, tops = _tiled_args(d, rij, center_type, precision, "grad", reach, rows, tile)
    n, nnei = rij.shape[:2]
    # dE/dR_ij where the tiles walk, by `_row_at`: over each slot's own row if made
    q = rij.new_empty(triton.cdiv(n * nnei, 32), 4, 32) if rows is None else rows
    t_bar = t_bar.contiguous()
    _tiled_grad_kernel[(len(tops),)](*tensors, t_bar, q, n, nnei, d.davg.numel(), **meta)
    if into is not None:
        return back_and_scatter(d, tensors, q, meta["ATOMS"], not d.type_one_side, *into)
    return back_to_pairs(d, tensors, q, meta["ATOMS"], per_type=not d.type_one_side)
