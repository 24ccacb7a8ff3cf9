"""T = sum_j R_j^T G_j / N with D = T^T T<, and dE/dT from dE/dD, in the training step: Triton kernels both ways,
the twins of `analytic.t_and_descriptor` and `analytic.t_bar_from_desc_grad` (the model's `descriptor_fn` and
`t_bar_fn` after `EnergyModel.use_descriptor_kernel`). D's backward is dE/dT's product, B(dL/dD, T).

Per atom, with B(X, T)[c, m] = sum_k X[m, k] T[c, k] + [m < m2] sum_a X[a, m] T[c, a] (dE/dT = B(dE/dD, T)):
- forward, one program an atom: T over the atom's slots in chunks, each chunk one product (R^T padded to 16 rows,
  a stand-in's row times its weight) @ G into a register accumulator, then D from T in registers;
- its backward, one program a chunk of an atom's slots, from dL/dT and dL/dD: T-bar = dL/dT + B(dL/dD, T) (formed
  again by each chunk), then dL/dG_j = R_j T-bar / N;
- dE/dT = B(dE/dD, T) is bilinear: from U = dL/d(dE/dT), its backward is B(dE/dD, U) and U^T T< + T^T U<
  (`descriptor_matrix`'s kernels, the second with SYM).
PyTorch took T as the weights' product, a batched GEMM and the division, each way; the T-and-D kernels replace
those and run 255's D kernels (run 256, H100, ms a step, against T by PyTorch and D by its kernel: water float32
0.630 against 0.640, copper 0.377 against 0.387, the alloy 0.558 against 0.566). In float64 they were slower (water
1.155 against 1.144), so float64 models keep T by PyTorch with D's kernels (`t_then_descriptor`). The rows R take
no gradient (positions are data in training); rows that require one keep the reference.
Tests: tests/kernels/test_descriptor_training.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from deeppot.kernels import descriptor_matrix
from deeppot.kernels.embedding import triton
from deeppot.model import analytic
from deeppot.model.slots import SlotLayout

SLOTS, WARPS = 32, 4  # slots a chunk, warps a program; the slot count is a compile-time constant (the interpreter
# takes no loop bound known only at run time): a training run compiles once per list width

if triton is not None:
    import triton.language as tl

    @triton.jit
    def _chunk_rows(rr_ptr, w_ptr, atom, j, ok, nnei, HAS_WEIGHT: tl.constexpr):
        """Columns c of the chunk's rows R, each times its slot's weight (a stand-in's count) if HAS_WEIGHT."""
        at = rr_ptr + (atom * nnei + j) * 4
        w = tl.load(w_ptr + j, mask=ok, other=0).to(rr_ptr.dtype.element_ty) if HAS_WEIGHT else 1.0
        return (tl.load(at, mask=ok, other=0.0) * w, tl.load(at + 1, mask=ok, other=0.0) * w,
                tl.load(at + 2, mask=ok, other=0.0) * w, tl.load(at + 3, mask=ok, other=0.0) * w)

    @triton.jit
    def _column(t_c, onehot):
        """Row c of T at the columns k of the one-hot's second axis (T<'s columns)."""
        return tl.sum(tl.where(onehot, t_c[:, None], 0.0), axis=0)

    @triton.jit
    def _row(acc, r, c):
        """Row c of a padded (16, MP) block."""
        return tl.sum(tl.where(r[:, None] == c, acc, 0.0), axis=0)

    @triton.jit
    def _t_and_d_kernel(rr_ptr, w_ptr, g_ptr, t_ptr, d_ptr, nsel, nnei: tl.constexpr, M1: tl.constexpr,
                        M2: tl.constexpr, MP: tl.constexpr, KP: tl.constexpr, SLOTS: tl.constexpr,
                        HAS_WEIGHT: tl.constexpr):
        """T as one product a chunk, (R^T padded to 16 rows) @ G, accumulated in registers: no reduction across
        warps inside the loop; then D from T's rows."""
        atom = tl.program_id(0).to(tl.int64)
        m, k, r = tl.arange(0, MP), tl.arange(0, KP), tl.arange(0, 16)
        on = m < M1
        acc = tl.zeros((16, MP), dtype=g_ptr.dtype.element_ty)
        for j0 in range(0, nnei, SLOTS):
            j = j0 + tl.arange(0, SLOTS)
            ok = j < nnei
            rt = tl.load(rr_ptr + (atom * nnei + j)[None, :] * 4 + r[:, None], mask=(r < 4)[:, None] & ok[None, :],
                         other=0.0)
            if HAS_WEIGHT:
                rt = rt * tl.load(w_ptr + j, mask=ok, other=0).to(rr_ptr.dtype.element_ty)[None, :]
            g = tl.load(g_ptr + (atom * nnei + j)[:, None] * M1 + m[None, :], mask=ok[:, None] & on[None, :],
                        other=0.0)
            acc = tl.dot(rt, g, acc, input_precision="ieee", out_dtype=acc.dtype)
        acc = acc / nsel
        tl.store(t_ptr + (atom * 4 + r[:, None]) * M1 + m[None, :], acc, mask=(r < 4)[:, None] & on[None, :])
        t0, t1 = _row(acc, r, 0), _row(acc, r, 1)
        t2, t3 = _row(acc, r, 2), _row(acc, r, 3)
        onehot = (m[:, None] == k[None, :]) & (k < M2)[None, :]
        d = (t0[:, None] * _column(t0, onehot)[None, :] + t1[:, None] * _column(t1, onehot)[None, :]
             + t2[:, None] * _column(t2, onehot)[None, :] + t3[:, None] * _column(t3, onehot)[None, :])
        tl.store(d_ptr + atom * M1 * M2 + m[:, None] * M2 + k[None, :], d, mask=on[:, None] & (k < M2)[None, :])

    @triton.jit
    def _t_bar_row(tb_ptr, t_ptr, dd, onehot, atom, c, m, on, k, nsel, M1: tl.constexpr, M2: tl.constexpr):
        """Row c of (dL/dT + B(dL/dD, T)) / N."""
        t_m = tl.load(t_ptr + (atom * 4 + c) * M1 + m, mask=on, other=0.0)
        t_k = tl.load(t_ptr + (atom * 4 + c) * M1 + k, mask=k < M2, other=0.0)
        through_t = tl.sum(dd * t_k[None, :], axis=1)  # sum_k X[m, k] T[c, k]
        through_lt = tl.sum(dd * t_m[:, None], axis=0)  # sum_a X[a, k] T[c, a], at column k = m
        row = tl.load(tb_ptr + (atom * 4 + c) * M1 + m, mask=on, other=0.0) + through_t
        return (row + tl.sum(tl.where(onehot, through_lt[None, :], 0.0), axis=1)) / nsel

    @triton.jit
    def _t_and_d_bwd_kernel(rr_ptr, w_ptr, t_ptr, tb_ptr, db_ptr, gb_ptr, nsel, nnei: tl.constexpr,
                            M1: tl.constexpr, M2: tl.constexpr, MP: tl.constexpr, KP: tl.constexpr,
                            SLOTS: tl.constexpr, HAS_WEIGHT: tl.constexpr):
        atom = tl.program_id(0).to(tl.int64)
        m, k = tl.arange(0, MP), tl.arange(0, KP)
        on = m < M1
        ok_d = on[:, None] & (k < M2)[None, :]  # each chunk's program forms the atom's T-bar (a few reductions)
        dd = tl.load(db_ptr + atom * M1 * M2 + m[:, None] * M2 + k[None, :], mask=ok_d, other=0.0)
        onehot = (m[:, None] == k[None, :]) & (k < M2)[None, :]
        u0 = _t_bar_row(tb_ptr, t_ptr, dd, onehot, atom, 0, m, on, k, nsel, M1, M2)
        u1 = _t_bar_row(tb_ptr, t_ptr, dd, onehot, atom, 1, m, on, k, nsel, M1, M2)
        u2 = _t_bar_row(tb_ptr, t_ptr, dd, onehot, atom, 2, m, on, k, nsel, M1, M2)
        u3 = _t_bar_row(tb_ptr, t_ptr, dd, onehot, atom, 3, m, on, k, nsel, M1, M2)
        j = tl.program_id(1) * SLOTS + tl.arange(0, SLOTS)
        ok = j < nnei
        r0, r1, r2, r3 = _chunk_rows(rr_ptr, w_ptr, atom, j, ok, nnei, HAS_WEIGHT)
        gb = (r0[:, None] * u0[None, :] + r1[:, None] * u1[None, :] + r2[:, None] * u2[None, :]
              + r3[:, None] * u3[None, :])
        tl.store(gb_ptr + (atom * nnei + j)[:, None] * M1 + m[None, :], gb, mask=ok[:, None] & on[None, :])


def _meta(m1: int, m2: int, weight: Tensor | None) -> dict:
    return dict(M1=m1, M2=m2, MP=max(16, triton.next_power_of_2(m1)), KP=max(16, triton.next_power_of_2(m2)),
                SLOTS=SLOTS, HAS_WEIGHT=weight is not None, num_warps=WARPS)


class _TAndD(torch.autograd.Function):
    """(rr, weight or None, G, N, m2) -> (T, D) of each atom; the gradient reaches G only."""

    @staticmethod
    def forward(ctx, rr: Tensor, weight: Tensor | None, g: Tensor, nsel: int, m2: int):
        natoms, nnei, m1 = g.shape
        t_mat, desc = g.new_empty(natoms, 4, m1), g.new_empty(natoms, m1 * m2)
        meta = _meta(m1, m2, weight)
        if natoms:
            _t_and_d_kernel[(natoms,)](rr, rr if weight is None else weight, g, t_mat, desc, nsel, nnei, **meta)
        ctx.save_for_backward(rr, weight, t_mat)
        ctx.nsel, ctx.meta = nsel, meta
        return t_mat, desc

    @staticmethod
    @once_differentiable
    def backward(ctx, t_bar: Tensor | None, d_bar: Tensor | None):
        rr, weight, t_mat = ctx.saved_tensors
        natoms, nnei = rr.shape[:2]
        t_bar = torch.zeros_like(t_mat) if t_bar is None else t_bar.contiguous()
        d_bar = t_mat.new_zeros(natoms, ctx.meta["M1"] * ctx.meta["M2"]) if d_bar is None else d_bar.contiguous()
        g_bar = t_mat.new_empty(natoms, nnei, ctx.meta["M1"])
        if natoms:
            grid = (natoms, triton.cdiv(nnei, SLOTS))
            _t_and_d_bwd_kernel[grid](rr, rr if weight is None else weight, t_mat, t_bar, d_bar, g_bar, ctx.nsel,
                                      nnei, **ctx.meta)
        return None, None, g_bar, None, None


class _Descriptor(torch.autograd.Function):
    """D = T^T T< from T; its backward is the product of dE/dT: dL/dT = B(dL/dD, T)."""

    @staticmethod
    def forward(ctx, t_mat: Tensor, m2: int) -> Tensor:
        ctx.save_for_backward(t_mat)
        return descriptor_matrix.descriptor_from_t(t_mat, m2, t_mat.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, d_bar: Tensor):
        (t_mat,) = ctx.saved_tensors
        return descriptor_matrix.t_bar_from_desc_grad(d_bar, t_mat), None


class _TBar(torch.autograd.Function):
    """dE/dT = B(dE/dD, T) and its backward (module docstring)."""

    @staticmethod
    def forward(ctx, d_desc: Tensor, t_mat: Tensor) -> Tensor:
        ctx.save_for_backward(d_desc, t_mat)
        return descriptor_matrix.t_bar_from_desc_grad(d_desc, t_mat)

    @staticmethod
    @once_differentiable
    def backward(ctx, u: Tensor):
        d_desc, t_mat = ctx.saved_tensors
        m2 = d_desc.shape[-1] // t_mat.shape[-1]
        return (descriptor_matrix.descriptor_from_t(t_mat, m2, d_desc.dtype, other=u),
                descriptor_matrix.t_bar_from_desc_grad(d_desc, u.contiguous()))


def trainable_t_and_descriptor(rr: Tensor, layout: SlotLayout | None, g: Tensor, nsel: int, m2: int
                               ) -> tuple[Tensor, Tensor]:
    """`analytic.t_and_descriptor` for training: T (nf, nloc, 4, M1) and D (nf, nloc, M1 * m2) from rr (nf, nloc,
    nnei, 4) and G (nf, nloc, nnei, M1), one kernel each way."""
    if rr.requires_grad:
        return analytic.t_and_descriptor(rr, layout, g, nsel, m2)
    lead, (nnei, m1) = g.shape[:-2], g.shape[-2:]
    weight = None if layout is None else layout.weight.reshape(-1).contiguous()
    t_mat, desc = _TAndD.apply(rr.reshape(-1, nnei, 4).contiguous(), weight, g.reshape(-1, nnei, m1).contiguous(),
                               nsel, m2)
    return t_mat.reshape(*lead, 4, m1), desc.reshape(*lead, m1 * m2)


def t_then_descriptor(rr: Tensor, layout: SlotLayout | None, g: Tensor, nsel: int, m2: int
                      ) -> tuple[Tensor, Tensor]:
    """`analytic.t_and_descriptor` with T by PyTorch (a batched GEMM each way) and D by one kernel each way: the
    float64 form, where the T-and-D kernels were slower (run 256, H100: water float64 1.155 against 1.144 ms a
    step)."""
    t_mat = analytic.t_matrix(rr, layout, g, nsel)
    flat = t_mat.reshape(-1, *t_mat.shape[-2:])
    return t_mat, _Descriptor.apply(flat, m2).reshape(*t_mat.shape[:-2], -1)


def trainable_t_bar(d_desc: Tensor, t_mat: Tensor) -> Tensor:
    """`analytic.t_bar_from_desc_grad` for training, d_desc (..., M1, m2), t_mat (..., 4, M1) -> (..., 4, M1): one
    kernel forward and two backward."""
    flat = t_mat.reshape(-1, *t_mat.shape[-2:])
    return _TBar.apply(d_desc.reshape(flat.shape[0], -1), flat).reshape(t_mat.shape)
