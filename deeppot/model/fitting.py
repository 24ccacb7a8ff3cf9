"""Energy fitting: one net per atom type on the descriptor (spec §5.2)."""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from deeppot.model.network import StackedMLP


def atomic_energy(descriptor: Tensor, atype: Tensor, nets: StackedMLP, bias: Tensor, dtype: torch.dtype,
                  groups: list[Tensor] | None = None, at_once: bool = False) -> Tensor:
    """E_i = F_{t_i}(D_i) + bias[t_i] in float64.

    descriptor (nf, nloc, ndesc), atype (nf, nloc), bias (ntypes,) -> (nf, nloc).
    at_once: every net on every atom in batched GEMMs, each atom picking its type's output (fewest kernels);
    else with `groups` (per type, the indices of its atoms, the same in every frame) each net on its own atoms,
    without them every net on every atom, selected by type. All keep static shapes and need no host sync.
    """
    x = descriptor.to(dtype)
    if at_once:
        e_all = nets.forward_all(x.reshape(1, -1, x.shape[-1]))  # (ntypes, nf*nloc, 1)
        energy = own_type_rows(e_all, atype).reshape(atype.shape).to(torch.float64)
        return energy + bias[atype.clamp(min=0)]
    energy = torch.zeros(atype.shape, dtype=torch.float64, device=descriptor.device)
    for t, net in enumerate(nets):
        if groups is None:
            energy = torch.where(atype == t, net(x)[..., 0].to(torch.float64), energy)
        elif groups[t].numel() > 0:
            e_t = net(x.index_select(1, groups[t]))[..., 0].to(torch.float64)
            energy = energy.index_copy(1, groups[t], e_t)
    return energy + bias[atype.clamp(min=0)]


class TypeRows:
    """Each type's atoms of a batch as the rows of its own net, for frames that share their types (one system).

    index (ntypes, nf * most): the flat atom (f * nloc + i) of each net's row, frame by frame, `most` rows a frame
    (the most atoms of one type); a type's rows past its own atoms repeat atom 0 (their outputs are never read, so
    no gradient reaches them). inverse (nf * nloc,): each atom's flat row in (ntypes, nf * most).
    """

    def __init__(self, groups: list[Tensor], nf: int, nloc: int) -> None:
        most = max(g.numel() for g in groups)
        device = groups[0].device
        frames = torch.arange(nf, device=device)
        index = torch.zeros(len(groups), nf, most, dtype=torch.long, device=device)
        inverse = torch.empty(nf, nloc, dtype=torch.long, device=device)
        for t, g in enumerate(groups):
            index[t, :, :g.numel()] = frames[:, None] * nloc + g
            inverse[:, g] = (t * nf + frames[:, None]) * most + torch.arange(g.numel(), device=device)
        self.index, self.inverse = index.reshape(len(groups), -1), inverse.reshape(-1)

    def to(self, device: torch.device | str) -> TypeRows:
        moved = copy.copy(self)
        moved.index, moved.inverse = self.index.to(device), self.inverse.to(device)
        return moved

    def gather(self, x: Tensor) -> Tensor:
        """(nf, nloc, n) -> each net's rows (ntypes, nf * most, n)."""
        return x.reshape(-1, x.shape[-1]).index_select(0, self.index.reshape(-1)).reshape(*self.index.shape, -1)

    def own(self, per_type: Tensor) -> Tensor:
        """(ntypes, nf * most, k) -> each atom's row of its own net, (nf * nloc, k)."""
        return per_type.reshape(-1, per_type.shape[-1]).index_select(0, self.inverse)


def own_type_rows(per_type: Tensor, atype: Tensor) -> Tensor:
    """Row i of per_type[atype_i]: (ntypes, nf*nloc, k), atype (nf, nloc) -> (nf*nloc, k); one gather, none for a
    single type (its copy of dE/dD took 0.4 ms of a 108,000-atom copper call, run 249)."""
    if per_type.shape[0] == 1:
        return per_type.reshape(-1, per_type.shape[-1])
    rows = per_type.shape[1]
    pick = atype.reshape(-1).clamp(min=0) * rows + torch.arange(rows, device=per_type.device)
    return per_type.reshape(-1, per_type.shape[-1]).index_select(0, pick)


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
        self.nets = StackedMLP(ntypes, dim_descrpt, neuron, activation_function, resnet_dt, dtype, out_dim=1,
                               seed=seed)
        self.all_nets_at_once: bool | None = None  # None: on CUDA only
        self.register_buffer("bias_atom_e", torch.zeros(ntypes, dtype=torch.float64))
        self.register_buffer("out_bias", torch.zeros(ntypes, dtype=torch.float64))

    def at_once(self, x: Tensor) -> bool:
        """Run every type's net on every atom at once (batched GEMMs, fewest kernels): by default on CUDA."""
        return x.is_cuda if self.all_nets_at_once is None else self.all_nets_at_once

    def last_hidden(self, descriptor: Tensor, atype: Tensor) -> Tensor:
        """Each atom's output of its type's last hidden layer, (nf, nloc, neuron[-1]) in float64: what the output
        layer reads (DeePMD-kit's middle output, `eval_fitting_last_layer`)."""
        if not self.neuron:
            raise ValueError("the fitting net has no hidden layer (neuron is [])")
        x = descriptor.to(self.dtype)
        out = torch.zeros(*atype.shape, self.neuron[-1], dtype=torch.float64, device=x.device)
        for t in range(self.ntypes):
            h = x
            for layer in self.nets.layers[:-1]:
                h = layer.forward_one(h, t)
            out = torch.where((atype == t)[..., None], h.to(torch.float64), out)
        return out

    def forward(self, descriptor: Tensor, atype: Tensor, groups: list[Tensor] | None = None) -> Tensor:
        return atomic_energy(descriptor, atype, self.nets, self.bias_atom_e + self.out_bias, self.dtype, groups,
                             self.at_once(descriptor))
