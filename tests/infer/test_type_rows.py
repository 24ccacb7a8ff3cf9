"""`evaluate_flat`'s chunks of centres, and each chunk's centres of each type, as the fused pair stages take
them: made once per neighbour data and kept (`FlatNeighbors.rows_by_type`), so that evaluating the data again
needs no host sync for them (CPU, float64)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from helpers import make_model, random_system

from deeppot.infer.evaluate import FlatNeighbors, chunks, evaluate_flat, reference_pair_stage
from deeppot.model.energy_model import type_groups
from deeppot.nlist import build_neighbor_data

pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")


def test_type_groups_are_the_atoms_of_each_type_in_order():
    atype = torch.tensor([2, 0, 0, 2, 1, 0, 2, 2, 0])
    rows = type_groups(atype, 4)  # type 3 has no atom
    assert [r.tolist() for r in rows] == [[1, 2, 5, 8], [4], [0, 3, 6, 7], []]
    for t, r in enumerate(rows):  # the lists that the per-type nonzero gave before
        assert torch.equal(r, torch.nonzero(atype == t).reshape(-1))
    virtual = torch.tensor([1, -1, 0, 3, 1, -1])  # negative types and types past ntypes are in no list
    assert [r.tolist() for r in type_groups(virtual, 2)] == [[2], [0, 4]]


def flat_and_model(ntypes=3):
    model = make_model(type_one_side=False, seed=4, ntypes=ntypes, sel=[12] * ntypes)
    coord, atype, box = random_system(natoms=13, ntypes=ntypes, nframes=2, seed=4)
    nd = build_neighbor_data(coord, atype[None].expand(2, -1), box, model.rcut, model.sel)
    return model, nd


def test_the_stage_gets_each_chunks_rows_made_once():
    """Chunks of 5 of 26 centres: the stage sees, per chunk, the indices (within the chunk) of each type's
    centres; a second evaluation gets the same lists (kept), and the outputs are the stage's alone."""
    model, nd = flat_and_model()
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    seen = []

    def stage(model, rij, nlist_loc, center_type, neighbor_type, type_rows):
        seen.append(type_rows)
        for t, rows in enumerate(type_rows):
            assert torch.equal(rows, torch.nonzero(center_type == t).reshape(-1))
        assert sum(len(r) for r in type_rows) == len(center_type)
        return reference_pair_stage(model, rij, nlist_loc, center_type, neighbor_type)

    first = evaluate_flat(model, flat, 5, stage, by_type=True)
    assert len(seen) == 6 and len(flat.type_rows) == 6
    evaluate_flat(model, flat, 5, stage, by_type=True)
    assert all(a is b for a, b in zip(seen[:6], seen[6:], strict=True))
    ref = evaluate_flat(model, flat, 5, reference_pair_stage)
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(first[key], ref[key], rtol=0, atol=0)


def test_flats_of_the_same_atoms_share_their_rows():
    """An MD run's neighbour data is new every step; given the first flat's dict, the next reuses its lists."""
    _, nd = flat_and_model()
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    rows = flat.rows_by_type(0, flat.ncentre, 3)
    again = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping, flat.type_rows)
    assert again.rows_by_type(0, flat.ncentre, 3) is rows
    assert FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping).type_rows == {}


def test_one_type_models_take_no_rows():
    model, nd = flat_and_model(ntypes=1)
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    evaluate_flat(model, flat, 5, reference_pair_stage, by_type=True)
    assert flat.type_rows == {}


def test_rows_found_on_the_host_are_those_of_the_device():
    """`find_type_rows` (from the frames' own types, on the host; virtual atoms count as type 0, as centre_type
    has them) gives every chunk the lists that `rows_by_type` makes from the neighbour data."""
    _, nd = flat_and_model()
    atype = nd.ext_atype[:, :13].clone()
    atype[1, 4] = -1
    nd.ext_atype[1, 4] = -1
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    host = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    host.find_type_rows(atype.reshape(-1), 5, 3)
    assert sorted(host.type_rows) == [(0, 4, 3), (4, 8, 3), (8, 13, 3), (13, 17, 3), (17, 21, 3), (21, 26, 3)]
    for start, stop, ntypes in host.type_rows:
        want = flat.rows_by_type(start, stop, ntypes)
        assert all(torch.equal(a, b) for a, b in zip(host.type_rows[(start, stop, ntypes)], want, strict=True))


@pytest.mark.parametrize("n, limit", [(26, 5), (108_000, 104_857), (7, 7), (8, 7), (1, 100), (0, 3)])
def test_chunks_are_the_fewest_and_even(n, limit):
    """`evaluate_flat`'s chunks cover the centres in order, none over the limit, as few as the limit allows, and
    their sizes differ by one at most (no chunk of a few atoms that pays a whole chunk's fixed costs)."""
    parts = list(chunks(n, limit))
    bounds = [0, *(b for _, b in parts)]
    assert parts == list(itertools.pairwise(bounds)) and bounds[-1] == n
    sizes = [b - a for a, b in parts]
    assert all(0 < s <= limit for s in sizes) and len(parts) == math.ceil(n / limit)
    assert not sizes or max(sizes) - min(sizes) <= 1
