"""The Adam update of all of a model's parameters of one dtype in one Triton kernel: the flat twin of
`torch._fused_adam_` (the update `deeppot.train.adam.FusedAdam` calls, its reference).

Torch's multi-tensor kernel gives each tensor piece its own block and takes at most 36 pieces a launch, so a
model's ~0.5-1M parameters were updated by ~60-120 blocks in 2-4 launches (19 us for copper float32, 60 us for
water float64 on an H100, run 74). Here the parameters, gradients and moments of one dtype each lie in one flat
buffer, every parameter's segment padded to whole programs, and one launch covers them all at memory speed.
The arithmetic follows torch's kernel: opmath in the parameter's dtype, the scalars (rate, betas, eps, weight
decay) in float64, the moments formed in float64 and rounded, IEEE division and square root.
Tests: tests/kernels/test_adam.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import os
from typing import NamedTuple

from torch import Tensor

from deeppot.kernels.embedding import triton

BLOCK = 1024  # elements a program; each parameter's segment is padded to a multiple of it

if triton is not None:
    import triton.language as tl
    from triton.language.extra import libdevice

    @triton.jit
    def _pow(base, exponent, LIBDEVICE: tl.constexpr):
        """base ** exponent in float64: libdevice's pow, as torch's kernel calls; Triton's interpreter has no
        libdevice, so there it is exp(exponent log base) (tests compare to a few units in the last place)."""
        if LIBDEVICE:
            return libdevice.pow(base, exponent)
        return tl.exp(exponent * tl.log(base))

    @triton.jit
    def _sqrt(x):
        """IEEE square root (tl.sqrt is an approximation in float32; float64 has only the exact one)."""
        if x.dtype == tl.float32:
            return tl.sqrt_rn(x)
        return tl.sqrt(x)

    @triton.jit
    def _div(x, y):
        """IEEE division (float32's / is an approximation)."""
        if x.dtype == tl.float32:
            return tl.div_rn(x, y)
        return x / y

    @triton.jit
    def _load_grad(g_ptr, first_ptr, numel_ptr, prog, k, i, on, dtype: tl.constexpr, GRAD_TABLE: tl.constexpr,
                   BLOCK: tl.constexpr):
        """This program's gradients: from the flat buffer, or (GRAD_TABLE) from parameter k's own gradient, whose
        address is the table's entry k (its segment begins at block first[k]; zeros past its numel[k])."""
        if GRAD_TABLE:  # one return: the compiler types the statements after a returning branch too
            grad = tl.load(g_ptr + k).to(tl.pointer_type(dtype))
            j = (prog - tl.load(first_ptr + k)).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            g = tl.load(grad + j, mask=on & (j < tl.load(numel_ptr + k)), other=0.0)
        else:
            g = tl.load(g_ptr + i, mask=on, other=0.0)
        return g

    @triton.jit
    def _adam_kernel(p_ptr, g_ptr, first_ptr, numel_ptr, m_ptr, v_ptr, owner_ptr, step_ptr, live_ptr, lr_ptr,
                     hyper_ptr, GRAD_TABLE: tl.constexpr, DECOUPLED: tl.constexpr, DECAY: tl.constexpr,
                     LIBDEVICE: tl.constexpr, BLOCK: tl.constexpr):
        prog = tl.program_id(0)
        k = tl.load(owner_ptr + prog)  # the parameter this program's segment belongs to
        i = prog.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        on = (tl.zeros((BLOCK,), tl.int32) + tl.load(live_ptr + k)) != 0  # no gradient: left as it is
        step = tl.load(step_ptr + k).to(tl.float64)
        lr = tl.load(lr_ptr).to(tl.float64)
        beta1, beta2 = tl.load(hyper_ptr), tl.load(hyper_ptr + 1)
        eps, decay = tl.load(hyper_ptr + 2), tl.load(hyper_ptr + 3)
        p = tl.load(p_ptr + i, mask=on, other=0.0)
        g = _load_grad(g_ptr, first_ptr, numel_ptr, prog, k, i, on, p_ptr.dtype.element_ty, GRAD_TABLE, BLOCK)
        if DECAY:
            if DECOUPLED:
                p = (p.to(tl.float64) - lr * decay * p.to(tl.float64)).to(p.dtype)
            else:
                g = (g.to(tl.float64) + p.to(tl.float64) * decay).to(g.dtype)
        g64 = g.to(tl.float64)
        m = (beta1 * tl.load(m_ptr + i, mask=on, other=0.0).to(tl.float64) + (1.0 - beta1) * g64).to(p.dtype)
        v = (beta2 * tl.load(v_ptr + i, mask=on, other=0.0).to(tl.float64) + (1.0 - beta2) * g64 * g64).to(p.dtype)
        step_size = (lr / (1.0 - _pow(beta1, step, LIBDEVICE)).to(p.dtype).to(tl.float64)).to(p.dtype)
        bc2_sqrt = _sqrt((1.0 - _pow(beta2, step, LIBDEVICE)).to(p.dtype))
        denom = (_div(_sqrt(v), bc2_sqrt).to(tl.float64) + eps).to(p.dtype)
        tl.store(p_ptr + i, p - _div(step_size * m, denom), mask=on)
        tl.store(m_ptr + i, m, mask=on)
        tl.store(v_ptr + i, v, mask=on)


class GradTable(NamedTuple):
    """Where each parameter's gradient lies, for the kernel to read it in place (no copy into the flat buffer):
    addresses (int64, one a parameter; 0 for one without a gradient), first (int32): the first BLOCK of the
    parameter's segment in the flat buffers, numel (int32): its size."""

    addresses: Tensor
    first: Tensor
    numel: Tensor


def adam_update(param: Tensor, grad: Tensor | GradTable, exp_avg: Tensor, exp_avg_sq: Tensor, owner: Tensor,
                step: Tensor, live: Tensor, lr: Tensor, hyper: Tensor, decoupled: bool, decay: bool) -> None:
    """One Adam (AdamW if decoupled) update, in place, of the flat buffers param, exp_avg, exp_avg_sq from grad
    (a flat buffer laid out as param, or a `GradTable` of the parameters' own gradients).

    owner (int32, numel / BLOCK): the parameter each BLOCK of the buffers belongs to; step (float32, one per
    parameter): its step count, already incremented; live (int32, one per parameter): 0 where the parameter got no
    gradient this step (its segment is not touched); lr: a one-element device tensor; hyper (float64, device):
    beta1, beta2, eps, weight decay; decay: whether that weight decay is not zero.
    """
    table = isinstance(grad, GradTable)
    g, first, numel = (grad.addresses, grad.first, grad.numel) if table else (grad, owner, owner)
    _adam_kernel[(owner.numel(),)](param, g, first, numel, exp_avg, exp_avg_sq, owner, step, live, lr, hyper,
                                   GRAD_TABLE=table, DECOUPLED=decoupled, DECAY=decay,
                                   LIBDEVICE=os.environ.get("TRITON_INTERPRET") != "1", BLOCK=BLOCK)
