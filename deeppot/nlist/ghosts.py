"""Periodic images (spec §3.1): wrap atoms into the cell and append every image that can lie within `rcut`.

Boxes are row vectors: `box[f, k]` is lattice vector k of frame f, and a position is `frac @ box`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch
from torch import Tensor


def as_box(box: Tensor, nf: int, dtype: torch.dtype) -> Tensor:
    """Box as (nf, 3, 3) in the coordinates' dtype; accepts (nf, 9) or (nf, 3, 3)."""
    return box.reshape(nf, 3, 3).to(dtype)


def wrap_fractional(coord: Tensor, box: Tensor, inverse: Tensor | None = None) -> Tensor:
    """Fractional coordinates folded into [0, 1): (..., nloc, 3) with box (..., 3, 3) -> (..., nloc, 3); inverse:
    the boxes' inverses, where the caller has them (a CUDA graph's input, made on the host: on a GPU the inverse
    takes about ten small kernels).

    `inv_ex`, not `inv`: on a GPU the singularity check of `inv` reads a flag back (a host sync in every list
    build). The builders read the boxes on the host anyway (`host_cells`), which names a cell of zero volume.
    """
    frac = torch.matmul(coord, torch.linalg.inv_ex(box).inverse if inverse is None else inverse)
    return torch.remainder(frac, 1.0)


def frac_to_cart(frac: Tensor, box: Tensor) -> Tensor:
    """frac @ box written out element by element: (..., 3) with box broadcast to (..., 3, 3) -> (..., 3).

    Elementwise ops round the same way whatever the shapes, unlike matmul kernels, so both builders produce
    bitwise identical positions for the same atom image (the cell list works frame by frame, the reference on
    the batch).
    """
    return frac[..., 0:1] * box[..., 0, :] + frac[..., 1:2] * box[..., 1, :] + frac[..., 2:3] * box[..., 2, :]


def wrap_coords(coord: Tensor, box: Tensor, inverse: Tensor | None = None) -> Tensor:
    """Atoms moved into the cell: (nf, nloc, 3) with box (nf, 3, 3) -> (nf, nloc, 3). Differentiable (the shift
    is constant). inverse: as in `wrap_fractional`."""
    return frac_to_cart(wrap_fractional(coord, box, inverse), box[:, None])


def face_distances(box: Tensor) -> Tensor:
    """Distances between opposite faces of each cell, (..., 3, 3) on the host -> (..., 3): h_a = V / |b x c| =
    1 / |a*|, a* the reciprocal vector (column a of the inverse). In NumPy: two calls instead of ~20 torch ops,
    whose dispatch costs more than these 3 x 3 products."""
    return torch.from_numpy(1.0 / np.linalg.norm(np.linalg.inv(box.detach().numpy()), axis=-2))


def host_cells(box: Tensor) -> Tensor:
    """The boxes (nf, 3, 3) as float64 on the host (one copy, a host sync when they are on a GPU), checked: a
    ValueError names the first frame whose cell has zero volume (its inverse, and so every image, is garbage)."""
    host = box.detach().to("cpu", torch.float64)
    cell = host.numpy()
    volume = np.abs(np.linalg.det(cell))
    bad = np.flatnonzero(volume <= 1e-10 * np.maximum(np.linalg.norm(cell, axis=-1).prod(axis=-1), 1e-300))
    if len(bad):
        raise ValueError(f"the cell of frame {bad[0]} has zero volume (|det| = {volume[bad[0]]:.3g} Å^3); "
                         f"{len(bad)} frame(s) affected")
    return host


def image_shifts(nbuff: list[int], device: torch.device | str = "cpu") -> Tensor:
    """All integer shifts in [-nbuff_d, nbuff_d]^3 ordered by their norm, zero first: (nshift, 3) int64.

    The order is a stable sort on the integer squared norm (built on the CPU, once per nbuff), so it is the same on
    every device.
    """
    shifts = _host_shifts(tuple(nbuff))
    return shifts.clone() if torch.device(device).type == "cpu" else shifts.to(device, non_blocking=True)


@functools.lru_cache(maxsize=16)
def _host_shifts(nbuff: tuple[int, ...]) -> Tensor:
    axes = [torch.arange(-n, n + 1, dtype=torch.int64) for n in nbuff]
    shifts = torch.cartesian_prod(*axes).reshape(-1, 3)
    return shifts[torch.sort((shifts * shifts).sum(-1), stable=True).indices]


def nbuff_for(box: Tensor, rcut: float) -> list[int]:
    """Image layers per direction, ceil(rcut / h_d), maximum over frames: box (nf, 3, 3), read on the host (a host
    sync when it is on a GPU; a few 3 x 3 determinants there cost more launches than they are worth). The answers
    for the last boxes are remembered: their 3 x 3 products in torch cost ~0.1-0.2 ms on the host, and a replayed
    small `DeepPot.eval` call takes ~1 ms (H200, run 201)."""
    host = box.detach().to("cpu", torch.float64)
    return list(_layers(host.numpy().tobytes(), host.shape[0], float(rcut)))


@functools.lru_cache(maxsize=32)
def _layers(raw: bytes, nf: int, rcut: float) -> tuple[int, ...]:
    h = face_distances(host_cells(torch.frombuffer(bytearray(raw), dtype=torch.float64).reshape(nf, 3, 3)))
    return tuple(max(0, math.ceil(rcut / float(x))) for x in h.amin(dim=0))


def extend_coords(
    coord: Tensor, atype: Tensor, box: Tensor | None, rcut: float, host_box: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """Local atoms followed by their periodic images (DeePMD-kit's `extend_coord_with_ghosts`).

    Args:
        coord: (nf, nloc, 3) positions.
        atype: (nf, nloc) int64 types.
        box: (nf, 3, 3) or (nf, 9) cell row vectors, or None for a non-periodic system.
        rcut: cutoff radius; every image within `rcut` of a local atom is present.
        host_box: the box on the host, if the caller has it (the image layers are then found without a host sync).

    Returns:
        ext_coord (nf, nall, 3), ext_atype (nf, nall), mapping (nf, nall) with `nall = nshift * nloc`, extended
        index `shift_index * nloc + i`, shift 0 first (so the first nloc atoms are the wrapped local atoms).
        Without a box, `nall = nloc` and the coordinates are not wrapped.
    """
    if box is None:
        return extend_with_shifts(coord, atype, None, None)
    box = as_box(box, atype.shape[0], coord.dtype)
    nbuff = nbuff_for(box if host_box is None else as_box(host_box, atype.shape[0], torch.float64), rcut)
    return extend_with_shifts(coord, atype, box, image_shifts(nbuff, coord.device))


def extend_with_shifts(coord: Tensor, atype: Tensor, box: Tensor | None, shifts: Tensor | None,
                       inverse: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """`extend_coords` with its image shifts given: box (nf, 3, 3) and shifts (nshift, 3) int64 on the atoms'
    device (`image_shifts`), or both None; inverse: the boxes' inverses, if made already. No host sync, so a CUDA
    graph can capture it."""
    nf, nloc = atype.shape
    aidx = torch.arange(nloc, dtype=torch.int64, device=coord.device).expand(nf, nloc)
    if box is None:
        return coord.clone(), atype.clone(), aidx.clone()
    coord = wrap_coords(coord, box, inverse)
    ns = shifts.shape[0]
    shift_vec = frac_to_cart(shifts.to(coord.dtype)[None], box[:, None])  # (nf, ns, 3)
    ext_coord = (coord[:, None, :, :] + shift_vec[:, :, None, :]).reshape(nf, ns * nloc, 3)
    ext_atype = atype.repeat(1, ns)
    mapping = aidx.repeat(1, ns)
    return ext_coord, ext_atype, mapping
