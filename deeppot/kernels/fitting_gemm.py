"""The fitting nets' float32 products with their elementwise work as the GEMM's epilogue, for inference on many
atoms: the fast twin of one layer of `deeppot.kernels.fitting._forward` (a cuBLAS product, then `_layer_kernel`
or `_grad_kernel`).

For 10^5 atoms the fitting products are the largest cost of an evaluation after the embedding (or table) kernels
(4.4 ms of a 15 ms compressed water call, run 128): cuBLAS's float32 kernels run on the FMA units at ~45 TFLOP/s.
Here each product runs on the tensor cores in one of `deeppot.kernels.precision`'s float32-accurate schemes (three
float16 products, "f16x3", where the model allows: W's parts made once (`precision.weight_parts`), x's split in the
kernel, the two products with a low part summed apart from the main one; else three TF32 products, "tf32x3"), and the
tile it computes is finished in registers (float32 only: as float64 GEMMs on the float64 tensor cores they were
slower than cuBLAS's on the 1600-wide products, run 131). A row block's column tiles are neighbours in the launch
order, so x's rows are read from DRAM once (run 173, H200, f16x3 at 65,536 rows, with the parts: the 1600-wide layer
0.424 -> 0.354 ms, dE/dD 0.591 -> 0.497):
- `layer_forward`: a = tanh(h W + b), h' = S(h) + idt a (DeePMD's skip S and timestep idt);
- `layer_grad`: g' = gz_above W_above^T + S^T(g_above), gz = g' idt (1 - a^2);
- `product_t`: g_0 = gz W^T (dE/dD, no epilogue);
- `grad_bar` (the training backward's input pass): dgz = dg W, then dg' = S(dg) + dgz idt (1 - a^2);
- `layer_grads` (`_weight_grad_kernel`, the training backward): a layer's dL/dW = dg^T gz + h^T dz, the two passes'
  shares in one accumulator, with dL/db and dL/didt, the sums of [dz, t] over rows.
On W's parts (inference's "f16x3") the products run as `_persistent_kernel`: a few programs a multiprocessor walk
the tiles, reading x and the parts by TMA (`PERSISTENT`, run 252: the water call's fitting kernels 2.05 -> 1.88 ms).
Operands carry a leading nets dimension (stride 0 where one x serves every net). `value_and_input_grad`, the
inference entry, runs `deeppot.kernels.fitting`'s forward with these products where `worth_it` says
(`FusedProducts`), else with its cuBLAS ones. The training step's `fitting.FittingJet` takes them for its forward on
small tiles (`TrainingProducts`; run 247, H200: water float32 0.848 -> 0.810 ms a step, copper 0.522 -> 0.512),
and for its backward as tf32x3 on the same tiles (`BackwardProducts`: 12 of the step's 23 cuBLAS launches and 4
reductions become 9 Triton launches, and the input pass's 3 elementwise kernels join its products; run 254, H200:
water float32 0.768 -> 0.719 ms a step, copper 0.469 -> 0.463).
Tests: tests/kernels/test_fitting.py (GPU, or Triton's interpreter on a CPU) against the reference
`analytic.fit_with_input_grad` and, for the training products, against autograd through it.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from deeppot.kernels import fitting
from deeppot.kernels.embedding import triton, triton_available
from deeppot.kernels.precision import has_tma, hopper_or_newer, multiprocessors, weight_parts
from deeppot.model import analytic

NONE_EPILOGUE, LAYER, GRAD, GRAD_BAR = 0, 1, 2, 3
# Tile (rows, columns, k a step) and launch of each epilogue, the fastest of runs 129-130's sweeps on an H100
# (water's products at 32,768 and 65,536 rows). MIN_ROWS: from this many rows the fused products serve. Run 129
# (tf32x3) put it at 8,192 from the first layer alone (cuBLAS 0.065 against 0.107 ms at 2,048 rows); run 223 timed
# water's whole nets with f16x3 replayed from a graph, fused against cuBLAS, us: 2,048 rows 138 / 180, 4,096 165 /
# 284, 8,192 218 / 500 (H100).
TILES = {LAYER: dict(BM=128, BN=64, BK=32, num_warps=4, num_stages=4),
         GRAD: dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3),
         NONE_EPILOGUE: dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3)}
TILES[GRAD_BAR] = TILES[NONE_EPILOGUE]
# The same with "f16x3" products: one tile for all three (run 146, with the epilogues, two nets at 65,536 rows: the
# 1600-wide layer 0.92 ms against 1.30 on the tf32x3 layer tile, dE/dD 1.21, the 240-wide grad 0.30; the 240-wide
# layer 0.30 against 0.27 on (64, 128, 32))
F16X3_TILES = {k: dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3) for k in (LAYER, GRAD, NONE_EPILOGUE,
                                                                                 GRAD_BAR)}
MIN_ROWS = 2048
# The inference products on W's parts ("f16x3", not training) as `_persistent_kernel`: PERSISTENT["waves"] programs a
# multiprocessor walk the tiles, x and W's parts read by TMA, pipelined by Triton across a program's tiles (the
# loops flattened), so that one tile's epilogue overlaps the next one's loads; None: `_gemm_kernel`. Run 252 (H200):
# water's products at 65,536 rows without epilogue, ms, `_gemm_kernel` / this: the 1600-wide layer 0.349 / 0.329,
# dE/dD 0.491 / 0.391, a 240-wide layer 0.091 / 0.070; trained models' calls at ~10^5 atoms, list prebuilt, all the
# fitting kernels a call: water 2.05 / 1.88 ms, copper 2.19 / 2.00, the alloy 2.29 / 2.16, outputs equal to the bit.
# One wave, the loops not flattened, took 1.78 ms for water but gave wrong forces (NaN): not used.
PERSISTENT = {"waves": 2}
PERSISTENT_TILE = dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
# A training batch's products (`TrainingProducts`, a few hundred rows) on small tiles, the fastest of run 246's
# (H200, water's products at 128 rows a net, us, against cuBLAS's float32 kernels): the 1600-wide layer 14.5 against
# 15.4 split along k, a 240-wide layer 3.8 against 6.9, dE/dD 5.5 against 11.0.
SMALL_TILE = dict(BM=64, BN=32, BK=64, num_warps=4, num_stages=3)
# A training product's long k split into parts (`_splits`) from min_steps k steps, for `fill` programs a
# multiprocessor (run 256, H100, ms a step, fill 1.0 / 2.0 / 3.0: water float32 0.640 / 0.630 / 0.633, the alloy
# 0.566 / 0.563 / 0.567, copper 0.387 / 0.388 / 0.397); interpreter_sms stands in for the multiprocessors on a CPU,
# so that the tests split too.
SPLIT_K = dict(min_steps=8, fill=2.0, interpreter_sms=9)

if triton is not None:
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    from deeppot.kernels.activation import _PTX, _tanh
    from deeppot.kernels.embedding import _f16_parts
    from deeppot.kernels.fitting import _add_skip, _timestep

    @triton.jit
    def _gemm_kernel(x_ptr, w_ptr, wl_ptr, y_ptr, out_ptr, b_ptr, idt_ptr, src_ptr, a_ptr, part_ptr, count_ptr,
                     rows, m, x_net, x_row, w_net, w_k, w_m, s_net, s_row, n_src, K: tl.constexpr,
                     EPILOGUE: tl.constexpr, SKIP: tl.constexpr, HAS_IDT: tl.constexpr, WRITE_OUT: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PRECISION: tl.constexpr,
                     W_PARTS: tl.constexpr, SPLIT: tl.constexpr, KS: tl.constexpr):
        """y = x W (nets, rows, m) for one (BM, BN) tile, x (nets or 1, rows, K) and W at strides (w_k, w_m):
        W^T is W with its strides swapped. "f16x3": x is split here, and W too unless W_PARTS (then w and wl are
        W's float16 parts, `weight_parts`). Then the epilogue (module docstring); y and out are contiguous.
        SPLIT > 1: program (tile, net, s) sums k in [s KS, (s + 1) KS) and the tile's last to finish adds the
        parts and runs the epilogue (`_split_sum`)."""
        net = tl.program_id(1).to(tl.int64)
        tile = tl.program_id(0)  # a row block's column tiles side by side: x's rows come from DRAM once, then L2
        k_first = tl.program_id(2) * KS
        row = (tile // tl.cdiv(m, BN)).to(tl.int64) * BM + tl.arange(0, BM)[:, None]
        col = (tile % tl.cdiv(m, BN)) * BN + tl.arange(0, BN)[None, :]
        kk = tl.arange(0, BK)
        xs = x_ptr + net * x_net + row * x_row + k_first + kk[None, :]
        ws = net * w_net + (k_first + kk[:, None]) * w_k + col * w_m
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        lo = tl.zeros((BM, BN), dtype=tl.float32)  # f16x3: the products with a low part, in units of 2^-11
        for k0 in range(0, KS, BK):
            xt = tl.load(xs, mask=(row < rows) & (kk[None, :] < K - k_first - k0), other=0.0)
            w_ok = (kk[:, None] < K - k_first - k0) & (col < m)
            if PRECISION == "f16x3":
                x_hi, x_lo = _f16_parts(xt)
                if W_PARTS:
                    w_hi = tl.load(w_ptr + ws, mask=w_ok, other=0.0)
                    w_lo = tl.load(wl_ptr + ws, mask=w_ok, other=0.0)
                else:
                    w_hi, w_lo = _f16_parts(tl.load(w_ptr + ws, mask=w_ok, other=0.0))
                acc, lo = _parts_step(x_hi, x_lo, w_hi, w_lo, acc, lo)
            else:
                acc = tl.dot(xt, tl.load(w_ptr + ws, mask=w_ok, other=0.0), acc, input_precision=PRECISION)
            xs += BK
            ws += BK * w_k
        if PRECISION == "f16x3":
            acc += lo * (1.0 / 2048.0)
        if SPLIT == 1:
            _epilogue(acc, row, col, net, rows, m, y_ptr, out_ptr, b_ptr, idt_ptr, src_ptr, a_ptr, s_net, s_row,
                      n_src, EPILOGUE, SKIP, HAS_IDT, WRITE_OUT)
        else:
            total, last = _split_sum(acc, part_ptr, count_ptr, net * tl.num_programs(0) + tile, SPLIT)
            if last:
                _epilogue(total, row, col, net, rows, m, y_ptr, out_ptr, b_ptr, idt_ptr, src_ptr, a_ptr, s_net,
                          s_row, n_src, EPILOGUE, SKIP, HAS_IDT, WRITE_OUT)

    @triton.jit
    def _split_sum(acc, part_ptr, count_ptr, tile, SPLIT: tl.constexpr):
        """(the tile's sum over its SPLIT parts, whether this program finishes it). Each part is stored at
        part_ptr's (s, tile) block; the tile's counter (count_ptr, zero between launches) counts the parts stored,
        and the program that stores the last one sums them all in the order of s (the same sum whichever finishes
        last) and sets the counter back to zero."""
        BM: tl.constexpr = acc.shape[0]
        BN: tl.constexpr = acc.shape[1]
        at = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
        tiles = tl.num_programs(0) * tl.num_programs(1)
        tl.store(part_ptr + (tl.program_id(2) * tiles + tile) * (BM * BN) + at, acc)
        tl.debug_barrier()  # every thread's part stored before the counter's release
        last = tl.atomic_add(count_ptr + tile, 1, sem="acq_rel") == SPLIT - 1
        total = tl.zeros((BM, BN), dtype=tl.float32)
        if last:
            for s in tl.static_range(SPLIT):
                total += tl.load(part_ptr + (s * tiles + tile) * (BM * BN) + at, cache_modifier=".cg")
            tl.atomic_xchg(count_ptr + tile, 0)
        return total, last

    @triton.jit
    def _weight_grad_kernel(a1_ptr, b1_ptr, a2_ptr, b2_ptr, y_ptr, zt_ptr, sums_ptr, n, m, a1_net, a1_row, b1_net,
                            b1_row, a2_net, a2_row, b2_net, b2_row, ROWS: tl.constexpr, SUMS: tl.constexpr,
                            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PRECISION: tl.constexpr):
        """y = a1^T b1 + a2^T b2 (nets, n, m) for one (BM, BN) tile, a (nets or 1, ROWS, n) and b (nets, ROWS, m)
        at the given net and row strides, columns contiguous: the sum over ROWS rows (a batch's atoms; a constant,
        as the interpreter takes no loop bound known only at run time) in one accumulator, both products in one
        launch. The first row block's programs also sum zt (SUMS, nets, ROWS, m) over its rows into sums (SUMS,
        nets, m). y, zt and sums are contiguous."""
        net = tl.program_id(1).to(tl.int64)
        tile = tl.program_id(0)
        row = (tile // tl.cdiv(m, BN)) * BM + tl.arange(0, BM)[:, None]  # y's rows: a's columns
        col = (tile % tl.cdiv(m, BN)) * BN + tl.arange(0, BN)[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        acc = _transposed_product(a1_ptr + net * a1_net, a1_row, b1_ptr + net * b1_net, b1_row, row, col, ROWS, n,
                                  m, acc, BK, PRECISION)
        acc = _transposed_product(a2_ptr + net * a2_net, a2_row, b2_ptr + net * b2_net, b2_row, row, col, ROWS, n,
                                  m, acc, BK, PRECISION)
        tl.store(y_ptr + net * n * m + row * m + col, acc, mask=(row < n) & (col < m))
        if tile < tl.cdiv(m, BN):
            nets = tl.num_programs(1)
            for q in tl.static_range(SUMS):
                total = _row_sums(zt_ptr + (q * nets + net) * ROWS * m, col, m, ROWS, BK)
                tl.store(sums_ptr + (q * nets + net) * m + col, total, mask=col < m)

    @triton.jit
    def _row_sums(z_ptr, col, m, ROWS: tl.constexpr, BK: tl.constexpr):
        """(1, BN) sums over ROWS rows of z (ROWS, m) at columns col."""
        kk = tl.arange(0, BK)[:, None]
        total = tl.zeros(col.shape, dtype=tl.float32)
        for r0 in range(0, ROWS, BK):
            z = tl.load(z_ptr + (r0 + kk) * m + col, mask=(kk < ROWS - r0) & (col < m), other=0.0)
            total += tl.sum(z, axis=0, keep_dims=True)
        return total

    @triton.jit
    def _transposed_product(a_ptr, a_row, b_ptr, b_row, row, col, ROWS: tl.constexpr, n, m, acc, BK: tl.constexpr,
                            PRECISION: tl.constexpr):
        """acc + a^T b over ROWS rows, for y's rows `row` (a's columns) and columns `col` (b's)."""
        kk = tl.arange(0, BK)
        for r0 in range(0, ROWS, BK):
            at = tl.load(a_ptr + (r0 + kk)[None, :] * a_row + row, mask=(row < n) & (kk[None, :] < ROWS - r0),
                         other=0.0)
            bt = tl.load(b_ptr + (r0 + kk)[:, None] * b_row + col, mask=(kk[:, None] < ROWS - r0) & (col < m),
                         other=0.0)
            acc = tl.dot(at, bt, acc, input_precision=PRECISION)
        return acc

    @triton.jit
    def _parts_step(x_hi, x_lo, w_hi, w_lo, acc, lo):
        """One k step of f16x3 in two running sums: acc the products of high parts, lo those with a low part (in
        units of 2^-11), added once after the last step; no per-step adds."""
        return tl.dot(x_hi, w_hi, acc), tl.dot(x_lo, w_hi, tl.dot(x_hi, w_lo, lo))

    @triton.jit
    def _epilogue(acc, row, col, net, rows, m, y_ptr, out_ptr, b_ptr, idt_ptr, src_ptr, a_ptr, s_net, s_row, n_src,
                  EPILOGUE: tl.constexpr, SKIP: tl.constexpr, HAS_IDT: tl.constexpr, WRITE_OUT: tl.constexpr):
        """A (BM, BN) tile of y = x W at (row, col) of net `net` finished and stored (module docstring); y and out
        are contiguous."""
        ok = (row < rows) & (col < m)
        at = net * rows * m + row * m + col
        if EPILOGUE == 1:  # forward: a = tanh(u + b), h' = S(h) + idt a
            a = _tanh(acc + tl.load(b_ptr + net * m + col, mask=col < m, other=0.0))
            tl.store(y_ptr + at, a, mask=ok)
            if WRITE_OUT:
                out = _add_skip(a * _timestep(idt_ptr, net, col, ok, m, HAS_IDT), src_ptr, net, row, col, ok,
                                s_net, s_row, n_src, SKIP)
                tl.store(out_ptr + at, out, mask=ok)
        elif EPILOGUE == 2:  # input gradient: g' = u + S^T(src), gz = g' idt (1 - a^2)
            g = _add_skip(acc, src_ptr, net, row, col, ok, s_net, s_row, n_src, SKIP)
            tl.store(y_ptr + at, g, mask=ok)
            a = tl.load(a_ptr + at, mask=ok, other=0.0)
            tl.store(out_ptr + at, g * _timestep(idt_ptr, net, col, ok, m, HAS_IDT) * (1.0 - a * a), mask=ok)
        else:  # no epilogue, or the backward's dgz = u then dg' = S(src) + dgz idt (1 - a^2)
            tl.store(y_ptr + at, acc, mask=ok)
            if EPILOGUE == 3:
                a = tl.load(a_ptr + at, mask=ok, other=0.0)
                dg = _add_skip(acc * _timestep(idt_ptr, net, col, ok, m, HAS_IDT) * (1.0 - a * a), src_ptr, net,
                               row, col, ok, s_net, s_row, n_src, SKIP)
                tl.store(out_ptr + at, dg, mask=ok)

    @triton.jit
    def _parts_tile(x_desc, wh_desc, wl_desc, x_row0, w_row0, c0, K: tl.constexpr, BK: tl.constexpr):
        """One (BM, BN) tile of x W in f16x3 from TMA blocks: x's rows from x_row0 (split here), W's parts' rows
        from w_row0 (its net's first), columns from c0. Past K, x's blocks read zeros (past its last column), so W's
        rows there (the next net's, or zeros) add nothing."""
        BM: tl.constexpr = x_desc.block_shape[0]
        BN: tl.constexpr = wh_desc.block_shape[1]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        lo = tl.zeros((BM, BN), dtype=tl.float32)  # the products with a low part, in units of 2^-11
        for k0 in range(0, K, BK):
            x_hi, x_lo = _f16_parts(x_desc.load([x_row0, k0]))
            w_hi = wh_desc.load([w_row0 + k0, c0])
            w_lo = wl_desc.load([w_row0 + k0, c0])
            acc, lo = _parts_step(x_hi, x_lo, w_hi, w_lo, acc, lo)
        return acc + lo * (1.0 / 2048.0)

    @triton.jit
    def _persistent_kernel(x_desc, wh_desc, wl_desc, y_ptr, out_ptr, b_ptr, idt_ptr, src_ptr, a_ptr, rows, m,
                           x_net_rows, s_net, s_row, n_src, programs, K: tl.constexpr, EPILOGUE: tl.constexpr,
                           SKIP: tl.constexpr, HAS_IDT: tl.constexpr, WRITE_OUT: tl.constexpr):
        """`_gemm_kernel`'s f16x3 product on W's parts, each of a net's `programs` walking its tiles (a row block's
        column tiles side by side) with x and W read by TMA (`PERSISTENT`); the same epilogue. The interpreter takes
        no loop bound known only at run time: there each program does one tile (programs = the tiles)."""
        net = tl.program_id(1)  # TMA offsets are 32-bit; the epilogue's, 64-bit
        cols = tl.cdiv(m, wh_desc.block_shape[1])
        if _PTX:
            tiles = tl.cdiv(rows, x_desc.block_shape[0]) * cols
            for tile in tl.range(tl.program_id(0), tiles, programs, flatten=True):
                _persistent_tile(tile, cols, net, x_desc, wh_desc, wl_desc, y_ptr, out_ptr, b_ptr, idt_ptr, src_ptr,
                                 a_ptr, rows, m, x_net_rows, s_net, s_row, n_src, K, EPILOGUE, SKIP, HAS_IDT,
                                 WRITE_OUT)
        else:
            _persistent_tile(tl.program_id(0), cols, net, x_desc, wh_desc, wl_desc, y_ptr, out_ptr, b_ptr, idt_ptr,
                             src_ptr, a_ptr, rows, m, x_net_rows, s_net, s_row, n_src, K, EPILOGUE, SKIP, HAS_IDT,
                             WRITE_OUT)

    @triton.jit
    def _persistent_tile(tile, cols, net, x_desc, wh_desc, wl_desc, y_ptr, out_ptr, b_ptr, idt_ptr, src_ptr, a_ptr,
                         rows, m, x_net_rows, s_net, s_row, n_src, K: tl.constexpr, EPILOGUE: tl.constexpr,
                         SKIP: tl.constexpr, HAS_IDT: tl.constexpr, WRITE_OUT: tl.constexpr):
        BM: tl.constexpr = x_desc.block_shape[0]
        BN: tl.constexpr = wh_desc.block_shape[1]
        r0, c0 = (tile // cols) * BM, (tile % cols) * BN
        acc = _parts_tile(x_desc, wh_desc, wl_desc, net * x_net_rows + r0, net * K, c0, K, x_desc.block_shape[1])
        row = (r0 + tl.arange(0, BM)).to(tl.int64)[:, None]
        _epilogue(acc, row, c0 + tl.arange(0, BN)[None, :], net.to(tl.int64), rows, m, y_ptr, out_ptr, b_ptr, idt_ptr,
                  src_ptr, a_ptr, s_net, s_row, n_src, EPILOGUE, SKIP, HAS_IDT, WRITE_OUT)

def worth_it(x: Tensor) -> bool:
    """Whether the fused products serve x (nets or 1, rows, k): float32 on a Hopper-class GPU with Triton (where the
    tiles were measured; they take up to ~200 KB of shared memory, more than older GPUs give a program), many rows,
    and TF32 not allowed. With it allowed (the `tf32` opt-in, `Evaluator.gemm_precision`), cuBLAS's one-pass TF32
    products are what was asked for and measured (run 98), not these float32-level three passes."""
    return (triton is not None and x.is_cuda and x.dtype == torch.float32 and x.shape[1] >= MIN_ROWS
            and not torch.backends.cuda.matmul.allow_tf32 and hopper_or_newer(x.device.index))


def _net_stride(t: Tensor) -> int:
    return t.stride(0) if t.shape[0] > 1 else 0


def _launch(x: Tensor, w: Tensor, transposed: bool, epilogue: int, y: Tensor, out: Tensor, precision: str,
            b=None, idt=None, src=None, a=None, skip: int = 0, training: bool = False) -> None:
    """training: a training batch's product (`TrainingProducts`): small tiles, and with "f16x3" W split in the
    kernel (its parts would be made anew every step) instead of read as parts made beforehand."""
    nets, rows, m = y.shape
    parts = precision == "f16x3" and not training
    if parts:  # W's parts, laid out as this product reads them
        w, w_lo = weight_parts(w, transposed)  # runs 172-173
        transposed = False
    else:
        w_lo = w
    w_k, w_m = (w.stride(2), w.stride(1)) if transposed else (w.stride(1), w.stride(2))
    assert x.stride(2) == 1 and x.shape[-1] == (w.shape[2] if transposed else w.shape[1])
    s = src if src is not None else y
    tail = dict(EPILOGUE=epilogue, SKIP=skip, HAS_IDT=idt is not None, WRITE_OUT=out is not y)
    given = (y, out, y if b is None else b, y if idt is None else idt, s, y if a is None else a)
    source = (_net_stride(s), s.stride(1) if s.shape[1] > 1 else 0, s.shape[-1])
    if parts and _by_tma(x, w):
        _launch_persistent(x, w, w_lo, given, source, tail)
        return
    tile = SMALL_TILE if training else (F16X3_TILES if precision == "f16x3" else TILES)[epilogue]
    k = x.shape[-1]
    tiles = triton.cdiv(m, tile["BN"]) * triton.cdiv(rows, tile["BM"])
    split, steps = _splits(tiles * nets, k, tile, x.device, SPLIT_K["min_steps"] if training else None)
    _gemm_kernel[(tiles, nets, split)](x, w, w_lo, *given, *_split_buffers(y, split, tiles * nets, tile), rows, m,
                                       _net_stride(x), x.stride(1), _net_stride(w), w_k, w_m, *source, K=k,
                                       PRECISION=precision, W_PARTS=parts, SPLIT=split, KS=steps * tile["BK"],
                                       **tail, **tile)


def _splits(programs: int, k: int, tile: dict, device: torch.device, min_steps: int | None) -> tuple[int, int]:
    """(parts, k steps a part) of a product whose sum over k is split (`_split_sum`): a training batch's few
    hundred rows make few tiles, each walking k alone (water's 1600-wide first layer and dgz = dg W of the
    backward: 48 programs of 25 k steps on 132 multiprocessors). From min_steps k steps (None: never), enough parts
    for SPLIT_K["fill"] programs a multiprocessor."""
    steps = triton.cdiv(k, tile["BK"])
    if min_steps is None or steps < min_steps:
        return 1, steps
    sms = multiprocessors(device) if device.type == "cuda" else SPLIT_K["interpreter_sms"]
    per_part = triton.cdiv(steps, max(1, min(steps, int(SPLIT_K["fill"] * sms) // programs)))
    return triton.cdiv(steps, per_part), per_part  # no part left without a k step


def _split_buffers(y: Tensor, split: int, tiles: int, tile: dict) -> tuple[Tensor, Tensor]:
    """The parts and counters of `_split_sum` (any pointer when not split)."""
    if split == 1:
        return y, y
    return y.new_empty(split * tiles * tile["BM"] * tile["BN"]), _counters(y.device, tiles)


@functools.cache
def _counters_of(device: torch.device, size: int) -> Tensor:
    return torch.zeros(size, dtype=torch.int32, device=device)


def _counters(device: torch.device, tiles: int) -> Tensor:
    """A zeroed counter a tile for `_split_sum` (which leaves them zero), kept per device and size."""
    return _counters_of(device, max(1024, 1 << (tiles - 1).bit_length()))


def _by_tma(x: Tensor, w: Tensor) -> bool:
    """Whether `PERSISTENT` serves a product on W's parts w (nets, k, m): on a Hopper-class GPU (or Triton's
    interpreter), with x's rows (of every net, one after the other, or one x for all) and the parts' rows in TMA's
    16-byte multiples."""
    m = w.shape[2]
    x_rows_stacked = x.shape[0] == 1 or x.stride(0) == x.shape[1] * x.stride(1)
    return (PERSISTENT is not None and has_tma(x.device) and x_rows_stacked
            and x.stride(1) % 4 == 0 and x.data_ptr() % 16 == 0 and m % 8 == 0 and w.is_contiguous())


def _launch_persistent(x: Tensor, w_hi: Tensor, w_lo: Tensor, given: tuple, source: tuple, tail: dict) -> None:
    """`_persistent_kernel` over 2-D TMA views: x's rows (rows a net, or one x for all nets) and W's parts' rows
    (k a net)."""
    nets, rows, m = given[0].shape
    k = x.shape[-1]
    tile = PERSISTENT_TILE
    x2 = torch.as_strided(x, (x.shape[0] * rows, k), (x.stride(1), 1))
    blocks = ([tile["BM"], tile["BK"]], [tile["BK"], tile["BN"]])
    descs = (TensorDescriptor.from_tensor(x2, blocks[0]),
             *(TensorDescriptor.from_tensor(p.reshape(-1, m), blocks[1]) for p in (w_hi, w_lo)))
    tiles = triton.cdiv(rows, tile["BM"]) * triton.cdiv(m, tile["BN"])
    programs = min(tiles, PERSISTENT["waves"] * multiprocessors(x.device)) if x.is_cuda else tiles
    _persistent_kernel[(programs, nets)](*descs, *given, rows, m, rows if x.shape[0] > 1 else 0, *source, programs,
                                         K=k, **tail,
                                         num_warps=tile["num_warps"], num_stages=tile["num_stages"])


def _out_shape(x: Tensor, w: Tensor, m: int) -> tuple[int, int, int]:
    return max(x.shape[0], w.shape[0]), x.shape[1], m


def layer_forward(h: Tensor, w: Tensor, b: Tensor, idt: Tensor | None, skip: int, precision: str = "tf32x3",
                  training: bool = False) -> tuple[Tensor, Tensor]:
    """(a, h') of a hidden layer: `fitting._layer` over `h @ w` (h' is a itself without skip or timestep)."""
    a = h.new_empty(_out_shape(h, w, w.shape[2]))
    out = torch.empty_like(a) if skip != 0 or idt is not None else a
    _launch(h, w, False, LAYER, a, out, precision, b=b, idt=idt, src=h, skip=skip, training=training)
    return a, out


def layer_grad(gz: Tensor, w: Tensor, src: Tensor, skip: int, a: Tensor, idt: Tensor | None,
               precision: str = "tf32x3", training: bool = False) -> tuple[Tensor, Tensor]:
    """(g', gz') of the layer below: `fitting._grad` over gz W^T (W the layer above's, src its g')."""
    g = torch.empty_like(a)
    gz_new = torch.empty_like(a)
    _launch(gz, w, True, GRAD, g, gz_new, precision, idt=idt, src=src, a=a, skip=skip, training=training)
    return g, gz_new


def grad_bar(dg: Tensor, w: Tensor, skip: int, a: Tensor, idt: Tensor | None, precision: str = "tf32x3",
             training: bool = False) -> tuple[Tensor, Tensor]:
    """`fitting.Products.grad_bar` in one launch: (dgz, dg') of a layer."""
    dgz = torch.empty_like(a)
    out = torch.empty_like(a)
    _launch(dg, w, False, GRAD_BAR, dgz, out, precision, idt=idt, src=dg, a=a, skip=skip, training=training)
    return dgz, out


def product_t(gz: Tensor, w: Tensor, precision: str = "tf32x3", training: bool = False) -> Tensor:
    """gz W^T (nets, rows, n): the first layer's input gradient."""
    y = gz.new_empty(_out_shape(gz, w, w.shape[1]))
    _launch(gz, w, True, NONE_EPILOGUE, y, y, precision, training=training)
    return y


def layer_grads(dg: Tensor, gz: Tensor, h: Tensor, zt: Tensor, precision: str = "tf32x3") -> tuple[Tensor, Tensor]:
    """`fitting.Products.layer_grads` as one `_weight_grad_kernel` on the training small tile: dg (nets, rows, n),
    h (nets or 1, rows, n), gz (nets, rows, m), zt (2 or 1, nets, rows, m) = [dz, t]; columns contiguous."""
    zt = zt.contiguous()
    dg, gz, h = (t if t.stride(2) == 1 else t.contiguous() for t in (dg, gz, h))
    dz = zt[0]
    nets, rows, m = dz.shape
    n = dg.shape[-1]
    y = dz.new_empty(nets, n, m)
    sums = dz.new_empty(zt.shape[0], nets, 1, m)
    tile = SMALL_TILE
    grid = (triton.cdiv(n, tile["BM"]) * triton.cdiv(m, tile["BN"]), nets)
    _weight_grad_kernel[grid](dg, gz, h, dz, y, zt, sums, n, m, _net_stride(dg), dg.stride(1), _net_stride(gz),
                              gz.stride(1), _net_stride(h), h.stride(1), _net_stride(dz), dz.stride(1), ROWS=rows,
                              SUMS=zt.shape[0], PRECISION=precision, **tile)
    return y, sums


class FusedProducts(fitting.Products):
    """`fitting.Products` with each product and its elementwise work as one kernel (the top layer's g' = src needs
    no product and keeps the base class's elementwise kernel); precision of the products: `_mm`'s."""

    training = False

    def __init__(self, precision: str = "tf32x3") -> None:
        super().__init__()
        self.precision = precision

    def layer(self, h, w, b, idt, mode):
        return layer_forward(h, w, b, idt, mode, self.precision, self.training)

    def grad(self, gz, w, src, mode, a, idt):
        if gz is None:
            return super().grad(gz, w, src, mode, a, idt)
        return layer_grad(gz, w, src, mode, a, idt, self.precision, self.training)

    def product_t(self, gz, w):
        return product_t(gz, w, self.precision, self.training)

    def grad_bar(self, dg, w, mode, a, idt):
        return grad_bar(dg, w, mode, a, idt, self.precision, self.training)


class TrainingProducts(FusedProducts):
    """The training step's forward products (value and input gradient, `fitting.FittingJet`) as f16x3 on small
    tiles with their elementwise work: the weights change every step, so each kernel splits them itself. Its
    backward's products run on the same tiles as tf32x3 (`backward_products`): they multiply the loss's gradients,
    which float16's range does not bound.
    For float32 nets on Hopper-class GPUs whose values `precision.float32_products` finds within float16's range
    (`EnergyModel.use_fitting_kernel`)."""

    training = True

    def __init__(self) -> None:
        super().__init__("f16x3")

    def backward_products(self) -> fitting.Products:
        """The backward's products on the same small tiles as three TF32 products, which need no bound on the
        loss's gradients: x W, x W^T and each layer's parameter gradients (`BackwardProducts`)."""
        return BackwardProducts()


class BackwardProducts(FusedProducts):
    """`TrainingProducts`' backward: tf32x3 products on the training small tiles; a layer's dL/dW (its two shares,
    one from each pass of `fitting.FittingJet.backward`), dL/db and dL/didt in one launch."""

    training = True

    def __init__(self) -> None:
        super().__init__("tf32x3")

    def layer_grads(self, dg, gz, h, zt):
        return layer_grads(dg, gz, h, zt, self.precision)


def value_and_input_grad(nets, x: Tensor, k: int | None, precision: str = "tf32x3") -> tuple[Tensor, Tensor]:
    """Inference's `analytic.fit_with_input_grad` (same contract, no autograd): the forward of
    `fitting.FittingJet`, one elementwise kernel a layer each way instead of PyTorch's ~5, or, where `worth_it`,
    the products and that work fused; cuBLAS's products whole (the split gained nothing in graphed inference, run
    119). The reference where the kernels do not apply."""
    if not fitting.supports(nets) or x.dtype != nets.dtype or not triton_available(x.device) or \
            x.dim() != (2 if k is not None else 3):
        return analytic.fit_with_input_grad(nets, x, k)
    x3 = x if k is None else x[None]
    products = FusedProducts(precision) if worth_it(x3) else fitting.Products(split=False)
    hidden, w_out, b_out = fitting._unpack(*fitting._flat_params(nets, k))
    value, g0, _, _ = fitting._forward(x3, hidden, w_out, b_out, products)
    return (value, g0) if k is None else (value[0], g0[0])
