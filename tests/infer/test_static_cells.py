"""The cell list of static sizes (`deeppot.infer.static_cells`, what a whole-call CUDA graph captures) against the
eager cell list (`cell_neighbors`): the same extended atoms in the same order before the padding, the same
neighbours in every type block, padding that nothing lists, and the overflow flag when the ghost slots or a sel are
too few."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deeppot.infer.candidates import cell_neighbors
from deeppot.infer.static_cells import GHOST_ROOM, ghost_count, plan_cells, static_cell_neighbors
from deeppot.nlist.testing import sort_rows

SKEWED = [[6.0, 0.0, 0.0], [4.0, 5.5, 0.0], [3.0, -4.0, 6.5]]
TINY = [[2.6, 0.0, 0.0], [0.4, 2.4, 0.0], [0.3, 0.2, 2.5]]


def frame(rows, natoms: int, seed: int, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    box = torch.tensor(rows, dtype=torch.float64)
    coord = (torch.rand(1, natoms, 3, generator=gen, dtype=torch.float64) * 1.6 - 0.3) @ box
    atype = torch.randint(0, 2, (1, natoms), generator=gen)
    atype[0, 1] = -1
    return coord.to(dtype), atype, box[None].to(dtype)


def pairs(ext_coord, mapping, nlist, sel) -> np.ndarray:
    """Rows (centre, type block, owner, displacement in 1e-6 A) of every listed pair, sorted."""
    block = torch.repeat_interleave(torch.arange(len(sel)), torch.tensor(sel))
    atom, slot = (nlist[0] >= 0).nonzero(as_tuple=True)
    j = nlist[0, atom, slot]
    disp = torch.round((ext_coord[0, j] - ext_coord[0, atom]) * 1e6).long()
    return sort_rows(torch.cat([torch.stack([atom, block[slot], mapping[0, j]], 1), disp], 1).numpy())


@pytest.mark.parametrize(("rows", "natoms", "sel"), [(SKEWED, 40, [80, 80]), (TINY, 5, [90, 90])])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_static_list_is_the_eager_one(rows, natoms, sel, dtype):
    coord, atype, box = frame(rows, natoms, seed=natoms, dtype=dtype)
    want = cell_neighbors(coord, atype, box, 4.0, sel)
    plan, reach = plan_cells(box[0].to(torch.float64), natoms, 4.0, dtype)
    nghost = ghost_count(coord, box, reach, plan)
    assert nghost == want[0].shape[1] - natoms
    capacity = int(GHOST_ROOM * nghost) + 8
    inverse = torch.linalg.inv_ex(box).inverse  # as `GraphedCall` gives it (its host's), here the eager list's
    got = static_cell_neighbors(coord, atype, box, reach, 4.0, sel, plan, capacity, inverse)
    nall = natoms + nghost
    assert got[0].shape[1] == natoms + capacity and not bool(got[4] | got[5]) and not bool(want[4])
    for g, w in zip(got[:3], want[:3], strict=True):
        assert torch.equal(g[:, :nall], w)
    assert (got[1][0, nall:] == -1).all()  # the padding: no type, so never listed
    assert (got[3] < nall).all() and (got[3][0, 1] == -1).all()  # a virtual centre gets no neighbours
    np.testing.assert_array_equal(pairs(got[0], got[2], got[3], sel), pairs(want[0], want[2], want[3], sel))


def test_too_few_ghost_slots_or_a_too_small_sel_are_flagged():
    coord, atype, box = frame(SKEWED, 40, seed=3)
    plan, reach = plan_cells(box[0], 40, 4.0, torch.float64)
    nghost = ghost_count(coord, box, reach, plan)
    flags = [[bool(f) for f in static_cell_neighbors(coord, atype, box, reach, 4.0, sel, plan, capacity)[4:]]
             for sel, capacity in [([80, 80], nghost - 1), ([80, 80], nghost), ([5, 80], nghost)]]
    assert flags == [[False, True], [False, False], [True, False]]


def test_a_padded_plan_serves_a_slightly_larger_box_and_its_list_is_still_right():
    """The plan a capture keeps (one more bin each way) serves the frame in a box 0.2% larger, and its list there
    is the eager one; a box 30% larger needs a new plan."""
    coord, atype, box = frame(SKEWED, 40, seed=5)
    plan = plan_cells(box[0], 40, 4.0, torch.float64)[0].padded()
    grown_coord, grown_box = coord * 1.002, box * 1.002
    grown, reach = plan_cells(grown_box[0], 40, 4.0, torch.float64)
    assert plan.serves(grown) and not grown.serves(plan.padded())
    assert not plan.serves(plan_cells(box[0] * 1.3, 40, 4.0, torch.float64)[0])
    want = cell_neighbors(grown_coord, atype, grown_box, 4.0, [80, 80])
    capacity = ghost_count(grown_coord, grown_box, reach, plan)
    got = static_cell_neighbors(grown_coord, atype, grown_box, reach, 4.0, [80, 80], plan, capacity)
    np.testing.assert_array_equal(pairs(got[0], got[2], got[3], [80, 80]), pairs(want[0], want[2], want[3], [80, 80]))
    assert not bool(got[4] | got[5])
