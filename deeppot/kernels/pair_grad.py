"""dE/dr_ij from dE/dT in training, forward and backward one Triton kernel each: the fused twin of
`deeppot.model.analytic.pair_grad` (the force-training step differentiates it once more, with respect to G, dG/ds
and dE/dT).

Per centre atom, with T-bar = dE/dT (4, M1), G and G' = dG/ds per slot (M1 each) and the slot's rows R (4),
N = sum(sel) (the reference's notation and derivation):
    r_c = (T-bar_c . G + [c = 0] G' . (T-bar^T R)) / N,   q = r scale,   g_ij = x (q_0 a + (q_v . x) b) + q_v c.
Backward, from dL/dg_ij = o:  dq_0 = a (x . o),  dq_v = b x (x . o) + c o,  dr = dq scale, and
dL/dG = dr T-bar / N,  dL/dG' = dr_0 (T-bar^T R) / N,  dL/dT-bar = sum_j (dr G^T + dr_0 R G'^T) / N.
The reference takes ~17 kernels forward and ~20 backward (products, sums, pads, the chain through the switch).
The forward runs one chunk of an atom's slots a program; the backward one program an atom, walking its slots in
chunks and summing dL/dT-bar in its registers (no atomics; four programs an atom with their shares summed
afterwards were no faster, run 253).
Rows with an exclusion mask keep the reference. Tests: tests/kernels/test_pair_grad.py (GPU, or the interpreter).
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from deeppot.kernels.embedding import triton
from deeppot.model import analytic

# (slots a chunk, warps) per precision: the fastest of `benchmarks/pair_grad_bench.py` on an H100 (run 113), each
# compiled without spills for M1 = 100 (16 x 4 spilled 0.2 / 0.3 kB in float32, 1.2 / 8.5 kB in float64)
TILES = {torch.float32: (8, 4), torch.float64: (4, 4)}

if triton is not None:
    import triton.language as tl

    @triton.jit
    def _col(ptr, s, width, c, ok):
        return tl.load(ptr + width * s + c, mask=ok, other=0.0)

    @triton.jit
    def _chunk(rr_ptr, x_ptr, coef_ptr, scale_ptr, atom, j0, nnei, cstride, SLOTS: tl.constexpr):
        """A chunk's slot indices (flat), validity, rows R (4 columns), x (3), a, b, c and scale (4)."""
        j = j0 + tl.arange(0, SLOTS)
        ok = j < nnei
        s = atom * nnei + j
        r0, r1, r2, r3 = (_col(rr_ptr, s, 4, 0, ok), _col(rr_ptr, s, 4, 1, ok), _col(rr_ptr, s, 4, 2, ok),
                          _col(rr_ptr, s, 4, 3, ok))
        x, y, z = _col(x_ptr, s, 3, 0, ok), _col(x_ptr, s, 3, 1, ok), _col(x_ptr, s, 3, 2, ok)
        a, b = _col(coef_ptr, s, cstride, 0, ok), _col(coef_ptr, s, cstride, 1, ok)
        c = _col(coef_ptr, s, cstride, 2, ok)
        k0, k1, k2, k3 = (_col(scale_ptr, s, 4, 0, ok), _col(scale_ptr, s, 4, 1, ok), _col(scale_ptr, s, 4, 2, ok),
                          _col(scale_ptr, s, 4, 3, ok))
        return s, ok, r0, r1, r2, r3, x, y, z, a, b, c, k0, k1, k2, k3

    @triton.jit
    def _t_bar(t_ptr, atom, m1, M1P: tl.constexpr):
        m = tl.arange(0, M1P)
        on = m < m1
        at = t_ptr + atom * 4 * m1 + m
        return (m, on, tl.load(at, mask=on, other=0.0), tl.load(at + m1, mask=on, other=0.0),
                tl.load(at + 2 * m1, mask=on, other=0.0), tl.load(at + 3 * m1, mask=on, other=0.0))

    @triton.jit
    def _rows_times_t(r0, r1, r2, r3, t0, t1, t2, t3):
        """(T-bar^T R) per slot: (SLOTS, M1P)."""
        return r0[:, None] * t0[None, :] + r1[:, None] * t1[None, :] + r2[:, None] * t2[None, :] + \
            r3[:, None] * t3[None, :]

    @triton.jit
    def _forward_kernel(g_ptr, dg_ptr, t_ptr, rr_ptr, x_ptr, coef_ptr, scale_ptr, out_ptr, nnei, m1, cstride,
                        nsel, M1P: tl.constexpr, SLOTS: tl.constexpr):
        # one chunk a program: no slot's output depends on another's (run 253, H200: the kernel 42 -> 28 us of a
        # 192-atom water float32 step, the step 0.781 -> 0.768 ms, copper's 0.474 -> 0.469)
        atom = tl.program_id(0).to(tl.int64)
        m, on, t0, t1, t2, t3 = _t_bar(t_ptr, atom, m1, M1P)
        s, ok, r0, r1, r2, r3, x, y, z, a, b, c, k0, k1, k2, k3 = _chunk(rr_ptr, x_ptr, coef_ptr, scale_ptr, atom,
                                                                          tl.program_id(1) * SLOTS, nnei, cstride,
                                                                          SLOTS)
        both = ok[:, None] & on[None, :]
        g = tl.load(g_ptr + s[:, None] * m1 + m[None, :], mask=both, other=0.0)
        dg = tl.load(dg_ptr + s[:, None] * m1 + m[None, :], mask=both, other=0.0)
        s_bar = tl.sum(dg * _rows_times_t(r0, r1, r2, r3, t0, t1, t2, t3), axis=1)
        q0 = (tl.sum(g * t0[None, :], axis=1) + s_bar) / nsel * k0
        q1 = tl.sum(g * t1[None, :], axis=1) / nsel * k1
        q2 = tl.sum(g * t2[None, :], axis=1) / nsel * k2
        q3 = tl.sum(g * t3[None, :], axis=1) / nsel * k3
        radial = q0 * a + (q1 * x + q2 * y + q3 * z) * b
        tl.store(out_ptr + 3 * s, x * radial + q1 * c, mask=ok)
        tl.store(out_ptr + 3 * s + 1, y * radial + q2 * c, mask=ok)
        tl.store(out_ptr + 3 * s + 2, z * radial + q3 * c, mask=ok)

    @triton.jit
    def _backward_kernel(o_ptr, g_ptr, dg_ptr, t_ptr, rr_ptr, x_ptr, coef_ptr, scale_ptr, g_bar_ptr, dg_bar_ptr,
                         t_bar_ptr, nnei, m1, cstride, nsel, NNEI: tl.constexpr, M1P: tl.constexpr,
                         SLOTS: tl.constexpr):
        atom = tl.program_id(0).to(tl.int64)
        m, on, t0, t1, t2, t3 = _t_bar(t_ptr, atom, m1, M1P)
        acc0, acc1 = tl.zeros_like(t0), tl.zeros_like(t0)
        acc2, acc3 = tl.zeros_like(t0), tl.zeros_like(t0)
        for j0 in range(0, NNEI, SLOTS):
            s, ok, r0, r1, r2, r3, x, y, z, a, b, c, k0, k1, k2, k3 = _chunk(rr_ptr, x_ptr, coef_ptr, scale_ptr,
                                                                              atom, j0, nnei, cstride, SLOTS)
            ox, oy = tl.load(o_ptr + 3 * s, mask=ok, other=0.0), tl.load(o_ptr + 3 * s + 1, mask=ok, other=0.0)
            oz = tl.load(o_ptr + 3 * s + 2, mask=ok, other=0.0)
            xo = x * ox + y * oy + z * oz
            d0 = a * xo * k0 / nsel  # dL/dr_c / N
            d1, d2, d3 = ((b * x * xo + c * ox) * k1 / nsel, (b * y * xo + c * oy) * k2 / nsel,
                          (b * z * xo + c * oz) * k3 / nsel)
            both = ok[:, None] & on[None, :]
            at = s[:, None] * m1 + m[None, :]
            g = tl.load(g_ptr + at, mask=both, other=0.0)
            dg = tl.load(dg_ptr + at, mask=both, other=0.0)
            tl.store(g_bar_ptr + at, d0[:, None] * t0[None, :] + d1[:, None] * t1[None, :] +
                     d2[:, None] * t2[None, :] + d3[:, None] * t3[None, :], mask=both)
            tl.store(dg_bar_ptr + at, d0[:, None] * _rows_times_t(r0, r1, r2, r3, t0, t1, t2, t3), mask=both)
            d0_dg = d0[:, None] * dg
            acc0 += tl.sum(d0[:, None] * g + d0_dg * r0[:, None], axis=0)
            acc1 += tl.sum(d1[:, None] * g + d0_dg * r1[:, None], axis=0)
            acc2 += tl.sum(d2[:, None] * g + d0_dg * r2[:, None], axis=0)
            acc3 += tl.sum(d3[:, None] * g + d0_dg * r3[:, None], axis=0)
        at = t_bar_ptr + atom * 4 * m1 + m
        tl.store(at, acc0, mask=on)
        tl.store(at + m1, acc1, mask=on)
        tl.store(at + 2 * m1, acc2, mask=on)
        tl.store(at + 3 * m1, acc3, mask=on)


def _meta(g: Tensor, rows: analytic.EnvRows, nsel: int) -> tuple[tuple, dict]:
    """The kernels' trailing arguments and constants (nsel an integer: a Python float argument would reach the
    kernel as a float32). The forward's grid takes a chunk of SLOTS slots a program; `PairGrad.forward` adds the
    backward's NNEI (those chunks' slots, which it walks)."""
    nnei, m1 = g.shape[-2], g.shape[-1]
    slots, warps = TILES[g.dtype]
    return (nnei, m1, rows.a.stride(-2), nsel), dict(M1P=triton.next_power_of_2(m1), SLOTS=slots, num_warps=warps)


class PairGrad(torch.autograd.Function):
    """`analytic.pair_grad` of rows that carry no gradient, differentiable once in G, G' and T-bar."""

    @staticmethod
    def forward(ctx, g: Tensor, dg: Tensor, t_bar: Tensor, rows: analytic.EnvRows, nsel: int) -> Tensor:
        g, dg, t_bar = g.contiguous(), dg.contiguous(), t_bar.contiguous()
        geometry = (rows.rr.contiguous(), rows.x.contiguous(), rows.a, rows.scale.contiguous())
        out = g.new_empty(*g.shape[:-1], 3)
        args, meta = _meta(g, rows, nsel)
        chunks = triton.cdiv(g.shape[2], meta["SLOTS"])
        _forward_kernel[(g.shape[0] * g.shape[1], chunks)](g, dg, t_bar, *geometry, out, *args, **meta)
        ctx.args, ctx.meta = args, dict(meta, NNEI=chunks * meta["SLOTS"])
        ctx.save_for_backward(g, dg, t_bar, *geometry)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, o: Tensor):
        g, dg, t_bar, *geometry = ctx.saved_tensors
        g_bar, dg_bar, t_bar_bar = torch.empty_like(g), torch.empty_like(dg), torch.empty_like(t_bar)
        _backward_kernel[(g.shape[0] * g.shape[1],)](o.contiguous(), g, dg, t_bar, *geometry, g_bar, dg_bar,
                                                     t_bar_bar, *ctx.args, **ctx.meta)
        return g_bar, dg_bar, t_bar_bar, None, None


def _abc_packed(rows: analytic.EnvRows) -> bool:
    """a, b, c as consecutive columns of one tensor (the environment-matrix kernel's `coef`)."""
    a = rows.a
    return (a.stride(-1) == 1 and rows.b.data_ptr() == a.data_ptr() + a.element_size()
            and rows.c.data_ptr() == a.data_ptr() + 2 * a.element_size()
            and rows.b.stride() == a.stride() == rows.c.stride())


def pair_grad(d, rows: analytic.EnvRows, g: Tensor, dg: Tensor, t_bar: Tensor) -> Tensor:
    """`analytic.pair_grad`'s contract; through `PairGrad` where its rows allow (no exclusion mask, no gradient
    into the rows, a, b, c packed), the reference otherwise."""
    if rows.keep is not None or rows.rr.requires_grad or rows.x.requires_grad or not _abc_packed(rows):
        return analytic.pair_grad(d, rows, g, dg, t_bar)
    return PairGrad.apply(g, dg, t_bar, rows, sum(d.sel))
