"""The se_e2_a descriptor (spec §4.3-4.6)."""

from __future__ import annotations

from itertools import accumulate

import torch
from torch import Tensor, nn

from deeppot.model.env_mat import env_mat_raw, normalize_env_mat
from deeppot.model.network import MLP


def exclusion_mask(center_type: Tensor, nlist: Tensor, neighbor_type: Tensor, excluded: Tensor) -> Tensor:
    """False for neighbour slots whose (centre, neighbour) type pair is excluded; padding is never excluded.

    center_type (nf, nloc), nlist and neighbor_type (nf, nloc, nnei), excluded (ntypes, ntypes) bool.
    """
    pair_excluded = excluded[center_type[..., None], neighbor_type.clamp(min=0)] & (nlist >= 0)
    return ~pair_excluded


def descriptor_from_blocks(rr: Tensor, center_type: Tensor, nets: nn.ModuleList, sel: list[int],
                           type_one_side: bool, axis_neuron: int) -> tuple[Tensor, Tensor]:
    """D_i = T_i^T T_i^<, with T_i = (1/Nc) sum_j R_ij^T G(s_ij) (spec §4.4).

    rr (nf, nloc, nnei, 4) normalised and exclusion-masked rows -> D (nf, nloc, M1*M2), T (nf, nloc, 4, M1).
    Each neighbour-type block b is embedded by net b (type_one_side) or by net (a, b) for centre type a,
    stored at flat index a + b*ntypes.
    """
    ntypes = len(sel)
    starts = [0, *accumulate(sel)]
    t_mat = None
    for b in range(ntypes):
        block = rr[:, :, starts[b]:starts[b + 1], :]  # (nf, nloc, sel_b, 4)
        if block.shape[2] == 0:
            continue
        s = block[..., :1]
        if type_one_side:
            contrib = torch.einsum("fnjc,fnjm->fncm", block, nets[b](s))
        else:
            contrib = 0
            for a in range(ntypes):  # static shapes: every centre through net (a, b), then select by type
                g = nets[a + b * ntypes](s)
                is_a = (center_type == a)[..., None, None].to(block.dtype)
                contrib = contrib + is_a * torch.einsum("fnjc,fnjm->fncm", block, g)
        t_mat = contrib if t_mat is None else t_mat + contrib
    t_mat = t_mat / sum(sel)
    d = torch.einsum("fncm,fnck->fnmk", t_mat, t_mat[..., :axis_neuron])
    return d.reshape(*d.shape[:2], -1), t_mat


class DescrptSeA(nn.Module):
    """Parameters and buffers of se_e2_a; the maths is in the functions above."""

    def __init__(self, ntypes: int, sel: list[int], rcut: float, rcut_smth: float, neuron: list[int],
                 axis_neuron: int, activation_function: str = "tanh", resnet_dt: bool = False,
                 type_one_side: bool = False, exclude_types: list[list[int]] | None = None,
                 env_protection: float = 0.0, set_davg_zero: bool = False, dtype: torch.dtype = torch.float64,
                 seed: int | None = None) -> None:
        super().__init__()
        self.ntypes, self.sel, self.rcut, self.rcut_smth = ntypes, list(sel), rcut, rcut_smth
        self.neuron, self.axis_neuron, self.type_one_side = list(neuron), axis_neuron, type_one_side
        self.activation_function, self.resnet_dt, self.env_protection = activation_function, resnet_dt, env_protection
        self.set_davg_zero, self.dtype = set_davg_zero, dtype
        self.exclude_types = [list(p) for p in (exclude_types or [])]
        nnei = sum(sel)
        nnets = ntypes if type_one_side else ntypes * ntypes
        self.nets = nn.ModuleList(
            MLP(1, neuron, activation_function, resnet_dt, dtype, seed=None if seed is None else seed + k)
            for k in range(nnets))
        excluded = torch.zeros(ntypes, ntypes, dtype=torch.bool)
        for a, b in self.exclude_types:
            excluded[a, b] = excluded[b, a] = True
        self.register_buffer("excluded", excluded)
        self.register_buffer("davg", torch.zeros(ntypes, nnei, 4, dtype=dtype))
        self.register_buffer("dstd", torch.ones(ntypes, nnei, 4, dtype=dtype))

    @property
    def dim_out(self) -> int:
        return self.neuron[-1] * self.axis_neuron

    def forward(self, rij: Tensor, nlist: Tensor, center_type: Tensor, neighbor_type: Tensor) -> Tensor:
        """Descriptor (nf, nloc, M1*M2) in float64 from pair vectors rij (nf, nloc, nnei, 3).

        nlist (nf, nloc, nnei) gives the slot layout (-1 = padding); center_type (nf, nloc);
        neighbor_type (nf, nloc, nnei), used only for exclude_types.
        """
        raw = env_mat_raw(rij.to(self.dtype), nlist >= 0, self.rcut, self.rcut_smth, self.env_protection)
        rr = normalize_env_mat(raw, center_type, self.davg, self.dstd)
        if self.exclude_types:
            rr = rr * exclusion_mask(center_type, nlist, neighbor_type, self.excluded).to(rr.dtype)[..., None]
        d, _ = descriptor_from_blocks(rr, center_type, self.nets, self.sel, self.type_one_side, self.axis_neuron)
        return d.to(torch.float64)
