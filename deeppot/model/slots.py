"""Trimmed neighbour lists: lists with fewer slots than sel, for data that never fill sel.

A list holds sel[b] slots per neighbour type b, sized for the densest atom the model may meet; training data often
never fill them (DeePMD-kit's water example: sel [46, 92] for at most [38, 72] neighbours; `sel: "auto"` adds 10%).
A padded slot lies beyond rcut: its row is R_pad = -davg/dstd of its slot, its switch and derivatives are zero, so
it adds R_pad^T G(s_pad) to nnei * T and nothing to the forces. Training frames are known ahead, so the trainer keeps
per block only the data's most neighbours, `widths[b]`, and one padded slot that stands in for the sel[b] -
widths[b] slots dropped from the block: it is embedded like any other slot and its row is weighted by that number.
It comes first in its block, the neighbours after it, so every atom's padding row sits at a known slot: the fused
training kernels (`deeppot.kernels.embedding`) copy its G into the chunks that hold only padding instead of
recomputing them.
Exact where the dropped slots share one padding row, as in every model whose statistics deeppot or DeePMD-kit
computed (davg/dstd per centre type, the same for all slots); `per_type_padding` checks it. The result and the
weights' gradients equal the full list's (tests/model/test_slots.py) for fewer slots: water 112 for 138, a float64
step 1.96 -> 1.79 ms (compiled 1.23 -> 1.13) on an H100 (benchmarks/results, runs 60-61).

A layout of None means the full sel layout; functions take it as the lists carry it (`PairData.layout`).
"""

from __future__ import annotations

from itertools import accumulate, pairwise
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

# Trim only lists that shrink by this much. H100, runs 59-61: water 138 -> 112 slots (-19%) and the alloy 240 -> 191
# (-20%) train 4-9% faster a step; copper 96 -> 85 (-11%) was as fast uncompiled and 2-5% slower compiled.
MIN_SAVING = 0.15

__all__ = ["SlotLayout", "list_sel", "per_type_padding", "slot_layout", "slot_stats", "trimmed_widths",
           "weighted_rows"]


class SlotLayout(NamedTuple):
    """Where a trimmed list's slots sit in the sel layout.

    sel: the list's slots per neighbour type (the stand-in, where slots were dropped, then widths); index (nslots,)
    each slot's position in the sel layout (to read davg/dstd); weight (nslots, 1) int64: 1, or for a stand-in the
    number of slots it stands for. Tensors, so that a compiled or graph-captured step reads them as inputs.
    """

    sel: tuple[int, ...]
    index: Tensor
    weight: Tensor

    def to(self, device: torch.device | str) -> SlotLayout:
        return SlotLayout(self.sel, self.index.to(device), self.weight.to(device))


def trimmed_widths(sel: list[int], max_count: np.ndarray | list[int]) -> tuple[int, ...] | None:
    """Per type min(sel, the data's most neighbours), or None (keep sel) when a type overflows or the lists would
    shrink by less than MIN_SAVING.

    An overflowing type keeps the full list: the nearest sum(sel) neighbours are chosen before the split by type
    (spec §3), so a narrower total could drop a neighbour of another type that the full list keeps.
    """
    counts = [int(c) for c in max_count]
    if len(counts) != len(sel) or any(c > s for c, s in zip(counts, sel, strict=True)):
        return None
    slots = sum(min(c + 1, s) for c, s in zip(counts, sel, strict=True))  # a stand-in per trimmed block
    return tuple(counts) if slots <= (1.0 - MIN_SAVING) * sum(sel) else None


def slot_layout(sel: list[int], widths: tuple[int, ...], device: torch.device) -> SlotLayout:
    """The layout of lists keeping widths[b] slots of block b and, where that drops slots, one stand-in."""
    if len(widths) != len(sel) or any(not 0 <= w <= s for w, s in zip(widths, sel, strict=True)):
        raise ValueError(f"list widths {list(widths)} do not fit sel {list(sel)}")
    starts = [0, *accumulate(sel)]
    index, weight, kept = [], [], []
    for b, (w, s) in enumerate(zip(widths, sel, strict=True)):
        stand_in = int(w < s)  # first in its block: the fused kernels take its row for the block's padding
        index += [starts[b] + w] * stand_in + list(range(starts[b], starts[b] + w))
        weight += [s - w] * stand_in + [1] * w
        kept.append(w + stand_in)
    return SlotLayout(tuple(kept), torch.tensor(index, device=device),
                      torch.tensor(weight, device=device)[:, None])


def list_sel(sel: list[int], layout: SlotLayout | None) -> list[int]:
    """The slots per type of a list with this layout, for a model of this sel."""
    return list(sel) if layout is None else list(layout.sel)


def slot_stats(d, layout: SlotLayout | None) -> tuple[Tensor, Tensor]:
    """davg and dstd (ntypes, slots, 4) of the slots a list with this layout holds."""
    if layout is None:
        return d.davg, d.dstd
    return d.davg.index_select(1, layout.index), d.dstd.index_select(1, layout.index)


def weighted_rows(rr: Tensor, layout: SlotLayout | None) -> Tensor:
    """The rows as they enter T = sum_j R_j^T G(s_j): each stand-in's counted for the slots it stands for."""
    return rr if layout is None else rr * layout.weight


def per_type_padding(davg: Tensor, dstd: Tensor, sel: list[int]) -> bool:
    """Whether each neighbour block's slots share one padding row -davg/dstd per centre type (what makes a stand-in
    exact; so in every model whose statistics deeppot or DeePMD-kit computed). davg, dstd (ntypes, sum(sel), 4)."""
    return _same_in_blocks(-davg / dstd, sel)


def interchangeable_slots(davg: Tensor, dstd: Tensor, sel: list[int]) -> bool:
    """Whether every slot of a neighbour block has the same davg and dstd per centre type: then the order of a
    block's neighbours changes the energy only by rounding, and a list in candidate order (unsorted, as
    `deeppot.infer.candidates` makes them) is exact; so in every model whose statistics deeppot or DeePMD-kit
    computed. DeePMD-kit's format stores them per slot, so a model could differ slot by slot: it then needs
    DeePMD's sorted list. davg, dstd (ntypes, sum(sel), 4)."""
    return _same_in_blocks(davg, sel) and _same_in_blocks(dstd, sel)


def _same_in_blocks(values: Tensor, sel: list[int]) -> bool:
    """Whether values (ntypes, sum(sel), 4) are equal along the slots of each neighbour block."""
    rows = values.detach().cpu()
    starts = [0, *accumulate(sel)]
    return all(bool((rows[:, a:b] == rows[:, a:a + 1]).all()) for a, b in pairwise(starts) if b > a)
