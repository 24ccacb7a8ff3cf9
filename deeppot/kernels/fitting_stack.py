"""A fitting net's hidden stack above its first layer in one kernel, for inference on many atoms.

`fitting_gemm.value_and_input_grad` runs six f16x3 products a net, each a launch that passes the rows' activations
through DRAM: the first layer (n0 -> d), two d-wide hidden layers, their two input gradients and dE/dD (d -> n0),
with cuBLAS's output dot and an elementwise kernel for the top gradient between them. The four d-wide products have
few k steps each and so run far below the tensor cores' rate (run 259). Here the first layer stays `fitting_gemm`'s
product, `_stack_kernel` takes a row block from the first layer's output h1 and tanh a1 to the energy and
gz1 = dE/dh1 (1 - a1^2) idt1 in one launch, and dE/dD = gz1 W1^T is one cuBLAS product of depth 3 d on gz1's
float16 parts, which the kernel writes (`input_grad`; `fitting_gemm.product_t` where gz1 is not provably small):
- layers 2 and 3 (a = tanh(h W + b), h' = h + idt a), the output dot (summed in registers over the block's column
  tiles) and the top gradient gz3 = w_out idt3 (1 - a3^2);
- the gradients g2 = gz3 W3^T + w_out, g1 = gz2 W2^T + g2 and gz1;
- the rows between layers go to a per-program scratch that the same program reads back at once (from L2).

For nets of three tanh layers (n0 -> d, d -> d, d -> d, the last two with DeePMD's same-width skip; d <= 256) and a
linear output, in f16x3 on W's float16 parts as `fitting_gemm`'s products (`applies`). Measured in whole calls on an
H100 (run 261): 0.1-0.2 ms faster a call at ~1e5 atoms than the six products, at the tile below.
Tests: tests/kernels/test_fitting_stack.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import torch
from torch import Tensor

from deeppot.kernels import fitting, fitting_gemm
from deeppot.kernels.embedding import triton
from deeppot.kernels.precision import STACKED_LIMIT, _kept, _split, fitting_bounds, multiprocessors

ENABLED = True  # False: `fitting_gemm`'s six products (the probes' baseline)
# (rows, columns, k a step) tile, warps and stages: the best of ten in whole calls (run 261: 0.81 ms for water's two
# nets where (64, 64, 64) 2 stages took 0.96); 5 stages, not 4: the kernel 0.03-0.05 ms shorter in all six pairs of
# runs 261 and 264 (water 0.77-0.78 against 0.80-0.82, copper 0.85-0.87 against 0.88-0.92); 72 KB of shared memory
STACK_TILE = dict(BM=64, BN=64, BK=32, warps=4, stages=5)
PROGRAMS_PER_SM = 2  # the programs walk the row blocks (the scratch: 80 KB a program at d = 240)
# dE/dD = gz1 W1^T on cuBLAS's float16 GEMM with float32 accumulation and output (`torch.addmm(out_dtype=)`): f16x3's
# three products as one of depth 3 d, [2^11 hi | hi | lo] of gz1 (which `_stack_kernel` writes) times [hi; lo; hi]
# of W1^T, scaled by 2^-11. Alone on an H100 (run 265): 0.35 ms at water's 65,536 H rows against 0.66 for
# `fitting_gemm.product_t` (its launch inside the timing; 0.51 without, run 259), 0.18 against 0.42 at the 32,768 O
# rows. 2^11 hi stays within float16 while |gz1| <= STACKED_LIMIT (`precision.fitting_bounds`); else product_t.
CUBLAS_INPUT_GRAD = True
ADDMM_OUT_DTYPE = hasattr(torch.ops.aten.addmm, "dtype")  # addmm's float32 output of float16 inputs: PyTorch >= 2.8
PARTS_SCALE = 2.0**-11  # the product of the float16 parts, scaled back

if triton is not None:
    import triton.language as tl

    from deeppot.kernels.activation import _tanh
    from deeppot.kernels.embedding import _f16_parts
    from deeppot.kernels.fitting_gemm import _parts_step

    H2, A2, GZ3, G2, GZ2 = (tl.constexpr(i) for i in range(5))  # the scratch's tensors, (BM, DP) each

    @triton.jit
    def _product(x_ptr, x_row, r0, rows, k_end, wh_ptr, wl_ptr, c0, DP: tl.constexpr, W_ROW: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
        """Rows r0.. of x (x_row apart, columns < k_end) times columns c0.. of W's float16 parts (DP rows, W_ROW
        apart, padding zero) in f16x3, as `fitting_gemm._parts_tile`; x read past L1 (the scratch's rows are
        another thread's stores)."""
        rm = r0 + tl.arange(0, BM)[:, None]
        kk = tl.arange(0, BK)
        cn = c0 + tl.arange(0, BN)[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        lo = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in tl.range(0, DP, BK, num_stages=STAGES):
            x = tl.load(x_ptr + rm * x_row + (k0 + kk)[None, :], mask=(rm < rows) & ((k0 + kk)[None, :] < k_end),
                        other=0.0, cache_modifier=".cg")
            x_hi, x_lo = _f16_parts(x)
            at = (k0 + kk)[:, None] * W_ROW + cn
            acc, lo = _parts_step(x_hi, x_lo, tl.load(wh_ptr + at), tl.load(wl_ptr + at), acc, lo)
        return acc + lo * (1.0 / 2048.0)

    @triton.jit
    def _tile(ptr, row_stride, r0, c0, rows, width, BM: tl.constexpr, BN: tl.constexpr):
        """Pointers and mask of the (BM, BN) block at (r0, c0) of a (rows, width) tensor, rows row_stride apart."""
        rm = r0 + tl.arange(0, BM)[:, None]
        cn = c0 + tl.arange(0, BN)[None, :]
        return ptr + rm * row_stride + cn, (rm < rows) & (cn < width)

    @triton.jit
    def _vec(ptr, c0, BN: tl.constexpr):
        """Columns c0.. of a (DP,) vector (padding zero) as a (1, BN) row."""
        return tl.load(ptr + c0 + tl.arange(0, BN))[None, :]

    @triton.jit
    def _forward(s_ptr, h1_ptr, r0, rows, D, w_ptr, b_ptr, idt_ptr, wout_ptr, DP: tl.constexpr, BM: tl.constexpr,
                 BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
        """Layers 2 and 3 of a row block, the scratch's H2, A2 and GZ3 written; returns the block's h3 . w_out."""
        slab = BM * DP
        for c0 in range(0, DP, BN):  # layer 2 from h1 (D wide); a loop, not unrolled: unrolled, it spilled
            u = _product(h1_ptr, D, r0, rows, D, w_ptr, w_ptr + DP * DP, c0, DP, DP, BM, BN, BK, STAGES)
            a = _tanh(u + _vec(b_ptr, c0, BN))
            h_at, h_ok = _tile(h1_ptr, D, r0, c0, rows, D, BM, BN)
            s_at, _ = _tile(s_ptr, DP, 0, c0, BM, DP, BM, BN)
            tl.store(s_at + A2 * slab, a)
            tl.store(s_at + H2 * slab, tl.load(h_at, mask=h_ok, other=0.0) + _vec(idt_ptr + DP, c0, BN) * a)
        tl.debug_barrier()  # the block's h2 whole before layer 3 reads it
        value = tl.zeros((BM,), dtype=tl.float32)
        for c0 in range(0, DP, BN):  # layer 3 from h2, the output dot and the top gradient
            u = _product(s_ptr + H2 * slab, DP, 0, BM, DP, w_ptr + 2 * DP * DP, w_ptr + 3 * DP * DP, c0, DP, DP,
                         BM, BN, BK, STAGES)
            a = _tanh(u + _vec(b_ptr + DP, c0, BN))
            s_at, _ = _tile(s_ptr, DP, 0, c0, BM, DP, BM, BN)
            idt, w_out = _vec(idt_ptr + 2 * DP, c0, BN), _vec(wout_ptr, c0, BN)
            value += tl.sum((tl.load(s_at + H2 * slab, cache_modifier=".cg") + idt * a) * w_out, axis=1)
            tl.store(s_at + GZ3 * slab, w_out * idt * (1.0 - a * a))
        tl.debug_barrier()
        return value

    @triton.jit
    def _backward(s_ptr, a1_ptr, gz1_ptr, r0, rows, D, w_ptr, idt_ptr, wout_ptr, DP: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr, PARTS: tl.constexpr):
        """g2 = gz3 W3^T + w_out and gz2, then g1 = gz2 W2^T + g2 and gz1 = g1 idt1 (1 - a1^2) to gz1_ptr: float32
        (rows, D), or with PARTS float16 (rows, 3 D) as [2^11 hi | hi | lo] (`input_grad`'s operand)."""
        slab = BM * DP
        for c0 in range(0, DP, BN):
            u = _product(s_ptr + GZ3 * slab, DP, 0, BM, DP, w_ptr + 6 * DP * DP, w_ptr + 7 * DP * DP, c0, DP, DP,
                         BM, BN, BK, STAGES)
            g = u + _vec(wout_ptr, c0, BN)
            s_at, _ = _tile(s_ptr, DP, 0, c0, BM, DP, BM, BN)
            a = tl.load(s_at + A2 * slab, cache_modifier=".cg")
            tl.store(s_at + G2 * slab, g)
            tl.store(s_at + GZ2 * slab, g * _vec(idt_ptr + DP, c0, BN) * (1.0 - a * a))
        tl.debug_barrier()
        for c0 in range(0, DP, BN):
            u = _product(s_ptr + GZ2 * slab, DP, 0, BM, DP, w_ptr + 4 * DP * DP, w_ptr + 5 * DP * DP, c0, DP, DP,
                         BM, BN, BK, STAGES)
            s_at, _ = _tile(s_ptr, DP, 0, c0, BM, DP, BM, BN)
            g = u + tl.load(s_at + G2 * slab, cache_modifier=".cg")
            a_at, ok = _tile(a1_ptr, D, r0, c0, rows, D, BM, BN)
            a = tl.load(a_at, mask=ok, other=0.0)
            gz = g * _vec(idt_ptr, c0, BN) * (1.0 - a * a)
            if PARTS:
                out_at, _ = _tile(gz1_ptr, 3 * D, r0, c0, rows, D, BM, BN)
                hi, lo = _f16_parts(gz)
                tl.store(out_at, (hi.to(tl.float32) * 2048.0).to(tl.float16), mask=ok)
                tl.store(out_at + D, hi, mask=ok)
                tl.store(out_at + 2 * D, lo, mask=ok)
            else:
                out_at, _ = _tile(gz1_ptr, D, r0, c0, rows, D, BM, BN)
                tl.store(out_at, gz, mask=ok)
        tl.debug_barrier()  # the scratch is the next block's

    @triton.jit
    def _block(r0, s_ptr, h1_ptr, a1_ptr, w_ptr, b_ptr, idt_ptr, wout_ptr, value_ptr, gz1_ptr, rows, D,
               DP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr,
               PARTS: tl.constexpr):
        value = _forward(s_ptr, h1_ptr, r0, rows, D, w_ptr, b_ptr, idt_ptr, wout_ptr, DP, BM, BN, BK, STAGES)
        rm = r0 + tl.arange(0, BM)
        tl.store(value_ptr + rm, value + tl.load(wout_ptr + DP), mask=rm < rows)  # the output's bias after w_out
        _backward(s_ptr, a1_ptr, gz1_ptr, r0, rows, D, w_ptr, idt_ptr, wout_ptr, DP, BM, BN, BK, STAGES, PARTS)

    @triton.jit
    def _stack_kernel(h1_ptr, a1_ptr, w_ptr, b_ptr, idt_ptr, wout_ptr, scratch_ptr, value_ptr, gz1_ptr,
                      rows, D, programs, DP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      STAGES: tl.constexpr, PERSISTENT: tl.constexpr, PARTS: tl.constexpr = False):
        """Row blocks of BM rows: PERSISTENT (GPU only: the interpreter takes no loop from a program id),
        `programs` programs walk them; else one a program. Operands: `_stack_operands`."""
        pid = tl.program_id(0)
        s_ptr = scratch_ptr + pid.to(tl.int64) * (5 * BM * DP)
        if PERSISTENT:
            for block in tl.range(pid, tl.cdiv(rows, BM), programs):
                _block(block * BM, s_ptr, h1_ptr, a1_ptr, w_ptr, b_ptr, idt_ptr, wout_ptr, value_ptr, gz1_ptr,
                       rows, D, DP, BM, BN, BK, STAGES, PARTS)
        else:
            _block(pid * BM, s_ptr, h1_ptr, a1_ptr, w_ptr, b_ptr, idt_ptr, wout_ptr, value_ptr, gz1_ptr, rows,
                   D, DP, BM, BN, BK, STAGES, PARTS)


def applies(nets, x: Tensor, precision: str) -> bool:
    """Whether the stack serves net rows x (rows, n0): ENABLED, f16x3 products where `fitting_gemm.worth_it`, and
    a net of the shape the kernel takes (module docstring)."""
    if not ENABLED or precision != "f16x3" or x.dim() != 2 or not fitting.supports(nets) or \
            not fitting_gemm.worth_it(x[None]):
        return False
    widths = [(layer.matrix.shape[-2], layer.matrix.shape[-1]) for layer in nets.layers[:-1]]
    return (len(widths) == 3 and widths[1] == widths[2] == (widths[0][1],) * 2 and widths[0][1] <= 256
            and fitting._skip_mode(*widths[0]) == fitting.NONE)


def _padded(t: Tensor, shape: tuple) -> Tensor:
    out = t.new_zeros(shape)
    out[tuple(slice(0, n) for n in t.shape)] = t
    return out


def _stack_operands(hidden: list, w_out: Tensor, b_out: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """`_stack_kernel`'s weights from one net's `fitting._unpack` parameters (each (1, ...)), padded to DP: the
    float16 parts (8, DP, DP) of W2, W3, W2^T, W3^T (hi, lo each), b (2, DP), idt (3, DP) (ones where a layer has
    none), w_out and the output's bias (DP + 1,)."""
    (_, _, idt1), (w2, b2, idt2), (w3, b3, idt3) = [[None if p is None else p[0].detach().float() for p in layer]
                                                    for layer in hidden]
    d = w2.shape[-1]
    b2, b3 = b2.reshape(d), b3.reshape(d)
    idt1, idt2, idt3 = (None if i is None else i.reshape(d) for i in (idt1, idt2, idt3))
    dp = triton.next_power_of_2(d)
    mats = (w2, w3, w2.T, w3.T)
    parts = torch.stack([_padded(p, (dp, dp)) for w in mats for p in _split(w.contiguous())])
    idt = [torch.ones_like(b2) if i is None else i for i in (idt1, idt2, idt3)]
    return (parts.contiguous(), torch.stack([_padded(b, (dp,)) for b in (b2, b3)]),
            torch.stack([_padded(i, (dp,)) for i in idt]),
            torch.cat([_padded(w_out.detach().float().reshape(d), (dp,)), b_out.detach().float().reshape(1)]))


def _kept_operands(nets, k: int, hidden: list, w_out: Tensor, b_out: Tensor) -> tuple:
    """`_stack_operands` of net k, kept until one of the nets' parameters changes (`precision._kept`)."""
    _, params = fitting._flat_params(nets)
    return _kept(params[0], ("stack", k), lambda: _stack_operands(hidden, w_out, b_out), also=tuple(params[1:]))


def hidden_stack(h1: Tensor, a1: Tensor, ops: tuple, tile: dict = STACK_TILE, programs: int | None = None,
                 parts: bool = False) -> tuple[Tensor, Tensor]:
    """(value (rows,), gz1 (rows, d)) of the stack above layer 1 from its output h1 and tanh a1, with `parts` gz1
    as float16 (rows, 3 d) [2^11 hi | hi | lo]; ops: `_stack_operands`; programs: that many walk the row blocks
    (None: one a block)."""
    rows, d = h1.shape
    dp = ops[0].shape[-1]
    tile = dict(tile, BN=min(tile["BN"], dp), BK=min(tile["BK"], dp))  # narrow nets (tests): one tile a row
    blocks = triton.cdiv(rows, tile["BM"])
    grid = min(programs, blocks) if programs else blocks
    scratch = h1.new_empty(grid * 5 * tile["BM"] * dp)
    value = h1.new_empty(rows)
    gz1 = h1.new_empty(rows, 3 * d, dtype=torch.float16) if parts else torch.empty_like(h1)
    _stack_kernel[(grid,)](h1, a1, *ops, scratch, value, gz1, rows, d, grid, DP=dp, BM=tile["BM"],
                           BN=tile["BN"], BK=tile["BK"], STAGES=tile["stages"], PERSISTENT=programs is not None,
                           PARTS=parts, num_warps=tile["warps"])
    return value, gz1


def _input_grad_weights(nets, net: int, w1: Tensor) -> Tensor | None:
    """[hi; lo; hi] (3 d, n0) float16 of net's W1^T for `input_grad`, or None where gz1 may exceed STACKED_LIMIT
    (or CUBLAS_INPUT_GRAD is off, or on a GPU torch lacks addmm's out_dtype); kept until one of the nets' parameters
    changes."""
    def make():
        if fitting_bounds(nets, 0.0)["the fitting gradients"] > STACKED_LIMIT:
            return None
        hi, lo = _split(w1[0].detach().float().T.contiguous())
        return torch.cat([hi, lo, hi])

    if not CUBLAS_INPUT_GRAD or (w1.is_cuda and not ADDMM_OUT_DTYPE):
        return None
    _, params = fitting._flat_params(nets)
    return _kept(params[0], ("stack input grad", net), make, also=tuple(params[1:]))


def input_grad(gz_parts: Tensor, w_parts: Tensor) -> Tensor:
    """gz1 W1^T (rows, n0) float32 from `hidden_stack(parts=True)`'s gz1 and `_input_grad_weights`."""
    if gz_parts.is_cuda:
        zero = gz_parts.new_zeros((), dtype=torch.float32)  # beta = 0: not read
        return torch.addmm(zero, gz_parts, w_parts, beta=0.0, alpha=PARTS_SCALE, out_dtype=torch.float32)
    return (gz_parts.float() @ w_parts.float()) * PARTS_SCALE  # the CPU's twin (Triton's interpreter tests)


def value_and_input_grad(nets, x: Tensor, k: int | None, precision: str) -> tuple[Tensor, Tensor]:
    """`fitting_gemm.value_and_input_grad`'s contract (value (rows, 1), dE/dx (rows, n0)) through the stack where it
    `applies` (net k on its rows x (rows, n0), or the one net (k None) on x (1, rows, n0)); else that function."""
    one_net = k is None and x.dim() == 3 and len(x) == 1 and nets.layers[0].matrix.shape[0] == 1
    rows, net = (x[0], 0) if one_net else (x, k)
    if net is None or not applies(nets, rows, precision):
        return fitting_gemm.value_and_input_grad(nets, x, k, precision)
    layers = _net_layers(nets, net)
    value, gz1 = _stack(nets, rows, net, layers)
    w1, w_parts = layers[0][0][0], layers[3]
    grad = fitting_gemm.product_t(gz1[None], w1, "f16x3")[0] if w_parts is None else input_grad(gz1, w_parts)
    return (value[None], grad[None]) if one_net else (value, grad)


def value_and_gradient_parts(nets, x: Tensor, k: int, precision: str) -> tuple[Tensor, Tensor, Tensor] | None:
    """Net k's value (rows, 1) on its rows x and, in place of dE/dx, `input_grad`'s two operands (gz1's float16
    parts, W1^T's), whose product a kernel may contract at once (`descriptor_matrix.t_bar_from_fitting_grad`); None
    where `value_and_input_grad` would not take that product."""
    if not applies(nets, x, precision):
        return None
    layers = _net_layers(nets, k)
    if layers[3] is None:
        return None
    value, gz1 = _stack(nets, x, k, layers)
    return value, gz1, layers[3]


def _net_layers(nets, net: int) -> tuple:
    """Net's `fitting._unpack` parameters (hidden layers, w_out, b_out) and W1^T's float16 parts
    (`_input_grad_weights`, None where not kept)."""
    hidden, w_out, b_out = fitting._unpack(*fitting._flat_params(nets, net))
    return hidden, w_out, b_out, _input_grad_weights(nets, net, hidden[0][0])


def _stack(nets, rows: Tensor, net: int, layers: tuple) -> tuple[Tensor, Tensor]:
    """Net's value (rows, 1) and gz1 (as float16 parts where W1^T's are kept), layer 1 on cuBLAS and the layers
    above on `hidden_stack`; layers: `_net_layers`."""
    hidden, w_out, b_out, w_parts = layers
    w1, b1, idt1 = hidden[0]
    a1, h1 = fitting_gemm.layer_forward(rows[None], w1, b1, idt1, fitting.NONE, "f16x3")
    ops = _kept_operands(nets, net, hidden, w_out, b_out)
    programs = PROGRAMS_PER_SM * multiprocessors(rows.device) if rows.is_cuda else None
    value, gz1 = hidden_stack(h1[0], a1[0], ops, programs=programs, parts=w_parts is not None)
    return value[:, None], gz1
