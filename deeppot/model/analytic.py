"""Energy and dE/dr_ij with the first derivative written out by hand: the fast path of `forward_pairs`.

The reference path gets dE/dr_ij from autograd with create_graph, so force training back-propagates through a
double backward: hundreds of tiny kernels. Here the derivative is part of the forward computation, by the chain
rule through each stage (spec §4.2-4.4, §5.2), so training needs only a first-order backward:
- fitting net: value and input gradient dE_i/dD_i (a hand-written backward pass through its layers);
- descriptor: dE/dT from dE/dD (D = T^T T<), then dE/dR_ij and, through the embedding net's derivative
  G'(s) (forward-mode: one tangent, since the embedding input is the scalar s), dE/ds_ij;
- environment matrix: dE/dr_ij from dE/dR_ij through the normalisation and the switch function.
`tests/model/test_analytic.py` checks it against the autograd reference (values, forces, training gradients).
"""

from __future__ import annotations

import math
from itertools import accumulate
from typing import NamedTuple

import torch
from torch import Tensor

from deeppot.model.descriptor import exclusion_mask
from deeppot.model.env_mat import smooth_switch, smooth_switch_derivative
from deeppot.model.fitting import TypeRows, own_type_rows
from deeppot.model.network import StackedMLP, activation, skip_connection
from deeppot.model.slots import SlotLayout, list_sel, slot_stats, weighted_rows

_C = math.sqrt(2.0 / math.pi)


def _d_gelu(z: Tensor, a: Tensor) -> Tensor:
    t = torch.tanh(_C * (z + 0.044715 * z**3))
    return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * _C * (1.0 + 3 * 0.044715 * z * z)


def _d_silu(z: Tensor, a: Tensor) -> Tensor:
    s = torch.sigmoid(z)
    return s + z * s * (1.0 - s)


# derivative of each activation, from its input z and output a = act(z)
ACTIVATION_DERIVATIVES = {
    "tanh": lambda z, a: 1.0 - a * a,
    "gelu": _d_gelu,
    "gelu_tf": _d_gelu,
    "relu": lambda z, a: (z > 0).to(z.dtype),
    "relu6": lambda z, a: ((z > 0) & (z < 6)).to(z.dtype),
    "softplus": lambda z, a: torch.sigmoid(z),
    "sigmoid": lambda z, a: a * (1.0 - a),
    "silu": _d_silu,
    "linear": lambda z, a: torch.ones_like(z),
    "none": lambda z, a: torch.ones_like(z),
}


def supports(model) -> bool:
    return all(name in ACTIVATION_DERIVATIVES for name in
               (model.descriptor.activation_function, model.fitting.activation_function))


def _skip_transposed(g_out: Tensor, n_in: int, resnet: bool) -> Tensor | None:
    """The skip connection's share of d(out)/d(in) applied to g_out; None when there is no skip."""
    if resnet and g_out.shape[-1] == n_in:
        return g_out
    if resnet and g_out.shape[-1] == 2 * n_in:
        return g_out[..., :n_in] + g_out[..., n_in:]
    return None


def _params(nets: StackedMLP, k: int | None):
    """(W, b, idt, act, d_act, resnet) per layer: of net k, or of all nets stacked (k None)."""
    for layer in nets.layers:
        if k is None:
            w, b, idt = layer.matrix, layer.bias, layer.idt
        else:
            w, b, idt = layer.matrix[k], layer.bias[k, 0], None if layer.idt is None else layer.idt[k, 0]
        name = layer.activation_function
        yield w, b, idt, activation(name), ACTIVATION_DERIVATIVES[name], layer.resnet


def embed_with_tangent(nets: StackedMLP, k: int, s: Tensor) -> tuple[Tensor, Tensor]:
    """G(s) and dG/ds for net k; s (..., 1) -> (..., M1) twice (forward mode: the input is a scalar).

    The first layer's input is the scalar s with tangent 1, so its products are broadcasts, not GEMMs. Under
    torch.compile the value and its tangent then go through each layer as one stacked operand (2, ..., n): one
    GEMM a layer forward and two backward instead of twice that, and Inductor writes the stack from the activation
    kernel (water float32 compiled step 1.02 -> 0.94 ms, copper 0.61 -> 0.56; run 70). Eager, the stack costs
    copies and its slices' backward zero-filled buffers (1.79 -> 1.90 ms), so value and tangent stay apart there.
    """
    layers = _params(nets, k)
    w, b, idt, act, d_act, resnet = next(layers)
    z = s * w[0] + b  # s @ w for an input of width 1; d(s @ w)/ds = w[0]
    x, dx = _jet_out(s, torch.ones_like(s), z, w[0], idt, act, d_act, resnet)
    if torch.compiler.is_compiling():
        jet = torch.stack([x, dx])
        for w, b, idt, act, d_act, resnet in layers:
            zu = jet @ w  # (2, ..., m): x @ w and dx @ w in one GEMM
            jet = torch.stack(_jet_out(jet[0], jet[1], zu[0] + b, zu[1], idt, act, d_act, resnet))
        return jet[0], jet[1]
    for w, b, idt, act, d_act, resnet in layers:
        x, dx = _jet_out(x, dx, x @ w + b, dx @ w, idt, act, d_act, resnet)
    return x, dx


def _jet_out(x: Tensor, dx: Tensor, z: Tensor, u: Tensor, idt, act, d_act, resnet: bool) -> tuple[Tensor, Tensor]:
    """A layer's output and its tangent from its pre-activation z and the tangent's product u = dx @ W."""
    a = act(z)
    da = d_act(z, a) * u
    if idt is not None:
        a, da = a * idt, da * idt
    return skip_connection(x, a, resnet), skip_connection(dx, da, resnet)


SPLIT_K_BLOCKS = 792  # most thread blocks of a float32 GEMM split along k (six 32 x 32 tiles an SM of an H100)


def k_parts(rows: int, k: int, m: int, nets: int, dtype: torch.dtype) -> int:
    """How many parts to split a long inner dimension k into, so that a float32 GEMM with few output tiles
    (DeePMD's 1600-wide descriptor into a 240-wide layer, a frame of atoms) keeps the GPU busy: cuBLAS's batched
    SIMT GEMM gives each 32 x 32 output tile one thread block walking all of k. A water float32 step 1.431 ->
    1.353 ms, the alloy 1.263 -> 1.189; float64 (tensor-core DGEMM) 1.625 -> 1.635, so it keeps one part
    (benchmarks/results run 115)."""
    tiles = nets * -(-rows // 32) * -(-m // 32)
    if k < 1024 or dtype != torch.float32:
        return 1
    return next((s for s in (8, 4, 2) if k % s == 0 and s * tiles <= SPLIT_K_BLOCKS and k // s >= 128), 1)


def split_k_matmul(a: Tensor, w: Tensor) -> Tensor:
    """a (nets or 1, P, k) @ w (nets, k, m) as the sum of `k_parts` partial products."""
    nets, k, m = w.shape
    s = k_parts(a.shape[-2], k, m, nets, w.dtype)
    if s == 1:  # bmm of the expanded input: matmul's broadcast copies it (float64 step +0.012 ms, run 117)
        return torch.bmm(a.expand(nets, -1, -1), w)
    return (a.unflatten(-1, (s, k // s)).transpose(-3, -2) @ w.unflatten(-2, (s, k // s))).sum(-3)


def split_k_matmul_t(g: Tensor, w: Tensor) -> Tensor:
    """g (nets, P, m) @ w^T for w (nets, k, m), one product a block of w's k rows, so that autograd's product for
    g's gradient (dg_in @ w, over the long k) is split along k as in `split_k_matmul`."""
    nets, k, m = w.shape
    s = k_parts(g.shape[-2], k, m, nets, w.dtype)
    if s == 1:
        return g @ w.transpose(-1, -2)
    parts = g.unsqueeze(-3) @ w.unflatten(-2, (s, k // s)).transpose(-1, -2)  # (nets, s, P, k/s)
    return parts.transpose(-3, -2).flatten(-2)


def fit_with_input_grad(nets: StackedMLP, x: Tensor, k: int | None) -> tuple[Tensor, Tensor]:
    """Fitting net value (..., 1) and d(value)/dx (..., n_in); all nets stacked when k is None.

    Under torch.compile, every net at once in float32, the products over a long k are split along it
    (`split_k_matmul`); eager, this reference keeps plain products (the GPU's eager step runs
    `deeppot.kernels.fitting`, which splits them itself; graphed inference of small systems gained nothing from
    the split, copper's 864 atoms lost 3%: run 119)."""
    layers = list(_params(nets, k))
    split = k is None and x.dim() == 3 and torch.compiler.is_compiling()
    saved = []
    h = x
    for w, b, idt, act, _, resnet in layers:
        z = (split_k_matmul(h, w) if split else h @ w) + b
        a = act(z)
        saved.append((h, z, a))
        h = skip_connection(h, a if idt is None else a * idt, resnet)
    value = h
    g = torch.ones_like(value)
    for (w, _, idt, _, d_act, resnet), (h_in, z, a) in zip(reversed(layers), reversed(saved), strict=True):
        gz = g * d_act(z, a) if idt is None else g * idt * d_act(z, a)
        g_in = split_k_matmul_t(gz, w) if split else gz @ w.transpose(-1, -2)
        skip = _skip_transposed(g, h_in.shape[-1], resnet)
        g = g_in if skip is None else g_in + skip
    return value, g


def atomic_energy_and_grad(fitting, desc: Tensor, atype: Tensor, type_rows: TypeRows | None = None,
                           fit=fit_with_input_grad) -> tuple[Tensor, Tensor]:
    """E_i (nf, nloc) float64 and dE_i/dD_i (nf, nloc, ndesc) in the fitting precision, every type's net on every
    atom (static shapes), or with `type_rows` (frames of one system) each net on its own type's atoms. Inference runs
    each net on its own type's atoms too, reading and writing their rows by index
    (`deeppot.kernels.descriptor.energy_and_t_bar`). fit: `fit_with_input_grad` or its fused twin for the
    all-nets branch (`deeppot.kernels.fitting.fit_all`)."""
    x = desc.to(fitting.dtype)
    bias = (fitting.bias_atom_e + fitting.out_bias)[atype.clamp(min=0)]
    if fitting.at_once(x) and type_rows is not None:  # each net on its own atoms: fewer rows, as many kernels
        value, grad = fit(fitting.nets, type_rows.gather(x), None)
        energy = type_rows.own(value).reshape(atype.shape)
        return energy.to(torch.float64) + bias, type_rows.own(grad).reshape(x.shape)
    if fitting.at_once(x):  # every type's net on every atom at once, then each atom picks its own: few kernels
        value, grad = fit(fitting.nets, x.reshape(1, -1, x.shape[-1]), None)
        energy = own_type_rows(value, atype).reshape(atype.shape)
        return energy.to(torch.float64) + bias, own_type_rows(grad, atype).reshape(x.shape)
    energy = torch.zeros(atype.shape, dtype=torch.float64, device=x.device)
    grad = torch.zeros_like(x)
    for t in range(fitting.ntypes):
        value, g = fit_with_input_grad(fitting.nets, x, t)
        is_t = atype == t
        energy = torch.where(is_t, value[..., 0].to(torch.float64), energy)
        grad = torch.where(is_t[..., None], g, grad)
    return energy + bias, grad


def _embed_net(d, k: int, s: Tensor) -> tuple[Tensor, Tensor]:
    """G and dG/ds of net k: from its table when the descriptor is compressed (and the net tabulated)."""
    if d.tables is not None and d.tables.tabulated(k):
        return d.tables.embed(k, s)
    return embed_with_tangent(d.nets, k, s)


def embed_all(d, rr: Tensor, center_type: Tensor, layout: SlotLayout | None = None,
              nlist: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """G and dG/ds for every slot (nf, nloc, nnei, M1): per neighbour-type block, per centre type if two-sided.

    The plain-PyTorch reference of `deeppot.kernels.embedding.embed_all` (one fused Triton kernel each way);
    a compressed descriptor reads its tables instead (`deeppot.model.tabulate`). layout: a trimmed list's
    (`deeppot.model.slots`). nlist: unused here (every slot is embedded); the fused kernels skip padding with it.
    """
    starts = [0, *accumulate(list_sel(d.sel, layout))]
    g_parts, dg_parts = [], []
    for b in range(d.ntypes):
        s = rr[:, :, starts[b]:starts[b + 1], :1]
        if d.type_one_side:
            g, dg = _embed_net(d, b, s)
        else:  # net (a, b) for centre type a: every centre through every net, selected by type (static shapes)
            g = dg = None
            for a in range(d.ntypes):
                g_a, dg_a = _embed_net(d, a + b * d.ntypes, s)
                is_a = (center_type == a)[..., None, None]
                g = g_a if g is None else torch.where(is_a, g_a, g)
                dg = dg_a if dg is None else torch.where(is_a, dg_a, dg)
        g_parts.append(g)
        dg_parts.append(dg)
    return torch.cat(g_parts, dim=2), torch.cat(dg_parts, dim=2)


class EnvRows(NamedTuple):
    """The normalised environment matrix of every slot and the geometry its derivative needs.

    rr (nf, nloc, nnei, 4) normalised (and exclusion-masked) rows; x (..., 3) pair vectors in the descriptor
    precision; a, b, c (..., 1) the factors of dE/dr_ij = x (q_0 a + (q_xyz . x) b) + q_xyz c for q = dE/dR~ (see
    `radial_factors`); scale = 1/dstd of the centre's type (..., nnei, 4); keep (..., 1) the exclusion mask or
    None.
    """

    rr: Tensor
    x: Tensor
    a: Tensor
    b: Tensor
    c: Tensor
    scale: Tensor
    keep: Tensor | None


def radial_factors(r: Tensor, inv: Tensor, w: Tensor, dw: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(a, b, c) for R~ = w [1/(r+p), r_ij/(r+p)^2], with inv = 1/(r+p), w the switch and dw = dw/dr:
    a = d(w inv)/dr / r, b = d(w inv^2)/dr / r, c = w inv^2. Computed with the rows, so that the derivative's
    pass (differentiated again in training) is a few products instead of the ~20 kernels of the expression."""
    inv2 = inv * inv
    return (dw * inv - w * inv2) / r, (dw - 2.0 * w * inv) * inv2 / r, w * inv2


def env_rows(d, rij: Tensor, nlist: Tensor, center_type: Tensor, neighbor_type: Tensor,
             layout: SlotLayout | None = None) -> EnvRows:
    """Environment matrix rows of every slot (spec §4.2), keeping the pieces of its derivative."""
    x = rij.to(d.dtype)
    mask = (nlist >= 0)[..., None]
    r = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    inv = 1.0 / (r + d.env_protection)
    w, dw = smooth_switch(r, d.rcut_smth, d.rcut), smooth_switch_derivative(r, d.rcut_smth, d.rcut)
    w, dw = w * mask, dw * mask
    raw = torch.cat([w * inv, x * (w * inv * inv)], dim=-1)
    davg, dstd = slot_stats(d, layout)
    scale = 1.0 / dstd[center_type]
    keep = exclusion_mask(center_type, nlist, neighbor_type, d.excluded)[..., None].to(x.dtype) \
        if d.exclude_types else None
    rr = (raw - davg[center_type]) * scale
    if keep is not None:
        rr = rr * keep
    return EnvRows(rr, x, *radial_factors(r, inv, w, dw), scale, keep)


def t_and_descriptor(rr: Tensor, layout: SlotLayout | None, g: Tensor, nsel: int, m2: int
                     ) -> tuple[Tensor, Tensor]:
    """T (`t_matrix`) and D = T^T T< (nf, nloc, M1 * m2)."""
    t_mat = t_matrix(rr, layout, g, nsel)
    return t_mat, descriptor_from_t(t_mat, m2)


def t_matrix(rr: Tensor, layout: SlotLayout | None, g: Tensor, nsel: int) -> Tensor:
    """T = sum_j R_j^T G_j / nsel (nf, nloc, 4, M1), a stand-in's row counted for the slots it stands for."""
    return torch.einsum("fnjc,fnjm->fncm", weighted_rows(rr, layout), g) / nsel


def descriptor_from_t(t_mat: Tensor, m2: int) -> Tensor:
    """D = T^T T< per atom: t_mat (..., 4, M1) -> (..., M1 * m2)."""
    return torch.einsum("...cm,...ck->...mk", t_mat, t_mat[..., :m2]).reshape(*t_mat.shape[:-2], -1)


def t_bar_from_desc_grad(d_desc: Tensor, t_mat: Tensor) -> Tensor:
    """dE/dT from dE/dD (..., M1, m2) for D = T^T T<: both factors of T contribute. -> (..., 4, M1)."""
    m2 = d_desc.shape[-1]
    t_bar = torch.einsum("...mk,...ck->...cm", d_desc, t_mat[..., :m2])
    return t_bar + torch.nn.functional.pad(torch.einsum("...am,...ca->...cm", d_desc, t_mat),
                                           (0, t_mat.shape[-1] - m2))


def pair_grad(d, rows: EnvRows, g: Tensor, dg: Tensor, t_bar: Tensor) -> Tensor:
    """dE/dr_ij (nf, nloc, nnei, 3) from dE/dT (nf, nloc, 4, M1), with T = sum_j R_j^T G(s_j) / nnei.

    Through R_j directly and through s_j = R_j0 inside G (dg = dG/ds), then the normalisation and the switch.
    """
    # divided after the products: t_bar / nnei before them made Inductor (torch 2.11, CUDA) compute wrong forces
    # (run 80, `benchmarks/results/run76/bisect_compiled.py`; eager and the CPU build were right)
    nnei = sum(d.sel)
    r_bar = torch.einsum("fncm,fnjm->fnjc", t_bar, g) / nnei
    s_bar = (torch.einsum("fncm,fnjc->fnjm", t_bar, rows.rr) * dg).sum(-1, keepdim=True) / nnei
    r_bar = r_bar + torch.nn.functional.pad(s_bar, (0, 3))
    if rows.keep is not None:
        r_bar = r_bar * rows.keep
    q = r_bar * rows.scale  # dE/dR~ (the un-normalised rows)
    q0, qv = q[..., :1], q[..., 1:]
    return rows.x * (q0 * rows.a + (qv * rows.x).sum(-1, keepdim=True) * rows.b) + qv * rows.c


def energy_and_pair_grad(model, rij: Tensor, nlist: Tensor, center_type: Tensor, neighbor_type: Tensor,
                         layout: SlotLayout | None = None, type_rows: TypeRows | None = None
                         ) -> tuple[Tensor, Tensor]:
    """Atomic energies (nf, nloc) float64 and g = dE/dr_ij (nf, nloc, nnei, 3), all differentiable.

    layout: a trimmed list's (`deeppot.model.slots`); its stand-in slots count for the padding they stand for.
    type_rows: each type's atoms as its fitting net's rows, for frames of one system (`atomic_energy_and_grad`).
    """
    d = model.descriptor
    rows = model.env_fn(d, rij, nlist, center_type, neighbor_type, layout)
    g, dg = model.embed_fn(d, rows.rr, center_type, layout, nlist)
    t_mat, desc = model.descriptor_fn(rows.rr, layout, g, sum(d.sel), d.axis_neuron)
    energy, d_desc = model.fit_fn(model.fitting, desc.to(model.fitting.dtype), center_type, type_rows)
    t_bar = model.t_bar_fn(d_desc.to(d.dtype).reshape(*t_mat.shape[:2], t_mat.shape[-1], -1), t_mat)
    return energy, model.pair_grad_fn(d, rows, g, dg, t_bar)
