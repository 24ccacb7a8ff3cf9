"""The pair-data kernel against `FlatNeighbors.pair_vectors` and `neighbor_owner_and_type`."""

from __future__ import annotations

import pytest
import torch
from helpers import random_system

from deeppot.infer.evaluate import FlatNeighbors, reference_pair_data
from deeppot.infer.order import centre_order
from deeppot.nlist import build_neighbor_data

pairs = pytest.importorskip("deeppot.kernels.pairs")
pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")
if pairs.embedding.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("index", [torch.int64, torch.int32])
@pytest.mark.parametrize(("start", "stop"), [(0, 36), (7, 30), (35, 36)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_pair_data_equals_the_flat_lists(monkeypatch, start, stop, dtype, index):
    """Three frames (so centres map to extended atoms of later frames), padding in every row, any chunk; owners
    and types in either integer width (`pairs.INDEX`)."""
    monkeypatch.setattr(pairs, "INDEX", index)
    coord, atype, box = random_system(natoms=12, ntypes=3, nframes=3, seed=1)
    rcut, sel = 4.0, [10, 10, 12]
    nd = build_neighbor_data(coord.to(DEVICE), atype[None].expand(3, -1).to(DEVICE), box.to(DEVICE), rcut, sel)
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    assert flat.ncentre == 36 and (flat.nlist < 0).any() and (flat.nlist >= 0).any()
    rij, owner, types = pairs.pair_data(flat, start, stop, rcut, dtype)
    ref_owner, ref_types = flat.neighbor_owner_and_type(start, stop)
    assert owner.dtype == types.dtype == index
    assert torch.equal(owner.long(), ref_owner) and torch.equal(types.long(), ref_types)
    assert rij.dtype == dtype
    assert torch.equal(rij, flat.pair_vectors(start, stop, rcut).to(dtype))


@pytest.mark.parametrize(("start", "stop"), [(0, 36), (7, 30)])
def test_pair_data_in_a_centre_order_equals_the_reference(start, stop):
    """With a `CentreOrder`, row i is centre order[start + i] (of any frame) and owners are positions in the
    order: as `reference_pair_data` makes them."""
    coord, atype, box = random_system(natoms=12, ntypes=3, nframes=3, seed=2)
    rcut, sel = 4.0, [10, 10, 12]
    nd = build_neighbor_data(coord.to(DEVICE), atype[None].expand(3, -1).to(DEVICE), box.to(DEVICE), rcut, sel)
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    order = centre_order(flat, sel, 3, 36)
    assert (order.order[start:stop] // 12).unique().numel() > 1  # the chunk's rows come from several frames
    rij, owner, types = pairs.pair_data(flat, start, stop, rcut, torch.float64, order=order)
    ref_rij, ref_owner, ref_types = reference_pair_data(flat, start, stop, rcut, torch.float64, order=order)
    assert torch.equal(owner.long(), ref_owner) and torch.equal(types.long(), ref_types)
    assert torch.equal(rij, ref_rij)
    plain = flat.pair_vectors(0, 36, rcut)[order.order[start:stop]]  # the same vectors as the atoms' own rows
    assert torch.equal(rij, plain)
