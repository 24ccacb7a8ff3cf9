"""Energy fitting: one net per atom type on the descriptor (spec §5.2)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from deeppot.model.network import MLP


def atomic_energy(descriptor: Tensor, atype: Tensor, nets: nn.ModuleList, bias: Tensor, dtype: torch.dtype,
                  groups: list[Tensor] | None = None) -> Tensor:
    """E_i = F_{t_i}(D_i) + bias[t_i] in float64.

    descriptor (nf, nloc, ndesc), atype (nf, nloc), bias (ntypes,) -> (nf, nloc).
    With `groups` (per type, the indices of its atoms, the same in every frame) each net runs on its own atoms;
    without, every net runs on every atom and the type selects the result. Both keep static shapes, no host sync.
    """
    x = descriptor.to(dtype)
    energy = torch.zeros(atype.shape, dtype=torch.float64, device=descriptor.device)
    for t, net in enumerate(nets):
        if groups is None:
            energy = torch.where(atype == t, net(x)[..., 0].to(torch.float64), energy)
        elif groups[t].numel() > 0:
            e_t = net(x.index_select(1, groups[t]))[..., 0].to(torch.float64)
            energy = energy.index_copy(1, groups[t], e_t)
    return energy + bias[atype.clamp(min=0)]


class EnergyFitting(nn.Module):
    """Per-type fitting nets plus the per-type energy shift.

    `bias_atom_e` (ntypes,) is DeePMD-kit's fitting bias (non-zero only in models converted from TF);
    `out_bias` (ntypes,) is the statistics-derived energy shift of PT models. Both are added (spec §5.2).
    """

    def __init__(self, ntypes: int, dim_descrpt: int, neuron: list[int], activation_function: str = "tanh",
                 resnet_dt: bool = True, dtype: torch.dtype = torch.float64, seed: int | None = None) -> None:
        super().__init__()
        self.ntypes, self.dim_descrpt, self.neuron = ntypes, dim_descrpt, list(neuron)
        self.activation_function, self.resnet_dt, self.dtype = activation_function, resnet_dt, dtype
        self.nets = nn.ModuleList(
            MLP(dim_descrpt, neuron, activation_function, resnet_dt, dtype, out_dim=1,
                seed=None if seed is None else seed + t)
            for t in range(ntypes))
        self.register_buffer("bias_atom_e", torch.zeros(ntypes, dtype=torch.float64))
        self.register_buffer("out_bias", torch.zeros(ntypes, dtype=torch.float64))

    def forward(self, descriptor: Tensor, atype: Tensor, groups: list[Tensor] | None = None) -> Tensor:
        return atomic_energy(descriptor, atype, self.nets, self.bias_atom_e + self.out_bias, self.dtype, groups)
