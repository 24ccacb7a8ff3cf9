"""What every inference kernel shares: the normalised environment rows of a chunk of neighbour slots and the way
back from dE/dR to dE/dr_ij (Triton helpers), the embedding net's layers, and the launch arguments.

Used by the one-atom kernels (`deeppot.kernels.descriptor`), the atom-tile kernels (`deeppot.kernels.atom_tiles`)
and the compressed ones (`deeppot.kernels.compressed`); the PyTorch twins are in `deeppot.model.analytic`.
"""

from __future__ import annotations

import functools
from itertools import accumulate

import torch
from torch import Tensor

from deeppot.kernels import embedding

if embedding.triton is not None:
    import triton
    import triton.language as tl

    from deeppot.kernels.activation import _tanh
    from deeppot.kernels.embedding import _mm, _skip

    @triton.jit
    def _dense(x, w, b, KIND: tl.constexpr, PRECISION: tl.constexpr):
        """One tanh layer with DeePMD's skip, values only."""
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
    def _t_bar_rows(tbar_ptr, centre, col, col_ok, M: tl.constexpr):
        """The 4 rows of dE/dT (4, M) of one centre, over the register columns col."""
        tb = tbar_ptr + centre * 4 * M + col
        return (tl.load(tb, mask=col_ok, other=0.0), tl.load(tb + M, mask=col_ok, other=0.0),
                tl.load(tb + 2 * M, mask=col_ok, other=0.0), tl.load(tb + 3 * M, mask=col_ok, other=0.0))

    @triton.jit
    def _env_row_grad(g, dg, s, rx, ry, rz, tb0, tb1, tb2, tb3):
        """dE/dR_ij (the 4 normalised columns) of BLOCK rows from dE/dT: t_bar G_j^T, plus (R_j t_bar) . dG_j/ds on
        column s (row reductions; the same products as padded GEMMs were measured 7-40x slower on an H100)."""
        a = s[:, None] * tb0[None, :] + rx[:, None] * tb1[None, :] + ry[:, None] * tb2[None, :] \
            + rz[:, None] * tb3[None, :]
        q0 = tl.sum(g * tb0[None, :], axis=1) + tl.sum(a * dg, axis=1)
        return q0, tl.sum(g * tb1[None, :], axis=1), tl.sum(g * tb2[None, :], axis=1), tl.sum(g * tb3[None, :], axis=1)

    @triton.jit
    def _store_pair_grad(grad_ptr, stat_ptr, st, centre, slot, live, nnei, nstat, x, y, z, inv, w, dw,
                         q0, q1, q2, q3):
        """dE/dr_ij from dE/dR_ij (q, normalised rows) through 1/dstd and R~ = w [1/(r+p), r_ij/(r+p)^2]."""
        q0 = q0 * tl.load(stat_ptr + nstat + st, mask=live, other=0.0)
        q1 = q1 * tl.load(stat_ptr + nstat + st + 1, mask=live, other=0.0)
        q2 = q2 * tl.load(stat_ptr + nstat + st + 2, mask=live, other=0.0)
        q3 = q3 * tl.load(stat_ptr + nstat + st + 3, mask=live, other=0.0)
        inv2 = inv * inv
        radial = q0 * (dw * inv - w * inv2) + (q1 * x + q2 * y + q3 * z) * (dw * inv2 - 2.0 * w * inv2 * inv)
        radial = radial / tl.sqrt(x * x + y * y + z * z)
        at = (centre * nnei + slot) * 3
        tl.store(grad_ptr + at, radial * x + q1 * w * inv2, mask=live)
        tl.store(grad_ptr + at + 1, radial * y + q2 * w * inv2, mask=live)
        tl.store(grad_ptr + at + 2, radial * z + q3 * w * inv2, mask=live)


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


def net_args(d, rij: Tensor, center_type: Tensor, precision: str, tops: Tensor) -> tuple[list, dict]:
    """Tensor arguments of the embedding-net kernels (environment, then the nets' weights and biases) and their
    compile-time constants, without the tile (each kernel family adds its own)."""
    params = [t for layer in d.nets.layers for t in (layer.matrix, layer.bias)]
    tensors = [*env_args(d, rij, center_type, tops), *params]
    meta = embedding.net_meta(params, d.sel, "ieee" if rij.dtype == torch.float64 else precision)
    return tensors, dict(meta, NTYPES=d.ntypes, ONE_SIDE=d.type_one_side)
