"""The centres of a neighbour list in the order of their neighbour counts, so that the inference kernels' tiles
hold alike atoms.

The atom-tile kernels (`deeppot.kernels.atom_tiles`) walk each neighbour-type block of a tile of consecutive
centres up to the furthest reach among them, in chunks of 8 or 16 slots. In the order the atoms come in, a tile's
atoms differ in type and in how many neighbours of each type they have, and the tile walks for the one with most:
water atoms have 88.9 neighbours each but their tiles of (4 atoms, 16 slots) walked 102.7 slots an atom; the alloy's
70.5 walked 105.5 (`benchmarks/results`, run 258). Sorted by centre type and then by each block's count in steps
of 8 slots, the tiles walk 98.1 and 93.0 (water's two kernels then took 7.00 ms instead of 7.32).

`CentreOrder` is that order for one neighbour list: `deeppot.kernels.pairs` reads row i of a chunk from centre
order[i], every later stage works on positions in the order (each neighbour's owner among them), and
`evaluate_flat` puts each centre's outputs back in its own row before it sums them per frame. Only the speed
depends on the order, never a result beyond rounding: a stale order (an MD step's list reselected since) is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate, pairwise

import torch
from torch import Tensor

from deeppot.infer.evaluate import FlatNeighbors, chunks

STEP = 8  # slots a count is rounded up to in the sort key: the finest chunk of the kernels
KEY_BITS = 62


@dataclass
class CentreOrder:
    """order (ncentre,): the centre at each position; inverse: the position of each centre; owner (nf * nall,): the
    position of each extended atom's centre; center_type: the type at each position; counts (ncentre, nblocks): the
    neighbours of each block at each position; type_rows: the positions of each type in every chunk of
    `evaluate_flat` (`FlatNeighbors.rows_by_type`'s layout: local to the chunk); source: which list it was made for
    (`_source`); tiles: what the evaluator chose for it (`deeppot.kernels.atom_tiles.gradient_tile`), kept."""

    order: Tensor
    inverse: Tensor
    owner: Tensor
    center_type: Tensor
    counts: Tensor
    type_rows: dict
    source: tuple
    tiles: dict = field(default_factory=dict)


def centre_order(flat: FlatNeighbors, sel: list[int], ntypes: int, chunk_atoms: int) -> CentreOrder:
    """The order of flat's centres by type, then by the count of each neighbour-type block in steps of STEP. The
    count of each type comes from flat's `rows_by_type` (a host sync where flat has not made them yet)."""
    counts = block_counts(flat.nlist, sel)
    # stable: alike atoms keep their order among themselves (and what locality it has)
    order = torch.argsort(sort_key(counts, flat.center_type, sel, ntypes), stable=True)
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(len(order), device=order.device)
    return CentreOrder(order, inverse, inverse[flat.owner], flat.center_type[order], counts[order],
                       type_ranges(type_counts(flat, ntypes, chunk_atoms), flat.ncentre, chunk_atoms, order.device),
                       _source(flat))


def type_counts(flat: FlatNeighbors, ntypes: int, chunk_atoms: int) -> list[int]:
    """The centres of each type, summed over the lengths of flat's `rows_by_type` (no sync once they are made)."""
    if ntypes == 1:
        return [flat.ncentre]
    rows = [flat.rows_by_type(start, stop, ntypes) for start, stop in chunks(flat.ncentre, chunk_atoms)]
    return [sum(len(chunk[t]) for chunk in rows) for t in range(ntypes)]


def block_counts(nlist: Tensor, sel: list[int]) -> Tensor:
    """The neighbours of each centre in each neighbour-type block (n, nblocks) int32: the slots up to its last one,
    as the kernels' reach counts them (the lists put a block's padding after its neighbours)."""
    blocks = (nlist >= 0).split(list(sel), dim=1)
    return torch.stack([block.sum(1, dtype=torch.int32) for block in blocks], 1)


def sort_key(counts: Tensor, center_type: Tensor, sel: list[int], ntypes: int) -> Tensor:
    """Per centre an int64 that orders by type, then lexicographically by each block's count of neighbours
    (`block_counts`, rounded up to STEP); blocks past what 62 bits hold are left out of the key."""
    key, span = center_type, ntypes
    for b, width in enumerate(sel):
        base = width // STEP + 2
        if span * base >= 2**KEY_BITS:
            break
        key = key * base + (counts[:, b].long() + STEP - 1) // STEP
        span *= base
    return key


def type_ranges(counts: list[int], n: int, chunk_atoms: int, device: torch.device) -> dict:
    """`FlatNeighbors.type_rows` of centres sorted by type (counts: of each type): every chunk's rows of a type
    are one range."""
    rows = {}
    for start, stop in chunks(n, chunk_atoms):
        clip = [min(max(end, start), stop) - start for end in accumulate(counts, initial=0)]  # within the chunk
        rows[(start, stop, len(counts))] = [torch.arange(lo, hi, device=device) for lo, hi in pairwise(clip)]
    return rows


def _source(flat: FlatNeighbors) -> tuple:
    """What an order is valid for: the centres' count and the extended atoms' owners (the positions of `owner`
    are of these)."""
    owner = flat.owner
    return flat.ncentre, owner.shape, owner.data_ptr(), owner._version


def kept_order(flat: FlatNeighbors, sel: list[int], ntypes: int, chunk_atoms: int) -> CentreOrder:
    """flat's `CentreOrder`, kept in flat.orders (which an MD run's neighbour data share until the next build)."""
    key = (tuple(sel), ntypes, chunk_atoms)
    made = flat.orders.get(key)
    if made is None or made.source != _source(flat):
        made = flat.orders[key] = centre_order(flat, sel, ntypes, chunk_atoms)
    return made


__all__ = ["CentreOrder", "block_counts", "centre_order", "kept_order", "sort_key"]
