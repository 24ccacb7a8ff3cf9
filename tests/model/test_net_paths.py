"""The equal ways of running the per-type nets (fitting nets all at once; per net with and without type groups)
give the same energies, forces and training gradients."""

from __future__ import annotations

import pytest
import torch
from helpers import (
    assert_same_training,
    make_model,
    pairs_of,
    random_system,
    training_gradients,
    trimmed_pairs,
    with_type_rows,
)

from deeppot.model import PairData
from deeppot.model.energy_model import type_groups
from deeppot.model.fitting import TypeRows
from deeppot.nlist import build_neighbor_data


def force_loss_gradients(model, pairs):
    """Energy, forces and d(sum F^2)/d(params): exercises the double backward that force training needs."""
    out = model.forward_pairs(pairs, create_graph=True)
    loss = out["force"].square().sum() + out["energy"].sum()
    grads = torch.autograd.grad(loss, list(model.parameters()))
    return out, grads


@pytest.mark.parametrize("type_one_side", [True, False])
@pytest.mark.parametrize("exclude", [[], [[0, 1]]])
def test_all_nets_at_once_equals_per_net(type_one_side, exclude):
    model = make_model(type_one_side=type_one_side, exclude_types=exclude)
    coord, atype, box = random_system(nframes=2)
    nd = build_neighbor_data(coord, atype[None].expand(2, -1), box, model.rcut, model.sel)
    pairs = PairData.from_neighbors(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping, model.rcut)
    results = []
    for at_once, groups in ((True, None), (False, None), (False, type_groups(atype, 2))):
        model.fitting.all_nets_at_once = at_once
        pairs.groups = groups
        results.append(force_loss_gradients(model, pairs))
    (ref, ref_grads), *others = results
    for out, grads in others:
        for key in ("energy", "force", "virial"):
            torch.testing.assert_close(out[key], ref[key], rtol=1e-12, atol=1e-12)
        for g, g_ref in zip(grads, ref_grads, strict=True):
            torch.testing.assert_close(g, g_ref, rtol=1e-10, atol=1e-12)
    assert any(g.abs().max() > 0 for g in ref_grads)


def test_type_rows_gather_each_types_atoms_and_give_them_back():
    """`TypeRows`: net t's rows are type t's atoms frame by frame (then atom 0 as padding), and `own` returns each
    atom's row of its own net."""
    atype = torch.tensor([1, 0, 2, 1, 1, 0])
    rows = TypeRows(type_groups(atype, 4), 2, 6)  # type 3 has no atoms: its net's rows are all padding
    assert rows.index.tolist() == [[1, 5, 0, 7, 11, 0], [0, 3, 4, 6, 9, 10], [2, 0, 0, 8, 0, 0], [0] * 6]
    x = torch.randn(2, 6, 5, dtype=torch.float64)
    per_net = rows.gather(x)
    assert per_net.shape == (4, 6, 5)
    torch.testing.assert_close(per_net[1, 3], x[1, 0], rtol=0, atol=0)  # type 1's first atom of frame 1
    torch.testing.assert_close(rows.own(per_net).reshape(x.shape), x, rtol=0, atol=0)


@pytest.mark.parametrize("trimmed", [False, True])
def test_fitting_nets_on_their_own_types_rows_equal_every_net_on_every_atom(trimmed):
    """The analytic force path with each net on its own type's atoms (`TypeRows`, what training batches of one
    system carry) against every net on every atom: energies, forces, virials and every parameter's gradient."""
    model = make_model(sel=(7, 25))
    model.fitting.all_nets_at_once = True  # the GPU branch, which takes the rows, here on any device
    pairs = pairs_of(model, nframes=2)
    pairs = trimmed_pairs(model, pairs) if trimmed else pairs
    want = training_gradients(model, pairs)
    got = training_gradients(model, with_type_rows(pairs))
    assert_same_training(model, got, want, dict(rtol=1e-12, atol=1e-12), dict(rtol=1e-11, atol=1e-13))
