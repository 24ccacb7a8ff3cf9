"""The se_e2_a environment matrix (spec §4.2): pure functions of tensors."""

from __future__ import annotations

import torch
from torch import Tensor


def smooth_switch(r: Tensor, rcut_smth: float, rcut: float) -> Tensor:
    """Quintic switch w(r): 1 below rcut_smth, 0 above rcut, C2 at both ends."""
    u = ((r - rcut_smth) / (rcut - rcut_smth)).clamp(0.0, 1.0)
    return u * u * u * (-6.0 * u * u + 15.0 * u - 10.0) + 1.0


def smooth_switch_derivative(r: Tensor, rcut_smth: float, rcut: float) -> Tensor:
    """dw/dr of `smooth_switch`: -30 u^2 (u-1)^2 / (rcut - rcut_smth), zero outside (rcut_smth, rcut)."""
    u = ((r - rcut_smth) / (rcut - rcut_smth)).clamp(0.0, 1.0)
    return -30.0 * u * u * (u - 1.0) * (u - 1.0) / (rcut - rcut_smth)


def neighbor_vectors(ext_coord: Tensor, nlist: Tensor, rcut: float) -> tuple[Tensor, Tensor]:
    """Displacements r_ij = x_J - x_i for every neighbour slot, and the slot mask.

    ext_coord (nf, nall, 3), nlist (nf, nloc, nnei) -> rij (nf, nloc, nnei, 3), mask (nf, nloc, nnei).
    Padded slots (-1) get a dummy vector longer than rcut, so their switch weight is exactly 0 and every
    derivative stays finite.
    """
    nf, nloc, nnei = nlist.shape
    mask = nlist >= 0
    index = nlist.clamp(min=0).reshape(nf, nloc * nnei, 1).expand(-1, -1, 3)
    neighbor = torch.gather(ext_coord, 1, index).reshape(nf, nloc, nnei, 3)
    rij = neighbor - ext_coord[:, :nloc, None, :]
    dummy = torch.full_like(rij, rcut)  # |dummy| = sqrt(3) rcut > rcut
    return torch.where(mask[..., None], rij, dummy), mask


def env_mat_raw(rij: Tensor, mask: Tensor, rcut: float, rcut_smth: float, protection: float = 0.0) -> Tensor:
    """Un-normalised rows w(r) [1/(r+p), x/(r+p)^2, y/(r+p)^2, z/(r+p)^2]; (nf, nloc, nnei, 4)."""
    r = torch.linalg.vector_norm(rij, dim=-1, keepdim=True)
    inv = 1.0 / (r + protection)
    weight = smooth_switch(r, rcut_smth, rcut) * mask[..., None]
    return torch.cat([inv, rij * inv * inv], dim=-1) * weight


def normalize_env_mat(env: Tensor, center_type: Tensor, davg: Tensor, dstd: Tensor) -> Tensor:
    """(R~ - davg[t_i]) / dstd[t_i]; padded slots become (-mu/sigma, 0, 0, 0), as in DeePMD.

    env (nf, nloc, nnei, 4), center_type (nf, nloc) in [0, ntypes), davg/dstd (ntypes, nnei, 4).
    """
    return (env - davg[center_type]) / dstd[center_type]
