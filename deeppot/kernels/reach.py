"""Which neighbour slots the inference kernels visit, and what the skipped ones add to T (no host sync).

A padded slot's vector lies beyond rcut: its switch weight is zero, its environment row is R_pad = -davg/dstd and
every derivative is zero, so it adds R_pad^T G(s_pad) to nnei * T and nothing else. Lists hold sum(sel) slots
for the densest atom, so many slots are padding (water: 138 slots for ~90 neighbours; the alloy: 240 for ~80).
So a kernel walks each neighbour-type block of a tile of centres only up to the tile's top, the furthest reach
(one past the last neighbour) of its atoms, and what the slots after that add (the tail) comes from a table of
suffix sums, S[a, block b, r] = sum over the block's slots j >= r of R_pad,j^T G(s_pad,j). Padding before the top
is visited and adds its own term, so the result is exact whatever the list's order. (Each row masked at its own
atom's reach instead made the tiled kernels spill twice the registers and run 20-50% slower, run 55.)

exclude_types: an excluded (centre, neighbour) pair's row is zero (the mask multiplies the normalised rows,
spec §4.2), while padding is never excluded. Block b holds neighbours of type b, so a type-a centre's block b is
wholly excluded or not at all: its reach is 0. A tile may still visit it (for its other atoms): the stage moves
excluded pairs beyond rcut (`excluded_as_padding`), so visited ones add R_pad terms, which the tail takes off
again. Exact when an excluded block's padding follows its neighbours, as in every list deeppot builds and DeePMD's.
The kernels' dE/dr_ij of a slot they do not visit is zero, as of padding and of excluded pairs.

`add_tail` adds the tail in one Triton kernel where it can (no excluded types); its PyTorch form (an
embedding_bag, a division and an add: ~1.4 ms at 98,304 water atoms, run 83) is the reference and the fallback.
"""

from __future__ import annotations

import functools
from itertools import accumulate
from typing import NamedTuple

import torch
from torch import Tensor

from deeppot.kernels import embedding
from deeppot.kernels.env_rows import _block_starts
from deeppot.model.descriptor import exclusion_mask

__all__ = ["Reach", "add_tail", "add_tail_reference", "block_layout", "excluded_as_padding", "find_reach",
           "find_reach_reference", "padding_terms", "suffix_table", "tile_tops", "tile_tops_reference"]


# Whether `find_reach` runs its Triton kernel where it can (else `find_reach_reference`).
KERNEL = True
# Whether `tile_tops` runs its Triton kernel where it can (else `tile_tops_reference`).
TOPS_KERNEL = True


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


def suffix_table(d) -> Tensor:
    """S (ntypes, nnei + nblocks, 4 * M1): row starts[b] + b + r of type a is the sum of `padding_terms` over
    block b's slots r.. (sel_b + 1 rows a block, the last zero). Cached on the descriptor until one of its
    tensors changes; made by the first evaluation, before any CUDA-graph capture."""
    tensors = [d.davg, d.dstd, *d.nets.parameters()]
    key = (d.dtype, d.davg.device, id(d.tables), tuple((id(t), t._version) for t in tensors))
    cached = d.__dict__.get("_suffix_table")
    if cached is not None and cached[0] == key:
        return cached[1]
    with torch.no_grad():
        terms, starts = padding_terms(d), [0, *accumulate(d.sel)]
        blocks = []
        for b in range(len(d.sel)):
            block = terms[:, starts[b]:starts[b + 1]]
            suffix = block.flip(1).cumsum(1).flip(1)
            suffix = torch.cat([suffix, torch.zeros_like(suffix[:, :1])], 1)
            blocks.append(suffix)
        table = torch.cat(blocks, 1).contiguous()
    d.__dict__["_suffix_table"] = (key, table)
    return table


@functools.cache
def block_layout(sel: tuple[int, ...], device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """Per slot its rank inside its block plus one (nnei,) int32; per block its length (int32) and its first row in
    `suffix_table`. Made once per device (no host-to-device copy inside a CUDA-graph capture)."""
    rank = torch.cat([torch.arange(1, s + 1) for s in sel]).to(torch.int32)
    first = torch.tensor([start + b for b, start in enumerate(accumulate((0, *sel[:-1])))])
    return rank.to(device), torch.tensor(sel, dtype=torch.int32, device=device), first.to(device)


class Reach(NamedTuple):
    """Per centre and neighbour-type block (n, nblocks) int32: `reach`, the slots up to its last neighbour that
    counts (0 for an excluded block), and `last`, one past its last neighbour of any kind (for the tail); `tops`:
    the `tile_tops` made from it so far, by (atoms, per_type), since a pair stage's kernels and their rows kernel
    ask for the same ones."""

    reach: Tensor
    last: Tensor
    tops: dict


def find_reach(d, center_type: Tensor, neighbor_type: Tensor) -> Reach:
    """The `Reach` of every centre's list; neighbor_type (n, nnei): -1 on padding. One Triton kernel where it can
    run (one pass over the types, where PyTorch took ~5 kernels: 0.13 ms at 98,304 water atoms, run 252)."""
    if KERNEL and embedding.triton_available(neighbor_type.device) and len(neighbor_type):
        return _reach_by_kernel(d, center_type, neighbor_type)
    return find_reach_reference(d, center_type, neighbor_type)


def find_reach_reference(d, center_type: Tensor, neighbor_type: Tensor) -> Reach:
    """`find_reach` in PyTorch."""
    rank = block_layout(tuple(d.sel), neighbor_type.device)[0]
    used = torch.where(neighbor_type >= 0, rank, 0)
    starts = [0, *accumulate(d.sel)]
    last = torch.stack([used[:, starts[b]:starts[b + 1]].amax(1) for b in range(len(d.sel))], 1)
    reach = last
    if d.exclude_types:
        reach = last * (~d.excluded[center_type.long(), :len(d.sel)]).to(last.dtype)
    return Reach(reach.contiguous(), last.contiguous(), {})


def full_reach(d, n: int, device: torch.device) -> Reach:
    """Every slot visited: the block lengths."""
    lengths = block_layout(tuple(d.sel), device)[1].expand(n, -1).contiguous()
    return Reach(lengths, lengths, {})


def tile_tops(d, reach: Reach | None, center_type: Tensor, atoms: int, per_type: int) -> Tensor:
    """How far a kernel of `atoms` centres a program walks each block: (ntiles, per_type or 1, nblocks), the most
    reach over the tile's atoms (every slot without a `reach`), per centre type when the kernel walks the types one
    at a time (per_type = ntypes) or over all of them (per_type = 0); kept in `reach.tops` for the next ask."""
    if reach is None:
        return _tile_tops(full_reach(d, len(center_type), center_type.device).reach, center_type, atoms, per_type)
    if (atoms, per_type) not in reach.tops:
        reach.tops[atoms, per_type] = _tile_tops(reach.reach, center_type, atoms, per_type)
    return reach.tops[atoms, per_type]


def _tile_tops(reach: Tensor, center_type: Tensor, atoms: int, per_type: int) -> Tensor:
    if TOPS_KERNEL and embedding.triton_available(reach.device) and len(reach):
        return _tops_by_kernel(reach, center_type, atoms, per_type)
    return tile_tops_reference(reach, center_type, atoms, per_type)


def tile_tops_reference(reach: Tensor, center_type: Tensor, atoms: int, per_type: int) -> Tensor:
    """`tile_tops` from a reach (n, nblocks) in PyTorch (five small kernels: ~0.1 ms at 98,304 water atoms, run
    252's profile)."""
    n, nb = reach.shape
    pad = -n % atoms
    reach = torch.nn.functional.pad(reach, (0, 0, 0, pad))
    if per_type:
        ct = torch.nn.functional.pad(center_type.long(), (0, pad), value=-1)
        own = ct[:, None] == torch.arange(per_type, device=ct.device)
        reach = reach[:, None, :] * own[..., None].to(reach.dtype)
    return reach.view(-1, atoms, max(per_type, 1), nb).amax(1).contiguous()


def add_tail(d, t_mat: Tensor, center_type: Tensor, tops: Tensor, atoms: int, per_type: int, last: Tensor
             ) -> Tensor:
    """t_mat (n, 4, M1) from a kernel that walked `tops` (`tile_tops`), plus what the slots it did not visit
    add, minus the R_pad terms of the excluded pairs it visited; in place."""
    if not d.exclude_types and embedding.triton_available(t_mat.device) and len(t_mat):
        return _tail_kernel_add(d, t_mat, center_type, tops, atoms, per_type)
    return add_tail_reference(d, t_mat, center_type, tops, atoms, per_type, last)


def add_tail_reference(d, t_mat: Tensor, center_type: Tensor, tops: Tensor, atoms: int, per_type: int,
                       last: Tensor) -> Tensor:
    """`add_tail` in PyTorch (any model, any device)."""
    n = t_mat.shape[0]
    idx = torch.arange(n, device=t_mat.device)
    kind = center_type.long() if per_type else torch.zeros_like(idx)
    visited = tops.to(last.dtype)[idx // atoms, kind]  # (n, nblocks)
    table = suffix_table(d)
    base = center_type.long()[:, None] * table.shape[1] + block_layout(tuple(d.sel), t_mat.device)[2]
    flat = table.view(-1, table.shape[2])
    if not d.exclude_types:  # one gather-and-sum kernel: S[visited]
        tail = torch.nn.functional.embedding_bag(base + visited, flat, mode="sum")
    else:  # S[max(v, last)] + S[min(v, last)] - S[0] on excluded blocks, S[v] + S[0] - S[0] on the others
        excluded = d.excluded[center_type.long(), :len(d.sel)]
        hi = torch.where(excluded, torch.maximum(visited, last), visited)
        lo = torch.where(excluded, torch.minimum(visited, last), 0)
        weights = torch.ones(n, 3 * len(d.sel), dtype=flat.dtype, device=flat.device)
        weights[:, 2 * len(d.sel):] = -1.0
        tail = torch.nn.functional.embedding_bag(torch.cat([base + hi, base + lo, base], 1), flat, mode="sum",
                                                 per_sample_weights=weights)
    return t_mat.add_(tail.view(t_mat.shape) / sum(d.sel))


if embedding.triton is not None:
    import triton
    import triton.language as tl

    @triton.jit
    def _tail_kernel(t_ptr, type_ptr, tops_ptr, first_ptr, table_ptr, rows_per_type, nnei,
                     ATOMS: tl.constexpr, KINDS: tl.constexpr, NB: tl.constexpr, W: tl.constexpr, WP: tl.constexpr):
        i = tl.program_id(0).to(tl.int64)
        ctype = tl.load(type_ptr + i).to(tl.int64)
        kind = ctype if KINDS > 1 else 0
        col = tl.arange(0, WP)
        ok = col < W
        tail = tl.zeros((WP,), dtype=t_ptr.dtype.element_ty)
        for b in tl.static_range(NB):
            visited = tl.load(tops_ptr + ((i // ATOMS) * KINDS + kind) * NB + b).to(tl.int64)
            row = ctype * rows_per_type + tl.load(first_ptr + b) + visited
            tail += tl.load(table_ptr + row * W + col, mask=ok, other=0.0)
        t = tl.load(t_ptr + i * W + col, mask=ok)
        tl.store(t_ptr + i * W + col, t + tail / nnei, mask=ok)

    @triton.jit
    def _reach_kernel(ntype_ptr, ctype_ptr, starts_ptr, excluded_ptr, last_ptr, reach_ptr, n, nnei, nexcl,
                      NB: tl.constexpr, SELP: tl.constexpr, CENTRES: tl.constexpr, EXCLUDE: tl.constexpr):
        centre = tl.program_id(0).to(tl.int64) * CENTRES + tl.arange(0, CENTRES)
        real = centre < n
        r = tl.arange(0, SELP)
        for b in tl.static_range(NB):
            start, stop = tl.load(starts_ptr + b), tl.load(starts_ptr + b + 1)
            ok = real[:, None] & (r < stop - start)[None, :]
            kind = tl.load(ntype_ptr + centre[:, None] * nnei + start + r[None, :], mask=ok, other=-1)
            last = tl.max(tl.where(kind >= 0, r[None, :] + 1, 0), axis=1)
            tl.store(last_ptr + centre * NB + b, last, mask=real)
            if EXCLUDE:
                ctype = tl.load(ctype_ptr + centre, mask=real, other=0).to(tl.int64)
                last = tl.where(tl.load(excluded_ptr + ctype * nexcl + b, mask=real, other=0) != 0, 0, last)
            tl.store(reach_ptr + centre * NB + b, last, mask=real)

    @triton.jit
    def _tops_kernel(reach_ptr, type_ptr, tops_ptr, n, ntiles, ATOMS: tl.constexpr, AP: tl.constexpr,
                     KINDS: tl.constexpr, NB: tl.constexpr, PER_TYPE: tl.constexpr, TILES: tl.constexpr):
        """TILES tiles a program: per tile, kind (its atoms' type, or 0 for all) and block, the most reach (AP:
        ATOMS to a power of two)."""
        tile = tl.program_id(0).to(tl.int64) * TILES + tl.arange(0, TILES)
        a = tl.arange(0, AP)
        atom = tile[:, None] * ATOMS + a[None, :]
        ok = (atom < n) & (a < ATOMS)[None, :]
        ctype = tl.load(type_ptr + atom, mask=ok, other=-1)
        for b in tl.static_range(NB):
            r = tl.load(reach_ptr + atom * NB + b, mask=ok, other=0)
            for k in tl.static_range(KINDS):
                mine = ok & (ctype == k) if PER_TYPE else ok
                tl.store(tops_ptr + (tile * KINDS + k) * NB + b, tl.max(tl.where(mine, r, 0), axis=1),
                         mask=tile < ntiles)


def _tops_by_kernel(reach: Tensor, center_type: Tensor, atoms: int, per_type: int) -> Tensor:
    """`tile_tops_reference` in one kernel."""
    n, nb = reach.shape
    ntiles, kinds, tiles = triton.cdiv(n, atoms), max(per_type, 1), 128
    tops = torch.empty(ntiles, kinds, nb, dtype=reach.dtype, device=reach.device)
    _tops_kernel[(triton.cdiv(ntiles, tiles),)](reach.contiguous(), center_type.contiguous(), tops, n, ntiles,
                                                ATOMS=atoms, AP=triton.next_power_of_2(atoms), KINDS=kinds,
                                                NB=nb, PER_TYPE=per_type > 0, TILES=tiles, num_warps=4)
    return tops


def _reach_by_kernel(d, center_type: Tensor, neighbor_type: Tensor) -> Reach:
    """`find_reach` in one pass: a program of CENTRES centres takes each block's slots as one row per centre."""
    n, nnei = neighbor_type.shape
    nb = len(d.sel)
    last = torch.empty(n, nb, dtype=torch.int32, device=neighbor_type.device)
    reach = torch.empty_like(last) if d.exclude_types else last
    excluded = d.excluded.to(torch.int8).contiguous() if d.exclude_types else last
    centres = 8
    _reach_kernel[(triton.cdiv(n, centres),)](neighbor_type.contiguous(), center_type.contiguous(),
                                              _block_starts(tuple(d.sel), neighbor_type.device), excluded, last,
                                              reach, n, nnei, excluded.shape[-1], NB=nb,
                                              SELP=triton.next_power_of_2(max(d.sel)), CENTRES=centres,
                                              EXCLUDE=bool(d.exclude_types), num_warps=4)
    return Reach(reach, last, {})


def _tail_kernel_add(d, t_mat: Tensor, center_type: Tensor, tops: Tensor, atoms: int, per_type: int) -> Tensor:
    """`add_tail` of a model without excluded types: one program an atom sums its blocks' rows of the suffix table
    (the row after the slots its tile visited) and adds them, over nnei, to its T."""
    table = suffix_table(d)
    n, width = t_mat.shape[0], table.shape[2]
    _tail_kernel[(n,)](t_mat, center_type.contiguous(), tops.contiguous(),
                       block_layout(tuple(d.sel), t_mat.device)[2], table, table.shape[1], float(sum(d.sel)),
                       ATOMS=atoms, KINDS=max(per_type, 1), NB=len(d.sel), W=width,
                       WP=triton.next_power_of_2(width), num_warps=4)
    return t_mat


def excluded_as_padding(d, rij: Tensor, center_type: Tensor, neighbor_type: Tensor) -> Tensor:
    """rij (n, nnei, 3) with every excluded pair moved beyond rcut (as padding); rij itself without exclude_types."""
    if not d.exclude_types:
        return rij
    excluded = ~exclusion_mask(center_type, neighbor_type, neighbor_type, d.excluded)
    return torch.where(excluded[..., None], torch.full_like(rij, d.rcut), rij)
