"""Fused Triton kernels for compressed models: the se_e2_a descriptor and its derivative from the tables.

The compressed twin of `deeppot.kernels.descriptor` (same interface, same program layout): one program per centre
atom; for each neighbour-type block, the block's table (net b, or net (t_i, b) when two-sided) and the block's
slots in chunks of BLOCK rows. Per row: the normalised environment row (s, rx, ry, rz), then the interval of s,
a gather of its 6 x M1 quintic coefficients and a Horner scheme for G(s) (and G'(s) in the gradient kernel), with
DeePMD-kit 3.2.0's linear extrapolation outside [lower, extrapolate*upper] (`deeppot.model.tabulate.table_lookup`
is the PyTorch twin). No GEMMs: the embedding net is gone, which is the point of compression.

- `compressed_descriptor_t`: T_i = sum_j R_ij^T G(s_ij) / nnei (n, 4, M1);
- `compressed_pair_grad`: dE/dr_ij (n, nnei, 3) from dE/dT;
- `compressed_pair_stage`: the `deeppot.infer.evaluate` pair stage (the fitting net in PyTorch between them).
Tests: tests/compress/test_kernels.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from deeppot.kernels import embedding
from deeppot.kernels.descriptor import two_kernel_stage
from deeppot.kernels.env_rows import env_args
from deeppot.model import analytic

BLOCK = 16  # slots per chunk: 16 x 4 warps measured fastest on an H100 (run13, benchmarks/compress_tiles.py)
NUM_WARPS = 4

if embedding.triton is not None:
    import triton
    import triton.language as tl

    from deeppot.kernels.env_rows import _env_row_grad, _env_rows, _store_pair_grad, _t_bar_rows

    @triton.jit
    def _table_rows(info_ptr, k, s):
        """Per row, the table row of s in net k's table, the offset tau within its interval and the distance beyond
        the tabulated range (linear extrapolation there).

        info (nnets, 8) = lower, upper, max, step, step1, K0 = floor((upper-lower)/step), last interval, first row
        of the net's table in the concatenated tables (nrows, 6*M1).
        """
        at = info_ptr + k * 8
        lower, upper, top = tl.load(at), tl.load(at + 1), tl.load(at + 2)
        step, step1, k0, last = tl.load(at + 3), tl.load(at + 4), tl.load(at + 5), tl.load(at + 6)
        first_row = tl.load(at + 7).to(tl.int64)
        inside1 = s < upper
        below = s < lower
        above = s >= top
        idx = tl.where(inside1, tl.floor((s - lower) / step), k0 + tl.floor((s - upper) / step1))
        idx = tl.minimum(tl.maximum(tl.where(below, 0.0, tl.where(above, last, idx)), 0.0), last)
        tau = tl.where(inside1, s - (idx * step + lower), s - ((idx - k0) * step1 + upper))
        tau = tl.where(below, 0.0, tl.where(above, top - ((last - k0) * step1 + upper), tau))
        beyond = tl.where(below, s - lower, tl.where(above, s - top, 0.0))
        return first_row + idx.to(tl.int64), tau, beyond

    @triton.jit
    def _table_jet(table_ptr, info_ptr, k, s, live, col, col_ok, M1: tl.constexpr):
        """G(s) and G'(s) of BLOCK rows from net k's table: (BLOCK, M1P) each."""
        rows, tau, beyond = _table_rows(info_ptr, k, s)
        ok = live[:, None] & col_ok[None, :]
        c = table_ptr + rows[:, None] * (6 * M1) + col[None, :] * 6
        # Horner from a5 down, each coefficient loaded as it is needed (fewer live registers than six tiles)
        t = tau[:, None]
        a = tl.load(c + 5, mask=ok, other=0.0)
        g, dg = a, 5.0 * a
        a = tl.load(c + 4, mask=ok, other=0.0)
        g, dg = g * t + a, dg * t + 4.0 * a
        a = tl.load(c + 3, mask=ok, other=0.0)
        g, dg = g * t + a, dg * t + 3.0 * a
        a = tl.load(c + 2, mask=ok, other=0.0)
        g, dg = g * t + a, dg * t + 2.0 * a
        a = tl.load(c + 1, mask=ok, other=0.0)
        g, dg = g * t + a, dg * t + a
        g = g * t + tl.load(c, mask=ok, other=0.0)
        return g + dg * beyond[:, None], dg

    @triton.jit
    def _compressed_t_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, table_ptr, info_ptr, t_ptr, nnei,
                             nstat, M1: tl.constexpr, M1P: tl.constexpr, NTYPES: tl.constexpr,
                             ONE_SIDE: tl.constexpr, BLOCK: tl.constexpr, MAX_SEL: tl.constexpr):
        centre = tl.program_id(0).to(tl.int64)
        ctype = tl.load(type_ptr + centre)
        col = tl.arange(0, M1P)
        col_ok = col < M1
        zero = (col * 0).to(rij_ptr.dtype.element_ty)
        t0, t1, t2, t3 = zero, zero, zero, zero
        for b in range(NTYPES):
            k = b if ONE_SIDE else ctype + b * NTYPES
            start = tl.load(starts_ptr + b)
            length = tl.load(starts_ptr + b + 1) - start
            for j0 in range(0, MAX_SEL, BLOCK):
                if j0 < length:
                    rows = j0 + tl.arange(0, BLOCK)
                    live = rows < length
                    s, rx, ry, rz = _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype, start + rows, live, nnei,
                                              nstat)[:4]
                    g = _table_jet(table_ptr, info_ptr, k, s, live, col, col_ok, M1)[0]
                    t0 += tl.sum(s[:, None] * g, axis=0)
                    t1 += tl.sum(rx[:, None] * g, axis=0)
                    t2 += tl.sum(ry[:, None] * g, axis=0)
                    t3 += tl.sum(rz[:, None] * g, axis=0)
        scale = tl.load(geo_ptr + 3)
        out = t_ptr + centre * 4 * M1 + col
        tl.store(out, t0 * scale, mask=col_ok)
        tl.store(out + M1, t1 * scale, mask=col_ok)
        tl.store(out + 2 * M1, t2 * scale, mask=col_ok)
        tl.store(out + 3 * M1, t3 * scale, mask=col_ok)

    @triton.jit
    def _compressed_grad_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, table_ptr, info_ptr, tbar_ptr,
                                grad_ptr, nnei, nstat, M1: tl.constexpr, M1P: tl.constexpr, NTYPES: tl.constexpr,
                                ONE_SIDE: tl.constexpr, BLOCK: tl.constexpr, MAX_SEL: tl.constexpr):
        # t_bar arrives divided by nnei: dE/dR_j = t_bar G_j^T, plus dE/ds_j = (R_j t_bar) . G'_j on column 0
        centre = tl.program_id(0).to(tl.int64)
        ctype = tl.load(type_ptr + centre)
        col = tl.arange(0, M1P)
        col_ok = col < M1
        tb0, tb1, tb2, tb3 = _t_bar_rows(tbar_ptr, centre, col, col_ok, M1)
        for b in range(NTYPES):
            k = b if ONE_SIDE else ctype + b * NTYPES
            start = tl.load(starts_ptr + b)
            length = tl.load(starts_ptr + b + 1) - start
            for j0 in range(0, MAX_SEL, BLOCK):
                if j0 < length:
                    rows = j0 + tl.arange(0, BLOCK)
                    live = rows < length
                    slot = start + rows
                    s, rx, ry, rz, x, y, z, inv, w, dw, st = _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype,
                                                                         slot, live, nnei, nstat)
                    g, dg = _table_jet(table_ptr, info_ptr, k, s, live, col, col_ok, M1)
                    q0, q1, q2, q3 = _env_row_grad(g, dg, s, rx, ry, rz, tb0, tb1, tb2, tb3)
                    _store_pair_grad(grad_ptr, stat_ptr, st, centre, slot, live, nnei, nstat, x, y, z, inv, w, dw,
                                     q0, q1, q2, q3)


def unfusable_reason(model, device: torch.device) -> str | None:
    """Why the compressed kernels cannot evaluate `model` on `device`, or None when they can."""
    d = model.descriptor
    if not d.compressed:
        return "the model is not compressed"
    if not embedding.triton_available(device):
        return "they need Triton and a CUDA device (or TRITON_INTERPRET=1 on a CPU)"
    if not all(d.tables.tabulated(k) for k in range(d.tables.nnets)):
        return "some embedding nets have no table"
    if not analytic.supports(model):
        return f"the fitting activation {model.fitting.activation_function!r} has no hand-written derivative"
    if d.dtype not in (torch.float32, torch.float64):
        return f"descriptor precision {d.dtype}"
    return None


def packed_tables(tables, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
    """All nets' tables as one (nrows, 6*M1) array and per net (lower, upper, max, step, step1, K0, last interval,
    first row) (nnets, 8), in the descriptor precision. Cached on the tables object (made once, outside any
    CUDA-graph capture); the lookup constants come from the same stored info as the PyTorch twin's."""
    key = (dtype, device)
    cache = tables.__dict__.setdefault("_packed", {})
    if key not in cache:
        data = [tables.data(k) for k in range(tables.nnets)]
        rows, info = 0, []
        for k, table in enumerate(data):
            lower, upper, top, step, step1 = tables.info_values[k][:5]
            info.append([lower, upper, top, step, step1, float(int((upper - lower) / step)),
                         float(table.shape[0] - 1), float(rows)])
            rows += table.shape[0]
        cache[key] = (torch.cat(data).to(device=device, dtype=dtype).contiguous(),
                      torch.tensor(info, dtype=dtype, device=device))
    return cache[key]


@functools.cache
def _max_sel(sel: tuple[int, ...]) -> int:
    return max(sel)


def _launch_args(d, rij: Tensor, center_type: Tensor) -> tuple[list, dict]:
    tensors = [*env_args(d, rij, center_type), *packed_tables(d.tables, d.dtype, rij.device)]
    m1 = d.neuron[-1]
    meta = dict(M1=m1, M1P=triton.next_power_of_2(m1), NTYPES=d.ntypes, ONE_SIDE=d.type_one_side, BLOCK=BLOCK,
                MAX_SEL=_max_sel(tuple(d.sel)), num_warps=NUM_WARPS)
    return tensors, meta


def compressed_descriptor_t(d, rij: Tensor, center_type: Tensor) -> Tensor:
    """T_i = sum_j R_ij^T G(s_ij) / nnei (n, 4, M1) from the tables; rij (n, nnei, 3) in the descriptor precision
    (padded slots: a vector beyond rcut), center_type (n,)."""
    tensors, meta = _launch_args(d, rij, center_type)
    n, nnei = rij.shape[:2]
    t_mat = rij.new_empty(n, 4, meta["M1"])
    _compressed_t_kernel[(n,)](*tensors, t_mat, nnei, d.davg.numel(), **meta)
    return t_mat


def compressed_pair_grad(d, rij: Tensor, center_type: Tensor, t_bar: Tensor) -> Tensor:
    """dE/dr_ij (n, nnei, 3) from dE/dT (n, 4, M1), T as in `compressed_descriptor_t`."""
    tensors, meta = _launch_args(d, rij, center_type)
    n, nnei = rij.shape[:2]
    grad = torch.empty_like(rij)
    t_bar = (t_bar / nnei).contiguous()
    _compressed_grad_kernel[(n,)](*tensors, t_bar, grad, nnei, d.davg.numel(), **meta)
    return grad


def compressed_pair_stage(model, rij: Tensor, nlist_loc: Tensor, center_type: Tensor, neighbor_type: Tensor,
                          sync_free: bool = False) -> tuple[Tensor, Tensor]:
    """Atomic energies (n,) float64 and dE/dr_ij (n, nnei, 3) of a compressed model: the `deeppot.infer.evaluate`
    pair stage (as `deeppot.kernels.descriptor.fused_pair_stage`; sync_free runs every fitting net on every atom)."""
    return two_kernel_stage(model, rij, center_type, neighbor_type, sync_free, compressed_descriptor_t,
                            compressed_pair_grad)
