"""Forces and virials from dE/dr_ij in one Triton kernel: the fast twin of
`deeppot.infer.evaluate.add_forces_and_virial` (its branch without per-atom virials).

For 10^5 atoms the PyTorch twin moves g = dE/dr_ij through ~6 kernels (a float64 copy, the centre sums, an
`index_add_` of every pair row, a float64 copy of r_ij, a batched 3 x nnei x 3 GEMM for the virial): about a third
of a compressed model's evaluation. Here one program per centre reads its rows once, accumulates in float64,
writes its own force and virial sums and adds -g_ij to each neighbour's owner atomically (float64 atomics, as
`index_add_` on a GPU: the order of additions, and so the last bits, may vary between runs).
Tests: tests/kernels/test_scatter.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

from torch import Tensor

from deeppot.kernels import embedding

if embedding.triton is not None:
    import triton
    import triton.language as tl

    @triton.jit
    def _component(ptr, at, c, live):
        return tl.load(ptr + at + c, mask=live, other=0.0).to(tl.float64)

    @triton.jit
    def _scatter_kernel(g_ptr, rij_ptr, owner_ptr, force_ptr, virial_ptr, start, nnei, NNEI: tl.constexpr):
        i = tl.program_id(0).to(tl.int64)
        j = tl.arange(0, NNEI)
        live = j < nnei
        at = (i * nnei + j) * 3
        gx, gy, gz = _component(g_ptr, at, 0, live), _component(g_ptr, at, 1, live), _component(g_ptr, at, 2, live)
        owner = tl.load(owner_ptr + i * nnei + j, mask=live, other=-1)
        real = owner >= 0  # padded slots carry g = 0; they touch no atom
        tl.atomic_add(force_ptr + owner * 3, -gx, mask=real)
        tl.atomic_add(force_ptr + owner * 3 + 1, -gy, mask=real)
        tl.atomic_add(force_ptr + owner * 3 + 2, -gz, mask=real)
        centre = start + i
        tl.atomic_add(force_ptr + centre * 3, tl.sum(gx))
        tl.atomic_add(force_ptr + centre * 3 + 1, tl.sum(gy))
        tl.atomic_add(force_ptr + centre * 3 + 2, tl.sum(gz))
        x, y, z = _component(rij_ptr, at, 0, live), _component(rij_ptr, at, 1, live), _component(rij_ptr, at, 2, live)
        row = virial_ptr + centre * 9  # each centre's row belongs to this program alone
        tl.store(row, tl.load(row) - tl.sum(gx * x))
        tl.store(row + 1, tl.load(row + 1) - tl.sum(gx * y))
        tl.store(row + 2, tl.load(row + 2) - tl.sum(gx * z))
        tl.store(row + 3, tl.load(row + 3) - tl.sum(gy * x))
        tl.store(row + 4, tl.load(row + 4) - tl.sum(gy * y))
        tl.store(row + 5, tl.load(row + 5) - tl.sum(gy * z))
        tl.store(row + 6, tl.load(row + 6) - tl.sum(gz * x))
        tl.store(row + 7, tl.load(row + 7) - tl.sum(gz * y))
        tl.store(row + 8, tl.load(row + 8) - tl.sum(gz * z))


def scatter_forces_and_virial(force: Tensor, virial: Tensor, g: Tensor, rij: Tensor, nlist_loc: Tensor,
                              start: int) -> None:
    """F_i += sum_j g_ij, F_owner(J) -= g_ij, virial_i -= sum_j g_ij (x) r_ij for the centres start..start+n-1.

    force (ncentre, 3) and virial (ncentre, 9) float64; g, rij (n, nnei, 3) in any float precision; nlist_loc
    (n, nnei) owner centre of each slot, -1 for padding.
    """
    n, nnei = nlist_loc.shape
    if n == 0:
        return
    _scatter_kernel[(n,)](g.contiguous(), rij.contiguous(), nlist_loc.contiguous(), force, virial, start, nnei,
                          NNEI=triton.next_power_of_2(nnei), num_warps=2 if nnei <= 128 else 4)


__all__ = ["scatter_forces_and_virial"]
