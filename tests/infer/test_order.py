"""The centres in the order of their neighbour counts (`deeppot.infer.order`): a permutation that groups alike atoms
into the kernels' tiles, and an evaluation in it equal to one in the atoms' own order (CPU, float64)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from helpers import make_model, random_system

from deeppot.infer import deep_pot
from deeppot.infer.deep_pot import Evaluator
from deeppot.infer.evaluate import FlatNeighbors, evaluate_flat, reference_pair_stage
from deeppot.infer.order import STEP, block_counts, centre_order, kept_order, sort_key
from deeppot.nlist import build_neighbor_data

pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")


def list_of(counts: list[list[int]], sel: list[int]) -> torch.Tensor:
    """A neighbour list whose centre i has counts[i][b] neighbours (index 0) in block b, padding after them."""
    rows = []
    for row in counts:
        rows.append(torch.cat([torch.tensor([0] * c + [-1] * (s - c)) for c, s in zip(row, sel, strict=True)]))
    return torch.stack(rows)


def test_the_key_orders_by_type_then_each_blocks_count_in_steps():
    sel = [24, 40]
    counts = [[20, 3], [3, 30], [9, 1], [10, 39], [1, 2]]
    center_type = torch.tensor([1, 0, 1, 0, 0])
    nlist = list_of(counts, sel)
    assert block_counts(nlist, sel).tolist() == counts
    order = torch.argsort(sort_key(block_counts(nlist, sel), center_type, sel, 2), stable=True).tolist()
    # type 0: counts 3 and 1 share the first step (1..8), then 30 < 39 in the second block; 10 is a step up
    assert order == [4, 1, 3, 2, 0]
    assert STEP == 8


def test_alike_atoms_share_tiles_in_the_order():
    """Tiles of two consecutive centres walk each block to their larger count in chunks of 8 slots: counts
    alternating 2 and 12 cost every tile two chunks in the atoms' order, one or two in the centres' order."""
    sel = [16]
    counts = [[2], [12]] * 4
    nlist, center_type = list_of(counts, sel), torch.zeros(8, dtype=torch.long)
    order = torch.argsort(sort_key(block_counts(nlist, sel), center_type, sel, 1), stable=True)

    def chunks_walked(rows):
        tops = (nlist[rows] >= 0).sum(1).view(-1, 2).amax(1)
        return int(((tops + 7) // 8).sum())

    assert chunks_walked(torch.arange(8)) == 8 and chunks_walked(order) == 6


def flat_and_model(nframes=2, ntypes=3):
    model = make_model(type_one_side=False, seed=4, ntypes=ntypes, sel=[12] * ntypes)
    coord, atype, box = random_system(natoms=13, ntypes=ntypes, nframes=nframes, seed=4)
    nd = build_neighbor_data(coord, atype[None].expand(nframes, -1), box, model.rcut, model.sel)
    return model, FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)


def test_the_order_is_a_permutation_with_its_inverse_owners_and_type_ranges():
    model, flat = flat_and_model()
    o = centre_order(flat, model.sel, 3, 5)
    n = flat.ncentre
    assert sorted(o.order.tolist()) == list(range(n)) and torch.equal(o.inverse[o.order], torch.arange(n))
    assert not torch.equal(o.order, torch.arange(n))  # the two frames' centres mix
    assert torch.equal(o.owner, o.inverse[flat.owner]) and torch.equal(o.center_type, flat.center_type[o.order])
    assert torch.equal(o.counts, block_counts(flat.nlist, model.sel)[o.order])
    assert (o.center_type.diff() >= 0).all()
    assert len(o.type_rows) == 6  # chunks of 5 of 26 centres
    for (start, stop, _), rows in o.type_rows.items():
        for t, r in enumerate(rows):
            assert torch.equal(r, torch.nonzero(o.center_type[start:stop] == t).reshape(-1))


@pytest.mark.parametrize("atomic", [False, True])
def test_an_evaluation_in_the_order_equals_one_in_the_atoms_order(atomic):
    """Two frames in chunks of 5 (a chunk's rows come from both frames): energies per frame, forces, virials and
    the per-atom outputs in each atom's own row."""
    model, flat = flat_and_model()
    o = centre_order(flat, model.sel, 3, 5)
    seen = []

    def stage(model, rij, nlist_loc, center_type, neighbor_type, type_rows):
        seen.append(center_type)
        return reference_pair_stage(model, rij, nlist_loc, center_type, neighbor_type)

    out = evaluate_flat(model, flat, 5, stage, atomic, by_type=True, order=o)
    ref = evaluate_flat(model, flat, 5, reference_pair_stage, atomic)
    assert torch.equal(torch.cat(seen), o.center_type)
    assert set(out) == set(ref)
    for key in ref:
        torch.testing.assert_close(out[key], ref[key], rtol=1e-13, atol=1e-13)


def test_the_evaluator_keeps_a_lists_order_until_its_owners_change(monkeypatch):
    """The fused evaluator orders many centres (here: any) once per neighbour data; data of other extended atoms
    (an MD rebuild) gets its own; unordered calls (graphs, `evaluate`) keep the atoms' order."""
    model, flat = flat_and_model()
    ev = Evaluator(model, "cpu", fused=False)
    monkeypatch.setattr(ev, "fused", True)  # the order's bookkeeping, with the PyTorch stage
    monkeypatch.setattr(deep_pot, "ORDER_MIN_CENTRES", 1)
    monkeypatch.setattr(ev, "pair_stage", lambda model, *args, type_rows=None, **kw: reference_pair_stage(model,
                                                                                                           *args))
    ref = evaluate_flat(model, flat, ev.chunk_atoms, reference_pair_stage)
    out = ev.evaluate_neighbors(flat)
    made = kept_order(flat, model.sel, 3, ev.chunk_atoms)
    assert len(flat.orders) == 1 and ev.evaluate_neighbors(flat) is not None
    assert kept_order(flat, model.sel, 3, ev.chunk_atoms) is made
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(out[key], ref[key], rtol=1e-13, atol=1e-13)
    flat.owner = flat.owner.clone()  # other extended atoms
    assert kept_order(flat, model.sel, 3, ev.chunk_atoms) is not made
    other = dataclasses.replace(flat, orders={})
    ev.evaluate_neighbors(other, ordered=False)
    assert not other.orders
