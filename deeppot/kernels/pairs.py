"""A chunk's pair data in one Triton kernel: the fast twin of `FlatNeighbors.pair_vectors` and
`FlatNeighbors.neighbor_owner_and_type` (`deeppot.infer.evaluate`).

In PyTorch the chunk's pair vectors, neighbour owners and types take ~12 kernels (gathers by the list, the centres'
coordinates, three selections of the padding, a float64 r_ij and its copy in the model's precision): 1.7 ms at
98,304 water atoms (run 83). Here one pass over the list gathers each neighbour's coordinates, subtracts in float64
(coordinates of large cells lose digits in float32 before the subtraction, not after) and stores r_ij in the
model's precision, with the owner and the type of each slot; padded slots get (rcut, rcut, rcut), owner and type -1.
Given a `deeppot.infer.order.CentreOrder`, row i of the chunk is centre order[start + i] and each owner is a position
in that order.
Owners and types are stored as `INDEX`, int32: every reader of them is a Triton kernel or takes int32 indices
(`index_add_`, indexing), and against int64 the narrower lists save ~0.2 GB of stores here and ~0.1 GB of loads in
the reach and scatter kernels a call at 98,304 water atoms: this kernel 0.284 -> 0.258 ms and the reach kernel 0.045
-> 0.028 on an H100 (run 270, `run268/pairs_ab.py`), whole calls 0.05-0.17 ms shorter on water and copper.
Tests: tests/kernels/test_pairs.py (GPU, or Triton's interpreter on a CPU).
"""

from __future__ import annotations

import torch
from torch import Tensor

from deeppot.kernels import embedding

BLOCK = 1024  # (centre, slot) pairs a program
INDEX = torch.int32  # owners and types (the module docstring says why)

if embedding.triton is not None:
    import triton
    import triton.language as tl

    @triton.jit
    def _pairs_kernel(coord_ptr, atype_ptr, owner_ptr, nlist_ptr, order_ptr, rij_ptr, loc_ptr, type_ptr, start, total,
                      nnei, nloc, nall, rcut, BLOCK: tl.constexpr, ORDERED: tl.constexpr):
        e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # pair e: slot e % nnei of row e // nnei
        live = e < total
        centre = start + e // nnei
        if ORDERED:  # row i is centre order[start + i]
            centre = tl.load(order_ptr + centre, mask=live, other=0)
        j = tl.load(nlist_ptr + centre * nnei + e % nnei, mask=live, other=-1)
        real = j >= 0
        me = (centre // nloc) * nall + centre % nloc  # the centre as an extended atom
        for c in tl.static_range(3):
            x_j = tl.load(coord_ptr + j * 3 + c, mask=real, other=0.0)
            x_i = tl.load(coord_ptr + me * 3 + c, mask=live, other=0.0)
            tl.store(rij_ptr + e * 3 + c, tl.where(real, x_j - x_i, rcut).to(rij_ptr.dtype.element_ty), mask=live)
        tl.store(loc_ptr + e, tl.load(owner_ptr + j, mask=real, other=-1), mask=live)
        tl.store(type_ptr + e, tl.load(atype_ptr + j, mask=real, other=-1), mask=live)


def pair_data(flat, start: int, stop: int, rcut: float, dtype: torch.dtype, order=None
              ) -> tuple[Tensor, Tensor, Tensor]:
    """r_ij (n, nnei, 3) in dtype, neighbour owner and type (n, nnei) `INDEX` of centres start..stop-1 of
    `FlatNeighbors` flat: `pair_vectors` (rounded once to dtype) and `neighbor_owner_and_type`; with a
    `CentreOrder`, of its positions start..stop-1, owners as positions (as `evaluate.reference_pair_data`)."""
    nnei = flat.nlist.shape[1]
    n, device = stop - start, flat.nlist.device
    rij = torch.empty(n, nnei, 3, dtype=dtype, device=device)
    loc = torch.empty(n, nnei, dtype=INDEX, device=device)
    types = torch.empty(n, nnei, dtype=INDEX, device=device)
    total = n * nnei
    if total:
        _pairs_kernel[(triton.cdiv(total, BLOCK),)](
            flat.ext_coord.contiguous(), flat.ext_atype.contiguous(),
            (flat.owner if order is None else order.owner).contiguous(), flat.nlist.contiguous(),
            flat.nlist if order is None else order.order, rij, loc, types, start, total, nnei, flat.nloc,
            flat.ext_coord.shape[0] // flat.nf, float(rcut), BLOCK=BLOCK, ORDERED=order is not None, num_warps=4)
    return rij, loc, types
