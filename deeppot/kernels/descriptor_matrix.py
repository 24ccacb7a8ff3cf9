"""The descriptor D = T^T T< of each atom and the way back from dE/dD to dE/dT, one Triton kernel each.

Between the two embedding kernels of an inference stage, D (M1 x m2 numbers an atom, 1,600 for water) is written
for the fitting nets and dE/dD read back. In PyTorch (`analytic.descriptor_from_t`, `analytic.t_bar_from_desc_grad`)
these are batched 100 x 4 x 16 GEMMs, a pad and an add (2.8 ms at 98,304 water atoms, run 83), and the fitting
nets' per-type atoms were gathered from D and scattered back into dE/dD (four more passes over D). Here each
kernel reads T, writes D or dE/dT once, and takes an optional index: the rows of one type's atoms, so D of a type
is written contiguously from the whole T and dE/dT goes straight to its atoms' rows.
Training differentiates dE/dT once more (`deeppot.kernels.descriptor_training`): from U = dL/d(dE/dT), dL/d(dE/dD)
= U^T T< + T^T U< is the descriptor kernel with a second input (SYM).
Tests: tests/kernels/test_descriptor_matrix.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import torch
from torch import Tensor

from deeppot.kernels import embedding

# atoms and warps a program, either precision (H100, run 84: 2-4 atoms alike, 8 slower; H200, run 169, 98,304 water
# atoms, ms: float32 D 0.215 and dE/dT 0.322 on 2 atoms and 2 warps against 0.231 and 0.389 on 4 and 4, float64
# 0.424 and 0.743 against 0.472 and 0.875)
ATOMS, WARPS = 2, 2
# `t_bar_from_fitting_grad`: rows a program, columns of dE/dD a chunk (A = COLUMNS / m2 of M1's columns), depth a
# step of the float16 GEMM, warps, stages (prepared in run 270, not yet timed on a GPU)
GZ_TILE = dict(BM=64, COLUMNS=256, BK=64, warps=8, stages=3)

if embedding.triton is not None:
    import triton
    import triton.language as tl

    @triton.jit
    def _rows(idx_ptr, n, ATOMS: tl.constexpr, HAS_INDEX: tl.constexpr):
        """This program's output rows, whether each is real, and the atom (row of T) each one is."""
        rows = tl.program_id(0).to(tl.int64) * ATOMS + tl.arange(0, ATOMS)
        real = rows < n
        atom = tl.load(idx_ptr + rows, mask=real, other=0).to(tl.int64) if HAS_INDEX else rows
        return rows, real, atom

    @triton.jit
    def _t_row(t_ptr, atom, real, c, cols, width, M1: tl.constexpr):
        """Row c of the atoms' T (ATOMS, columns cols < width)."""
        ok = real[:, None] & (cols < width)[None, :]
        return tl.load(t_ptr + (atom * 4 + c)[:, None] * M1 + cols[None, :], mask=ok, other=0.0)

    @triton.jit
    def _descriptor_kernel(x_ptr, y_ptr, idx_ptr, d_ptr, n, M1: tl.constexpr, M2: tl.constexpr, MP: tl.constexpr,
                           KP: tl.constexpr, ATOMS: tl.constexpr, HAS_INDEX: tl.constexpr, SYM: tl.constexpr):
        """D[m, k] = sum_c X[c, m] Y[c, k] (k < m2), plus Y[c, m] X[c, k] if SYM: D is X = Y = T, SYM the way back
        from dE/dT's gradient to dE/dD's (module docstring)."""
        rows, real, atom = _rows(idx_ptr, n, ATOMS, HAS_INDEX)
        _descriptor_rows(x_ptr, y_ptr, atom, real, d_ptr, rows, M1, M2, MP, KP, ATOMS, SYM)

    @triton.jit
    def _descriptor_rows(x_ptr, y_ptr, atom, real, d_ptr, rows, M1: tl.constexpr, M2: tl.constexpr,
                         MP: tl.constexpr, KP: tl.constexpr, ATOMS: tl.constexpr, SYM: tl.constexpr):
        """`_descriptor_kernel`'s D of the (ATOMS,) atoms into rows `rows` of d_ptr (also the epilogue of the
        inference T kernel, `atom_tiles`)."""
        m, k = tl.arange(0, MP), tl.arange(0, KP)
        acc = tl.zeros((ATOMS, MP, KP), dtype=x_ptr.dtype.element_ty)
        for c in tl.static_range(4):
            x_c, ly_c = _t_row(x_ptr, atom, real, c, m, M1, M1), _t_row(y_ptr, atom, real, c, k, M2, M1)
            acc += x_c[:, :, None] * ly_c[:, None, :]
            if SYM:
                y_c, lx_c = _t_row(y_ptr, atom, real, c, m, M1, M1), _t_row(x_ptr, atom, real, c, k, M2, M1)
                acc += y_c[:, :, None] * lx_c[:, None, :]
        out = d_ptr + rows[:, None, None] * (M1 * M2) + (m[:, None] * M2 + k[None, :])[None, :, :]
        ok = real[:, None, None] & ((m < M1)[:, None] & (k < M2)[None, :])[None, :, :]
        tl.store(out, acc.to(d_ptr.dtype.element_ty), mask=ok)

    @triton.jit
    def _t_bar_kernel(dd_ptr, t_ptr, idx_ptr, out_ptr, n, M1: tl.constexpr, M2: tl.constexpr, MP: tl.constexpr,
                      KP: tl.constexpr, ATOMS: tl.constexpr, HAS_INDEX: tl.constexpr):
        rows, real, atom = _rows(idx_ptr, n, ATOMS, HAS_INDEX)
        m, k = tl.arange(0, MP), tl.arange(0, KP)
        ok = real[:, None, None] & ((m < M1)[:, None] & (k < M2)[None, :])[None, :, :]
        dd = tl.load(dd_ptr + rows[:, None, None] * (M1 * M2) + (m[:, None] * M2 + k[None, :])[None, :, :], mask=ok,
                     other=0.0).to(t_ptr.dtype.element_ty)  # dE/dD (ATOMS, m, k)
        onehot = (m[:, None] == k[None, :]).to(t_ptr.dtype.element_ty)  # column k of the T< factor is column m = k
        for c in tl.static_range(4):
            through_t, through_lt = _t_bar_terms(dd, t_ptr, atom, real, c, m, k, M1, M2)
            t_bar = through_t + tl.sum(through_lt[:, None, :] * onehot[None, :, :], axis=2)
            out = out_ptr + (atom * 4 + c)[:, None] * M1 + m[None, :]
            tl.store(out, t_bar, mask=real[:, None] & (m < M1)[None, :])

    @triton.jit
    def _t_bar_terms(dd, t_ptr, atom, real, c, m, k, M1: tl.constexpr, M2: tl.constexpr):
        """The two terms of row c of dE/dT, dE/dT[c, m] = sum_k dD[m, k] T[c, k]  +  (m < m2) sum_a dD[a, m] T[c, a],
        from the atoms' dE/dD (ATOMS, m, k) in columns m of M1 and k of m2: the first (ATOMS, m), the second's sums
        (ATOMS, k), which belong in columns m = k."""
        through_t = tl.sum(dd * _t_row(t_ptr, atom, real, c, k, M2, M1)[:, None, :], axis=2)
        through_lt = tl.sum(dd * _t_row(t_ptr, atom, real, c, m, M1, M1)[:, :, None], axis=1)
        return through_t, through_lt

    @triton.jit
    def _dd_chunk(gz_ptr, w_ptr, rows, real, a0, K3: tl.constexpr, N: tl.constexpr, scale, M2: tl.constexpr,
                  A: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr):
        """dE/dD of the program's rows in columns a0 M2 .. (a0 + A) M2 (BM, A, M2): their float16 parts of gz1 times
        those of W1^T, float32 accumulation, as `fitting_stack.input_grad`'s cuBLAS GEMM."""
        cols = a0 * M2 + tl.arange(0, A * M2)
        acc = tl.zeros((BM, A * M2), dtype=tl.float32)
        for k0 in range(0, K3, BK):
            k = k0 + tl.arange(0, BK)
            g = tl.load(gz_ptr + rows[:, None] * K3 + k[None, :], mask=real[:, None] & (k < K3)[None, :], other=0.0)
            w = tl.load(w_ptr + k[:, None] * N + cols[None, :], mask=(k < K3)[:, None] & (cols < N)[None, :],
                        other=0.0)
            acc = tl.dot(g, w, acc)
        return (acc * scale).reshape(BM, A, M2)

    @triton.jit
    def _dd_row(out_ptr, t_ptr, dd, atom, real, a0, c, lt, M1: tl.constexpr, M2: tl.constexpr, A: tl.constexpr):
        """Row c of dE/dT in the chunk's columns a0.. from its dE/dD (`_t_bar_terms`): the first term is stored,
        the second summed over the chunks in lt (BM, M2)."""
        a = a0 + tl.arange(0, A)
        through_t, through_lt = _t_bar_terms(dd, t_ptr, atom, real, c, a, tl.arange(0, M2), M1, M2)
        tl.store(out_ptr + (atom * 4 + c)[:, None] * M1 + a[None, :], through_t,
                 mask=real[:, None] & (a < M1)[None, :])
        return lt + through_lt

    @triton.jit
    def _add_lt(out_ptr, atom, real, c, lt, M1: tl.constexpr, M2: tl.constexpr):
        """The second term of row c (BM, M2) added to its first m2 columns, which this program stored."""
        m = tl.arange(0, M2)
        at = out_ptr + (atom * 4 + c)[:, None] * M1 + m[None, :]
        ok = real[:, None] & (m < M1)[None, :]
        tl.store(at, tl.load(at, mask=ok, other=0.0) + lt, mask=ok)

    @triton.jit
    def _gz_t_bar_kernel(gz_ptr, w_ptr, t_ptr, idx_ptr, out_ptr, n, scale, K3: tl.constexpr, M1: tl.constexpr,
                         M2: tl.constexpr, A: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr,
                         HAS_INDEX: tl.constexpr):
        rows, real, atom = _rows(idx_ptr, n, BM, HAS_INDEX)
        N = M1 * M2
        lt0 = tl.zeros((BM, M2), dtype=tl.float32)
        lt1, lt2, lt3 = lt0, lt0, lt0
        for i in range(0, tl.cdiv(M1, A)):
            dd = _dd_chunk(gz_ptr, w_ptr, rows, real, i * A, K3, N, scale, M2, A, BM, BK)
            lt0 = _dd_row(out_ptr, t_ptr, dd, atom, real, i * A, 0, lt0, M1, M2, A)
            lt1 = _dd_row(out_ptr, t_ptr, dd, atom, real, i * A, 1, lt1, M1, M2, A)
            lt2 = _dd_row(out_ptr, t_ptr, dd, atom, real, i * A, 2, lt2, M1, M2, A)
            lt3 = _dd_row(out_ptr, t_ptr, dd, atom, real, i * A, 3, lt3, M1, M2, A)
        tl.debug_barrier()  # the first columns' stores by every thread of the program, before they are read back
        _add_lt(out_ptr, atom, real, 0, lt0, M1, M2)
        _add_lt(out_ptr, atom, real, 1, lt1, M1, M2)
        _add_lt(out_ptr, atom, real, 2, lt2, M1, M2)
        _add_lt(out_ptr, atom, real, 3, lt3, M1, M2)


def _launch(n: int, index: Tensor | None, t_mat: Tensor, m2: int) -> tuple[tuple, Tensor, dict]:
    m1 = t_mat.shape[-1]
    idx = index.contiguous() if index is not None else t_mat  # a placeholder pointer, never read
    meta = dict(M1=m1, M2=m2, MP=triton.next_power_of_2(m1), KP=max(16, triton.next_power_of_2(m2)), ATOMS=ATOMS,
                HAS_INDEX=index is not None, num_warps=WARPS)
    return (triton.cdiv(n, ATOMS),), idx, meta


def descriptor_from_t(t_mat: Tensor, m2: int, dtype: torch.dtype, index: Tensor | None = None,
                      other: Tensor | None = None) -> Tensor:
    """D = T^T T< (n, M1 * m2) in `dtype` of the atoms `index` (all when None), from t_mat (natoms, 4, M1):
    `analytic.descriptor_from_t` (computed in t_mat's precision, rounded once to dtype). With `other` (U, shaped
    as t_mat): U^T T< + T^T U< instead, the gradient of dE/dT's product with respect to dE/dD."""
    t_mat = t_mat.contiguous()
    n = t_mat.shape[0] if index is None else len(index)
    desc = torch.empty(n, t_mat.shape[-1] * m2, dtype=dtype, device=t_mat.device)
    if n:
        grid, idx, meta = _launch(n, index, t_mat, m2)
        x = other.contiguous() if other is not None else t_mat
        _descriptor_kernel[grid](x, t_mat, idx, desc, n, SYM=other is not None, **meta)
    return desc


def t_bar_from_desc_grad(d_desc: Tensor, t_mat: Tensor, index: Tensor | None = None, out: Tensor | None = None
                         ) -> Tensor:
    """dE/dT (natoms, 4, M1) from dE/dD (n, M1 * m2) of the atoms `index` (all when None): their rows of `out`
    (a new tensor when None; others untouched) get `analytic.t_bar_from_desc_grad`, in t_mat's precision."""
    t_mat = t_mat.contiguous()
    n, m1 = d_desc.shape[0], t_mat.shape[-1]
    out = torch.empty_like(t_mat) if out is None else out
    if n:
        grid, idx, meta = _launch(n, index, t_mat, d_desc.shape[-1] // m1)
        _t_bar_kernel[grid](d_desc.contiguous(), t_mat, idx, out, n, **meta)
    return out


def fuses_fitting_grad(t_mat: Tensor, m2: int) -> bool:
    """Whether `t_bar_from_fitting_grad` serves this T: float32, m2 a power of two up to a chunk's columns."""
    return t_mat.dtype == torch.float32 and m2 & (m2 - 1) == 0 and m2 <= GZ_TILE["COLUMNS"]


def t_bar_from_fitting_grad(gz_parts: Tensor, w_parts: Tensor, scale: float, t_mat: Tensor,
                            index: Tensor | None = None, out: Tensor | None = None) -> Tensor:
    """`t_bar_from_desc_grad` of dE/dD = scale gz_parts w_parts (`fitting_stack.input_grad`: the fitting net's
    first-layer gradient as float16 parts (n, K), its weights' (K, M1 m2)) without dE/dD stored: each program
    makes its rows' dE/dD a chunk of columns at a time on the tensor cores, float32 accumulation, and contracts
    it with T in registers, where the GEMM wrote 0.63 GB and the dE/dT kernel read it back (98,304 water atoms).
    Where `fuses_fitting_grad`."""
    t_mat = t_mat.contiguous()
    n, m1 = gz_parts.shape[0], t_mat.shape[-1]
    m2 = w_parts.shape[1] // m1
    out = torch.empty_like(t_mat) if out is None else out
    if n:
        tile = GZ_TILE
        idx = index.contiguous() if index is not None else t_mat  # a placeholder pointer, never read
        _gz_t_bar_kernel[(triton.cdiv(n, tile["BM"]),)](
            gz_parts.contiguous(), w_parts.contiguous(), t_mat, idx, out, n, scale, K3=gz_parts.shape[1], M1=m1, M2=m2,
            A=tile["COLUMNS"] // m2, BM=tile["BM"], BK=tile["BK"], HAS_INDEX=index is not None,
            num_warps=tile["warps"], num_stages=tile["stages"])
    return out
