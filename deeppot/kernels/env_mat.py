"""The environment-matrix rows of a training batch in one Triton kernel: the fused twin of
`deeppot.model.analytic.env_rows`.

In training the pair vectors are data (no gradient flows to them) and the statistics are buffers, so the rows are
computed once a step and never differentiated: the ~35 small PyTorch kernels of the reference (norm, switch and
its derivative, normalisation, the derivative's factors, the statistics' gathers) become one launch. The
torch.compile'd step keeps the reference, which Inductor fuses by itself.
Tests: tests/kernels/test_env_mat.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from deeppot.kernels.embedding import triton
from deeppot.kernels.env_rows import _geometry
from deeppot.model import analytic
from deeppot.model.slots import SlotLayout

BLOCK = 128  # slots a program

if triton is not None:
    import triton.language as tl

    from deeppot.kernels.env_rows import _switch

    @triton.jit
    def _store_column(rr_ptr, scale_ptr, avg_ptr, std_ptr, i, st, c, raw, ok):
        """Column c of the rows, (raw - davg) / dstd, and its 1/dstd (what the derivative multiplies by)."""
        avg = tl.load(avg_ptr + st + c, mask=ok, other=0.0)
        scale = 1.0 / tl.load(std_ptr + st + c, mask=ok, other=1.0)
        tl.store(rr_ptr + 4 * i + c, (raw - avg) * scale, mask=ok)
        tl.store(scale_ptr + 4 * i + c, scale, mask=ok)

    @triton.jit
    def _rows_kernel(rij_ptr, nlist_ptr, type_ptr, pos_ptr, avg_ptr, std_ptr, rr_ptr, coef_ptr, scale_ptr,
                     nslots, nnei, nsel, geo_ptr, BLOCK: tl.constexpr):
        i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # flat slot index over (nf, nloc, nnei)
        # in the model's precision from the device (a Python float argument would be a float32)
        rcut, rcut_smth, prot = tl.load(geo_ptr), tl.load(geo_ptr + 1), tl.load(geo_ptr + 2)
        ok = i < nslots
        live = tl.load(nlist_ptr + i, mask=ok, other=-1) >= 0
        ctype = tl.load(type_ptr + i // nnei, mask=ok, other=0)
        st = (ctype * nsel + tl.load(pos_ptr + i % nnei, mask=ok, other=0)) * 4  # the slot's statistics
        x = tl.load(rij_ptr + 3 * i, mask=ok, other=rcut).to(rr_ptr.dtype.element_ty)
        y = tl.load(rij_ptr + 3 * i + 1, mask=ok, other=rcut).to(rr_ptr.dtype.element_ty)
        z = tl.load(rij_ptr + 3 * i + 2, mask=ok, other=rcut).to(rr_ptr.dtype.element_ty)
        r = tl.sqrt(x * x + y * y + z * z)
        inv = 1.0 / (r + prot)
        w, dw = _switch(r, rcut, rcut_smth)
        w, dw = tl.where(live, w, 0.0), tl.where(live, dw, 0.0)
        inv2 = inv * inv
        tl.store(coef_ptr + 3 * i, (dw * inv - w * inv2) / r, mask=ok)
        tl.store(coef_ptr + 3 * i + 1, (dw - 2.0 * w * inv) * inv2 / r, mask=ok)
        tl.store(coef_ptr + 3 * i + 2, w * inv2, mask=ok)
        _store_column(rr_ptr, scale_ptr, avg_ptr, std_ptr, i, st, 0, w * inv, ok)
        _store_column(rr_ptr, scale_ptr, avg_ptr, std_ptr, i, st, 1, x * w * inv2, ok)
        _store_column(rr_ptr, scale_ptr, avg_ptr, std_ptr, i, st, 2, y * w * inv2, ok)
        _store_column(rr_ptr, scale_ptr, avg_ptr, std_ptr, i, st, 3, z * w * inv2, ok)


@functools.cache
def _slots(nnei: int, device: torch.device) -> Tensor:
    """Each slot's position in the sel layout of a full list, made once: no kernel inside a captured step."""
    return torch.arange(nnei, device=device)


def env_rows(d, rij: Tensor, nlist: Tensor, center_type: Tensor, neighbor_type: Tensor,
             layout: SlotLayout | None = None) -> analytic.EnvRows:
    """Same contract as `deeppot.model.analytic.env_rows`, whose result it is where the rows need no gradient
    and no type pair is excluded; elsewhere it calls it."""
    if d.exclude_types or rij.requires_grad or d.davg.requires_grad or d.dstd.requires_grad:
        return analytic.env_rows(d, rij, nlist, center_type, neighbor_type, layout)
    nf, nloc, nnei = nlist.shape
    pos = layout.index if layout is not None else _slots(nnei, rij.device)
    rr = torch.empty(nf, nloc, nnei, 4, dtype=d.dtype, device=rij.device)
    coef, scale = torch.empty(nf, nloc, nnei, 3, dtype=d.dtype, device=rij.device), torch.empty_like(rr)
    nslots = nlist.numel()
    _rows_kernel[(triton.cdiv(nslots, BLOCK),)](
        rij.contiguous(), nlist.contiguous(), center_type.contiguous(), pos, d.davg.contiguous(),
        d.dstd.contiguous(), rr, coef,
        scale, nslots, nnei, d.davg.shape[1], _geometry(d.rcut, d.rcut_smth, d.env_protection, sum(d.sel), d.dtype,
                                                        rij.device), BLOCK=BLOCK)
    return analytic.EnvRows(rr, rij.to(d.dtype), coef[..., :1], coef[..., 1:2], coef[..., 2:], scale, None)
