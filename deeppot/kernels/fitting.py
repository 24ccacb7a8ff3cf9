"""The fitting nets' value and input gradient with a hand-written backward: the fused twin of
`deeppot.model.analytic.fit_with_input_grad` on its training branch (every type's net on every atom at once).

Force training differentiates dE_i/dD_i with respect to the weights, so autograd runs the backward of a backward
through the fitting nets: ~110 small kernels a water step for three 240-wide layers, most of them elementwise (the
float64 step's profile, run 102). Here the forward pass, the input-gradient pass and their joint backward are
written out layer by layer: one cuBLAS batched GEMM per product (every net at once) and one Triton kernel for each
layer's elementwise work (bias, tanh, timestep, skip; in the backward the second derivative of tanh), ~45 launches.
The products may instead run as Triton GEMMs with that work as their epilogue (`Products` subclasses in
`deeppot.kernels.fitting_gemm`: `TrainingProducts` in GPU training, forward and backward, `FusedProducts` in
inference).

Per hidden layer (h -> h', widths n -> m), with S DeePMD's skip (same width: h; doubled: [h, h]; else none) and
idt 1 where the layer has no timestep:
    forward          a = tanh(h W + b),           h' = S(h) + idt a
    input gradient   gz = g' idt (1 - a^2),       g = gz W^T + S^T(g'),     from g_L = W_out^T down to g_0 = dE/dD
Reversing the input-gradient pass (bottom up) gives, from dL/dg:  dgz = dg W,  dL/dW += dg^T gz,
dg' = S(dg) + dgz idt (1 - a^2); reversing the forward pass (top down), from dh' and those dgz:
dz = idt (dh' - 2 dgz g' a)(1 - a^2),  dL/db = sum dz,  dL/didt = sum dh' a + dgz g' (1 - a^2),  dL/dW += h^T dz,
dh = dz W^T + S^T(dh').
Supported (`supports`): tanh hidden layers and a linear output of width 1; anything else keeps the reference.
Tests: tests/kernels/test_fitting.py (GPU, or Triton's interpreter on a CPU) against autograd through the reference.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from deeppot.kernels.embedding import triton, triton_available
from deeppot.model import analytic

BLOCK = 1024  # elements a program
NONE, SAME, HALVES, TILE = 0, 1, 2, 3  # how a skip source of width n_src adds to a value of width m

if triton is not None:
    import triton.language as tl

    from deeppot.kernels.activation import _tanh

    @triton.jit
    def _index(total, rows, m, BLOCK: tl.constexpr):
        """This program's flat elements of a (nets, rows, m) tensor, their validity, net, row and column."""
        i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        net = i // (rows * m)
        rest = i - net * rows * m
        return i, i < total, net, rest // m, rest % m

    @triton.jit
    def _add_skip(v, src_ptr, net, row, col, ok, s_net, s_row, n_src, MODE: tl.constexpr):
        """v + the skip's share from src (nets, rows, n_src) at strides (s_net, s_row, 1): src[col] (SAME),
        src[col] + src[col + n_src/2] (HALVES: S^T of a doubling skip), src[col % n_src] (TILE: the doubling)."""
        at = src_ptr + net * s_net + row * s_row
        if MODE == 1:
            v += tl.load(at + col, mask=ok, other=0.0)
        if MODE == 2:
            v += tl.load(at + col, mask=ok, other=0.0) + tl.load(at + col + n_src // 2, mask=ok, other=0.0)
        if MODE == 3:
            v += tl.load(at + col % n_src, mask=ok, other=0.0)
        return v

    @triton.jit
    def _timestep(idt_ptr, net, col, ok, m, HAS_IDT: tl.constexpr):
        return tl.load(idt_ptr + net * m + col, mask=ok & HAS_IDT, other=1.0)

    @triton.jit
    def _layer_kernel(u_ptr, b_ptr, idt_ptr, h_ptr, out_ptr, total, rows, m, h_net, h_row, n_in,
                      SKIP: tl.constexpr, HAS_IDT: tl.constexpr, WRITE_OUT: tl.constexpr, BLOCK: tl.constexpr):
        """a = tanh(u + b) over u = h W, stored in place; h' = S(h) + idt a to out (WRITE_OUT: else h' is a)."""
        i, ok, net, row, col = _index(total, rows, m, BLOCK)
        a = _tanh(tl.load(u_ptr + i, mask=ok, other=0.0) + tl.load(b_ptr + net * m + col, mask=ok, other=0.0))
        tl.store(u_ptr + i, a, mask=ok)
        if WRITE_OUT:
            out = _add_skip(a * _timestep(idt_ptr, net, col, ok, m, HAS_IDT), h_ptr, net, row, col, ok,
                            h_net, h_row, n_in, SKIP)
            tl.store(out_ptr + i, out, mask=ok)

    @triton.jit
    def _grad_kernel(u_ptr, src_ptr, a_ptr, idt_ptr, gz_ptr, total, rows, m, s_net, s_row, n_src,
                     HAS_U: tl.constexpr, SKIP: tl.constexpr, HAS_IDT: tl.constexpr, BLOCK: tl.constexpr):
        """g' = u + S^T(src) (u = gz W^T of the layer above, kept in place; without u, g' = src) and
        gz = g' idt (1 - a^2)."""
        i, ok, net, row, col = _index(total, rows, m, BLOCK)
        g = tl.load(u_ptr + i, mask=ok & HAS_U, other=0.0)
        g = _add_skip(g, src_ptr, net, row, col, ok, s_net, s_row, n_src, SKIP)
        if HAS_U:
            tl.store(u_ptr + i, g, mask=ok)
        a = tl.load(a_ptr + i, mask=ok, other=0.0)
        tl.store(gz_ptr + i, g * _timestep(idt_ptr, net, col, ok, m, HAS_IDT) * (1.0 - a * a), mask=ok)

    @triton.jit
    def _grad_bar_kernel(dgz_ptr, src_ptr, a_ptr, idt_ptr, out_ptr, total, rows, m, s_net, s_row, n_src,
                         SKIP: tl.constexpr, HAS_IDT: tl.constexpr, BLOCK: tl.constexpr):
        """dg' = S(dg) + dgz idt (1 - a^2), dg = src."""
        i, ok, net, row, col = _index(total, rows, m, BLOCK)
        a = tl.load(a_ptr + i, mask=ok, other=0.0)
        v = tl.load(dgz_ptr + i, mask=ok, other=0.0) * _timestep(idt_ptr, net, col, ok, m, HAS_IDT) * (1.0 - a * a)
        tl.store(out_ptr + i, _add_skip(v, src_ptr, net, row, col, ok, s_net, s_row, n_src, SKIP), mask=ok)

    @triton.jit
    def _value_bar_kernel(u_ptr, src_ptr, dgz_ptr, g_ptr, a_ptr, idt_ptr, zt_ptr, total, rows, m,
                          s_net, s_row, n_src, g_net, g_row, HAS_U: tl.constexpr, SKIP: tl.constexpr,
                          HAS_IDT: tl.constexpr, WRITE_H: tl.constexpr, BLOCK: tl.constexpr):
        """dh' = u + S^T(src) (u = dz W^T of the layer above; kept in place when WRITE_H), then dz and the
        timestep's per-element gradient t into zt (2 or, without a timestep, 1, nets, rows, m: [dz, t])."""
        i, ok, net, row, col = _index(total, rows, m, BLOCK)
        hbar = tl.load(u_ptr + i, mask=ok & HAS_U, other=0.0)
        hbar = _add_skip(hbar, src_ptr, net, row, col, ok, s_net, s_row, n_src, SKIP)
        if WRITE_H:
            tl.store(u_ptr + i, hbar, mask=ok)
        a = tl.load(a_ptr + i, mask=ok, other=0.0)
        dgz_g = tl.load(dgz_ptr + i, mask=ok, other=0.0) * \
            tl.load(g_ptr + net * g_net + row * g_row + col, mask=ok, other=0.0)
        d = 1.0 - a * a
        idt = _timestep(idt_ptr, net, col, ok, m, HAS_IDT)
        tl.store(zt_ptr + i, idt * (hbar - 2.0 * dgz_g * a) * d, mask=ok)
        if HAS_IDT:
            tl.store(zt_ptr + total + i, hbar * a + dgz_g * d, mask=ok)


def supports(nets) -> bool:
    """Whether a fitting net stack has the shape the kernels implement (tanh hidden layers, one output)."""
    return (triton is not None and nets.activation_function == "tanh" and nets.out_dim == 1
            and len(nets.layers) >= 2 and nets.dtype in (torch.float32, torch.float64))


def _skip_mode(n_in: int, m: int) -> int:
    return SAME if m == n_in else TILE if m == 2 * n_in else NONE


def _transposed(mode: int) -> int:
    return HALVES if mode == TILE else mode


def _launch(kernel, out: Tensor, *args, **flags) -> None:
    _, rows, m = out.shape
    total = out.numel()
    kernel[(triton.cdiv(total, BLOCK),)](*args, total, rows, m, *flags.pop("tail", ()), BLOCK=BLOCK, **flags)


def _strides(t: Tensor) -> tuple[int, int, int]:
    """(net stride, row stride, width) of a (nets or 1, rows, width) operand with unit column stride."""
    assert t.stride(-1) == 1 or t.shape[-1] == 1
    return t.stride(0) if t.shape[0] > 1 else 0, t.stride(1) if t.shape[1] > 1 else 0, t.shape[-1]


def _layer(u: Tensor, b: Tensor, idt: Tensor | None, h: Tensor, mode: int) -> Tensor:
    """a = tanh(u + b) in place of u; returns h' = S(h) + idt a (u itself when there is neither)."""
    write = mode != NONE or idt is not None
    out = torch.empty_like(u) if write else u
    _launch(_layer_kernel, u, u, b, u if idt is None else idt, h, out, tail=_strides(h), SKIP=mode,
            HAS_IDT=idt is not None, WRITE_OUT=write)
    return out


def _grad(u: Tensor | None, src: Tensor, mode: int, a: Tensor, idt: Tensor | None) -> tuple[Tensor, Tensor]:
    """(g', gz) of a layer: g' = u + S^T(src) (in u), or src itself without u."""
    gz = torch.empty_like(a)
    _launch(_grad_kernel, gz, a if u is None else u, src, a, a if idt is None else idt, gz, tail=_strides(src),
            HAS_U=u is not None, SKIP=mode, HAS_IDT=idt is not None)
    return (src if u is None else u), gz


class Products:
    """A layer's products and elementwise work, cuBLAS then one Triton kernel each way: `_forward`'s default.
    split: a long k split into parts (the first layer's product, `analytic.split_k_matmul`).
    `deeppot.kernels.fitting_gemm.FusedProducts` is the one-kernel twin for inference on many atoms."""

    def __init__(self, split: bool = True):
        self.split = split

    def layer(self, h: Tensor, w: Tensor, b: Tensor, idt: Tensor | None, mode: int) -> tuple[Tensor, Tensor]:
        """(a, h') of a hidden layer."""
        u = self.product(h, w)
        return u, _layer(u, b, idt, h, mode)  # a in place of u

    def grad(self, gz: Tensor | None, w: Tensor | None, src: Tensor, mode: int, a: Tensor,
             idt: Tensor | None) -> tuple[Tensor, Tensor]:
        """(g', gz') of a layer from the layer above's gz and W (None at the top: g' = src)."""
        return _grad(None if gz is None else self.product_t(gz, w), src, mode, a, idt)

    def product_t(self, gz: Tensor, w: Tensor) -> Tensor:
        """gz W^T."""
        return torch.bmm(gz, w.transpose(1, 2))

    def product(self, x: Tensor, w: Tensor) -> Tensor:
        """x W, no epilogue (x: one net's rows, broadcast, or each net's)."""
        return analytic.split_k_matmul(x, w) if self.split else x @ w

    def grad_bar(self, dg: Tensor, w: Tensor, mode: int, a: Tensor, idt: Tensor | None) -> tuple[Tensor, Tensor]:
        """The backward's dgz = dg W and dg' = S(dg) + dgz idt (1 - a^2) of a layer."""
        dgz = self.product(dg, w)
        return dgz, _grad_bar(dgz, dg, mode, a, idt)

    def layer_grads(self, dg: Tensor, gz: Tensor, h: Tensor, zt: Tensor) -> tuple[Tensor, Tensor]:
        """A layer's dL/dW = dg^T gz + h^T dz (the backward's two passes' shares; h: one net or all) and zt's sums
        over rows (2 or 1, nets, 1, m): dL/db, dL/didt (zt = [dz, t], `_value_bar`)."""
        dz = zt[0]
        dw = torch.bmm(dg.transpose(1, 2), gz).baddbmm_(h.expand(dz.shape[0], -1, -1).transpose(1, 2), dz)
        return dw, zt.sum(2, keepdim=True)

    def backward_products(self) -> Products:
        """The products `FittingJet`'s backward takes: cuBLAS's by default."""
        return Products()


def _forward(x: Tensor, hidden: list, w_out: Tensor, b_out: Tensor, products: Products | None = None):
    """Value (nets, P, 1), g_0 (nets, P, n0), and per hidden layer (h, a, g', gz) for the backward."""
    ops = products or Products()
    h, acts = x, []
    for w, b, idt in hidden:
        a, out = ops.layer(h, w, b, idt, _skip_mode(h.shape[-1], w.shape[-1]))
        acts.append((h, a))
        h = out
    value = torch.baddbmm(b_out, h, w_out)
    gz, w_above, src, mode, kept = None, None, w_out.transpose(1, 2).expand(-1, h.shape[1], -1), SAME, []
    for (w, _, idt), (h_in, a) in zip(reversed(hidden), reversed(acts), strict=True):
        g, gz = ops.grad(gz, w_above, src, mode, a, idt)
        kept.append((h_in, a, g, gz))
        w_above, src, mode = w, g, _transposed(_skip_mode(h_in.shape[-1], w.shape[-1]))
    return value, _plus_skip(ops.product_t(gz, w_above), src), kept[::-1], h


def _plus_skip(u: Tensor, src: Tensor) -> Tensor:
    """u + S^T(src) below the first layer (a first layer with a skip: rare, so the reference's PyTorch)."""
    skip = analytic._skip_transposed(src, u.shape[-1], True)
    return u if skip is None else u + skip


def _grad_bar(dgz: Tensor, src: Tensor, mode: int, a: Tensor, idt: Tensor | None) -> Tensor:
    out = torch.empty_like(a)
    _launch(_grad_bar_kernel, out, dgz, src, a, a if idt is None else idt, out, tail=_strides(src), SKIP=mode,
            HAS_IDT=idt is not None)
    return out


def _value_bar(u: Tensor | None, src: Tensor, mode: int, dgz: Tensor, g: Tensor, a: Tensor,
               idt: Tensor | None, write_h: bool) -> tuple[Tensor, Tensor]:
    """(dh', zt): zt (2, nets, P, m) = [dz, t] ((1, nets, P, m) = [dz] without a timestep), so that the sums over
    P are contiguous (nets, m) rows, the gradients' own layout (no copy by autograd's accumulation)."""
    zt = a.new_empty(2 if idt is not None else 1, *a.shape)
    g_net, g_row, _ = _strides(g)
    _launch(_value_bar_kernel, a, a if u is None else u, src, dgz, g, a, a if idt is None else idt, zt,
            tail=(*_strides(src), g_net, g_row), HAS_U=u is not None, SKIP=mode, HAS_IDT=idt is not None,
            WRITE_H=write_h and u is not None)
    return (src if u is None else u), zt


def _backward_input_pass(g0_bar: Tensor, hidden: list, kept: list, ops: Products) -> tuple[list, list, Tensor]:
    """Reverse of the input-gradient pass, bottom up: per layer dgz and the dg below it (dg^T gz is dL/dW's share
    of this pass, taken with the value pass's); then dg_L."""
    dg, dgzs, dgs = g0_bar, [], []
    for (w, _, idt), (h, a, _, _) in zip(hidden, kept, strict=True):
        dgs.append(dg)
        dgz, dg = ops.grad_bar(dg, w, _skip_mode(h.shape[-1], w.shape[-1]), a, idt)
        dgzs.append(dgz)
    return dgzs, dgs, dg


def _backward_value_pass(y_bar: Tensor, w_out: Tensor, hidden: list, kept: list, dgzs: list, dgs: list,
                         ops: Products):
    """Reverse of the forward pass, top down: dL/dW (both passes' shares), dL/db, dL/didt per layer and dL/dx."""
    u, src, mode, grads = None, y_bar * w_out.transpose(1, 2), SAME, []
    for (w, _, idt), (h, a, g, gz), dgz, dg in zip(*(reversed(v) for v in (hidden, kept, dgzs, dgs)), strict=True):
        own = _skip_mode(h.shape[-1], w.shape[-1])
        hbar, zt = _value_bar(u, src, mode, dgz, g, a, idt, write_h=own != NONE)
        dw, sums = ops.layer_grads(dg, gz, h, zt)  # sums (2 or 1, nets, 1, m): dL/db, dL/didt
        grads.append((dw, sums[0], None if idt is None else sums[1]))
        u = ops.product_t(zt[0], w)
        src, mode = hbar, _transposed(own)
    return grads[::-1], _plus_skip(u, src)


class FittingJet(torch.autograd.Function):
    """(value, dvalue/dx) of every net on x, differentiable once: the backward is written out (module docstring)."""

    @staticmethod
    def forward(ctx, x: Tensor, timesteps: tuple[bool, ...], products: Products | None,
                *params: Tensor) -> tuple[Tensor, Tensor]:
        hidden, w_out, b_out = _unpack(timesteps, params)
        value, g0, kept, h_top = _forward(x, hidden, w_out, b_out, products)
        ctx.timesteps, ctx.x_nets = timesteps, x.shape[0]
        ctx.products = (products or Products()).backward_products()
        ctx.save_for_backward(h_top, *params, *(t for layer in kept for t in layer))
        return value, g0

    @staticmethod
    @once_differentiable
    def backward(ctx, y_bar: Tensor, g0_bar: Tensor):
        h_top, *saved = ctx.saved_tensors
        nparams = sum(3 if t else 2 for t in ctx.timesteps) + 2
        hidden, w_out, _ = _unpack(ctx.timesteps, saved[:nparams])
        kept = [saved[i:i + 4] for i in range(nparams, len(saved), 4)]
        dgzs, dgs, dg_top = _backward_input_pass(g0_bar.contiguous(), hidden, kept, ctx.products)
        dw_out = dg_top.sum(1).unsqueeze(-1).baddbmm_(h_top.transpose(1, 2), y_bar)
        grads, x_bar = _backward_value_pass(y_bar, w_out, hidden, kept, dgzs, dgs, ctx.products)
        if ctx.x_nets == 1 and x_bar.shape[0] > 1:
            x_bar = x_bar.sum(0, keepdim=True)
        flat = [t for dw, db, didt in grads for t in (dw, db, *(() if didt is None else (didt,)))]
        return x_bar, None, None, *flat, dw_out, y_bar.sum(1, keepdim=True)


def _unpack(timesteps: tuple[bool, ...], params: tuple[Tensor, ...]):
    """[(W, b, idt or None)] per hidden layer, W_out, b_out from the flat parameter list."""
    hidden, i = [], 0
    for has_idt in timesteps:
        hidden.append((params[i], params[i + 1], params[i + 2] if has_idt else None))
        i += 3 if has_idt else 2
    return hidden, params[i], params[i + 1]


def _flat_params(nets, k: int | None = None) -> tuple[tuple[bool, ...], list[Tensor]]:
    """Which hidden layers have a timestep, and the parameters in `_unpack`'s order: the parameters themselves (no
    view between them and autograd in training), or net k's slices (nets 1)."""
    timesteps = tuple(layer.idt is not None for layer in nets.layers[:-1])
    params = [p for layer in nets.layers for p in (layer.matrix, layer.bias, layer.idt) if p is not None]
    return timesteps, params if k is None else [p[k:k + 1] for p in params]


def fit_all(nets, x: Tensor, k: int | None, products: Products | None = None) -> tuple[Tensor, Tensor]:
    """`analytic.fit_with_input_grad`'s contract: every net on x (1 or nets, P, n_in) through `FittingJet`
    where the kernels run; the reference otherwise (one net, another shape or activation, no Triton). products:
    the forward's (`Products` by default)."""
    if k is not None or x.dim() != 3 or not supports(nets) or x.dtype != nets.dtype or \
            not triton_available(x.device):
        return analytic.fit_with_input_grad(nets, x, k)
    timesteps, params = _flat_params(nets)
    return FittingJet.apply(x, timesteps, products, *params)


def atomic_energy_and_grad(fitting, desc: Tensor, atype: Tensor, type_rows=None,
                           products: Products | None = None) -> tuple[Tensor, Tensor]:
    """`analytic.atomic_energy_and_grad` with the nets through `fit_all` (the model's `fit_fn` in GPU training)."""
    return analytic.atomic_energy_and_grad(fitting, desc, atype, type_rows,
                                           functools.partial(fit_all, products=products))
