"""The se_e2_a descriptor (spec §4.3-4.6)."""

from __future__ import annotations

from itertools import accumulate, pairwise

import torch
from torch import Tensor, nn

from deeppot.model.env_mat import env_mat_raw, normalize_env_mat
from deeppot.model.network import StackedMLP
from deeppot.model.slots import SlotLayout, list_sel, slot_stats
from deeppot.model.tabulate import CompressedTables, TabulatedNets, tabulate


def exclusion_mask(center_type: Tensor, nlist: Tensor, neighbor_type: Tensor, excluded: Tensor) -> Tensor:
    """False for neighbour slots whose (centre, neighbour) type pair is excluded; padding is never excluded.

    center_type (nf, nloc), nlist and neighbor_type (nf, nloc, nnei), excluded (ntypes, ntypes) bool.
    """
    pair_excluded = excluded[center_type[..., None], neighbor_type.clamp(min=0)] & (nlist >= 0)
    return ~pair_excluded


def descriptor_from_blocks(rr: Tensor, center_type: Tensor, nets: StackedMLP | TabulatedNets, sel: list[int],
                           type_one_side: bool, axis_neuron: int, groups: list[Tensor] | None = None,
                           layout: SlotLayout | None = None) -> tuple[Tensor, Tensor]:
    """D_i = T_i^T T_i^<, with T_i = (1/Nc) sum_j R_ij^T G(s_ij) (spec §4.4).

    rr (nf, nloc, nnei, 4) normalised and exclusion-masked rows -> D (nf, nloc, M1*M2), T (nf, nloc, 4, M1).
    sel is the model's (Nc = sum(sel)); a trimmed list's slots follow its layout (`deeppot.model.slots`).
    Each neighbour-type block b is embedded by net b (type_one_side) or by net (a, b) for centre type a,
    stored at flat index a + b*ntypes. `groups` (per centre type, its atom indices in every frame) lets the
    two-sided nets run on their own centres only; without it every centre goes through every net.
    (Running all nets at once as batched GEMMs was measured slower on an H200: cuBLAS gives the batched weight
    gradients, reduced over ~10^4 pair rows, no split-K; see benchmarks/results/README.md.)
    """
    starts = [0, *accumulate(list_sel(sel, layout))]
    blocks = [rr[:, :, a:b, :] for a, b in pairwise(starts)]
    # how many slots each slot counts for: a trimmed list's stand-ins count for the padding they stand for
    counts = [None if layout is None else layout.weight[a:b] for a, b in pairwise(starts)]
    if type_one_side:
        t_mat = sum(_embed_block(block, nets[b], counts[b]) for b, block in enumerate(blocks) if block.shape[2] > 0)
    elif groups is None:
        t_mat = _two_side_masked(blocks, counts, center_type, nets)
    else:
        t_mat = _two_side_grouped(blocks, counts, groups, nets)
    return _from_t(t_mat / sum(sel), axis_neuron)


def _from_t(t_mat: Tensor, axis_neuron: int) -> tuple[Tensor, Tensor]:
    d = torch.einsum("fncm,fnck->fnmk", t_mat, t_mat[..., :axis_neuron])
    return d.reshape(*d.shape[:2], -1), t_mat


def _embed_block(block: Tensor, net, count: Tensor | None = None) -> Tensor:
    """sum_j R_j^T G(s_j) over one neighbour-type block: (nf, n, sel_b, 4) -> (nf, n, 4, M1); count (sel_b, 1)
    how many slots each slot counts for (None: one)."""
    rows = block if count is None else block * count
    return torch.einsum("fnjc,fnjm->fncm", rows, net(block[..., :1]))


def _two_side_masked(blocks: list[Tensor], counts: list[Tensor | None], center_type: Tensor,
                     nets: StackedMLP) -> Tensor:
    """Every centre through net (a, b), then select by centre type: static shapes for any atype."""
    ntypes = len(blocks)
    t_mat = 0
    for b, block in enumerate(blocks):
        for a in range(ntypes):
            if block.shape[2] > 0:
                is_a = (center_type == a)[..., None, None].to(block.dtype)
                t_mat = t_mat + is_a * _embed_block(block, nets[a + b * ntypes], counts[b])
    return t_mat


def _two_side_grouped(blocks: list[Tensor], counts: list[Tensor | None], groups: list[Tensor],
                      nets: StackedMLP) -> Tensor:
    """Net (a, b) on the centres of type a only (their indices known ahead): ntypes times less work."""
    ntypes = len(blocks)
    nf, nloc = blocks[0].shape[:2]
    m1 = nets[0].neuron[-1]
    t_mat = blocks[0].new_zeros(nf, nloc, 4, m1)
    for a, idx in enumerate(groups):
        if idx.numel() == 0:
            continue
        t_a = sum(_embed_block(block.index_select(1, idx), nets[a + b * ntypes], counts[b])
                  for b, block in enumerate(blocks) if block.shape[2] > 0)
        t_mat = t_mat.index_copy(1, idx, t_a)
    return t_mat


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
        self.nets = StackedMLP(nnets, 1, neuron, activation_function, resnet_dt, dtype, seed=seed)
        excluded = torch.zeros(ntypes, ntypes, dtype=torch.bool)
        for a, b in self.exclude_types:
            excluded[a, b] = excluded[b, a] = True
        self.register_buffer("excluded", excluded)
        self.register_buffer("davg", torch.zeros(ntypes, nnei, 4, dtype=dtype))
        self.register_buffer("dstd", torch.ones(ntypes, nnei, 4, dtype=dtype))
        # compression (spec §10): the embedding nets tabulated; the nets stay, so the model serialises both ways
        self.tables: CompressedTables | None = None

    @property
    def compressed(self) -> bool:
        return self.tables is not None

    def enable_compression(self, min_nbor_dist: float, step: float = 0.01, extrapolate: float = 5.0,
                           check_frequency: int = -1) -> None:
        """Tabulate the embedding nets (deeppot.model.tabulate); evaluation then reads the tables."""
        self.tables = tabulate(self, min_nbor_dist, step, extrapolate, check_frequency)

    def embedding_nets(self):
        """What the blocks are embedded with: the nets, or their tables once compressed."""
        return self.nets if self.tables is None else TabulatedNets(self.nets, self.tables)

    @property
    def dim_out(self) -> int:
        return self.neuron[-1] * self.axis_neuron

    def forward(self, rij: Tensor, nlist: Tensor, center_type: Tensor, neighbor_type: Tensor,
                groups: list[Tensor] | None = None, layout: SlotLayout | None = None) -> Tensor:
        """Descriptor (nf, nloc, M1*M2) in float64 from pair vectors rij (nf, nloc, nnei, 3).

        nlist (nf, nloc, nnei) gives the slot layout (-1 = padding); center_type (nf, nloc);
        neighbor_type (nf, nloc, nnei), used only for exclude_types; layout: a trimmed list's slots.
        """
        raw = env_mat_raw(rij.to(self.dtype), nlist >= 0, self.rcut, self.rcut_smth, self.env_protection)
        rr = normalize_env_mat(raw, center_type, *slot_stats(self, layout))
        if self.exclude_types:
            rr = rr * exclusion_mask(center_type, nlist, neighbor_type, self.excluded).to(rr.dtype)[..., None]
        d, _ = descriptor_from_blocks(rr, center_type, self.embedding_nets(), self.sel, self.type_one_side,
                                      self.axis_neuron, groups, layout)
        return d.to(torch.float64)
