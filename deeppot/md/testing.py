"""A Lennard-Jones potential with the `deeppot.md.potential.Potential` interface, for tests of the integrators:
cheap (all pairs, O(N^2)), momentum-conserving, with an exact virial. Not for production runs."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["LennardJones"]


class LennardJones:
    """Shifted-force Lennard-Jones: u(r) = 4 eps ((sigma / r)^12 - (sigma / r)^6), and for r < rcut the pair energy
    u(r) - u(rcut) - (r - rcut) u'(rcut), so energy and force go to zero at rcut (smooth enough for the integrators'
    statistics to be exact to the time-step error). Minimum image: rcut must be under half the cell's smallest
    width. Defaults: argon (eps 0.0104 eV, sigma 3.4 Å, rcut 8.5 Å).

    Forces and virial are written out (DeePMD's virial sign); tests/md check them against finite differences.
    """

    rebuilds = 0

    def __init__(self, epsilon: float = 0.0104, sigma: float = 3.4, rcut: float = 8.5,
                 type_map: Sequence[str] = ("Ar",), device: str | torch.device = "cpu") -> None:
        self.epsilon, self.sigma, self.rcut = float(epsilon), float(sigma), float(rcut)
        self.type_map, self.device = list(type_map), torch.device(device)
        self.u_cut, self.du_cut = self.pair_energy(self.rcut**2), self.pair_slope(self.rcut**2)

    def pair_energy(self, r2):
        sr6 = (self.sigma**2 / r2) ** 3
        return 4 * self.epsilon * (sr6 * sr6 - sr6)

    def pair_slope(self, r2):
        """u'(r) = -24 eps (2 (sigma/r)^12 - (sigma/r)^6) / r."""
        sr6 = (self.sigma**2 / r2) ** 3
        return -24 * self.epsilon * (2 * sr6 * sr6 - sr6) / r2**0.5

    def skin_used(self, positions: Tensor, cell: Tensor | None) -> Tensor:
        return torch.zeros((), dtype=positions.dtype, device=positions.device)  # no list: never stale

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
        shifted = self.pair_energy(r2) - self.u_cut - (r2.sqrt() - self.rcut) * self.du_cut
        return torch.where(pair, shifted, 0.0).sum()

    def compute(self, positions: Tensor, cell: Tensor | None, rebuild: bool) -> tuple[Tensor, Tensor, Tensor]:
        """Energy, forces and virial written out: g_ij = dU/dd_ij = (u'(r) - u'(rcut)) d / r for d_ij = r_j - r_i;
        F_i = sum_j g_ij - sum_j g_ji; W = -sum g_ij (x) d_ij."""
        d, r2, pair = self.pairs(positions, cell)
        r = r2.sqrt()
        energy = torch.where(pair, self.pair_energy(r2) - self.u_cut - (r - self.rcut) * self.du_cut, 0.0).sum()
        coef = torch.where(pair, (self.pair_slope(r2) - self.du_cut) / r, 0.0)  # (N, N)
        g = coef[..., None] * d  # (N, N, 3)
        forces = g.sum(1) - g.sum(0)
        virial = -torch.einsum("ija,ijb->ab", g, d)
        return energy, forces, virial

    def nlist_reference(self) -> None:
        return None

    def restore_nlist(self, reference: None) -> None:
        pass
