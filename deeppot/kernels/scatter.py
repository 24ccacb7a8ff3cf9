"""Forces and virials from dE/dr_ij in one Triton kernel: the fast twin of
`deeppot.infer.evaluate.add_forces_and_virial` (its branch without per-atom virials) and, differentiable once, of
`deeppot.model.energy_model.forces_and_virial` in the training step (`TrainingForces`).

For 10^5 atoms the PyTorch twin moves g = dE/dr_ij through ~6 kernels (a float64 copy, the centre sums, an
`index_add_` of every pair row, a float64 copy of r_ij, a batched 3 x nnei x 3 GEMM for the virial): about a third
of a compressed model's evaluation. Here one program per centre reads its rows once, accumulates in float64,
writes its own force and virial sums and adds -g_ij to each neighbour's owner atomically (float64 atomics, as
`index_add_` on a GPU: the order of additions, and so the last bits, may vary between runs). The atomics are
relaxed: nothing reads the sums before the kernel ends, and Triton's default (acquire-release) puts a GPU-wide memory
barrier before each one and invalidates the L1 cache after it (sm_90 SASS: MEMBAR.ALL.GPU ... ATOMG ... CCTL.IVALL,
where relaxed gives a plain REDG).
In training the PyTorch twin takes ~15 kernels a step forward and backward (float64 casts, the centre sums, a
scatter, the pair virials and their sum, and autograd's transposes of each); `TrainingForces` takes one kernel each
way, with frame-major atom indices and per-frame virials.
Tests: tests/kernels/test_scatter.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import torch
from torch import Tensor

from deeppot.kernels import embedding
from deeppot.model.energy_model import forces_and_virial as forces_and_virial_reference

if embedding.triton is not None:
    import triton
    import triton.language as tl

    from deeppot.kernels.env_rows import _block_and_rank, _env_rows, _load_four, _pair_grad_of, _walked

    @triton.jit
    def _component(ptr, at, c, live):
        return tl.load(ptr + at + c, mask=live, other=0.0).to(tl.float64)

    @triton.jit
    def _xyz(ptr, at, live):
        """The x, y, z components at `at` of a (..., 3) tensor, float64; 0 where not live."""
        return _component(ptr, at, 0, live), _component(ptr, at, 1, live), _component(ptr, at, 2, live)

    @triton.jit
    def _pair_rows(ptr, i, nnei, NNEI: tl.constexpr):
        """Centre i's (NNEI,) x, y, z components of a (n, nnei, 3) tensor, float64, and the slots' validity."""
        j = tl.arange(0, NNEI)
        live = j < nnei
        x, y, z = _xyz(ptr, (i * nnei + j) * 3, live)
        return x, y, z, j, live

    @triton.jit
    def _add(ptr, value, mask=None):
        """An atomic, relaxed addition (the module docstring says why relaxed)."""
        tl.atomic_add(ptr, value, mask=mask, sem="relaxed")

    @triton.jit
    def _scatter_forces(force_ptr, centre, owner, real, gx, gy, gz):
        """F_centre += sum_j g_ij and F_owner -= g_ij for the real slots (atom indices into force_ptr), atomically:
        owners are shared between programs, and so is the centre's row."""
        dest = force_ptr + owner * 3
        _add(dest, -gx, mask=real)
        _add(dest + 1, -gy, mask=real)
        _add(dest + 2, -gz, mask=real)
        _add(force_ptr + centre * 3, tl.sum(gx))
        _add(force_ptr + centre * 3 + 1, tl.sum(gy))
        _add(force_ptr + centre * 3 + 2, tl.sum(gz))

    @triton.jit
    def _scatter_kernel(g_ptr, rij_ptr, owner_ptr, force_ptr, virial_ptr, start, nnei, NNEI: tl.constexpr):
        i = tl.program_id(0).to(tl.int64)
        j = tl.arange(0, NNEI)
        owner = tl.load(owner_ptr + i * nnei + j, mask=j < nnei, other=-1)
        real = owner >= 0  # padded slots carry g = 0: neither read nor added
        at = (i * nnei + j) * 3
        gx, gy, gz = _xyz(g_ptr, at, real)
        centre = start + i
        _scatter_forces(force_ptr, centre, owner, real, gx, gy, gz)
        x, y, z = _xyz(rij_ptr, at, real)
        _add_centre_virial(virial_ptr, centre, gx, gy, gz, x, y, z)

    @triton.jit
    def _add_centre_virial(virial_ptr, centre, gx, gy, gz, x, y, z):
        """virial_centre -= sum_j g_ij (x) r_ij: each centre's row belongs to one program alone."""
        row = virial_ptr + centre * 9
        tl.store(row, tl.load(row) - tl.sum(gx * x))
        tl.store(row + 1, tl.load(row + 1) - tl.sum(gx * y))
        tl.store(row + 2, tl.load(row + 2) - tl.sum(gx * z))
        tl.store(row + 3, tl.load(row + 3) - tl.sum(gy * x))
        tl.store(row + 4, tl.load(row + 4) - tl.sum(gy * y))
        tl.store(row + 5, tl.load(row + 5) - tl.sum(gy * z))
        tl.store(row + 6, tl.load(row + 6) - tl.sum(gz * x))
        tl.store(row + 7, tl.load(row + 7) - tl.sum(gz * y))
        tl.store(row + 8, tl.load(row + 8) - tl.sum(gz * z))

    @triton.jit
    def _back_scatter_kernel(rij_ptr, type_ptr, stat_ptr, geo_ptr, starts_ptr, top_ptr, q_ptr, owner_ptr, force_ptr,
                             virial_ptr, start, nnei, nstat, NTYPES: tl.constexpr, ATOMS: tl.constexpr,
                             PER_TYPE: tl.constexpr, WIDTH: tl.constexpr, NNEI: tl.constexpr):
        """`env_rows._back_kernel` and `_scatter_kernel` in one: a centre's dE/dr_ij from the dE/dR_ij (q) that a
        gradient kernel wrote where its tiles walked, straight into the forces and the centre's virial."""
        i = tl.program_id(0).to(tl.int64)
        slot = tl.arange(0, NNEI)
        owner = tl.load(owner_ptr + i * nnei + slot, mask=slot < nnei, other=-1)
        ctype = tl.load(type_ptr + i)
        b, rank = _block_and_rank(starts_ptr, slot, NTYPES)
        walked = _walked(top_ptr, i, ctype, b, rank, owner >= 0, NTYPES, ATOMS, PER_TYPE)
        _, _, _, _, x, y, z, inv, w, dw, st = _env_rows(rij_ptr, stat_ptr, geo_ptr, i, ctype, slot, walked, nnei,
                                                        nstat)
        q0, q1, q2, q3 = _load_four(q_ptr, i * nnei + slot, walked, WIDTH)
        gx, gy, gz = _pair_grad_of(stat_ptr, st, walked, nstat, x, y, z, inv, w, dw, q0, q1, q2, q3)
        gx, gy, gz = tl.where(walked, gx, 0.0), tl.where(walked, gy, 0.0), tl.where(walked, gz, 0.0)
        gx, gy, gz = gx.to(tl.float64), gy.to(tl.float64), gz.to(tl.float64)
        _scatter_forces(force_ptr, start + i, owner, walked, gx, gy, gz)
        _add_centre_virial(virial_ptr, start + i, gx, gy, gz, x.to(tl.float64), y.to(tl.float64), z.to(tl.float64))

    @triton.jit
    def _add_virial_row(row, ga, x, y, z):
        _add(row, -tl.sum(ga * x))
        _add(row + 1, -tl.sum(ga * y))
        _add(row + 2, -tl.sum(ga * z))

    @triton.jit
    def _training_forces_kernel(g_ptr, rij_ptr, nlist_ptr, force_ptr, virial_ptr, nloc, nnei, NNEI: tl.constexpr):
        """One program per centre i (frame-major over nf * nloc): F_i += sum_j g_ij, F_owner -= g_ij, and the
        frame's virial -= sum_j g_ij (x) r_ij; every addition atomic (owners and frames are shared)."""
        i = tl.program_id(0).to(tl.int64)
        gx, gy, gz, j, live = _pair_rows(g_ptr, i, nnei, NNEI)
        owner = tl.load(nlist_ptr + i * nnei + j, mask=live, other=-1)
        _scatter_forces(force_ptr, i, (i // nloc) * nloc + owner, owner >= 0, gx, gy, gz)  # padded slots: g = 0
        x, y, z = _pair_rows(rij_ptr, i, nnei, NNEI)[:3]
        row = virial_ptr + (i // nloc) * 9
        _add_virial_row(row, gx, x, y, z)
        _add_virial_row(row + 3, gy, x, y, z)
        _add_virial_row(row + 6, gz, x, y, z)

    @triton.jit
    def _training_forces_bwd_kernel(fbar_ptr, vbar_ptr, rij_ptr, nlist_ptr, gbar_ptr, nloc, nnei,
                                    NNEI: tl.constexpr):
        """dL/dg_ij = dL/dF_i - dL/dF_owner - sum_b dL/dW[a, b] r_ij[b] (W the frame's virial); padded slots take
        atom 0 of the frame as owner, as the reference's clamped scatter does."""
        i = tl.program_id(0).to(tl.int64)
        x, y, z, j, live = _pair_rows(rij_ptr, i, nnei, NNEI)
        owner = tl.maximum(tl.load(nlist_ptr + i * nnei + j, mask=live, other=0), 0)
        other = fbar_ptr + ((i // nloc) * nloc + owner) * 3
        vrow = vbar_ptr + (i // nloc) * 9
        at = (i * nnei + j) * 3
        for a in tl.static_range(3):
            mine = tl.load(fbar_ptr + i * 3 + a)
            theirs = tl.load(other + a, mask=live, other=0.0)
            virial = tl.load(vrow + 3 * a) * x + tl.load(vrow + 3 * a + 1) * y + tl.load(vrow + 3 * a + 2) * z
            tl.store(gbar_ptr + at + a, (mine - theirs - virial).to(gbar_ptr.dtype.element_ty), mask=live)


class TrainingForces(torch.autograd.Function):
    """(g (nf, nloc, nnei, 3), r_ij, nlist_loc) -> force (nf, nloc, 3), virial (nf, 9), float64; differentiable
    once with respect to g (r_ij is data in training)."""

    @staticmethod
    def forward(ctx, g: Tensor, rij: Tensor, nlist_loc: Tensor) -> tuple[Tensor, Tensor]:
        nf, nloc, nnei, _ = g.shape
        force = g.new_zeros(nf, nloc, 3, dtype=torch.float64)
        virial = g.new_zeros(nf, 9, dtype=torch.float64)
        rij, nlist_loc = rij.contiguous(), nlist_loc.contiguous()
        _training_forces_kernel[(nf * nloc,)](g.contiguous(), rij, nlist_loc, force, virial, nloc, nnei,
                                              **_tile(nnei))
        ctx.save_for_backward(rij, nlist_loc)
        ctx.g_dtype = g.dtype
        return force, virial

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, force_bar: Tensor, virial_bar: Tensor):  # an unused output's gradient comes as zeros
        rij, nlist_loc = ctx.saved_tensors
        nf, nloc, nnei, _ = rij.shape
        g_bar = rij.new_empty(rij.shape, dtype=ctx.g_dtype)
        _training_forces_bwd_kernel[(nf * nloc,)](force_bar.contiguous(), virial_bar.contiguous(), rij, nlist_loc,
                                                  g_bar, nloc, nnei, **_tile(nnei))
        return g_bar, None, None


def _tile(nnei: int) -> dict:
    """Launch constants of the force kernels: every slot of a centre in one program."""
    return dict(NNEI=triton.next_power_of_2(nnei), num_warps=2 if nnei <= 128 else 4)


def training_forces_and_virial(g: Tensor, rij: Tensor, nlist_loc: Tensor, atomic: bool = False) -> dict[str, Tensor]:
    """`deeppot.model.energy_model.forces_and_virial` through `TrainingForces` (the model's `forces_fn` on
    uncompiled GPU training steps); per-atom virials, or r_ij that needs a gradient, take the reference."""
    if atomic or rij.requires_grad or not embedding.triton_available(g.device):
        return forces_and_virial_reference(g, rij, nlist_loc, atomic)
    force, virial = TrainingForces.apply(g, rij, nlist_loc)
    return {"force": force, "virial": virial}


def scatter_forces_and_virial(force: Tensor, virial: Tensor, g: Tensor, rij: Tensor, nlist_loc: Tensor,
                              start: int) -> None:
    """F_i += sum_j g_ij, F_owner(J) -= g_ij, virial_i -= sum_j g_ij (x) r_ij for the centres start..start+n-1.

    force (ncentre, 3) and virial (ncentre, 9) float64; g, rij (n, nnei, 3) in any float precision; nlist_loc
    (n, nnei) owner centre of each slot, -1 for padding.
    """
    n, nnei = nlist_loc.shape
    if n == 0:
        return
    # one warp a centre: 15% faster than _tile's four for water's 138 slots in either precision (run 130)
    _scatter_kernel[(n,)](g.contiguous(), rij.contiguous(), nlist_loc.contiguous(), force, virial, start, nnei,
                          NNEI=triton.next_power_of_2(nnei), num_warps=1)


def back_and_scatter(d, args: list, q: Tensor, atoms: int, per_type: bool, force: Tensor, virial: Tensor,
                     owner: Tensor, start: int) -> None:
    """`env_rows.back_to_pairs` and `scatter_forces_and_virial` in one kernel: the forces and per-centre virials of
    the centres start.. from the dE/dR_ij q that a gradient kernel of `atoms`-centre tiles wrote (`args`: its
    `env_args`, the tiles' tops last), without dE/dr_ij ever stored."""
    rij, types, stats, geo, starts, tops = args[:6]
    n, nnei = rij.shape[:2]
    # One warp a centre. Two take half the registers a thread (sm_90 SASS: 63 against 128) but were slower on an
    # H100 (run 270: 0.46 -> 0.58 ms at 98,304 water atoms, 0.40 -> 0.54 on copper).
    if n == 0:
        return
    _back_scatter_kernel[(n,)](rij, types, stats, geo, starts, tops, q, owner.contiguous(), force, virial, start,
                               nnei, d.davg.numel(), NTYPES=d.ntypes, ATOMS=atoms, PER_TYPE=per_type,
                               WIDTH=q.shape[1], NNEI=triton.next_power_of_2(nnei), num_warps=1)


__all__ = ["TrainingForces", "back_and_scatter", "scatter_forces_and_virial", "training_forces_and_virial"]
