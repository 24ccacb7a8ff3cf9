"""Fused Triton kernels for compressed models: the se_e2_a descriptor and its derivative from the tables.

The compressed twin of `deeppot.kernels.descriptor` (same interface), in three steps:
- `_rows_kernel`, one slot a lane: each slot's normalised environment row (s, rx, ry, rz) and where s falls in its
  net's table (net b, or net (t_i, b) when two-sided): the row of its interval, the offset tau in it and the
  distance beyond the table (DeePMD-kit 3.2.0's linear extrapolation outside [lower, extrapolate*upper]);
- the table kernels: a program takes ATOMS consecutive centres (`TILES`, per precision and kernel; one atom is a
  tile too) and walks each neighbour-type block in chunks of SLOTS slots of every one of them (the layout of
  `deeppot.kernels.atom_tiles`); per row, a gather of its 6 x M1 quintic coefficients and a Horner scheme for G(s)
  (and G'(s) in the gradient kernel). No GEMMs: the embedding net is gone, which is the point of compression;
- `deeppot.kernels.env_rows.back_to_pairs`, one slot a lane: dE/dR_ij to dE/dr_ij.
Computing the per-row work once, one row a lane, rather than in every thread of the tile that shares the row, took
the float32 T kernel's loop from 383 to 264 instructions (sm_90 SASS). `deeppot.model.tabulate.table_lookup` is the
PyTorch twin of the lookup.

- `compressed_descriptor_t`: T_i = sum_j R_ij^T G(s_ij) / nnei (n, 4, M1);
- `compressed_pair_grad`: dE/dr_ij (n, nnei, 3) from dE/dT;
- `compressed_pair_stage`: the `deeppot.infer.evaluate` pair stage (the fitting net between them).
Tests: tests/compress/test_kernels.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from deeppot.kernels import atom_tiles, descriptor, embedding
from deeppot.kernels.descriptor import two_kernel_stage
from deeppot.kernels.env_rows import LANE_BLOCK, back_to_pairs, env_args
from deeppot.kernels.reach import Reach, add_tail, tile_tops
from deeppot.kernels.scatter import back_and_scatter
from deeppot.model import analytic

# (ATOMS, SLOTS, warps) of each kernel per precision, measured fastest on an H100 (98,304 water atoms with the
# frame's statistics, benchmarks/compress_tiles.py: runs 47-49, then runs 131-132 with fewer warps: one warp on 4
# slots took the kernels alone 25-36% (float32) and ~42% (float64) below the four-warp tiles kept before; runs
# 134-135: float32 T on 2 slots). With the rows from `_rows_kernel` (runs 157-159, H200, each kernel alone with its
# rows, fresh and frame statistics): float64's gradient on 2 slots, 5.48-5.96 ms against 5.84-6.34 on 4; the
# other three keep their tiles (float32 gradient 3.03-3.14 on 4 slots against 3.07-3.26 on 2)
TILES = {torch.float32: {"t": (1, 2, 1), "grad": (1, 4, 1)}, torch.float64: {"t": (1, 4, 1), "grad": (1, 2, 1)}}
# `_rows_kernel` passes a table row's number as a value of the descriptor's precision: exact up to 2^24 in float32
_MAX_ROWS = {torch.float32: 2**24, torch.float64: 2**53}

if embedding.triton is not None:
    import triton
    import triton.language as tl

    from deeppot.kernels.atom_tiles import _tile, _tile_t_bar, _tile_tail
    from deeppot.kernels.descriptor_matrix import _descriptor_rows
    from deeppot.kernels.env_rows import _env_rows, _load_four, _row_at, _slots_either_visits, _store_four

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
    def _rows_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, t_top_ptr, grad_top_ptr, info_ptr, rows_ptr, n,
                     nnei, nstat, NTYPES: tl.constexpr, ONE_SIDE: tl.constexpr, T_ATOMS: tl.constexpr,
                     GRAD_ATOMS: tl.constexpr, BLOCK: tl.constexpr):
        """Per slot, once for both kernels and lane-parallel: the normalised environment row (s, rx, ry, rz) and
        where s falls in its net's table (tau, beyond, table row as a float), stored by `_row_at`; only the slots a
        table kernel visits (either kernel's tiles, each with its tops)."""
        i, centre, slot, b, ok, ctype = _slots_either_visits(type_ptr, starts_ptr, t_top_ptr, grad_top_ptr, n, nnei,
                                                             NTYPES, T_ATOMS, GRAD_ATOMS, False, BLOCK)
        k = b if ONE_SIDE else ctype + b * NTYPES
        s, rx, ry, rz = _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype, slot, ok, nnei, nstat)[:4]
        row, tau, beyond = _table_rows(info_ptr, k, s)
        _store_four(rows_ptr, i, s, rx, ry, rz, ok, 8)
        at = rows_ptr + _row_at(i, 8)
        tl.store(at + 128, tau, mask=ok)
        tl.store(at + 160, beyond, mask=ok)
        tl.store(at + 192, row.to(s.dtype), mask=ok)

    @triton.jit
    def _load_rows(rows_ptr, centre, slot, live, nnei):
        """A chunk's rows from `_rows_kernel`: s, rx, ry, rz, tau, beyond, table row; 0 where not live."""
        i = centre * nnei + slot
        s, rx, ry, rz = _load_four(rows_ptr, i, live, 8)
        at = rows_ptr + _row_at(i, 8)
        return (s, rx, ry, rz, tl.load(at + 128, mask=live, other=0.0), tl.load(at + 160, mask=live, other=0.0),
                tl.load(at + 192, mask=live, other=0.0).to(tl.int32))

    @triton.jit
    def _table_jet(table_ptr, row, tau, beyond, live, col, col_ok, M1: tl.constexpr):
        """G(s) and G'(s) of BLOCK rows: (BLOCK, M1P) each. A table row holds its 6 x M1 coefficients by power
        (`packed_tables`), so each power's columns are contiguous: one vector load a few columns."""
        ok = live[:, None] & col_ok[None, :]
        c = table_ptr + row[:, None] * (6 * M1) + col[None, :]
        # Horner from a5 down, each coefficient loaded as it is needed (fewer live registers than six tiles), and
        # G' by the derivative's own recurrence on Horner's partial values (dp = dp t + p): one multiply-add a
        # power, where multiplying each coefficient by its power took two
        t = tau[:, None]
        dg = tl.load(c + 5 * M1, mask=ok, other=0.0)
        g = dg * t + tl.load(c + 4 * M1, mask=ok, other=0.0)
        for power in tl.static_range(3, -1, -1):
            dg = dg * t + g
            g = g * t + tl.load(c + power * M1, mask=ok, other=0.0)
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
    def _compressed_t_kernel(rows_ptr, type_ptr, geo_ptr, starts_ptr, top_ptr, table_ptr, t_ptr, n, nnei,
                             M1: tl.constexpr, M1P: tl.constexpr, NTYPES: tl.constexpr, ATOMS: tl.constexpr,
                             SLOTS: tl.constexpr, MAX_SEL: tl.constexpr, tail_ptr, first_ptr, tail_rows, desc_ptr,
                             pos_ptr, TAIL: tl.constexpr = False, DESC: tl.constexpr = False,
                             HAS_POS: tl.constexpr = False, M2: tl.constexpr = 16, MP: tl.constexpr = 128,
                             KP: tl.constexpr = 16):
        # R_ij^T G accumulates per chunk row; the sum over slots comes once, at the end (summing every chunk made
        # the float32 kernel 9.1 instead of 5.4 ms at one atom x 16 slots, run 49)
        first, _, centre, real, _, lane = _tile(type_ptr, n, ATOMS, SLOTS)
        col = tl.arange(0, M1P)
        col_ok = col < M1
        zero = tl.zeros((ATOMS * SLOTS, M1P), dtype=rows_ptr.dtype.element_ty)
        t0, t1, t2, t3 = zero, zero, zero, zero
        for b in range(NTYPES):
            start = tl.load(starts_ptr + b)
            top = tl.load(top_ptr + tl.program_id(0) * NTYPES + b)
            for j0 in range(0, MAX_SEL, SLOTS):
                if j0 < top:
                    live = real & (j0 + lane < top)
                    s, rx, ry, rz, tau, beyond, row = _load_rows(rows_ptr, centre, start + j0 + lane, live, nnei)
                    g = _table_jet(table_ptr, row, tau, beyond, live, col, col_ok, M1)[0]
                    t0 += s[:, None] * g
                    t1 += rx[:, None] * g
                    t2 += ry[:, None] * g
                    t3 += rz[:, None] * g
        atom = first + tl.arange(0, ATOMS)
        out = t_ptr + (atom * 4 * M1)[:, None] + col[None, :]
        real_atom = atom < n
        ok = real_atom[:, None] & col_ok[None, :]
        scale = tl.load(geo_ptr + 3)
        t0, t1, t2, t3 = (_slot_sum(t0, ATOMS, SLOTS), _slot_sum(t1, ATOMS, SLOTS), _slot_sum(t2, ATOMS, SLOTS),
                          _slot_sum(t3, ATOMS, SLOTS))
        if TAIL:  # `atom_tiles.FUSED_TAIL`
            t0 += _tile_tail(tail_ptr, type_ptr, top_ptr, first_ptr, tail_rows, atom, 0, col, col_ok, real_atom, M1,
                             NTYPES, True)
            t1 += _tile_tail(tail_ptr, type_ptr, top_ptr, first_ptr, tail_rows, atom, 1, col, col_ok, real_atom, M1,
                             NTYPES, True)
            t2 += _tile_tail(tail_ptr, type_ptr, top_ptr, first_ptr, tail_rows, atom, 2, col, col_ok, real_atom, M1,
                             NTYPES, True)
            t3 += _tile_tail(tail_ptr, type_ptr, top_ptr, first_ptr, tail_rows, atom, 3, col, col_ok, real_atom, M1,
                             NTYPES, True)
        tl.store(out, t0 * scale, mask=ok)
        tl.store(out + M1, t1 * scale, mask=ok)
        tl.store(out + 2 * M1, t2 * scale, mask=ok)
        tl.store(out + 3 * M1, t3 * scale, mask=ok)
        if DESC:  # as the atom tiles' T kernel: D from the T just stored
            tl.debug_barrier()
            rows = tl.load(pos_ptr + atom, mask=real_atom, other=0) if HAS_POS else atom
            _descriptor_rows(t_ptr, t_ptr, atom, real_atom, desc_ptr, rows, M1, M2, MP, KP, ATOMS, False)

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
    def _compressed_grad_kernel(rows_ptr, type_ptr, starts_ptr, top_ptr, table_ptr, tbar_ptr, n, nnei,
                                M1: tl.constexpr, M1P: tl.constexpr, NTYPES: tl.constexpr, ATOMS: tl.constexpr,
                                SLOTS: tl.constexpr, MAX_SEL: tl.constexpr):
        # with t_bar / nnei (`_tile_t_bar`): dE/dR_j = t_bar G_j^T, plus dE/ds_j = (R_j t_bar) . G'_j on column 0;
        # dE/dR_j replaces the row's (s, rx, ry, rz) in rows, and `back_to_pairs` takes it to dE/dr_ij
        first, _, centre, real, _, lane = _tile(type_ptr, n, ATOMS, SLOTS)
        col = tl.arange(0, M1P)
        col_ok = col < M1
        tb0, tb1, tb2, tb3 = _tile_t_bar(tbar_ptr, first, n, nnei, col, col_ok, ATOMS, M1)
        for b in range(NTYPES):
            start = tl.load(starts_ptr + b)
            top = tl.load(top_ptr + tl.program_id(0) * NTYPES + b)
            for j0 in range(0, MAX_SEL, SLOTS):
                if j0 < top:
                    live = real & (j0 + lane < top)
                    slot = start + j0 + lane
                    s, rx, ry, rz, tau, beyond, row = _load_rows(rows_ptr, centre, slot, live, nnei)
                    g, dg = _table_jet(table_ptr, row, tau, beyond, live, col, col_ok, M1)
                    q0, q1, q2, q3 = _tile_row_grad(g, dg, s, rx, ry, rz, tb0, tb1, tb2, tb3, ATOMS, SLOTS)
                    _store_four(rows_ptr, centre * nnei + slot, q0, q1, q2, q3, live, 8)


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
    rows = sum(d.tables.data(k).shape[0] for k in range(d.tables.nnets))
    if rows * 6 * d.neuron[-1] >= 2**31 or rows > _MAX_ROWS[d.dtype]:
        return f"tables of {rows} rows, more than the kernels address"
    return None


def packed_tables(tables, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
    """All nets' tables as one (nrows, 6*M1) array, each row's coefficients by power (a0 of every column, then a1,
    ...; the stored tables hold them by column), and per net (lower, upper, max, step, step1, K0, last interval,
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
        packed = torch.cat(data)
        by_power = packed.view(rows, -1, 6).transpose(1, 2).reshape(rows, -1)
        cache[key] = (by_power.to(device=device, dtype=dtype).contiguous(),
                      torch.tensor(info, dtype=dtype, device=device))
    return cache[key]


@functools.cache
def _max_sel(sel: tuple[int, ...]) -> int:
    return max(sel)


def table_rows(d, rij: Tensor, center_type: Tensor, reach: Reach | None = None) -> Tensor:
    """The environment row and table coordinates of every slot either kernel visits, `_rows_kernel`: what both
    kernels read (ceil(n nnei / 32), 8, 32), by `_row_at`."""
    n, nnei = rij.shape[:2]
    rows = rij.new_empty(triton.cdiv(n * nnei, 32), 8, 32)
    (t_atoms, _, _), (grad_atoms, _, _) = TILES[rij.dtype]["t"], TILES[rij.dtype]["grad"]
    t_tops, grad_tops = (tile_tops(d, reach, center_type, atoms, 0) for atoms in (t_atoms, grad_atoms))
    rij, types, stats, geo, starts = env_args(d, rij, center_type, None)[:5]
    info = packed_tables(d.tables, d.dtype, rij.device)[1]
    _rows_kernel[(triton.cdiv(n * nnei, LANE_BLOCK),)](rij, types, stats, geo, starts, t_tops, grad_tops, info,
                                                       rows, n, nnei, d.davg.numel(), NTYPES=d.ntypes,
                                                       ONE_SIDE=d.type_one_side, T_ATOMS=t_atoms,
                                                       GRAD_ATOMS=grad_atoms, BLOCK=LANE_BLOCK)
    return rows


def _launch(d, rij: Tensor, center_type: Tensor, kernel: str, reach: Reach | None, rows: Tensor | None
            ) -> tuple[Tensor, list, dict]:
    """The slots' rows (made here unless given), then the arguments `env_args` gives (the tiles' tops last) and the
    kernel's constants."""
    rows = table_rows(d, rij, center_type, reach) if rows is None else rows
    atoms, slots, warps = TILES[rij.dtype][kernel]
    args = env_args(d, rij, center_type, tile_tops(d, reach, center_type, atoms, 0))
    m1 = d.neuron[-1]
    meta = dict(M1=m1, M1P=triton.next_power_of_2(m1), NTYPES=d.ntypes, ATOMS=atoms, SLOTS=slots,
                MAX_SEL=_max_sel(tuple(d.sel)), num_warps=warps)
    return rows, args, meta


def compressed_descriptor_t(d, rij: Tensor, center_type: Tensor, reach: Reach | None = None,
                            rows: Tensor | None = None, desc: tuple[Tensor, Tensor | None] | None = None) -> Tensor:
    """T_i = sum_j R_ij^T G(s_ij) / nnei (n, 4, M1) from the tables; rij (n, nnei, 3) in the descriptor precision
    (padded slots: a vector beyond rcut), center_type (n,); with `reach` (`deeppot.kernels.reach`) the kernel
    skips the padding after each tile's furthest neighbour and adds what it would have added. `rows`: the slots'
    `table_rows`, if made already; `desc`: as `atom_tiles.descriptor_t`'s (the kernel writes D too)."""
    rows, (_, types, _, geo, starts, tops), meta = _launch(d, rij, center_type, "t", reach, rows)
    n, nnei = rij.shape[:2]
    t_mat = rij.new_empty(n, 4, meta["M1"])
    table = packed_tables(d.tables, d.dtype, rij.device)[0]
    extra = atom_tiles.epilogue_args(d, t_mat, reach, desc, meta, meta["M1"])
    _compressed_t_kernel[(len(tops),)](rows, types, geo, starts, tops, table, t_mat, n, nnei, **meta, **extra)
    if reach is not None and not meta.get("TAIL"):
        add_tail(d, t_mat, center_type, tops, meta["ATOMS"], 0, reach.last)
    return t_mat


def compressed_pair_grad(d, rij: Tensor, center_type: Tensor, t_bar: Tensor, reach: Reach | None = None,
                         rows: Tensor | None = None, into: tuple | None = None) -> Tensor | None:
    """dE/dr_ij (n, nnei, 3) from dE/dT (n, 4, M1), T as in `compressed_descriptor_t` (zero on skipped slots).
    `rows`, if given, are the slots' `table_rows`; the kernel overwrites their first four columns. `into`: as
    `atom_tiles.pair_grad_from_t_bar`'s."""
    rows, args, meta = _launch(d, rij, center_type, "grad", reach, rows)
    _, types, _, _, starts, tops = args
    n, nnei = rij.shape[:2]
    table = packed_tables(d.tables, d.dtype, rij.device)[0]
    t_bar = t_bar.contiguous()
    _compressed_grad_kernel[(len(tops),)](rows, types, starts, tops, table, t_bar, n, nnei, **meta)
    if into is not None:
        return back_and_scatter(d, args, rows, meta["ATOMS"], False, *into)
    return back_to_pairs(d, args, rows, meta["ATOMS"], per_type=False)


def compressed_pair_stage(model, rij: Tensor, nlist_loc: Tensor, center_type: Tensor, neighbor_type: Tensor,
                          precision: str = "tf32x3", sync_free: bool = False,
                          type_rows: list[Tensor] | None = None, scatter_into: tuple | None = None
                          ) -> tuple[Tensor, Tensor | None]:
    """Atomic energies (n,) float64 and dE/dr_ij (n, nnei, 3) of a compressed model: the `deeppot.infer.evaluate`
    pair stage (as `deeppot.kernels.descriptor.fused_pair_stage`: the fitting nets on each type's `type_rows`;
    sync_free runs every fitting net on every atom; scatter_into, the forces and virials added there)."""
    return two_kernel_stage(model, rij, center_type, neighbor_type, sync_free, compressed_descriptor_t,
                            compressed_pair_grad, precision, _shared_rows, type_rows,
                            desc_in_t=descriptor.D_IN_T_KERNEL_COMPRESSED, scatter_into=scatter_into)


def _shared_rows(d, rij: Tensor, center_type: Tensor, reach: Reach) -> dict:
    """The rows made once for both kernels of a pair stage."""
    return {"rows": table_rows(d, rij, center_type, reach)}
