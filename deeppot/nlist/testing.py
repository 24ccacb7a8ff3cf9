"""Checks for neighbour data, shared by the tests of every package that builds or consumes neighbour lists.

Two builders index different extended arrays, so lists are compared as tables of pairs
`(frame, i, mapping[j], displacement x_j - x_i)`, which do not depend on where a ghost sits in the extended array.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor


def pair_table(ext_coord: Tensor, mapping: Tensor, nlist: Tensor, decimals: int = 5) -> np.ndarray:
    """All (frame, i, owner of j, dx, dy, dz) pairs of a neighbour list, displacements rounded to `decimals`
    (stored as integers), rows sorted lexicographically: ext_coord (nf, nall, 3), mapping (nf, nall),
    nlist (nf, nloc, nnei) -> (npairs, 6) int64."""
    frame, atom, slot = (nlist >= 0).nonzero(as_tuple=True)
    j = nlist[frame, atom, slot]
    disp = (ext_coord[frame, j] - ext_coord[frame, atom]).detach().double()
    disp = torch.round(disp * 10**decimals).long()
    table = torch.cat([torch.stack([frame, atom, mapping[frame, j]], dim=1), disp], dim=1).cpu().numpy()
    return sort_rows(table)


def assert_same_pairs(actual: np.ndarray, desired: np.ndarray, atol: int = 2) -> None:
    """Pair tables of `pair_table` equal: indices exactly, displacements within `atol` rounding units.

    Exact equality of rounded values fails whenever a displacement sits on a rounding boundary (data stored with
    few decimals does, often). Rows still sort the same way in both tables: images of one owner differ by whole
    lattice vectors, far more than the tolerance.
    """
    if actual.shape != desired.shape:
        raise AssertionError(f"{len(actual)} pairs != {len(desired)} pairs")
    np.testing.assert_array_equal(actual[:, :3], desired[:, :3])
    np.testing.assert_allclose(actual[:, 3:], desired[:, 3:], atol=atol, rtol=0)


def sort_rows(table: np.ndarray) -> np.ndarray:
    """Rows of a 2-D integer array sorted lexicographically (first column most significant)."""
    return table[np.lexsort(table.T[::-1])] if len(table) else table


def check_nlist_layout(ext_coord: Tensor, ext_atype: Tensor, nlist: Tensor, rcut: float, sel: Sequence[int]) -> None:
    """Raise AssertionError unless every type block of `nlist` (nf, nloc, sum(sel)) holds only its type, in
    non-decreasing distance, within rcut, with -1 only at its end, and no centre lists itself.

    Distances are recomputed here with `linalg.norm`; builders may compute them another way (cdist), so order and
    cutoff are checked up to a few ulps.
    """
    nf, nloc, nnei = nlist.shape
    if nnei != sum(sel):
        raise AssertionError(f"nlist width {nnei} != sum(sel) = {sum(sel)}")
    valid = nlist >= 0
    j = nlist.clamp(min=0)
    nbr = torch.gather(ext_coord, 1, j.reshape(nf, -1, 1).expand(-1, -1, 3)).reshape(nf, nloc, nnei, 3)
    rr = torch.linalg.norm(nbr - ext_coord[:, :nloc, None, :], dim=-1)
    jtype = torch.gather(ext_atype, 1, j.reshape(nf, -1)).reshape(nf, nloc, nnei)
    tol = 16 * torch.finfo(ext_coord.dtype).eps * max(rcut, 1.0)
    if (valid & (rr > rcut + tol)).any():
        raise AssertionError("a neighbour lies beyond rcut")
    if (valid & (nlist == torch.arange(nloc, device=nlist.device)[None, :, None])).any():
        raise AssertionError("an atom is its own neighbour")
    start = 0
    for t, width in enumerate(sel):
        block = slice(start, start + width)
        v, r = valid[..., block], rr[..., block]
        if (v & (jtype[..., block] != t)).any():
            raise AssertionError(f"block {t} holds an atom of another type")
        if (~v[..., :-1] & v[..., 1:]).any():
            raise AssertionError(f"block {t} has -1 before a neighbour")
        if (v[..., 1:] & (r[..., 1:] < r[..., :-1] - tol)).any():
            raise AssertionError(f"block {t} is not in ascending distance")
        start += width
