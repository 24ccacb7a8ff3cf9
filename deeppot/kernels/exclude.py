"""exclude_types on the fused inference paths, done around the kernels: the kernels themselves know no exclusions.

An excluded pair's environment-matrix row is zero (the mask multiplies the normalised rows, spec §4.2), so it adds
nothing to T_i = sum_j R_ij^T G(s_ij) / nnei, nor to any derivative. A padded slot adds a constant instead: its
vector lies beyond rcut, its switch weight is zero, its row is R_pad = -davg/dstd and its derivative is zero.
So the kernels are given every excluded pair as a padded slot (its vector moved beyond rcut), and what those slots
added, R_pad^T G(s_pad) each, is taken off T afterwards. Forces need nothing more: the kernels' dE/dr_ij of a padded
slot is zero, as an excluded pair's. No host sync, so the graphed evaluation keeps working.
"""

from __future__ import annotations

from itertools import accumulate

import torch
from torch import Tensor

from deeppot.model.descriptor import exclusion_mask

__all__ = ["as_padding", "padding_terms"]


def padding_terms(d) -> Tensor:
    """R_pad^T G(s_pad) of slot j of a type-a centre, (ntypes, nnei, 4 * M1): what that slot adds to nnei * T
    when padded. G is what the kernels embed with: the net, or its table once compressed."""
    rows = (-d.davg / d.dstd).to(d.dtype)  # (ntypes, nnei, 4)
    nets, starts = d.embedding_nets(), [0, *accumulate(d.sel)]
    per_type = []
    for a in range(d.ntypes):
        blocks = []
        for b in range(len(d.sel)):
            block = rows[a, starts[b]:starts[b + 1]]  # (sel_b, 4)
            g = nets[b if d.type_one_side else a + b * d.ntypes](block[:, :1])  # (sel_b, M1)
            blocks.append((block[:, :, None] * g[:, None, :]).flatten(1))
        per_type.append(torch.cat(blocks))
    return torch.stack(per_type)


def as_padding(d, rij: Tensor, center_type: Tensor, neighbor_type: Tensor) -> tuple[Tensor, Tensor | None]:
    """rij (n, nnei, 3) with every excluded pair moved beyond rcut, and the excess (n, 4, M1) those slots then add
    to the kernels' T (subtract it); None without exclude_types. neighbor_type (n, nnei): -1 for padding."""
    if not d.exclude_types:
        return rij, None
    excluded = ~exclusion_mask(center_type, neighbor_type, neighbor_type, d.excluded)  # (n, nnei)
    rij = torch.where(excluded[..., None], torch.full_like(rij, d.rcut), rij)
    with torch.no_grad():
        terms = padding_terms(d)
        weight = excluded.to(terms.dtype)
        excess = sum((weight * (center_type == a)[:, None]) @ terms[a] for a in range(d.ntypes))
    n, nnei = weight.shape
    return rij, excess.reshape(n, 4, -1) / nnei
