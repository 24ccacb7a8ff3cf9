"""The equal ways of running the per-type nets (fitting nets all at once; per net with and without type groups)
give the same energies, forces and training gradients."""

from __future__ import annotations

import pytest
import torch
from helpers import make_model, random_system

from deeppot.model import PairData
from deeppot.model.energy_model import type_groups
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
