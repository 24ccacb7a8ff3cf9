"""The cell list of one periodic frame with static sizes and no host sync: what a CUDA graph of a whole mid-size
`DeepPot.eval` call captures (`deeppot.infer.graph.GraphedCall`).

The eager cell list (`deeppot.infer.candidates.cell_neighbors`) reads three sizes back from the GPU: how many ghosts
lie in the slab around the cell, the atoms' extent (the bins' count) and the overflow flag. Here the host fixes them
beforehand: the ghosts get `capacity` slots (`torch.nonzero_static`; the unused ones are padding atoms of type -1
in a bin past the last), the bins span the slab's bounding box, which holds every ghost (`CellPlan`, from the box on
the host), and the flag stays on the device. The ghosts, their order and the neighbours within rcut of each block
are the eager list's; the bins may be more, so each block's order may differ.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from deeppot.infer.candidates import select_in_bins
from deeppot.nlist.cell_list import BinnedFrame, bin_grid, ghost_reach, in_slab, sort_into_bins
from deeppot.nlist.ghosts import frac_to_cart, image_shifts, wrap_fractional

GHOST_ROOM = 1.25  # ghost slots a capture keeps per ghost it saw (other frames of the system have a few more)


@dataclass(frozen=True)
class CellPlan:
    """The static sizes of one periodic frame's cell list, from its box on the host."""

    nbuff: tuple[int, ...]  # image layers the ghost slab spans
    dims: tuple[int, ...]  # bins per direction over the slab's bounding box
    edge: float  # the bins' edge

    def padded(self) -> CellPlan:
        """The plan with one more bin each way: room for a box that grows a little (from frame to frame under
        constant pressure, say) before a capture of it no longer serves."""
        return CellPlan(self.nbuff, tuple(d + 1 for d in self.dims), self.edge)

    def serves(self, other: CellPlan) -> bool:
        """Whether a list of this plan serves a frame that needs `other`: the same layers and bin edge, no fewer
        bins (bins past the atoms stay empty)."""
        return (self.nbuff, self.edge) == (other.nbuff, other.edge) and \
            all(a >= b for a, b in zip(self.dims, other.dims, strict=True))


def plan_cells(box: Tensor, nloc: int, rcut: float, dtype: torch.dtype) -> tuple[CellPlan, Tensor]:
    """The plan of a frame's list and its ghost slab's reach (3,) in dtype on the host (`ghost_reach`): box (3, 3)
    float64 on the host."""
    reach, nbuff = ghost_reach(box, rcut, dtype)
    r = reach.to(torch.float64).tolist()
    # in NumPy: ~10x faster than PyTorch's dispatch on these 8 x 3 host arrays
    corners = np.array(list(itertools.product(*[(-x, 1 + x) for x in r]))) @ box.detach().numpy()
    extent = np.ptp(corners, axis=0).tolist()
    edge, dims = bin_grid(extent, nloc * math.prod(2 * n + 1 for n in nbuff), rcut)
    return CellPlan(tuple(nbuff), tuple(dims), edge), reach


def ghost_count(coord: Tensor, box: Tensor, reach: Tensor, plan: CellPlan) -> int:
    """How many ghosts the frame has (a host sync): coord (1, nloc, 3), box (1, 3, 3) on the device, reach (3,)."""
    frac = wrap_fractional(coord, box)[0]
    return int(in_slab(frac, _device_shifts(plan.nbuff, coord.device), reach.to(coord.device)).sum())


def static_cell_neighbors(coord: Tensor, atype: Tensor, box: Tensor, reach: Tensor, rcut: float,
                          sel: Sequence[int], plan: CellPlan, capacity: int, inverse: Tensor | None = None
                          ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """`cell_neighbors` of one periodic frame, no host sync: coord (1, nloc, 3), atype (1, nloc), box (1, 3, 3) and
    reach (3,) (`plan_cells`) on the device; capacity ghost slots; inverse (1, 3, 3): the box's, if made already.
    Returns ext_coord (1, nloc + capacity, 3), ext_atype, mapping, nlist (1, nloc, sum(sel)) and two 0-dim bools:
    some type overflowed its sel; the ghosts overflowed their slots (the list then lacks some)."""
    nloc = coord.shape[1]
    frac = wrap_fractional(coord, box, inverse)
    coord = frac_to_cart(frac, box[:, None])[0]  # the eager builders' expressions (`wrapped_cells`, `extend_frame`)
    shifts = _device_shifts(plan.nbuff, coord.device)
    keep = in_slab(frac[0], shifts, reach).reshape(-1)
    slot = torch.nonzero_static(keep, size=capacity, fill_value=-1).reshape(-1)  # the eager ghosts' order
    padding = slot < 0
    atom = torch.where(padding, 0, slot % nloc)
    ghosts = coord[atom] + frac_to_cart(shifts[torch.where(padding, 0, slot // nloc)].to(coord.dtype), box[0])
    ext_coord = torch.cat([coord, ghosts])
    ext_atype = torch.cat([atype[0], torch.where(padding, -1, atype[0][atom])])
    mapping = torch.cat([torch.arange(nloc, device=coord.device), atom])
    pad = torch.cat([torch.zeros(nloc, dtype=torch.bool, device=coord.device), padding])
    pos = ext_coord.detach().to(torch.float64)
    bins = sort_into_bins(pos, torch.where(pad[:, None], math.inf, pos).amin(dim=0), plan.edge, plan.dims, rcut,
                          padding=pad)
    frame = BinnedFrame(ext_coord, ext_atype, mapping, bins, ext_coord.detach()[bins.order], ext_atype[bins.order])
    nlist, over = select_in_bins(frame, nloc, rcut, sel)
    return ext_coord[None], ext_atype[None], mapping[None], nlist.reshape(1, nloc, -1), over, keep.sum() > capacity


@functools.lru_cache(maxsize=16)
def _device_shifts(nbuff: tuple[int, ...], device: torch.device) -> Tensor:
    """The slab's image shifts but the zero one, on the device: made once per plan, before a capture (no copy from
    the host inside one)."""
    return image_shifts(list(nbuff), device)[1:]


__all__ = ["CellPlan", "ghost_count", "plan_cells", "static_cell_neighbors"]
