"""A Lennard-Jones potential with the `deeppot.md.potential.Potential` interface, for tests of the integrators:
cheap (all pairs, O(N^2)), momentum-conserving, with an exact virial. Not for production runs."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["LennardJones"]


class LennardJones:
    """U = sum_{i<j} 4 eps ((sigma / r)^12 - (sigma / r)^6) - U(rcut) for r < rcut, minimum image (rcut must be
    under half the cell's smallest width). Defaults: argon (eps 0.0104 eV, sigma 3.4 Å, rcut 8.5 Å).

    Forces and virial are written out (DeePMD's virial sign); tests/md check them against finite differences.
    """

    rebuilds = 0

    def __init__(self, epsilon: float = 0.0104, sigma: float = 3.4, rcut: float = 8.5,
                 type_map: Sequence[str] = ("Ar",), device: str | torch.device = "cpu") -> None:
        self.epsilon, self.sigma, self.rcut = float(epsilon), float(sigma), float(rcut)
        self.type_map, self.device = list(type_map), torch.device(device)
        sr6 = (self.sigma / self.rcut) ** 6
        self.shift = 4 * self.epsilon * (sr6 * sr6 - sr6)

    def stale(self, positions: Tensor, cell: Tensor | None) -> Tensor:
        return torch.zeros((), dtype=torch.bool, device=positions.device)  # no list: never stale

    def pairs(self, positions: Tensor, cell: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
        """Minimum-image pair vectors d_ij = r_j - r_i (N, N, 3), squared distances (N, N) (1 where masked) and the
        mask of counted pairs i < j within rcut (N, N)."""
        d = positions[None, :, :] - positions[:, None, :]
        if cell is not None:
            frac = d @ torch.linalg.inv(cell)
            d = (frac - torch.round(frac)) @ cell
        r2 = d.square().sum(-1)
        n = positions.shape[0]
        pair = torch.triu(torch.ones(n, n, dtype=torch.bool, device=positions.device), diagonal=1)
        pair = pair & (r2 < self.rcut**2)
        return d, torch.where(pair, r2, torch.ones_like(r2)), pair

    def energy(self, positions: Tensor, cell: Tensor | None) -> Tensor:
        _, r2, pair = self.pairs(positions, cell)
        sr6 = (self.sigma**2 / r2) ** 3
        return torch.where(pair, 4 * self.epsilon * (sr6 * sr6 - sr6) - self.shift, 0.0).sum()

    def compute(self, positions: Tensor, cell: Tensor | None, rebuild: bool) -> tuple[Tensor, Tensor, Tensor]:
        """Energy, forces and virial written out: g_ij = dU/dd_ij = U'(r) d / r = -24 eps (2 (s/r)^12 - (s/r)^6)
        d / r^2; F_i = sum_j g_ij - sum_j g_ji; W = -sum g_ij (x) d_ij."""
        d, r2, pair = self.pairs(positions, cell)
        sr6 = (self.sigma**2 / r2) ** 3
        energy = torch.where(pair, 4 * self.epsilon * (sr6 * sr6 - sr6) - self.shift, 0.0).sum()
        coef = torch.where(pair, -24 * self.epsilon * (2 * sr6 * sr6 - sr6) / r2, 0.0)  # (N, N)
        g = coef[..., None] * d  # (N, N, 3)
        forces = g.sum(1) - g.sum(0)
        virial = -torch.einsum("ija,ijb->ab", g, d)
        return energy, forces, virial

    def nlist_reference(self) -> None:
        return None

    def restore_nlist(self, reference: None) -> None:
        pass
