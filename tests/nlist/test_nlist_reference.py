"""The O(N^2) reference list against ASE's neighbour list, and its block layout (spec §3.2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deeppot.nlist import build_neighbor_data
from deeppot.nlist.ghosts import extend_coords
from deeppot.nlist.reference import build_nlist_reference
from deeppot.nlist.testing import assert_same_pairs, check_nlist_layout, pair_table, sort_rows

ase_neighborlist = pytest.importorskip("ase.neighborlist")
ase = pytest.importorskip("ase")

RCUT = 6.0


def ase_pair_table(coord, box, rcut, decimals=5):
    """(frame, i, j, dx, dy, dz) rows of ASE's neighbour list, in the layout of `pair_table`."""
    rows = []
    for f in range(coord.shape[0]):
        cell = np.zeros((3, 3)) if box is None else box[f].numpy()
        atoms = ase.Atoms(positions=coord[f].numpy(), cell=cell, pbc=box is not None)
        i, j, disp = ase_neighborlist.neighbor_list("ijD", atoms, rcut)
        disp = np.round(disp * 10**decimals).astype(np.int64)
        rows.append(np.column_stack([np.full_like(i, f), i, j, disp]).astype(np.int64))
    return sort_rows(np.concatenate(rows))


def test_reference_matches_ase(system):
    coord, atype, box, sel = system
    data = build_neighbor_data(coord, atype, box, RCUT, sel, method="reference")
    check_nlist_layout(data.ext_coord, data.ext_atype, data.nlist, RCUT, sel)
    ours = pair_table(data.ext_coord, data.mapping, data.nlist)
    theirs = ase_pair_table(coord, box, RCUT)
    assert len(theirs) > 0
    assert_same_pairs(ours, theirs)


def test_reference_matches_pytorch_rule_under_truncation(system_factory):
    """Independent re-statement of DeePMD-kit's PyTorch rule on one frame, with sel small enough to truncate:
    nearest sum(sel) of any type within rcut, then per-type blocks."""
    coord, atype, box, _ = system_factory("skewed")
    sel = [30, 20]
    ext_coord, ext_atype, _ = extend_coords(coord, atype, box, RCUT)
    with pytest.warns(UserWarning):
        nlist = build_nlist_reference(ext_coord, ext_atype, coord.shape[1], RCUT, sel)
    pos, types = ext_coord[0].numpy(), ext_atype[0].numpy()
    for i in range(coord.shape[1]):
        r = np.linalg.norm(pos - pos[i], axis=1)
        r[i] = np.inf
        near = np.argsort(r, kind="stable")[: sum(sel)]
        near = near[r[near] <= RCUT]
        expect = []
        for t, width in enumerate(sel):
            block = near[types[near] == t][:width]
            expect += [*block, *[-1] * (width - len(block))]
        np.testing.assert_array_equal(nlist[0, i].numpy(), expect)


def test_virtual_atoms_are_neither_neighbours_nor_centres(system_factory):
    coord, atype, box, sel = system_factory("skewed")
    atype = atype.clone()
    atype[:, 3] = -1
    data = build_neighbor_data(coord, atype, box, RCUT, sel, method="reference")
    assert (data.nlist[:, 3] == -1).all()
    nbr = data.nlist[data.nlist >= 0]
    assert (data.mapping[0, nbr] != 3).all()
    check_nlist_layout(data.ext_coord, data.ext_atype, data.nlist, RCUT, sel)


def test_float32_matches_float64(system_factory):
    coord, atype, box, sel = system_factory("water")
    d64 = build_neighbor_data(coord, atype, box, RCUT, sel, method="reference")
    d32 = build_neighbor_data(coord.float(), atype, box.float(), RCUT, sel, method="reference")
    assert d32.ext_coord.dtype == torch.float32
    assert_same_pairs(pair_table(d32.ext_coord, d32.mapping, d32.nlist, decimals=3),
                      pair_table(d64.ext_coord, d64.mapping, d64.nlist, decimals=3))
