"""The choice of float32 product scheme (`deeppot.kernels.precision`): its float16 range bounds hold on real
evaluations, models that could leave float16's range keep tf32x3, and weights' float16 parts are made once."""

from __future__ import annotations

import pytest
import torch
from helpers import make_model, random_system

from deeppot.infer.deep_pot import Evaluator
from deeppot.infer.evaluate import FlatNeighbors
from deeppot.kernels import precision
from deeppot.model import analytic
from deeppot.nlist import build_neighbor_data

WATER_NET = dict(neuron=[25, 50, 100], sel=[46, 92], precision="float32")


def test_an_ordinary_model_fits_float16s_range():
    assert precision.f16_range_problem(make_model(**WATER_NET)) is None


def test_f16x3_is_only_chosen_on_the_gpus_where_it_was_measured():
    model = make_model(**WATER_NET)
    assert precision.float32_products(model, torch.device("cpu")) == "tf32x3"
    assert precision.float32_products(make_model(), torch.device("cpu")) == "tf32x3"  # float64


def test_large_or_vanishing_weights_keep_tf32x3():
    model = make_model(**WATER_NET)
    with torch.no_grad():
        model.fitting.nets.layers[1].matrix[0, 0, 0] = 5e4
    assert "weight matrix" in precision.f16_range_problem(model)
    model = make_model(**WATER_NET)
    with torch.no_grad():
        model.descriptor.nets.layers[2].matrix.mul_(1e-6)
    assert "weight matrix" in precision.f16_range_problem(model)


def test_the_training_embedding_takes_f16x3_only_within_float16s_range(monkeypatch):
    d = make_model(**WATER_NET).descriptor
    assert precision.embedding_products(d, torch.device("cpu")) == "tf32x3"
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: (9, 0))  # an H100, pretended
    cuda = torch.device("cuda")
    assert precision.embedding_products(d, cuda) == "f16x3"
    assert precision.embedding_products(make_model(**{**WATER_NET, "precision": "float64"}).descriptor,
                                        cuda) == "tf32x3"
    with torch.no_grad():  # weights of ~50: each fits, but the tangent's bound (~7e4) does not
        d.nets.layers[1].matrix.mul_(100)
        d.nets.layers[2].matrix.mul_(100)
    assert precision.embedding_products(d, cuda) == "tf32x3"
    d = make_model(**WATER_NET).descriptor
    with torch.no_grad():
        d.nets.layers[0].matrix[0, 0, 0] = 5e4
    assert precision.embedding_products(d, cuda) == "tf32x3"
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: (8, 0))
    assert precision.embedding_products(make_model(**WATER_NET).descriptor, cuda) == "tf32x3"


@pytest.mark.parametrize("spread", [0.08, 0.05])  # as the shared water and alloy data give them
def test_a_trained_models_environment_spread_fits(spread):
    """Statistics as training data give them (dstd down to ~0.05): within the limit, so a trained model's products
    take f16x3 as a fresh one's do. The old bound, 4 (r g)^2 against a limit of 2^14, had kept them on tf32x3."""
    model = make_model(**WATER_NET)
    with torch.no_grad():
        model.descriptor.dstd.fill_(spread)
        model.descriptor.davg.zero_()
    g = precision.embedding_bounds(model.descriptor)[0]
    assert 4 * (precision.environment_bound(model.descriptor) * g) ** 2 > 2.0**14
    assert precision.descriptor_bound(model.descriptor) < precision.LIMIT
    assert precision.f16_range_problem(model) is None


def test_a_tiny_environment_spread_keeps_tf32x3():
    model = make_model(**WATER_NET)
    with torch.no_grad():
        model.descriptor.dstd[..., 1:] = 1e-3  # normalised rows of ~2000 at half an ångström: D would overflow
    assert "may reach" in precision.f16_range_problem(model)


def test_the_bounds_hold_on_an_evaluation():
    """G, dG/ds, the environment rows, D and the fitting nets' activations and gradients of a random system stay
    within the bounds the choice relies on (each bound is also not vacuous: within 100x of what is seen)."""
    model = make_model(**WATER_NET)
    d = model.descriptor
    coord, atype, box = random_system(natoms=40, ntypes=2, box_len=7.0, seed=3, min_dist=0.7)
    nd = build_neighbor_data(coord, atype[None], box, model.rcut, model.sel)
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    rij = flat.pair_vectors(0, flat.ncentre, model.rcut).to(d.dtype)
    nlist_loc, neighbor_type = flat.neighbor_owner_and_type(0, flat.ncentre)
    with torch.no_grad():
        rows = analytic.env_rows(d, rij[None], nlist_loc[None], flat.center_type[None], neighbor_type[None])
        g, dg = analytic.embed_all(d, rows.rr, flat.center_type[None])
    g_max, tangent = precision.embedding_bounds(d)
    r_max = precision.environment_bound(d)
    for seen, bound in ((g, g_max), (dg, tangent), (rows.rr, r_max)):
        assert seen.abs().max() <= bound < 100 * seen.abs().max()
    t_mat = torch.einsum("fnjc,fnjm->fncm", rows.rr, g)[0] / sum(d.sel)
    desc = t_mat.transpose(1, 2) @ t_mat[:, :, :d.axis_neuron]
    d_max = precision.descriptor_bound(d)
    assert desc.abs().max() <= d_max <= 4 * (r_max * g_max) ** 2
    fit = precision.fitting_bounds(model.fitting.nets, float(desc.abs().max()))
    x = desc.reshape(1, len(desc), -1).detach()
    h, largest_h, grads = x, 0.0, []
    for layer in model.fitting.nets.layers[:-1]:
        h = layer.forward_all(h)
        h.register_hook(grads.append)
        largest_h = max(largest_h, float(h.detach().abs().max()))
    model.fitting.nets.layers[-1].forward_all(h).sum().backward()
    assert largest_h <= fit["the fitting activations"]
    assert max(float(gr.abs().max()) for gr in grads) <= fit["the fitting gradients"]


def test_evaluator_names_a_wrong_scheme():
    with pytest.raises(ValueError, match="products"):
        Evaluator(make_model(), "cpu", products="f16")


def test_weight_parts_rebuild_the_weights_and_are_made_once_per_version():
    weights = torch.nn.Parameter(torch.randn(2, 24, 16, dtype=torch.float32) * 0.3)
    one_net = weights[1:2]
    hi, lo = precision.weight_parts(one_net)
    assert hi.dtype == lo.dtype == torch.float16 and hi.shape == (1, 24, 16) and hi.is_contiguous()
    assert torch.equal(hi, one_net.detach().half())  # the kernels' split: hi rounds, lo keeps the rest * 2^11
    rebuilt = hi.double() + lo.double() / 2048
    assert (rebuilt - one_net.double()).abs().max() <= 2.0**-22 * one_net.abs().max()
    assert (rebuilt - one_net.double()).abs().max() > 0  # 22 bits, not float32's 24: the test sees the split
    hi_t, _ = precision.weight_parts(one_net, transposed=True)
    assert torch.equal(hi_t, hi.transpose(1, 2))
    assert precision.weight_parts(weights[1:2])[0] is hi  # a new view of the same weights: kept
    assert precision.weight_parts(weights[0:1])[0] is not hi
    with torch.no_grad():
        weights.mul_(2.0)  # an update (a new version): made again
    hi_new, _ = precision.weight_parts(weights[1:2])
    assert hi_new is not hi and torch.equal(hi_new, (2 * hi.float()).half())


def test_weight_parts_see_weights_changed_behind_their_version():
    """`p.data = other` keeps p's version (the data pointer tells); FlatAdam's kernel writes the parameters through
    its flat buffer, behind their versions, until `mark_updated` (which the trainer calls after its last step)."""
    from deeppot.train.adam import FlatAdam

    device = "cuda" if torch.cuda.is_available() else "cpu"  # FlatAdam's kernel: the GPU, or the interpreter
    weights = torch.nn.Parameter(torch.randn(1, 8, 8, dtype=torch.float32, device=device))
    hi, _ = precision.weight_parts(weights)
    with torch.no_grad():
        weights.data = torch.randn(1, 8, 8, device=device) * 4
    assert torch.equal(precision.weight_parts(weights)[0], weights.detach().half())
    opt = FlatAdam([weights], lr=0.1)  # the weights become a view of its flat buffer
    hi = precision.weight_parts(weights)[0]
    (weights**2).sum().backward()
    opt.step()
    assert not torch.equal(hi, weights.detach().half())  # the step moved the weights, behind their version:
    assert precision.weight_parts(weights)[0] is hi  # the parts kept are stale
    opt.mark_updated()  # what `Trainer.run` calls after its last step
    assert torch.equal(precision.weight_parts(weights)[0], weights.detach().half())


def test_weight_parts_go_with_their_weights():
    weights = torch.nn.Parameter(torch.randn(1, 8, 8))
    precision.weight_parts(weights)
    precision.weight_parts(weights, transposed=True)
    before = len(precision._PARTS)
    del weights
    assert len(precision._PARTS) == before - 2


def test_padded_parts_hold_each_weight_where_the_kernels_registers_do():
    """Water's W3 (50 -> 100) in the doubled layouts: register row p holds row (p // 32) * 25 + p % 32 of W when
    p % 32 < 25 (`embedding._columns`), column q column (q // 64) * 50 + q % 64 when q % 64 < 50; the rest zero."""
    weights = torch.nn.Parameter(torch.randn(2, 50, 100) * 0.3)
    parts = precision.padded_parts(weights, (64, 32, 25), (128, 64, 50))
    assert parts.dtype == torch.float16 and parts.shape == (2, 2, 64, 128) and parts.is_contiguous()
    expected = torch.zeros(2, 64, 128, dtype=torch.float64)
    for p in range(64):
        for q in range(128):
            if p % 32 < 25 and q % 64 < 50:
                expected[:, p, q] = weights[:, (p // 32) * 25 + p % 32, (q // 64) * 50 + q % 64].double()
    rebuilt = parts[:, 0].double() + parts[:, 1].double() / 2048
    assert (rebuilt - expected).abs().max() <= 2.0**-22 * weights.detach().abs().max()
    assert torch.equal(parts[:, 0], expected.half())  # the kernels' split: hi rounds, lo keeps the rest * 2^11
    assert precision.padded_parts(weights, (64, 32, 25), (128, 64, 50)) is parts  # made once per version
    with torch.no_grad():
        weights.mul_(2.0)
    assert not torch.equal(precision.padded_parts(weights, (64, 32, 25), (128, 64, 50)), parts)
