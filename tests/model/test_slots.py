"""Trimmed neighbour lists (deeppot.model.slots) against the full lists: same energies, forces, virials and
training gradients, on the analytic and the autograd path; the statistics; when the layout is exact."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import make_model, pairs_of, training_gradients, trimmed_pairs

from deeppot.model.energy_model import type_groups
from deeppot.model.slots import interchangeable_slots, per_type_padding, slot_layout, trimmed_widths
from deeppot.model.stats import env_stat_sums


@pytest.mark.parametrize(("type_one_side", "exclude", "ntypes", "grouped"), [
    (True, [], 2, False), (False, [[0, 1]], 2, True), (False, [], 3, False), (True, [[1, 1]], 3, True),
])
@pytest.mark.parametrize("analytic", [True, False])
def test_trimmed_lists_equal_full_lists(type_one_side, exclude, ntypes, grouped, analytic):
    model = make_model(ntypes=ntypes, sel=(24,) * ntypes, type_one_side=type_one_side, exclude_types=exclude)
    with torch.no_grad():  # padding rows that differ between centre types and have all four columns
        model.descriptor.davg[..., 1:] = 0.05 * torch.randn(ntypes, 1, 3, dtype=torch.float64)
    full = pairs_of(model, ntypes=ntypes)
    if grouped:  # every frame has the same types: each net runs on its own centres (the reference path's other form)
        full.groups = type_groups(full.center_type[0], ntypes)
    out, grads = training_gradients(model, full, analytic)
    out_t, grads_t = training_gradients(model, trimmed_pairs(model, full), analytic)
    for key in ("energy", "atom_energy", "force", "virial"):
        torch.testing.assert_close(out_t[key], out[key], rtol=1e-12, atol=1e-12)
    for g_t, g in zip(grads_t, grads, strict=True):
        torch.testing.assert_close(g_t, g, rtol=1e-10, atol=1e-12)


def test_the_stand_in_counts():
    """Counted once instead of for every dropped slot, the energies differ: the test above would notice."""
    model = make_model()
    full = pairs_of(model)
    cut = trimmed_pairs(model, full)
    assert int(cut.layout.weight.max()) > 1
    reference = model.forward_pairs(full)["energy"]
    cut.layout = cut.layout._replace(weight=torch.ones_like(cut.layout.weight))
    assert float((model.forward_pairs(cut)["energy"] - reference).abs().max()) > 1e-3


def test_layout():
    layout = slot_layout([4, 6, 3], (2, 6, 1), torch.device("cpu"))
    assert layout.sel == (3, 6, 2)
    assert layout.index.tolist() == [2, 0, 1, 4, 5, 6, 7, 8, 9, 11, 10]  # a stand-in first in its block
    assert layout.weight[:, 0].tolist() == [2, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1]
    with pytest.raises(ValueError, match="do not fit sel"):
        slot_layout([4, 8], (5, 8), torch.device("cpu"))


def test_stand_ins_need_one_padding_row_per_block():
    d = make_model().descriptor
    assert per_type_padding(d.davg, d.dstd, d.sel)
    with torch.no_grad():
        d.davg[0, -1, 0] += 0.1  # the last slot of the last block
    assert not per_type_padding(d.davg, d.dstd, d.sel)


def test_interchangeable_slots_need_each_blocks_statistics_alike():
    """davg and dstd each alike in a block; a change that keeps the padding row -davg/dstd still breaks it."""
    d = make_model().descriptor
    assert interchangeable_slots(d.davg, d.dstd, d.sel)
    with torch.no_grad():
        d.davg[1, d.sel[0], 2] *= 2.0  # the first slot of the second block, centre type 1
        d.dstd[1, d.sel[0], 2] *= 2.0
    assert per_type_padding(d.davg, d.dstd, d.sel) and not interchangeable_slots(d.davg, d.dstd, d.sel)


def test_statistics_count_the_dropped_slots():
    model = make_model()
    full = pairs_of(model)
    cut = trimmed_pairs(model, full)
    d = model.descriptor
    args = (d.ntypes, d.rcut, d.rcut_smth, d.env_protection)
    torch.testing.assert_close(env_stat_sums(cut.rij, cut.nlist_loc, cut.center_type, *args, nnei=sum(d.sel)),
                               env_stat_sums(full.rij, full.nlist_loc, full.center_type, *args))


@pytest.mark.parametrize(("sel", "counts", "widths"), [
    ([46, 92], [38, 72], (38, 72)),
    ([46, 92], [46, 92], None),  # nothing to save
    ([46, 92], [45, 92], None),  # one slot dropped, one stand-in: nothing saved
    ([96], [84], None),  # 85 slots for 96: too little saved (measured no faster)
    ([46, 92], [50, 72], None),  # an overflowing type: the nearest sum(sel) decide, keep the full lists
    ([80, 80, 80], np.array([60, 57, 71]), (60, 57, 71)),
])
def test_widths_from_the_data(sel, counts, widths):
    assert trimmed_widths(sel, counts) == widths
