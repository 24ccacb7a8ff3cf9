"""What every inference kernel shares: the normalised environment rows of a chunk of neighbour slots and the way
back from dE/dR to dE/dr_ij (Triton helpers, and `back_to_pairs`: the tile kernels store dE/dR_ij, and one slot a
lane takes it to dE/dr_ij), the embedding net's layers, and the launch arguments.

Used by the one-atom kernels (`deeppot.kernels.descriptor`), the atom-tile kernels (`deeppot.kernels.atom_tiles`)
and the compressed ones (`deeppot.kernels.compressed`); the PyTorch twins are in `deeppot.model.analytic`.
"""

from __future__ import annotations

import functools
from itertools import accumulate

import torch
from torch import Tensor

from deeppot.kernels import embedding
from deeppot.kernels.precision import padded_parts

if embedding.triton is not None:
    import triton
    import triton.language as tl

    from deeppot.kernels.activation import _P2LOG2E, _tanh, _tanh_prescaled
    from deeppot.kernels.embedding import _mm, _skip

    @triton.jit
    def _dense(x, w, b, KIND: tl.constexpr, PRECISION: tl.constexpr, PRESCALED: tl.constexpr = False):
        """One tanh layer with DeePMD's skip, values only. PRESCALED: b comes times `activation.TANH_SCALE`
        (float32; `activation._tanh_prescaled`)."""
        if PRESCALED:
            one_plus = _skip(x + 1.0, KIND) if KIND != 0 else 1.0
            a = _tanh_prescaled(_mm(x, w, PRECISION, _P2LOG2E) + b[None, :], one_plus)
        else:
            a = _tanh(_mm(x, w, PRECISION) + b[None, :])
            if KIND != 0:
                a += _skip(x, KIND)
        return a

    @triton.jit
    def _normalised(value, stat_ptr, st, c, live, nstat):
        """(value - davg) / dstd for column c; 0 on rows that are not live."""
        avg = tl.load(stat_ptr + st + c, mask=live, other=0.0)
        scale = tl.load(stat_ptr + nstat + st + c, mask=live, other=0.0)
        return (value - avg) * scale

    @triton.jit
    def _switch(r, rcut, rcut_smth):
        """The quintic switch w(r) and dw/dr (`deeppot.model.env_mat.smooth_switch` and its derivative)."""
        u = tl.minimum(tl.maximum((r - rcut_smth) / (rcut - rcut_smth), 0.0), 1.0)
        w = u * u * u * (-6.0 * u * u + 15.0 * u - 10.0) + 1.0
        return w, -30.0 * u * u * (u - 1.0) * (u - 1.0) / (rcut - rcut_smth)

    @triton.jit
    def _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype, slot, live, nnei, nstat):
        """Normalised environment-matrix rows (s, rx, ry, rz) of BLOCK slots of one centre, with the pair vector,
        1/(r+p), switch w and dw/dr, and the offset st of the slots' statistics.

        geo = (rcut, rcut_smth, env_protection, 1/nnei) in the model's precision; stats = (davg, 1/dstd). Rows past
        the block (not live) read a dummy vector beyond rcut and give zero rows.
        """
        rcut, rcut_smth, prot = tl.load(geo_ptr), tl.load(geo_ptr + 1), tl.load(geo_ptr + 2)
        at = (centre * nnei + slot) * 3
        x = tl.load(rij_ptr + at, mask=live, other=rcut)
        y = tl.load(rij_ptr + at + 1, mask=live, other=rcut)
        z = tl.load(rij_ptr + at + 2, mask=live, other=rcut)
        r = tl.sqrt(x * x + y * y + z * z)
        w, dw = _switch(r, rcut, rcut_smth)
        inv = 1.0 / (r + prot)
        st = (ctype * nnei + slot) * 4
        s = _normalised(w * inv, stat_ptr, st, 0, live, nstat)
        rx = _normalised(x * w * inv * inv, stat_ptr, st, 1, live, nstat)
        ry = _normalised(y * w * inv * inv, stat_ptr, st, 2, live, nstat)
        rz = _normalised(z * w * inv * inv, stat_ptr, st, 3, live, nstat)
        return s, rx, ry, rz, x, y, z, inv, w, dw, st

    @triton.jit
    def _t_bar_rows(tbar_ptr, centre, nnei, col, col_ok, M: tl.constexpr):
        """The 4 rows of dE/dT (4, M) of one centre divided by nnei (T's own factor, as `atom_tiles._tile_t_bar`
        does for its tiles), over the register columns col."""
        tb = tbar_ptr + centre * 4 * M + col
        scale = 1.0 / tl.cast(nnei, tbar_ptr.dtype.element_ty)  # in float64 for float64 kernels
        return (tl.load(tb, mask=col_ok, other=0.0) * scale, tl.load(tb + M, mask=col_ok, other=0.0) * scale,
                tl.load(tb + 2 * M, mask=col_ok, other=0.0) * scale,
                tl.load(tb + 3 * M, mask=col_ok, other=0.0) * scale)

    @triton.jit
    def _env_row_grad(g, dg, s, rx, ry, rz, tb0, tb1, tb2, tb3):
        """dE/dR_ij (the 4 normalised columns) of BLOCK rows from dE/dT: t_bar G_j^T, plus (R_j t_bar) . dG_j/ds on
        column s (row reductions; the same products as padded GEMMs were measured 7-40x slower on an H100)."""
        a = s[:, None] * tb0[None, :] + rx[:, None] * tb1[None, :] + ry[:, None] * tb2[None, :] \
            + rz[:, None] * tb3[None, :]
        q0 = tl.sum(g * tb0[None, :], axis=1) + tl.sum(a * dg, axis=1)
        return q0, tl.sum(g * tb1[None, :], axis=1), tl.sum(g * tb2[None, :], axis=1), tl.sum(g * tb3[None, :], axis=1)

    @triton.jit
    def _pair_grad_of(stat_ptr, st, live, nstat, x, y, z, inv, w, dw, q0, q1, q2, q3):
        """dE/dr_ij (x, y, z) from dE/dR_ij (q, normalised rows) through 1/dstd and R~ = w [1/(r+p), r_ij/(r+p)^2]."""
        q0 = q0 * tl.load(stat_ptr + nstat + st, mask=live, other=0.0)
        q1 = q1 * tl.load(stat_ptr + nstat + st + 1, mask=live, other=0.0)
        q2 = q2 * tl.load(stat_ptr + nstat + st + 2, mask=live, other=0.0)
        q3 = q3 * tl.load(stat_ptr + nstat + st + 3, mask=live, other=0.0)
        inv2 = inv * inv
        radial = q0 * (dw * inv - w * inv2) + (q1 * x + q2 * y + q3 * z) * (dw * inv2 - 2.0 * w * inv2 * inv)
        radial = radial / tl.sqrt(x * x + y * y + z * z)
        return radial * x + q1 * w * inv2, radial * y + q2 * w * inv2, radial * z + q3 * w * inv2

    @triton.jit
    def _store_pair_grad(grad_ptr, stat_ptr, st, centre, slot, live, nnei, nstat, x, y, z, inv, w, dw,
                         q0, q1, q2, q3):
        """dE/dr_ij (`_pair_grad_of`) of the slots into grad_ptr (n, nnei, 3)."""
        gx, gy, gz = _pair_grad_of(stat_ptr, st, live, nstat, x, y, z, inv, w, dw, q0, q1, q2, q3)
        at = (centre * nnei + slot) * 3
        tl.store(grad_ptr + at, gx, mask=live)
        tl.store(grad_ptr + at + 1, gy, mask=live)
        tl.store(grad_ptr + at + 2, gz, mask=live)

    @triton.jit
    def _row_at(i, WIDTH: tl.constexpr):
        """Where slot i's values begin in a per-slot buffer (ceil(n nnei / 32), WIDTH, 32): value v at +32 v. Slots
        go in groups of 32, one value of the group after another, so that 32 lanes store 32 consecutive slots'
        value at once and a reader finds a slot's values at fixed offsets."""
        return (i // 32) * (32 * WIDTH) + i % 32

    @triton.jit
    def _store_four(ptr, i, v0, v1, v2, v3, mask, WIDTH: tl.constexpr):
        """Slots i's first four values (an environment row, or dE/dR_ij) into a `_row_at` buffer of WIDTH values a
        slot."""
        at = ptr + _row_at(i, WIDTH)
        tl.store(at, v0, mask=mask)
        tl.store(at + 32, v1, mask=mask)
        tl.store(at + 64, v2, mask=mask)
        tl.store(at + 96, v3, mask=mask)

    @triton.jit
    def _load_four(ptr, i, mask, WIDTH: tl.constexpr):
        """Slots i's first four values from a `_row_at` buffer of WIDTH values a slot; 0 where not mask."""
        at = ptr + _row_at(i, WIDTH)
        return (tl.load(at, mask=mask, other=0.0), tl.load(at + 32, mask=mask, other=0.0),
                tl.load(at + 64, mask=mask, other=0.0), tl.load(at + 96, mask=mask, other=0.0))

    @triton.jit
    def _lane_slots(type_ptr, starts_ptr, n, nnei, NTYPES: tl.constexpr, BLOCK: tl.constexpr):
        """This program's BLOCK slots of the flat (n, nnei) list, one a lane: index, centre, slot, neighbour-type
        block, rank in the block, whether the slot exists, and the centre's type."""
        i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        centre, slot = i // nnei, (i % nnei).to(tl.int32)
        b, rank = _block_and_rank(starts_ptr, slot, NTYPES)
        real = i < n.to(tl.int64) * nnei
        return i, centre, slot, b, rank, real, tl.load(type_ptr + centre, mask=real, other=0)

    @triton.jit
    def _block_and_rank(starts_ptr, slot, NTYPES: tl.constexpr):
        """Each slot's neighbour-type block and its rank in the block."""
        b, start = slot * 0, slot * 0
        for t in tl.static_range(1, NTYPES):
            first = tl.load(starts_ptr + t)
            past = slot >= first
            b += past.to(tl.int32)
            start = tl.where(past, first, start)
        return b, slot - start

    @triton.jit
    def _walked(top_ptr, centre, ctype, b, rank, real, NTYPES: tl.constexpr, ATOMS: tl.constexpr,
                PER_TYPE: tl.constexpr):
        """Whether a tile kernel visits the slots: top_ptr, how far a tile of ATOMS centres walks each block,
        (tiles, NTYPES), or (tiles, NTYPES, NTYPES) with PER_TYPE (by the centre's type)."""
        tile = centre // ATOMS * NTYPES + ctype if PER_TYPE else centre // ATOMS
        return real & (rank < tl.load(top_ptr + tile * NTYPES + b, mask=real, other=0))

    @triton.jit
    def _slots_either_visits(type_ptr, starts_ptr, t_top_ptr, grad_top_ptr, n, nnei, NTYPES: tl.constexpr,
                             T_ATOMS: tl.constexpr, GRAD_ATOMS: tl.constexpr, PER_TYPE: tl.constexpr,
                             BLOCK: tl.constexpr):
        """This program's slots (`_lane_slots`: index, centre, slot, block), whether a T kernel's or a gradient
        kernel's tiles visit them (each with its tops), and the centre's type."""
        i, centre, slot, b, rank, real, ctype = _lane_slots(type_ptr, starts_ptr, n, nnei, NTYPES, BLOCK)
        visited = _walked(t_top_ptr, centre, ctype, b, rank, real, NTYPES, T_ATOMS, PER_TYPE) | \
            _walked(grad_top_ptr, centre, ctype, b, rank, real, NTYPES, GRAD_ATOMS, PER_TYPE)
        return i, centre, slot, b, visited, ctype

    @triton.jit
    def _env_rows_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, t_top_ptr, grad_top_ptr, rows_ptr, n,
                         nnei, nstat, NTYPES: tl.constexpr, T_ATOMS: tl.constexpr, GRAD_ATOMS: tl.constexpr,
                         PER_TYPE: tl.constexpr, BLOCK: tl.constexpr):
        """Per slot that either tile kernel visits, once and lane-parallel: the normalised environment row (s, rx,
        ry, rz), by `_row_at` with 4 values a slot."""
        i, centre, slot, _, ok, ctype = _slots_either_visits(type_ptr, starts_ptr, t_top_ptr, grad_top_ptr, n, nnei,
                                                             NTYPES, T_ATOMS, GRAD_ATOMS, PER_TYPE, BLOCK)
        s, rx, ry, rz = _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype, slot, ok, nnei, nstat)[:4]
        _store_four(rows_ptr, i, s, rx, ry, rz, ok, 4)

    @triton.jit
    def _chunk_rows(rij_ptr, stat_ptr, geo_ptr, rows_ptr, centre, ctype, slot, live, nnei, nstat,
                    ROWS: tl.constexpr):
        """A chunk's (s, rx, ry, rz): read from the rows `_env_rows_kernel` made with ROWS, else computed here."""
        if ROWS:
            return _load_four(rows_ptr, centre * nnei + slot, live, 4)
        else:
            return _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype, slot, live, nnei, nstat)[:4]

    @triton.jit
    def _back_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, top_ptr, q_ptr, grad_ptr, n, nnei, nstat,
                     NTYPES: tl.constexpr, ATOMS: tl.constexpr, PER_TYPE: tl.constexpr, WIDTH: tl.constexpr,
                     BLOCK: tl.constexpr):
        """dE/dr_ij of every slot, lane-parallel, from the dE/dR_ij (q, by `_row_at`) that a gradient kernel wrote
        where its tiles walked (`_walked`); zero on the slots it did not visit."""
        i, centre, slot, b, rank, real, ctype = _lane_slots(type_ptr, starts_ptr, n, nnei, NTYPES, BLOCK)
        live = _walked(top_ptr, centre, ctype, b, rank, real, NTYPES, ATOMS, PER_TYPE)
        _, _, _, _, x, y, z, inv, w, dw, st = _env_rows(rij_ptr, stat_ptr, geo_ptr, centre, ctype, slot, live, nnei,
                                                        nstat)
        q0, q1, q2, q3 = _load_four(q_ptr, i, live, WIDTH)
        # stored on every slot of the list (q = 0 gives 0 where not visited), so the output needs no zeroing
        _store_pair_grad(grad_ptr, stat_ptr, st, centre, slot, real, nnei, nstat, x, y, z, inv, w, dw, q0, q1, q2,
                         q3)


@functools.cache
def _block_starts(sel: tuple[int, ...], device: torch.device) -> Tensor:
    """Block starts, made once per device (no host-to-device copy inside a CUDA-graph capture)."""
    return torch.tensor([0, *accumulate(sel)], dtype=torch.int32, device=device)


@functools.cache
def _geometry(rcut: float, rcut_smth: float, protection: float, nnei: int, dtype: torch.dtype,
              device: torch.device) -> Tensor:
    """(rcut, rcut_smth, env_protection, 1/nnei) on the device, made once (no copy inside a graph capture)."""
    return torch.tensor([rcut, rcut_smth, protection, 1.0 / nnei], dtype=dtype, device=device)


def env_args(d, rij: Tensor, center_type: Tensor, tops: Tensor | None) -> list:
    """The arguments `_env_rows` reads, first in every inference kernel (these and the compressed ones): pair vectors,
    centre types, statistics (davg, 1/dstd), geometry, the neighbour-type block starts, and how far each program
    walks each block (`deeppot.kernels.reach.tile_tops`)."""
    stats = torch.stack([d.davg, 1.0 / d.dstd]).contiguous()  # (2, ntypes, nnei, 4)
    geo = _geometry(d.rcut, d.rcut_smth, d.env_protection, sum(d.sel), d.dtype, rij.device)
    return [rij.contiguous(), center_type.to(torch.int32).contiguous(), stats, geo,
            _block_starts(tuple(d.sel), rij.device), tops]


LANE_BLOCK = 256  # slots a program of the lane-parallel kernels (`_env_rows_kernel`, `_back_kernel`, `_rows_kernel`)


def env_rows_once(d, rij: Tensor, center_type: Tensor, t_tiles: tuple[Tensor, int], grad_tiles: tuple[Tensor, int],
                  per_type: bool) -> Tensor:
    """The normalised environment rows (ceil(n nnei / 32), 4, 32), by `_row_at`, of every slot that a T kernel's or
    a gradient kernel's tiles visit: each (tops, atoms a tile), the tops by tile and block (by tile, centre type
    and block with `per_type`)."""
    n, nnei = rij.shape[:2]
    rows = rij.new_empty(triton.cdiv(n * nnei, 32), 4, 32)
    rij, types, stats, geo, starts = env_args(d, rij, center_type, None)[:5]
    _env_rows_kernel[(triton.cdiv(n * nnei, LANE_BLOCK),)](rij, types, stats, geo, starts, t_tiles[0], grad_tiles[0],
                                                           rows, n, nnei, d.davg.numel(), NTYPES=d.ntypes,
                                                           T_ATOMS=t_tiles[1], GRAD_ATOMS=grad_tiles[1],
                                                           PER_TYPE=per_type, BLOCK=LANE_BLOCK)
    return rows


def back_to_pairs(d, args: list, q: Tensor, atoms: int, per_type: bool) -> Tensor:
    """dE/dr_ij (n, nnei, 3) from the dE/dR_ij q (first four values a slot of a `_row_at` buffer) that a gradient
    kernel of `atoms`-centre tiles wrote where its tiles walked: the tops, last of its `env_args` `args`, by tile
    and block (by tile, centre type and block with `per_type`)."""
    rij, types, stats, geo, starts, tops = args[:6]
    n, nnei = rij.shape[:2]
    grad = torch.empty_like(rij)
    _back_kernel[(triton.cdiv(n * nnei, LANE_BLOCK),)](rij, types, stats, geo, starts, tops, q, grad, n, nnei,
                                                       d.davg.numel(), NTYPES=d.ntypes, ATOMS=atoms,
                                                       PER_TYPE=per_type, WIDTH=q.shape[1], BLOCK=LANE_BLOCK)
    return grad


def net_args(d, rij: Tensor, center_type: Tensor, precision: str, tops: Tensor) -> tuple[list, dict]:
    """Tensor arguments of the embedding-net kernels (environment, then the nets' weights and biases) and their
    compile-time constants, without the tile (each kernel family adds its own)."""
    params = [t for layer in d.nets.layers for t in (layer.matrix, layer.bias)]
    meta = embedding.net_meta(params, d.sel, "ieee" if rij.dtype == torch.float64 else precision)
    if meta["PRECISION"] == "f16x3":  # W2's and W3's parts made once (`embedding._load_parts`)
        params[2] = padded_parts(params[2], meta["L1"], meta["L2"])
        params[4] = padded_parts(params[4], meta["L2"], meta["L3"])
    tensors = [*env_args(d, rij, center_type, tops), *params]
    return tensors, dict(meta, NTYPES=d.ntypes, ONE_SIDE=d.type_one_side)
