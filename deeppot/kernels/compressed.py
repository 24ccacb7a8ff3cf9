"""Fused Triton kernels for compressed models: the se_e2_a descriptor and its derivative from the tables.

The compressed twin of `deeppot.kernels.descriptor` (same interface): a program takes ATOMS consecutive centres
(`TILES`, per precision and kernel; one atom is a tile too) and walks each neighbour-type block in chunks of SLOTS
slots of every one of them (the layout of `deeppot.kernels.atom_tiles`), reading the block's table (net b, or net
(t_i, b) when two-sided: per row then). Per row: the normalised environment row (s, rx, ry, rz), then the interval
of s, a gather of its 6 x M1 quintic coefficients and a Horner scheme for G(s) (and G'(s) in the gradient kernel),
with DeePMD-kit 3.2.0's linear extrapolation outside [lower, extrapolate*upper]
(`deeppot.model.tabulate.table_lookup` is the PyTorch twin). No GEMMs: the embedding net is gone, which is the
point of compression.

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
from deeppot.kernels.reach import Reach, add_tail, tile_tops
from deeppot.model import analytic

# (ATOMS, SLOTS, warps) of each kernel per precision, measured fastest on an H100 (98,304 water atoms with the
# frame's statistics, benchmarks/compress_tiles.py: runs 47-49, then runs 131-132 with fewer warps: one warp on 4
# slots takes the kernels alone 25-36% (float32) and ~42% (float64) below the four-warp tiles kept before; float32
# T on 2 slots: 3.05 -> 2.61 ms alone, 12.31 -> 12.18 ms a whole call, runs 134-135); (1, 16, 4) is one atom a
# program in chunks of 16
TILES = {torch.float32: {"t": (1, 2, 1), "grad": (1, 4, 1)}, torch.float64: {"t": (1, 4, 1), "grad": (1, 4, 1)}}

if embedding.triton is not None:
    import triton
    import triton.language as tl

    from deeppot.kernels.atom_tiles import _tile, _tile_t_bar
    from deeppot.kernels.env_rows import _env_rows, _store_pair_grad

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
    def _slot_sum(x, ATOMS: tl.constexpr, SLOTS: tl.constexpr):
        """(ATOMS * SLOTS, M) rows -> (ATOMS, M): the sum over each atom's slots."""
        m: tl.constexpr = x.shape[1]
        return tl.sum(tl.reshape(x, (ATOMS, SLOTS, m)), axis=1)

    @triton.jit
    def _slot_rows(x, ATOMS: tl.constexpr, SLOTS: tl.constexpr):
        """A per-row value of a chunk as (ATOMS, SLOTS, 1), to scale the (ATOMS, SLOTS, M1P) view of its rows."""
        return tl.reshape(x, (ATOMS, SLOTS))[:, :, None]

    @triton.jit
    def _compressed_t_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, top_ptr, table_ptr, info_ptr, t_ptr, n,
                             nnei, nstat, M1: tl.constexpr, M1P: tl.constexpr, NTYPES: tl.constexpr,
                             ONE_SIDE: tl.constexpr, ATOMS: tl.constexpr, SLOTS: tl.constexpr,
                             MAX_SEL: tl.constexpr):
        # R_ij^T G accumulates per chunk row; the sum over slots comes once, at the end (summing every chunk made
        # the float32 kernel 9.1 instead of 5.4 ms at one atom x 16 slots, run 49)
        first, _, centre, real, ctype, lane = _tile(type_ptr, n, ATOMS, SLOTS)
        col = tl.arange(0, M1P)
        col_ok = col < M1
        zero = tl.zeros((ATOMS * SLOTS, M1P), dtype=rij_ptr.dtype.element_ty)
        t0, t1, t2, t3 = zero, zero, zero, zero
        for b in range(NTYPES):
            k = b if ONE_SIDE else tl.maximum(ctype, 0) + b * NTYPES  # two-sided: per row, by its centre's type
            start = tl.load(starts_ptr + b)
            top = tl.load(top_ptr + tl.program_id(0) * NTYPES + b)
            for j0 in range(0, MAX_SEL, SLOTS):
                if j0 < top:
                    live = real & (j0 + lane < top)
                    s, rx, ry, rz = _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype, start + j0 + lane, live,
                                              nnei, nstat)[:4]
                    g = _table_jet(table_ptr, info_ptr, k, s, live, col, col_ok, M1)[0]
                    t0 += s[:, None] * g
                    t1 += rx[:, None] * g
                    t2 += ry[:, None] * g
                    t3 += rz[:, None] * g
        atom = first + tl.arange(0, ATOMS)
        out = t_ptr + (atom * 4 * M1)[:, None] + col[None, :]
        ok = (atom < n)[:, None] & col_ok[None, :]
        scale = tl.load(geo_ptr + 3)
        tl.store(out, _slot_sum(t0, ATOMS, SLOTS) * scale, mask=ok)
        tl.store(out + M1, _slot_sum(t1, ATOMS, SLOTS) * scale, mask=ok)
        tl.store(out + 2 * M1, _slot_sum(t2, ATOMS, SLOTS) * scale, mask=ok)
        tl.store(out + 3 * M1, _slot_sum(t3, ATOMS, SLOTS) * scale, mask=ok)

    @triton.jit
    def _tile_row_grad(g, dg, s, rx, ry, rz, tb0, tb1, tb2, tb3, ATOMS: tl.constexpr, SLOTS: tl.constexpr):
        """`deeppot.kernels.env_rows._env_row_grad` for the rows of a tile, each against its own atom's t_bar
        rows tb_c (ATOMS, M1P): the chunk viewed as (ATOMS, SLOTS, M1P)."""
        m: tl.constexpr = g.shape[1]
        g = tl.reshape(g, (ATOMS, SLOTS, m))
        dg = tl.reshape(dg, (ATOMS, SLOTS, m))
        u0, u1, u2, u3 = tb0[:, None, :], tb1[:, None, :], tb2[:, None, :], tb3[:, None, :]
        a = _slot_rows(s, ATOMS, SLOTS) * u0 + _slot_rows(rx, ATOMS, SLOTS) * u1 \
            + _slot_rows(ry, ATOMS, SLOTS) * u2 + _slot_rows(rz, ATOMS, SLOTS) * u3
        rows: tl.constexpr = ATOMS * SLOTS
        # one reduction of the four products together: 4-7% faster than four tl.sum (run 51)
        q0, q1, q2, q3 = tl.reduce((g * u0 + a * dg, g * u1, g * u2, g * u3), 2, _add4)
        return tl.reshape(q0, (rows,)), tl.reshape(q1, (rows,)), tl.reshape(q2, (rows,)), tl.reshape(q3, (rows,))

    @triton.jit
    def _add4(a0, a1, a2, a3, b0, b1, b2, b3):
        """The combine function of four sums reduced together."""
        return a0 + b0, a1 + b1, a2 + b2, a3 + b3

    @triton.jit
    def _compressed_grad_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, top_ptr, table_ptr, info_ptr,
                                tbar_ptr, grad_ptr, n, nnei, nstat, M1: tl.constexpr, M1P: tl.constexpr,
                                NTYPES: tl.constexpr, ONE_SIDE: tl.constexpr, ATOMS: tl.constexpr,
                                SLOTS: tl.constexpr, MAX_SEL: tl.constexpr):
        # t_bar arrives divided by nnei: dE/dR_j = t_bar G_j^T, plus dE/ds_j = (R_j t_bar) . G'_j on column 0
        first, _, centre, real, ctype, lane = _tile(type_ptr, n, ATOMS, SLOTS)
        col = tl.arange(0, M1P)
        col_ok = col < M1
        tb0, tb1, tb2, tb3 = _tile_t_bar(tbar_ptr, first, n, col, col_ok, ATOMS, M1)
        for b in range(NTYPES):
            k = b if ONE_SIDE else tl.maximum(ctype, 0) + b * NTYPES
            start = tl.load(starts_ptr + b)
            top = tl.load(top_ptr + tl.program_id(0) * NTYPES + b)
            for j0 in range(0, MAX_SEL, SLOTS):
                if j0 < top:
                    live = real & (j0 + lane < top)
                    slot = start + j0 + lane
                    s, rx, ry, rz, x, y, z, inv, w, dw, st = _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype,
                                                                         slot, live, nnei, nstat)
                    g, dg = _table_jet(table_ptr, info_ptr, k, s, live, col, col_ok, M1)
                    q0, q1, q2, q3 = _tile_row_grad(g, dg, s, rx, ry, rz, tb0, tb1, tb2, tb3, ATOMS, SLOTS)
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


def _launch_args(d, rij: Tensor, center_type: Tensor, kernel: str, reach: Reach | None = None
                 ) -> tuple[list, dict, Tensor]:
    atoms, slots, warps = TILES[rij.dtype][kernel]
    tops = tile_tops(d, reach, center_type, atoms, 0)
    tensors = [*env_args(d, rij, center_type, tops), *packed_tables(d.tables, d.dtype, rij.device)]
    m1 = d.neuron[-1]
    meta = dict(M1=m1, M1P=triton.next_power_of_2(m1), NTYPES=d.ntypes, ONE_SIDE=d.type_one_side, ATOMS=atoms,
                SLOTS=slots, MAX_SEL=_max_sel(tuple(d.sel)), num_warps=warps)
    return tensors, meta, tops


def compressed_descriptor_t(d, rij: Tensor, center_type: Tensor, reach: Reach | None = None) -> Tensor:
    """T_i = sum_j R_ij^T G(s_ij) / nnei (n, 4, M1) from the tables; rij (n, nnei, 3) in the descriptor precision
    (padded slots: a vector beyond rcut), center_type (n,); with `reach` (`deeppot.kernels.reach`) the kernel
    skips the padding after each tile's furthest neighbour and adds what it would have added."""
    tensors, meta, tops = _launch_args(d, rij, center_type, "t", reach)
    n, nnei = rij.shape[:2]
    t_mat = rij.new_empty(n, 4, meta["M1"])
    _compressed_t_kernel[(len(tops),)](*tensors, t_mat, n, nnei, d.davg.numel(), **meta)
    if reach is not None:
        add_tail(d, t_mat, center_type, tops, meta["ATOMS"], 0, reach.last)
    return t_mat


def compressed_pair_grad(d, rij: Tensor, center_type: Tensor, t_bar: Tensor, reach: Reach | None = None
                         ) -> Tensor:
    """dE/dr_ij (n, nnei, 3) from dE/dT (n, 4, M1), T as in `compressed_descriptor_t` (zero on skipped slots)."""
    tensors, meta, tops = _launch_args(d, rij, center_type, "grad", reach)
    n, nnei = rij.shape[:2]
    grad = torch.zeros_like(rij)
    t_bar = (t_bar / nnei).contiguous()
    _compressed_grad_kernel[(len(tops),)](*tensors, t_bar, grad, n, nnei, d.davg.numel(), **meta)
    return grad


def compressed_pair_stage(model, rij: Tensor, nlist_loc: Tensor, center_type: Tensor, neighbor_type: Tensor,
                          precision: str = "tf32x3", sync_free: bool = False) -> tuple[Tensor, Tensor]:
    """Atomic energies (n,) float64 and dE/dr_ij (n, nnei, 3) of a compressed model: the `deeppot.infer.evaluate`
    pair stage (as `deeppot.kernels.descriptor.fused_pair_stage`; sync_free runs every fitting net on every atom)."""
    return two_kernel_stage(model, rij, center_type, neighbor_type, sync_free, compressed_descriptor_t,
                            compressed_pair_grad, precision)
