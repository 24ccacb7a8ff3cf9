"""Fused Triton kernels for the se_e2_a embedding nets with their tangent: the fast twin of
`deeppot.model.analytic.embed_all`.

For every neighbour slot the embedding net maps s_ij (column 0 of the normalised environment matrix) to
G(s) (M1 values) and, in forward mode, to dG/ds. In plain PyTorch that is ~10 kernels per layer and net, and
the training backward through it ~3x more: hundreds of launches of microsecond-sized work. Here one kernel
computes G and dG/ds for every slot of every net, and one kernel back-propagates (dL/dG, dL/d(dG/ds)) to the
weights, leaving per-program partial sums that one GEMM reduces per net (deterministic: no atomics).

One program handles one (centre atom, neighbour-type block): its net is block b (type_one_side) or
(centre type a, b) at flat index a + b*ntypes; rows are the block's sel_b slots in chunks of BLOCK_J. On trimmed
lists (`deeppot.model.slots`: a padded stand-in first in each block, then the neighbours) the chunks past an atom's
last neighbour hold only padding, whose rows equal the stand-in's: the forward copies the stand-in's G and dG/ds
there and the backward adds their gradients to its row, instead of running the net on them (the alloy keeps ~6 of
13 chunks per atom: a compiled step 1.09 -> 0.92 ms on an H100, benchmarks/results run 65).
Supported nets: three layers 1 -> N1 -> N2 -> N3, tanh, DeePMD skips (same width or doubling), no timestep
(resnet_dt false). `fusable` says whether a descriptor qualifies; anything else keeps the PyTorch path.
Widths are padded to powers of two in registers (zero weights keep the padding exactly zero). GEMMs run on the
tensor cores: float32 as three float16 products ("f16x3", `_mm`) where `deeppot.kernels.precision` finds the nets
within float16's range on a Hopper GPU, else 3xTF32 (both float32-level accuracy), or, opted in, one TF32 pass;
float64 in float64. The inference kernels built on these helpers take the same schemes.
The kernel-vs-PyTorch tests are tests/kernels (GPU, or the Triton interpreter on a CPU) and tests/gpu.
"""

from __future__ import annotations

import functools
import os
from itertools import accumulate, pairwise

import torch
from torch import Tensor

from deeppot.model.slots import SlotLayout, list_sel

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: the PyTorch path is used
    triton = None
else:
    from deeppot.kernels.activation import _P2LOG2E, _PTX, _tanh, _tanh_prescaled

    # The training kernels' float64 tanh keeps libdevice's exp and the IEEE division: with the branch-free one
    # (`deeppot.kernels.activation`), which made the float64 inference kernels 30-40% faster, ptxas spilled 3,272 B
    # in the backward instead of 960 and a water float64 step took 1.52 ms instead of 1.24 (run 151; 1.24 again
    # with this, run 152).
    _TRAINING_FAST64 = tl.constexpr(False)
    # The training kernels read float32 or float64 weights as given, whatever their products' scheme (f16x3 splits
    # them in registers): `_net_weights` reads float16 parts only for the inference kernels' "f16x3". A constexpr
    # argument, since a string default of a jit function's parameter does not compile on the GPU (Triton 3.6).
    _WEIGHTS_AS_GIVEN = tl.constexpr("ieee")

BLOCK_J = 16  # slots per chunk (the GEMM M dimension); 16 x 8 warps measured fastest on an H100
NUM_WARPS = 8


def triton_available(device: torch.device) -> bool:
    """Triton kernels run on CUDA tensors, or on CPU tensors under TRITON_INTERPRET=1 (the CI tests)."""
    if triton is None:
        return False
    return device.type == "cuda" or os.environ.get("TRITON_INTERPRET") == "1"


def fusable(d) -> bool:
    """Whether the descriptor's embedding nets are of the shape the kernels implement."""
    if getattr(d, "tables", None) is not None:  # compressed: the tables replace the nets (kernels/compressed.py)
        return False
    nets = d.nets
    widths = [1, *nets.neuron]
    return (len(nets.layers) == 3 and nets.activation_function == "tanh" and not nets.resnet_dt
            and widths[1] not in (1, 2) and all(layer.idt is None for layer in nets.layers))


def _skip_kind(n_in: int, n_out: int) -> int:
    return 1 if n_out == n_in else 2 if n_out == 2 * n_in else 0


if triton is not None:

    @triton.jit
    def _f16_parts(x):
        """x = hi + lo / 2^11 with hi and lo float16: 22 significant bits, as TF32's two parts in tf32x3."""
        hi = x.to(tl.float16)
        return hi, ((x - hi.to(tl.float32)) * 2048.0).to(tl.float16)

    @triton.jit
    def _mm(a, b, PRECISION: tl.constexpr, SCALE: tl.constexpr = 1.0):
        """a @ b (times SCALE) on the tensor cores at PRECISION: one of `tl.dot`'s input precisions, or "f16x3",
        three float16 products of the operands' parts (`_f16_parts`), as accurate as "tf32x3" (float32 operands
        within float16's range) at twice the tensor cores' rate. SCALE folds into a following bias add's multiply
        (`activation._tanh_prescaled`), or into `_mm_stacked`'s own rescale."""
        if PRECISION == "f16x3":
            if _PTX:  # a tuple: a weight's parts made beforehand, read by TMA (`_load_parts`)
                pair: tl.constexpr = isinstance(b, tl.tuple)
            else:  # the interpreter's tuples are Python's (`tuple` is no name the compiler knows)
                pair: tl.constexpr = isinstance(b, tuple)
            if pair:  # a held weight's parts, two shared-memory tiles (`_load_parts`)
                a_hi, a_lo = _f16_parts(a)
                return _scaled(_mm_parts(a_hi, a_lo, b[0], b[1]), SCALE)
            elif b.dtype != tl.float16:  # float32 weights, split here
                a_hi, a_lo = _f16_parts(a)
                b_hi, b_lo = _f16_parts(b)
                return _scaled(_mm_parts(a_hi, a_lo, b_hi, b_lo), SCALE)
            elif len(b.shape) == 2:  # a held weight's parts in one shared-memory tile, [hi; lo] (`_load_parts`)
                return _mm_stacked(a, b, SCALE)
            else:  # a weight's parts made beforehand, joined along a last axis (`_load_parts`)
                a_hi, a_lo = _f16_parts(a)
                b_hi, b_lo = tl.split(b)
                return _scaled(_mm_parts(a_hi, a_lo, b_hi, b_lo), SCALE)
        else:
            return _scaled(tl.dot(a, b, input_precision=PRECISION), SCALE)

    @triton.jit
    def _scaled(c, SCALE: tl.constexpr):
        if SCALE != 1.0:
            c = c * SCALE
        return c

    @triton.jit
    def _mm_parts(a_hi, a_lo, b_hi, b_lo):
        """f16x3's three products from both operands' parts."""
        c = tl.dot(a_hi, b_lo, tl.dot(a_lo, b_hi))
        return tl.dot(a_hi, b_hi, c * (1.0 / 2048.0))

    @triton.jit
    def _k_concat(x, y):
        """[x | y] along the last axis."""
        rows: tl.constexpr = x.shape[0]
        k: tl.constexpr = x.shape[1]
        return tl.reshape(tl.permute(tl.join(x, y), (0, 2, 1)), (rows, 2 * k))

    @triton.jit
    def _stacked_parts(a):
        """a's float16 parts for the stacked GEMMs: hi, 2^11 hi and lo, the low part from 2^11 hi by one multiply-add
        (2^11 hi is exact and finite for |a| up to `precision.STACKED_LIMIT`)."""
        a_hi = a.to(tl.float16)
        a_big = a_hi * 2048.0
        return a_hi, a_big, (a * 2048.0 - a_big.to(tl.float32)).to(tl.float16)

    @triton.jit
    def _mm_stacked(a, b, SCALE: tl.constexpr):
        """a @ W times SCALE in f16x3 from W's parts stacked along k in one shared-memory tile b = [hi; lo]: two
        GEMMs of twice the depth, [a_lo | a_hi] @ b and [2^11 a_hi | 0] @ b, into one accumulator, where three of
        single depth wait for each other, with a rescale between. 2^11 a_hi is exact and finite for |a| up to
        `precision.STACKED_LIMIT`, so a's low part comes from it by one multiply-add."""
        a_hi, a_big, a_lo = _stacked_parts(a)
        c = tl.dot(_k_concat(a_lo, a_hi), b)
        c = tl.dot(_k_concat(a_big, tl.zeros_like(a_hi)), b, c)
        return c * (SCALE / 2048.0)

    @triton.jit
    def _row_concat(x, y):
        """[x; y] along the first axis."""
        rows: tl.constexpr = x.shape[0]
        k: tl.constexpr = x.shape[1]
        return tl.reshape(tl.permute(tl.join(x, y), (2, 0, 1)), (2 * rows, k))

    @triton.jit
    def _mm_t(w, x, SCALE: tl.constexpr):
        """(x^T @ W)^T = W^T @ x times SCALE in f16x3, x (k, rows) float32 the right-hand side, from W's float16 parts
        as `_mm` takes them: one tile [hi; lo] (two GEMMs of twice the depth, as `_mm_stacked`), the tuple (hi, lo),
        or joined along a last axis."""
        if _PTX:
            pair: tl.constexpr = isinstance(w, tl.tuple)
        else:
            pair: tl.constexpr = isinstance(w, tuple)
        if not pair and len(w.shape) == 2:
            x_hi, x_big, x_lo = _stacked_parts(x)
            wt = tl.trans(w)
            c = tl.dot(wt, _row_concat(x_lo, x_hi))
            c = tl.dot(wt, _row_concat(x_big, tl.zeros_like(x_hi)), c)
            return c * (SCALE / 2048.0)
        else:
            if pair:
                w_hi, w_lo = w[0], w[1]
            else:
                w_hi, w_lo = tl.split(w)
            x_hi, x_lo = _f16_parts(x)
            return _scaled(_mm_parts(tl.trans(w_hi), tl.trans(w_lo), x_hi, x_lo), SCALE)

    @triton.jit
    def _mm_sum(a, b, c, d, PRECISION: tl.constexpr):
        """a @ b + c @ d at PRECISION; with "f16x3", the four products of a low part share one accumulator, so the
        sum holds one tile fewer than two `_mm`s."""
        if PRECISION == "f16x3":
            a_hi, a_lo = _f16_parts(a)
            b_hi, b_lo = _f16_parts(b)
            c_hi, c_lo = _f16_parts(c)
            d_hi, d_lo = _f16_parts(d)
            low = tl.dot(a_hi, b_lo, tl.dot(a_lo, b_hi, tl.dot(c_hi, d_lo, tl.dot(c_lo, d_hi))))
            return tl.dot(a_hi, b_hi, tl.dot(c_hi, d_hi, low * (1.0 / 2048.0)))
        else:
            return tl.dot(a, b, input_precision=PRECISION) + tl.dot(c, d, input_precision=PRECISION)

    @triton.jit
    def _columns(P: tl.constexpr, H: tl.constexpr, NH: tl.constexpr):
        """Logical column and validity of each register column of a layout (P, H, NH) (see `_layouts`)."""
        p = tl.arange(0, P)
        return (p // H) * NH + p % H, (p % H) < NH

    @triton.jit
    def _load_matrix(ptr, k, N_IN: tl.constexpr, N_OUT: tl.constexpr, PI: tl.constexpr, HI: tl.constexpr,
                     NHI: tl.constexpr, PO: tl.constexpr, HO: tl.constexpr, NHO: tl.constexpr):
        row, row_ok = _columns(PI, HI, NHI)
        col, col_ok = _columns(PO, HO, NHO)
        at = k * N_IN * N_OUT + row[:, None] * N_OUT + col[None, :]
        return tl.load(ptr + at, mask=row_ok[:, None] & col_ok[None, :], other=0.0)

    @triton.jit
    def _load_parts(ptr, k, PI: tl.constexpr, PO: tl.constexpr):
        """A weight matrix's float16 parts as laid out in registers (`precision.padded_parts`: net k's (2, PI, PO),
        padding included), joined along a last axis of (hi, lo) for `_mm`: whole 16-byte loads, no masks. From a
        TMA descriptor of (PI, PO) blocks over the parts' rows, the tuple (hi, lo), which the compiler copies into
        shared memory, where the GEMMs read it (`atom_tiles.HOLD_WEIGHTS`); of (2 PI, PO) blocks, the one tile
        [hi; lo] (`atom_tiles.ONE_BOX`)."""
        if isinstance(ptr, tl.tensor_descriptor):
            one: tl.constexpr = ptr.block_shape[0] == 2 * PI
            if one:
                return ptr.load([2 * k * PI, 0])
            else:
                return ptr.load([2 * k * PI, 0]), ptr.load([(2 * k + 1) * PI, 0])
        else:
            at = k * 2 * PI * PO + tl.arange(0, PI)[:, None] * PO + tl.arange(0, PO)[None, :]
            return tl.join(tl.load(ptr + at), tl.load(ptr + PI * PO + at))

    @triton.jit
    def _load_vector(ptr, k, N: tl.constexpr, P: tl.constexpr, H: tl.constexpr, NH: tl.constexpr):
        col, ok = _columns(P, H, NH)
        return tl.load(ptr + k * N + col, mask=ok, other=0.0)

    @triton.jit
    def _load_matrix_t(ptr, k, N_IN: tl.constexpr, N_OUT: tl.constexpr, PI: tl.constexpr, HI: tl.constexpr,
                       NHI: tl.constexpr, PO: tl.constexpr, HO: tl.constexpr, NHO: tl.constexpr):
        """W^T (PO, PI), read in transposed order (no register transpose)."""
        row, row_ok = _columns(PI, HI, NHI)
        col, col_ok = _columns(PO, HO, NHO)
        at = k * N_IN * N_OUT + row[None, :] * N_OUT + col[:, None]
        return tl.load(ptr + at, mask=row_ok[None, :] & col_ok[:, None], other=0.0)

    @triton.jit
    def _skip(x, KIND: tl.constexpr):
        """DeePMD's skip in registers: x (KIND 1) or [x, x] (KIND 2, a plain concatenation in the doubled layout)."""
        if KIND == 2:
            return _k_concat(x, x)
        else:
            return x

    @triton.jit
    def _skip_transposed(g, KIND: tl.constexpr):
        """The skip's share of d(out)/d(in) applied to g: g (KIND 1) or g[:, :P] + g[:, P:] (KIND 2)."""
        if KIND == 2:
            rows: tl.constexpr = g.shape[0]
            cols: tl.constexpr = g.shape[1] // 2
            return tl.sum(tl.reshape(g, (rows, 2, cols)), axis=1)
        else:
            return g

    @triton.jit
    def _jet_outputs(x, dx, a, u, KIND: tl.constexpr):
        """A tanh layer's d = 1 - a^2 and its outputs with skip, from its activation a and u = dx @ W."""
        d = 1.0 - a * a
        x_out = a
        dx_out = d * u
        if KIND != 0:
            x_out += _skip(x, KIND)
            dx_out += _skip(dx, KIND)
        return d, x_out, dx_out

    @triton.jit
    def _dense_jet(x, dx, w, b, KIND: tl.constexpr, PRECISION: tl.constexpr, FAST64: tl.constexpr = True,
                   PRESCALED: tl.constexpr = False):
        """One layer on (value, tangent): returns a, u = dx @ W, d = 1 - a^2, and the outputs with skip. PRESCALED:
        b comes times `activation.TANH_SCALE` (float32; `activation._tanh_prescaled`)."""
        if PRESCALED:
            a = _tanh_prescaled(_mm(x, w, PRECISION, _P2LOG2E) + b[None, :], 1.0)
        else:
            a = _tanh(_mm(x, w, PRECISION) + b[None, :], FAST64)
        u = _mm(dx, w, PRECISION)
        d, x_out, dx_out = _jet_outputs(x, dx, a, u, KIND)
        return a, u, d, x_out, dx_out

    @triton.jit
    def _dense_jet_backward(x, dx, wt, a, u, d, gx, gdx, KIND: tl.constexpr, PRECISION: tl.constexpr):
        """Reverse of `_dense_jet` (wt = W^T): weight-gradient contributions and the gradients of its inputs."""
        gz = (gx - 2.0 * gdx * u * a) * d
        gu = gdx * d
        gw = _mm_sum(tl.trans(x), gz, tl.trans(dx), gu, PRECISION)
        gb = tl.sum(gz, axis=0)
        gx_in = _mm(gz, wt, PRECISION)
        gdx_in = _mm(gu, wt, PRECISION)
        if KIND != 0:
            gx_in += _skip_transposed(gx, KIND)
            gdx_in += _skip_transposed(gdx, KIND)
        return gw, gb, gx_in, gdx_in

    @triton.jit
    def _program_slots(net_ptr, starts_ptr, order_ptr, nblocks, natoms):
        """This program's (atom, block): its id (atom * nblocks + block), atom, first slot and slot count in the
        block, and its net. Programs run block by block, the largest first (order: the blocks by size), not atom by
        atom: the longest programs start first and the short ones fill the last wave (the backward holds one program
        a multiprocessor). Run 254 (H200, train_bench.py, with the fitting backward's products on Triton): water
        float32 0.724 -> 0.703 ms a step."""
        q = tl.program_id(0)
        atom, blk = q % natoms, tl.load(order_ptr + q // natoms)
        pid = atom * nblocks + blk
        start = tl.load(starts_ptr + blk)
        return pid, atom, start, tl.load(starts_ptr + blk + 1) - start, tl.load(net_ptr + pid)

    @triton.jit
    def _net_vectors(w1_ptr, b1_ptr, b2_ptr, b3_ptr, k, N1: tl.constexpr, N2: tl.constexpr, N3: tl.constexpr,
                     L1: tl.constexpr, L2: tl.constexpr, L3: tl.constexpr):
        """Net k's first layer's weights and its biases in the layers' register layouts (`_net_weights` without
        W2 and W3)."""
        return (_load_vector(w1_ptr, k, N1, L1[0], L1[1], L1[2]), _load_vector(b1_ptr, k, N1, L1[0], L1[1], L1[2]),
                _load_vector(b2_ptr, k, N2, L2[0], L2[1], L2[2]), _load_vector(b3_ptr, k, N3, L3[0], L3[1], L3[2]))

    @triton.jit
    def _held_parts(w2_ptr, w3_ptr, k, L1: tl.constexpr, L2: tl.constexpr, L3: tl.constexpr):
        """Net k's W2 and W3 parts, read once a net where they come as TMA descriptors (`atom_tiles.HOLD_WEIGHTS`);
        else the pointers themselves, for `_chunk_weights` to read in every chunk."""
        if isinstance(w2_ptr, tl.tensor_descriptor):
            return _load_parts(w2_ptr, k, L1[0], L2[0]), _load_parts(w3_ptr, k, L2[0], L3[0])
        else:
            return w2_ptr, w3_ptr

    @triton.jit
    def _chunk_weights(w1_ptr, b1_ptr, w2, b2_ptr, w3, b3_ptr, k, N1: tl.constexpr, N2: tl.constexpr,
                       N3: tl.constexpr, L1: tl.constexpr, L2: tl.constexpr, L3: tl.constexpr,
                       PRECISION: tl.constexpr, HELD: tl.constexpr):
        """Net k's weights and biases for one chunk: W2 and W3 as `_held_parts` gave them when HELD, the rest read
        here (`_net_vectors`); else all read here (`_net_weights`, w2 and w3 their pointers)."""
        if HELD:
            w1, b1, b2, b3 = _net_vectors(w1_ptr, b1_ptr, b2_ptr, b3_ptr, k, N1, N2, N3, L1, L2, L3)
            return w1, b1, w2, b2, w3, b3
        else:
            return _net_weights(w1_ptr, b1_ptr, w2, b2_ptr, w3, b3_ptr, k, N1, N2, N3, L1, L2, L3, PRECISION)

    @triton.jit
    def _net_weights(w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr, k, N1: tl.constexpr, N2: tl.constexpr,
                     N3: tl.constexpr, L1: tl.constexpr, L2: tl.constexpr, L3: tl.constexpr,
                     PRECISION: tl.constexpr):
        """Net k's weights and biases in the layers' register layouts; with "f16x3", W2 and W3 as their parts.
        (Float64 and tf32x3 weights made once in the padded layout, read unmasked, were slower: run 239.)"""
        w1 = _load_vector(w1_ptr, k, N1, L1[0], L1[1], L1[2])
        b1 = _load_vector(b1_ptr, k, N1, L1[0], L1[1], L1[2])
        if PRECISION == "f16x3":
            w2 = _load_parts(w2_ptr, k, L1[0], L2[0])
            w3 = _load_parts(w3_ptr, k, L2[0], L3[0])
        else:
            w2 = _load_matrix(w2_ptr, k, N1, N2, L1[0], L1[1], L1[2], L2[0], L2[1], L2[2])
            w3 = _load_matrix(w3_ptr, k, N2, N3, L2[0], L2[1], L2[2], L3[0], L3[1], L3[2])
        b2 = _load_vector(b2_ptr, k, N2, L2[0], L2[1], L2[2])
        b3 = _load_vector(b3_ptr, k, N3, L3[0], L3[1], L3[2])
        return w1, b1, w2, b2, w3, b3

    @triton.jit
    def _padding_only(nlist_ptr, atom, start, nnei, j0, slot, live, SKIP_PADDING: tl.constexpr):
        """Whether a chunk past the first holds only padding rows equal to slot 0's (a padded stand-in: the
        list's layout puts it there, `deeppot.model.slots`): its slots then take slot 0's G, dG/ds and share its
        gradient instead of being recomputed. Neighbours come first in a block, so such chunks are its tail."""
        if SKIP_PADDING:
            first = tl.load(nlist_ptr + atom * nnei + start)
            return (j0 > 0) & (first < 0) & (tl.max(tl.load(nlist_ptr + slot, mask=live, other=-1)) < 0)
        else:
            return j0 < 0

    @triton.jit
    def _row_zero(rows, x):
        """Row 0 of the block (the first chunk's first row) of a chunk's (BLOCK, P) values, as a (P,) vector."""
        return tl.sum(tl.where(rows[:, None] == 0, x, 0.0), axis=0)

    @triton.jit
    def _embed_fwd_kernel(rr_ptr, nlist_ptr, net_ptr, starts_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr,
                          g_ptr, dg_ptr, order_ptr, nnei, nblocks, natoms,
                          N1: tl.constexpr, N2: tl.constexpr, N3: tl.constexpr, L1: tl.constexpr,
                          L2: tl.constexpr, L3: tl.constexpr, SKIP2: tl.constexpr, SKIP3: tl.constexpr,
                          BLOCK: tl.constexpr, MAX_SEL: tl.constexpr, PRECISION: tl.constexpr,
                          SKIP_PADDING: tl.constexpr):
        atom, start, length, k = _program_slots(net_ptr, starts_ptr, order_ptr, nblocks, natoms)[1:]
        w1, b1, w2, b2, w3, b3 = _net_weights(w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr, k, N1, N2, N3,
                                              L1, L2, L3, _WEIGHTS_AS_GIVEN)
        col, col_ok = _columns(L3[0], L3[1], L3[2])
        g0 = tl.zeros_like(b3)  # slot 0's G and dG/ds
        dg0 = tl.zeros_like(b3)
        for j0 in range(0, MAX_SEL, BLOCK):  # a constant trip count (the interpreter needs one); skip past the end
            if j0 < length:
                rows = j0 + tl.arange(0, BLOCK)
                live = rows < length
                slot = atom * nnei + start + rows
                out = slot[:, None] * N3 + col[None, :]
                keep = live[:, None] & col_ok[None, :]
                if _padding_only(nlist_ptr, atom, start, nnei, j0, slot, live, SKIP_PADDING):
                    tl.store(g_ptr + out, tl.broadcast_to(g0[None, :], (BLOCK, L3[0])), mask=keep)
                    tl.store(dg_ptr + out, tl.broadcast_to(dg0[None, :], (BLOCK, L3[0])), mask=keep)
                else:
                    s = tl.load(rr_ptr + slot * 4, mask=live, other=0.0)
                    x1 = _tanh(s[:, None] * w1[None, :] + b1[None, :], _TRAINING_FAST64)
                    dx1 = (1.0 - x1 * x1) * w1[None, :]
                    x2, dx2 = _dense_jet(x1, dx1, w2, b2, SKIP2, PRECISION, _TRAINING_FAST64)[3:]
                    x3, dx3 = _dense_jet(x2, dx2, w3, b3, SKIP3, PRECISION, _TRAINING_FAST64)[3:]
                    tl.store(g_ptr + out, x3, mask=keep)
                    tl.store(dg_ptr + out, dx3, mask=keep)
                    if j0 == 0:
                        g0 = _row_zero(rows, x3)
                        dg0 = _row_zero(rows, dx3)

    @triton.jit
    def _add_matrix(ptr, value, again, N_OUT: tl.constexpr, PI: tl.constexpr, HI: tl.constexpr, NHI: tl.constexpr,
                    PO: tl.constexpr, HO: tl.constexpr, NHO: tl.constexpr):
        """ptr[W layout] += value (again) or = value (the program's first chunk, so `part` needs no zeroing): this
        program's own partial sums (no other program writes there)."""
        row, row_ok = _columns(PI, HI, NHI)
        col, col_ok = _columns(PO, HO, NHO)
        at = ptr + row[:, None] * N_OUT + col[None, :]
        ok = row_ok[:, None] & col_ok[None, :]
        tl.store(at, tl.load(at, mask=ok & again, other=0.0) + value, mask=ok)

    @triton.jit
    def _add_vector(ptr, value, again, P: tl.constexpr, H: tl.constexpr, NH: tl.constexpr):
        col, ok = _columns(P, H, NH)
        tl.store(ptr + col, tl.load(ptr + col, mask=ok & again, other=0.0) + value, mask=ok)

    @triton.jit
    def _bwd_chunk(rr_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr, gg_ptr, gdg_ptr, base1, again,
                   extra_ptr, k, rows, live, slot, N1: tl.constexpr, N2: tl.constexpr, N3: tl.constexpr,
                   L1: tl.constexpr, L2: tl.constexpr, L3: tl.constexpr, SKIP2: tl.constexpr, SKIP3: tl.constexpr,
                   PRECISION: tl.constexpr, SKIP_PADDING: tl.constexpr):
        """One chunk's weight-gradient contributions, added to this program's partial sums at base1 (flat order of
        one net: W1, b1, W2, b2, W3, b3). With SKIP_PADDING, row 0 of the block also carries the gradients of the
        chunks of padding only (`_padding_gradients`, at extra_ptr)."""
        col, col_ok = _columns(L3[0], L3[1], L3[2])
        base2 = base1 + 2 * N1
        base3 = base2 + N1 * N2 + N2
        s = tl.load(rr_ptr + slot * 4, mask=live, other=0.0)
        # recompute the forward pass (cheaper than storing every layer's activations)
        w1 = _load_vector(w1_ptr, k, N1, L1[0], L1[1], L1[2])
        x1 = _tanh(s[:, None] * w1[None, :] + _load_vector(b1_ptr, k, N1, L1[0], L1[1], L1[2])[None, :],
                   _TRAINING_FAST64)
        d1 = 1.0 - x1 * x1
        dx1 = d1 * w1[None, :]
        w2 = _load_matrix(w2_ptr, k, N1, N2, L1[0], L1[1], L1[2], L2[0], L2[1], L2[2])
        b2 = _load_vector(b2_ptr, k, N2, L2[0], L2[1], L2[2])
        a2, u2, d2, x2, dx2 = _dense_jet(x1, dx1, w2, b2, SKIP2, PRECISION, _TRAINING_FAST64)
        w3 = _load_matrix(w3_ptr, k, N2, N3, L2[0], L2[1], L2[2], L3[0], L3[1], L3[2])
        b3 = _load_vector(b3_ptr, k, N3, L3[0], L3[1], L3[2])
        a3, u3, d3 = _dense_jet(x2, dx2, w3, b3, SKIP3, PRECISION, _TRAINING_FAST64)[:3]
        at = slot[:, None] * N3 + col[None, :]
        keep = live[:, None] & col_ok[None, :]
        gx3 = tl.load(gg_ptr + at, mask=keep, other=0.0)
        gdx3 = tl.load(gdg_ptr + at, mask=keep, other=0.0)
        if SKIP_PADDING:
            first = (rows[:, None] == 0) & col_ok[None, :]
            gx3 += tl.load(extra_ptr + col[None, :] + 0 * rows[:, None], mask=first, other=0.0)
            gdx3 += tl.load(extra_ptr + N3 + col[None, :] + 0 * rows[:, None], mask=first, other=0.0)
        scale, unscale = _gradient_scale(gx3, gdx3, PRECISION)
        gx3 *= scale
        gdx3 *= scale
        w3t = _load_matrix_t(w3_ptr, k, N2, N3, L2[0], L2[1], L2[2], L3[0], L3[1], L3[2])
        gw, gb, gx2, gdx2 = _dense_jet_backward(x2, dx2, w3t, a3, u3, d3, gx3, gdx3, SKIP3, PRECISION)
        _add_matrix(base3, gw * unscale, again, N3, L2[0], L2[1], L2[2], L3[0], L3[1], L3[2])
        _add_vector(base3 + N2 * N3, gb * unscale, again, L3[0], L3[1], L3[2])
        w2t = _load_matrix_t(w2_ptr, k, N1, N2, L1[0], L1[1], L1[2], L2[0], L2[1], L2[2])
        gw, gb, gx1, gdx1 = _dense_jet_backward(x1, dx1, w2t, a2, u2, d2, gx2, gdx2, SKIP2, PRECISION)
        _add_matrix(base2, gw * unscale, again, N2, L1[0], L1[1], L1[2], L2[0], L2[1], L2[2])
        _add_vector(base2 + N1 * N2, gb * unscale, again, L2[0], L2[1], L2[2])
        # layer 1: x1 = tanh(s w1 + b1), dx1 = (1 - x1^2) w1 (the input tangent is 1)
        gz1 = (gx1 - 2.0 * gdx1 * w1[None, :] * x1) * d1
        _add_vector(base1, tl.sum(gz1 * s[:, None] + gdx1 * d1, axis=0) * unscale, again, L1[0], L1[1], L1[2])
        _add_vector(base1 + N1, tl.sum(gz1, axis=0) * unscale, again, L1[0], L1[1], L1[2])

    @triton.jit
    def _gradient_scale(gx, gdx, PRECISION: tl.constexpr):
        """A power of two that brings a chunk's incoming gradients to [1, 2) at their largest, and its inverse, for
        "f16x3" (1, 1 otherwise): float16 parts keep their relative accuracy only between ~6e-5 and 65504, and a
        loss's gradients may lie anywhere. Powers of two scale exactly."""
        if PRECISION == "f16x3":
            top = tl.maximum(tl.max(tl.abs(gx)), tl.max(tl.abs(gdx)))
            exponent = tl.minimum(tl.maximum((top.to(tl.int32, bitcast=True) >> 23) & 0xFF, 1), 253)
            return ((254 - exponent) << 23).to(tl.float32, bitcast=True), (exponent << 23).to(tl.float32, bitcast=True)
        else:
            return 1.0, 1.0

    @triton.jit
    def _padding_gradients(gg_ptr, gdg_ptr, nlist_ptr, extra_ptr, atom, start, length, nnei, N3: tl.constexpr,
                           L3: tl.constexpr, BLOCK: tl.constexpr, MAX_SEL: tl.constexpr):
        """Sum the gradients of the block's chunks of padding only into extra_ptr (2, N3), for row 0 to carry: same
        row, same net, so the net's Jacobian is the same and summing first is exact."""
        col, col_ok = _columns(L3[0], L3[1], L3[2])
        extra_g = tl.zeros_like(col).to(gg_ptr.dtype.element_ty)
        extra_dg = tl.zeros_like(extra_g)
        for j0 in range(BLOCK, MAX_SEL, BLOCK):
            if j0 < length:
                rows = j0 + tl.arange(0, BLOCK)
                live = rows < length
                slot = atom * nnei + start + rows
                if _padding_only(nlist_ptr, atom, start, nnei, j0, slot, live, True):
                    at = slot[:, None] * N3 + col[None, :]
                    keep = live[:, None] & col_ok[None, :]
                    extra_g += tl.sum(tl.load(gg_ptr + at, mask=keep, other=0.0), axis=0)
                    extra_dg += tl.sum(tl.load(gdg_ptr + at, mask=keep, other=0.0), axis=0)
        tl.store(extra_ptr + col, extra_g, mask=col_ok)
        tl.store(extra_ptr + N3 + col, extra_dg, mask=col_ok)
        tl.debug_barrier()  # the first chunk's threads read what others wrote

    @triton.jit
    def _embed_bwd_kernel(rr_ptr, nlist_ptr, net_ptr, starts_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr,
                          gg_ptr, gdg_ptr, part_ptr, extra_ptr, order_ptr, nnei, nblocks, natoms, part_stride,
                          N1: tl.constexpr, N2: tl.constexpr, N3: tl.constexpr, L1: tl.constexpr,
                          L2: tl.constexpr, L3: tl.constexpr, SKIP2: tl.constexpr, SKIP3: tl.constexpr,
                          BLOCK: tl.constexpr, MAX_SEL: tl.constexpr, PRECISION: tl.constexpr,
                          SKIP_PADDING: tl.constexpr):
        # Weights are re-read (from cache) in every chunk and weight gradients added to this program's slice of
        # `part` chunk by chunk: nothing large stays live across iterations, which keeps registers from spilling.
        pid, atom, start, length, k = _program_slots(net_ptr, starts_ptr, order_ptr, nblocks, natoms)
        base1 = part_ptr + pid * part_stride
        extra_ptr += pid * 2 * N3
        if SKIP_PADDING:
            _padding_gradients(gg_ptr, gdg_ptr, nlist_ptr, extra_ptr, atom, start, length, nnei, N3, L3, BLOCK,
                               MAX_SEL)
        # Without loop-invariant code motion: what the compiler hoisted stayed live across the chunks and spilled
        # (ptxas, sm_90, water's f16x3 16 x 8: 596 -> 36 B; float64 960 -> 672). Run 253 (H200, train_bench.py,
        # fused, ms a step): water float32 0.810 -> 0.781, float64 1.187 -> 1.177, the same final losses.
        for j0 in tl.range(0, MAX_SEL, BLOCK, disable_licm=True):
            if j0 < length:
                rows = j0 + tl.arange(0, BLOCK)
                live = rows < length
                slot = atom * nnei + start + rows
                # a chunk of padding only is skipped: its gradients went to row 0 (`_padding_gradients`)
                if not _padding_only(nlist_ptr, atom, start, nnei, j0, slot, live, SKIP_PADDING):
                    _bwd_chunk(rr_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, w3_ptr, b3_ptr, gg_ptr, gdg_ptr, base1,
                               j0 > 0, extra_ptr, k, rows, live, slot, N1, N2, N3, L1, L2, L3, SKIP2, SKIP3, PRECISION,
                               SKIP_PADDING)


def _layouts(widths: list[int]) -> list[tuple[int, int, int]]:
    """Register layout (P, H, NH) of each layer's output: P registers in units of H, the first NH of each unit
    real, the rest zero padding. A doubling layer keeps its input's units and doubles P, so DeePMD's skip [x, x]
    is a plain concatenation of registers; a same-width layer keeps the layout; any other starts afresh."""
    layouts: list[tuple[int, int, int]] = []
    for n_in, n_out in pairwise(widths):
        kind = _skip_kind(n_in, n_out) if layouts else 0
        if kind == 2:
            p, h, nh = layouts[-1]
            layouts.append((2 * p, h, nh))
        elif kind == 1:
            layouts.append(layouts[-1])
        else:
            p = max(16, triton.next_power_of_2(n_out))
            layouts.append((p, p, n_out))
    return layouts


def net_meta(params: list[Tensor], sel: list[int], precision: str) -> dict:
    """The nets' compile-time constants (widths, register layouts, skips, largest block, GEMM precision), shared by
    every embedding-net kernel; each kernel family adds its own tile."""
    n1, n2, n3 = params[0].shape[-1], params[2].shape[-1], params[4].shape[-1]
    l1, l2, l3 = _layouts([1, n1, n2, n3])
    return dict(N1=n1, N2=n2, N3=n3, L1=l1, L2=l2, L3=l3, SKIP2=_skip_kind(n1, n2), SKIP3=_skip_kind(n2, n3),
                MAX_SEL=max(sel), PRECISION=precision)


def _launch_meta(params: list[Tensor], sel: list[int], precision: str) -> dict:
    return dict(net_meta(params, sel, precision), BLOCK=BLOCK_J, num_warps=NUM_WARPS)


class _EmbedJet(torch.autograd.Function):
    """(rr, nlist or None, per-program net index, block starts, sel, precision, W1, b1, W2, b2, W3, b3) ->
    (G, dG/ds) per slot. With nlist, chunks of padding only take slot 0's values (see `_padding_only`)."""

    @staticmethod
    def forward(ctx, rr, nlist, net_index, starts, order, sel, precision, *params):
        nf, nloc, nnei, _ = rr.shape
        meta = dict(_launch_meta(params, sel, precision), SKIP_PADDING=nlist is not None)
        nlist = rr if nlist is None else nlist  # any pointer: not read without SKIP_PADDING
        g = rr.new_empty(nf, nloc, nnei, meta["N3"])
        dg = torch.empty_like(g)
        nblocks = starts.numel() - 1
        _embed_fwd_kernel[(nf * nloc * nblocks,)](rr, nlist, net_index, starts, *params, g, dg, order, nnei,
                                                  nblocks, nf * nloc, **meta)
        ctx.save_for_backward(rr, nlist, net_index, starts, order, *params)
        ctx.meta, ctx.every_block_runs = meta, min(sel) > 0
        return g, dg

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g_bar, dg_bar):
        rr, nlist, net_index, starts, order, *params = ctx.saved_tensors
        nnei = rr.shape[2]
        nprog = net_index.numel()
        sizes = [p[0].numel() for p in params]  # per-net sizes of W1, b1, W2, b2, W3, b3
        part = _partial_sums(rr, nprog, sum(sizes), zeroed=not ctx.every_block_runs)
        extra = rr.new_empty(nprog if ctx.meta["SKIP_PADDING"] else 0, 2, ctx.meta["N3"])  # padding's gradients
        _embed_bwd_kernel[(nprog,)](rr, nlist, net_index, starts, *params, g_bar.contiguous(), dg_bar.contiguous(),
                                    part, extra, order, nnei, starts.numel() - 1, nprog // (starts.numel() - 1),
                                    part.shape[1], **ctx.meta)
        nnets = params[0].shape[0]
        owner = (net_index.reshape(1, -1) == torch.arange(nnets, device=rr.device)[:, None]).to(part.dtype)
        total = owner @ part  # (nnets, sum(sizes)): each net's partial sums, reduced by one GEMM
        grads = [chunk.reshape(p.shape) for chunk, p in zip(total.split(sizes, dim=1), params, strict=True)]
        return None, None, None, None, None, None, None, *grads


def _partial_sums(rr: Tensor, nprog: int, width: int, zeroed: bool) -> Tensor:
    """Each backward program's slice of weight-gradient partial sums. Its first chunk (never skipped) stores the
    slice whole, so it needs zeroing only where a block has no slots (its program runs no chunk)."""
    return (rr.new_zeros if zeroed else rr.new_empty)(nprog, width)


@functools.cache
def _block_tables(sel: tuple[int, ...], device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """Block starts, indices, and indices by size (largest first), made once per device: a host-to-device copy
    cannot happen inside graph capture."""
    starts = torch.tensor([0, *accumulate(sel)], dtype=torch.int32, device=device)
    by_size = sorted(range(len(sel)), key=lambda b: -sel[b])
    return (starts, torch.arange(len(sel), dtype=torch.int32, device=device),
            torch.tensor(by_size, dtype=torch.int32, device=device))


def embed_all(d, rr: Tensor, center_type: Tensor, layout: SlotLayout | None = None, nlist: Tensor | None = None,
              precision: str = "tf32x3") -> tuple[Tensor, Tensor]:
    """Same contract as `deeppot.model.analytic.embed_all`: G and dG/ds (nf, nloc, nnei, M1) for every slot.

    rr (nf, nloc, nnei, 4) normalised environment matrix (only column 0, s, is read). nlist (nf, nloc, nnei), -1 for
    padding, with a trimmed list's layout: each block's chunks of padding only are not recomputed but take the
    values of its padded stand-in in slot 0 (exact: the layout's padding rows are equal). precision, for float32:
    "tf32x3" (default) splits each GEMM input into two TF32 parts on the tensor cores, accurate to float32's
    level; "f16x3" into two float16 parts, as accurate where the nets' values fit float16's range
    (`precision.embedding_products`; the backward scales the incoming gradients); "tf32" is the mixed-precision
    opt-in (one TF32 pass, float32 accumulation); "ieee" uses FMA units and spills registers at DeePMD widths
    (slow; kept for checks). float64 always runs "ieee".
    """
    if rr.requires_grad:
        raise ValueError("the fused embedding kernels give no gradient with respect to positions; "
                         "use deeppot.model.analytic.embed_all where rr requires grad")
    sel = list_sel(d.sel, layout)
    starts, blocks, order = _block_tables(tuple(sel), rr.device)
    if d.type_one_side:
        net_index = blocks.expand(center_type.numel(), -1)
    else:
        net_index = center_type.reshape(-1, 1).to(torch.int32) + blocks * d.ntypes
    params = [t for layer in d.nets.layers for t in (layer.matrix, layer.bias)]
    if rr.dtype == torch.float64:
        precision = "ieee"
    skip = None if layout is None or nlist is None else nlist.contiguous()
    return _EmbedJet.apply(rr.contiguous(), skip, net_index.contiguous(), starts, order, sel, precision, *params)
