"""The `ener` loss of a training batch and its gradient in two Triton kernels: the fused twin of
`deeppot.train.loss.EnergyLoss` for its energy, force and virial terms.

In a captured training step the reference loss is ~50 launches of scalar-sized work: per term a difference, a
square and a mean, the prefactor from the learning rate (a device scalar, so that a new rate needs no new graph),
the label's find flag, the metric's square root and its NaN where the label is absent, and the backward of all
that. Here one program computes every term's mean squared error, the loss and the metrics, and one kernel writes
the gradient of each prediction. Sums run in float64 (the reference squares float64 differences too, the
predictions and labels being float64; only the order of the additions differs).
Tests: tests/kernels/test_loss.py (GPU, or Triton's interpreter on a CPU) against the reference.
"""

from __future__ import annotations

import torch
from torch import Tensor

from deeppot.kernels.embedding import triton

TERMS = ("e", "f", "v")  # label / prediction keys below
KEYS = {"e": ("energy", "energy"), "f": ("force", "force"), "v": ("virial", "virial")}
BLOCK = 1024

if triton is not None:
    import triton.language as tl

    @triton.jit
    def _mean_square(p_ptr, l_ptr, n, per_frame, l_stride, ITERS: tl.constexpr, BLOCK: tl.constexpr):
        """mean (label - prediction)^2 over n <= ITERS * BLOCK elements; predictions contiguous, labels
        frame-strided. (A constant trip count: the interpreter of the CPU tests needs one.)"""
        acc = tl.zeros([BLOCK], dtype=tl.float64)
        for start in range(0, ITERS * BLOCK, BLOCK):
            k = start + tl.arange(0, BLOCK)
            ok = k < n
            d = tl.load(l_ptr + (k // per_frame) * l_stride + k % per_frame, mask=ok, other=0.0) - \
                tl.load(p_ptr + k, mask=ok, other=0.0)
            acc += d * d
        return tl.sum(acc, axis=0) / n

    @triton.jit
    def _term(out_ptr, t, loss, p_ptr, l_ptr, n, per_frame, l_stride, found_ptr, lr, const_ptr,
              ITERS: tl.constexpr, BLOCK: tl.constexpr):
        """Term t: its coefficient pref(lr) find scale (kept for the backward) and metric; returns loss + its
        share. const_ptr rows (start, limit, scale, metric factor) per term."""
        mse = _mean_square(p_ptr, l_ptr, n, per_frame, l_stride, ITERS, BLOCK)
        start, limit = tl.load(const_ptr + 4 * t), tl.load(const_ptr + 4 * t + 1)
        found = tl.load(found_ptr)
        coef = (limit + (start - limit) * lr) * found * tl.load(const_ptr + 4 * t + 2)
        metric = tl.sqrt(mse) * tl.load(const_ptr + 4 * t + 3)
        tl.store(out_ptr + 2 + t, tl.where(found > 0, metric, float("nan")))
        tl.store(out_ptr + 5 + t, coef)
        return loss + coef * mse

    @triton.jit
    def _loss_kernel(out_ptr, const_ptr, lr_ptr,
                     pe, le, ne, pfe, lse, fe, pf, lf, nf, pff, lsf, ff, pv, lv, nv, pfv, lsv, fv,
                     HAS_E: tl.constexpr, HAS_F: tl.constexpr, HAS_V: tl.constexpr, ITERS_E: tl.constexpr,
                     ITERS_F: tl.constexpr, ITERS_V: tl.constexpr, BLOCK: tl.constexpr):
        """out: [loss, rmse, rmse_e, rmse_f, rmse_v, coef_e, coef_f, coef_v] (float64)."""
        lr = tl.load(lr_ptr).to(tl.float64) / tl.load(const_ptr + 13)  # the rate over start_lr
        loss = tl.load(const_ptr + 12)  # 0.0, as float64
        if HAS_E:
            loss = _term(out_ptr, 0, loss, pe, le, ne, pfe, lse, fe, lr, const_ptr, ITERS_E,
                          BLOCK)
        if HAS_F:
            loss = _term(out_ptr, 1, loss, pf, lf, nf, pff, lsf, ff, lr, const_ptr, ITERS_F,
                          BLOCK)
        if HAS_V:
            loss = _term(out_ptr, 2, loss, pv, lv, nv, pfv, lsv, fv, lr, const_ptr, ITERS_V,
                          BLOCK)
        tl.store(out_ptr, loss)
        tl.store(out_ptr + 1, tl.sqrt(loss))

    @triton.jit
    def _grad_term(grad_ptr, p_ptr, l_ptr, n, per_frame, l_stride, coef_ptr, scale, BLOCK: tl.constexpr):
        k = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        ok = k < n
        d = tl.load(p_ptr + k, mask=ok, other=0.0) - \
            tl.load(l_ptr + (k // per_frame) * l_stride + k % per_frame, mask=ok, other=0.0)
        tl.store(grad_ptr + k, d * (2.0 * scale * tl.load(coef_ptr) / n), mask=ok)

    @triton.jit
    def _loss_grad_kernel(out_ptr, gout_ptr, ge, pe, le, ne, pfe, lse, gf, pf, lf, nf, pff, lsf,
                          gv, pv, lv, nv, pfv, lsv, HAS_E: tl.constexpr, HAS_F: tl.constexpr,
                          HAS_V: tl.constexpr, BLOCK: tl.constexpr):
        """d loss / d prediction = 2 coef (prediction - label) / n, times the loss's incoming gradient."""
        scale = tl.load(gout_ptr)
        if HAS_E:
            _grad_term(ge, pe, le, ne, pfe, lse, out_ptr + 5, scale, BLOCK)
        if HAS_F:
            _grad_term(gf, pf, lf, nf, pff, lsf, out_ptr + 6, scale, BLOCK)
        if HAS_V:
            _grad_term(gv, pv, lv, nv, pfv, lsv, out_ptr + 7, scale, BLOCK)


def _operands(pred: Tensor, label: Tensor) -> tuple:
    """(prediction, label, elements, elements a frame, the label's frame stride) of one term."""
    per_frame = pred[0].numel()
    return pred, label, pred.numel(), per_frame, label.stride(0) if label.shape[0] > 1 else per_frame


class FusedLoss(torch.autograd.Function):
    """(loss, out) of the energy, force and virial terms present; out holds the metrics (module docstring)."""

    @staticmethod
    def forward(ctx, consts: Tensor, lr: Tensor, has: tuple[bool, bool, bool],
                *tensors: Tensor) -> tuple[Tensor, Tensor]:
        preds, labels, found = [p.contiguous() for p in tensors[0:3]], tensors[3:6], tensors[6:9]
        out = consts.new_empty(8)
        flat = [x for p, lab, f in zip(preds, labels, found, strict=True) for x in (*_operands(p, lab), f)]
        # trip counts rounded up to powers of two: few compiled variants however many batch shapes the data has
        iters = [triton.next_power_of_2(triton.cdiv(p.numel(), BLOCK)) if h else 0
                 for p, h in zip(preds, has, strict=True)]
        _loss_kernel[(1,)](out, consts, lr, *flat, HAS_E=has[0], HAS_F=has[1], HAS_V=has[2],
                           ITERS_E=iters[0], ITERS_F=iters[1], ITERS_V=iters[2], BLOCK=BLOCK)
        ctx.has = has
        ctx.save_for_backward(out, *preds, *labels)
        ctx.mark_non_differentiable(out)
        return out[0], out

    @staticmethod
    def backward(ctx, gout: Tensor, _):
        out, *saved = ctx.saved_tensors
        ops = [_operands(p, lab) for p, lab in zip(saved[:3], saved[3:], strict=True)]
        grads = [torch.empty_like(op[0]) for op in ops]
        flat = [x for g, op in zip(grads, ops, strict=True) for x in (g, *op)]
        blocks = triton.cdiv(max(op[2] for op, h in zip(ops, ctx.has, strict=True) if h), BLOCK)
        _loss_grad_kernel[(blocks,)](out, gout.contiguous(), *flat, HAS_E=ctx.has[0], HAS_F=ctx.has[1],
                                     HAS_V=ctx.has[2], BLOCK=BLOCK)
        return None, None, None, *(g if h else None for g, h in zip(grads, ctx.has, strict=True)), \
            *([None] * 6)


def applies(loss, label: dict, find: dict, lr) -> bool:
    """For a loss whose terms `EnergyLoss.use_kernel` accepted (among e, f, v): the rate and the flags are device
    tensors (a graphed step's) and each frame's labels contiguous."""
    return (isinstance(lr, Tensor)
            and all(isinstance(find.get(KEYS[t][0]), Tensor) and label[KEYS[t][0]][0].is_contiguous()
                    for t in loss.active))


def constants(loss, natoms: int, device: torch.device) -> Tensor:
    """Per term (start, limit, 1/N^q or 1, the metric's 1/N or 1), then 0 and start_lr: made once a batch shape,
    before any capture (a host-to-device copy cannot be captured). Float64 on the device: a Python float argument
    would reach the kernel as a float32."""
    rows = [(loss.start[t], loss.limit[t], loss._size_scale(t, natoms), loss.metric_scale(t, natoms))
            for t in TERMS]
    return torch.tensor([x for row in rows for x in row] + [0.0, loss.start_lr], dtype=torch.float64,
                        device=device)


def fused_loss(loss, consts: Tensor, pred: dict, label: dict, find: dict, lr: Tensor):
    """`EnergyLoss.__call__`'s (loss, metrics) for losses of e, f, v terms only, lr and find flags tensors."""
    has = tuple(t in loss.active for t in TERMS)
    keys = [KEYS[t] if h else KEYS["e"] for t, h in zip(TERMS, has, strict=True)]  # absent: any valid operand
    tensors = [pred[p] for _, p in keys] + [label[lab] for lab, _ in keys] + [find[lab] for lab, _ in keys]
    value, out = FusedLoss.apply(consts, lr, has, *tensors)
    metrics = {f"rmse_{t}": out[2 + i] for i, t in enumerate(TERMS) if has[i]}
    metrics["rmse"] = out[1]
    return value, metrics
