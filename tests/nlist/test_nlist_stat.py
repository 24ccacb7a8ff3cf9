"""Neighbour statistics (spec §3.3) against DeePMD-kit's NumPy `NeighborStatOP` and against a direct count."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from deeppot.nlist.ghosts import wrap_coords
from deeppot.nlist.stat import frame_neighbor_stat
from deeppot.train.neighbor_stat import auto_sel

neighbor_stat_op = pytest.importorskip("deepmd.dpmodel.utils.neighbor_stat").NeighborStatOP


def deepmd_stat(coord, atype, box, rcut, ntypes, mixed_type=False):
    """DeePMD-kit's per-frame max counts and min distance. Its op does not wrap the atoms into the cell (its data
    loader does not either), so atoms far outside the cell lose images; wrapping first matches `dp neighbor-stat`
    on wrapped data and is what the statistics mean."""
    nf = coord.shape[0]
    if box is not None:
        coord = wrap_coords(coord, box)
    op = neighbor_stat_op(ntypes, rcut, mixed_type)
    cell = None if box is None else box.reshape(nf, 9).numpy()
    min_rr2, max_nnei = op(coord.reshape(nf, -1).numpy(), atype.numpy(), cell)
    return max_nnei, np.sqrt(min_rr2.min(axis=-1))


@pytest.mark.parametrize("method", ["reference", "cell"])
def test_matches_deepmd(system, method):
    # every system of conftest: shared water/copper/alloy frames, a skewed cell, a tiny cell, a cluster
    coord, atype, box, _ = system
    ntypes = 1 + int(atype.max())
    count, dist = frame_neighbor_stat(coord, atype, box, 6.0, ntypes, method=method)
    want_count, want_dist = deepmd_stat(coord, atype, box, 6.0, ntypes)
    np.testing.assert_array_equal(count.numpy(), want_count)
    np.testing.assert_allclose(dist.numpy(), want_dist, rtol=1e-12)


@pytest.mark.parametrize("method", ["reference", "cell"])
@pytest.mark.parametrize("mixed_type", [False, True])
def test_small_skewed_cell_matches_deepmd(random_box_system, method, mixed_type):
    # a skewed cell thinner than rcut: many images of every atom, including of the atom itself
    rows = [[5.0, 0.0, 0.0], [4.0, 5.0, 0.0], [3.0, -4.0, 5.0]]
    coord, atype, box = random_box_system([[r * 0.7 for r in row] for row in rows], 9, 3, seed=4, nf=2)
    count, dist = frame_neighbor_stat(coord, atype, box, 4.5, 3, mixed_type=mixed_type, method=method)
    want_count, want_dist = deepmd_stat(coord, atype, box, 4.5, 3, mixed_type)
    np.testing.assert_array_equal(count.numpy(), want_count)
    np.testing.assert_allclose(dist.numpy(), want_dist, rtol=1e-12)


@pytest.mark.parametrize("method", ["reference", "cell"])
def test_cluster_without_box_direct_count(method):
    gen = torch.Generator().manual_seed(3)
    coord = torch.rand(1, 30, 3, generator=gen, dtype=torch.float64) * 6.0
    atype = (torch.arange(30) % 2)[None]
    count, dist = frame_neighbor_stat(coord, atype, None, 3.0, 2, method=method)
    r = torch.cdist(coord[0], coord[0]) + torch.diag(torch.full((30,), math.inf, dtype=torch.float64))
    want = [int(((r < 3.0) & (atype[0][None, :] == t)).sum(1).max()) for t in range(2)]
    assert count[0].tolist() == want
    assert float(dist[0]) == pytest.approx(float(r.min()), rel=1e-14)


def test_virtual_atoms_are_not_counted():
    coord = torch.tensor([[[0.0, 0, 0], [1.0, 0, 0], [0.0, 1.5, 0], [0.3, 0, 0]]], dtype=torch.float64)
    atype = torch.tensor([[0, 1, 1, -1]])  # the virtual atom sits 0.3 Å from atom 0
    for method in ("reference", "cell"):
        count, dist = frame_neighbor_stat(coord, atype, None, 1.2, 2, method=method)
        assert count[0].tolist() == [1, 1]  # atom 1 sees 0 (1.0 Å); atom 0 sees 1; 2 is 1.5/1.8 Å away
        assert float(dist[0]) == pytest.approx(1.0)


def test_auto_sel_truncates_then_rounds_up_to_four():
    # int(36 * 1.1) = 39 -> 40; int(69 * 1.1) = 75 -> 76; int(40 * 1.1) = 44 -> 44; 0 -> 0
    assert auto_sel(np.array([36, 69, 40, 0]), 1.1) == [40, 76, 44, 0]
    assert auto_sel(np.array([10]), 1.5) == [16]  # int(15.0) = 15 -> 16


def test_cell_pass_in_many_chunks_matches_the_reference(monkeypatch):
    """The cell-list pass split into chunks of 500 candidate pairs (a skewed cell, atoms outside it): the counts
    and the closest distance of the O(N^2) reference."""
    from deeppot.nlist import stat

    gen = torch.Generator().manual_seed(1)
    box = torch.tensor([[[9.0, 0, 0], [1.5, 8.0, 0], [0.5, -1.0, 7.5]]], dtype=torch.float64)
    coord = (torch.rand(1, 150, 3, generator=gen, dtype=torch.float64) * 1.4 - 0.2) @ box
    atype = torch.randint(0, 2, (1, 150), generator=gen)
    count, dist = frame_neighbor_stat(coord, atype, box, 4.0, 2, method="reference")
    monkeypatch.setattr(stat, "_CELL_CHUNK_PAIRS", 500)
    cell_count, cell_dist = frame_neighbor_stat(coord, atype, box, 4.0, 2, method="cell")
    assert cell_count.tolist() == count.tolist() and count.min() > 0
    assert float(cell_dist[0]) == pytest.approx(float(dist[0]), rel=1e-12)
