"""The tables: quintic coefficients, ranges and lookup, against independent evaluations and DeePMD-kit 3.2.0."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers import make_model

from deeppot.io.deepmd_dict import model_to_dict
from deeppot.model.tabulate import env_mat_range, net_ranges, table_grid, table_lookup, tabulate


def _net_derivatives(net, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """y, y', y'' of a net at points x by autograd through its own forward (independent of the tabulation)."""
    x = x.clone().requires_grad_(True)
    y = net(x[:, None])
    dy = torch.stack([torch.autograd.grad(y[:, m].sum(), x, create_graph=True)[0] for m in range(y.shape[1])], 1)
    d2y = torch.stack([torch.autograd.grad(dy[:, m].sum(), x, retain_graph=True)[0] for m in range(y.shape[1])], 1)
    return y.detach(), dy.detach(), d2y.detach()


def _poly(c: torch.Tensor, tau: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Value, first and second derivative of a0..a5 (..., 6) at tau, written out term by term."""
    powers = torch.tensor([tau**n for n in range(6)], dtype=c.dtype)
    d1 = torch.tensor([0.0] + [n * tau ** (n - 1) for n in range(1, 6)], dtype=c.dtype)
    d2 = torch.tensor([0.0, 0.0] + [n * (n - 1) * tau ** (n - 2) for n in range(2, 6)], dtype=c.dtype)
    return c @ powers, c @ d1, c @ d2


@pytest.mark.parametrize(("activation", "neuron"), [("tanh", [4, 8, 16]), ("gelu", [2, 4, 6]), ("silu", [1, 2, 4])])
def test_quintic_matches_the_net_and_its_derivatives_at_both_interval_ends(activation, neuron):
    model = make_model(resnet_dt=False, neuron=neuron, activation_function=activation)
    d = model.descriptor
    tables = tabulate(d, 0.9)
    lower, upper, _, step, step1, _ = tables.info_values[1]
    data = tables.data(1)
    k0 = int((upper - lower) / step)
    for k in (0, 7, k0 - 1, k0, k0 + 3, data.shape[0] - 1):  # both strides, and the intervals at the seams
        x0, h = (lower + k * step, step) if k < k0 else (upper + (k - k0) * step1, step1)
        ref = _net_derivatives(d.nets[1], torch.tensor([x0, x0 + h], dtype=torch.float64))
        coeff = data[k].reshape(-1, 6)
        for end, tau in enumerate((0.0, h)):
            for order, (ours, want) in enumerate(zip(_poly(coeff, tau), ref, strict=True)):
                err = (ours - want[end]).abs().max().item()
                assert err < 1e-8 * (1 + want[end].abs().max().item()), (k, end, order, err)


def _deepmd_tables(model, min_nbor_dist, step, extrapolate):
    dpmodel = pytest.importorskip("deepmd.dpmodel.descriptor.se_e2_a")
    ref = dpmodel.DescrptSeA.deserialize(model_to_dict(model)["descriptor"])
    ref.enable_compression(min_nbor_dist, extrapolate, step, 10 * step, -1)
    return ref


@pytest.mark.parametrize(("type_one_side", "ntypes", "step", "extrapolate", "exclude"),
                         [(True, 2, 0.01, 5.0, []), (False, 2, 0.02, 3.0, []), (False, 3, 0.01, 5.0, [[0, 2]]),
                          (True, 3, 0.05, 10.0, [[1, 2], [0, 0]])])
def test_tables_equal_deepmd_kit_tables(type_one_side, ntypes, step, extrapolate, exclude):
    model = make_model(seed=3, resnet_dt=False, type_one_side=type_one_side, ntypes=ntypes,
                       sel=[10] * ntypes, neuron=[4, 8, 16], exclude_types=exclude)
    with torch.no_grad():  # a centre type whose angular dstd widens the range (DeePMD-kit takes all 4 columns)
        model.descriptor.dstd[0, :, 1:] = 0.2
    ref = _deepmd_tables(model, 0.8, step, extrapolate)
    ours = tabulate(model.descriptor, 0.8, step, extrapolate)
    assert ours.nnets == len(ref.compress_data)
    n = ntypes
    for k in range(ours.nnets):
        if not type_one_side and sorted([k % n, k // n]) in exclude:
            # DeePMD-kit's serialize() zeroes two-sided excluded nets before it tabulates them (its tables of them
            # are 0); ours tabulate the nets the model holds, which padding rows still reach
            continue
        np.testing.assert_array_equal(ours.info(k).numpy(), ref.compress_info[k])
        a, b = ours.data(k).numpy(), np.asarray(ref.compress_data[k])
        assert a.shape == b.shape
        # a_n h^n: the n-th coefficient's share of the value over an interval (a5 alone is cancellation-dominated:
        # ~1e-16 |y| / h^5, in both codes)
        info = ours.info_values[k]
        h = np.full(a.shape[0], info[4])
        h[:int((info[1] - info[0]) / info[3])] = info[3]
        scale = h[:, None, None] ** np.arange(6)
        diff = np.abs(a.reshape(len(h), -1, 6) - b.reshape(len(h), -1, 6)) * scale
        assert diff.max() < 1e-12, diff.max()


def test_ranges_by_hand_and_exclusions_drop_nothing():
    model = make_model(resnet_dt=False, type_one_side=True, ntypes=3, sel=[6, 0, 6], exclude_types=[[0, 1]])
    with torch.no_grad():
        model.descriptor.davg[..., 0] = torch.tensor([0.1, 0.9, 0.4], dtype=torch.float64)[:, None]
        model.descriptor.dstd[..., 0] = torch.tensor([0.3, 0.2, 0.5], dtype=torch.float64)[:, None]
        model.descriptor.dstd[..., 1:] = 1.0
    d = model.descriptor
    r_min = 1.2
    u = (r_min - 1.0) / (4.0 - 1.0)  # rcut_smth 1.0, rcut 4.0 (helpers.model_config)
    sw = u**3 * (-6 * u * u + 15 * u - 10) + 1
    mu, sigma = [0.1, 0.9, 0.4], [0.3, 0.2, 0.5]
    lower = [min(math.floor(-m / s), 0) for m, s in zip(mu, sigma, strict=True)]
    upper = [max(math.ceil((sw / r_min - m) / s), math.ceil(sw / r_min)) for m, s in zip(mu, sigma, strict=True)]
    got_lower, got_upper = env_mat_range(d, r_min)
    assert got_lower.tolist() == lower and got_upper.tolist() == upper
    # one-sided: every net over the centre types with sel > 0 (0 and 2), the excluded pair included
    hull = (min(lower[0], lower[2]), max(upper[0], upper[2]))
    assert net_ranges(d, got_lower, got_upper) == [hull, hull, hull]
    two_sided = make_model(resnet_dt=False, type_one_side=False, ntypes=2, sel=[6, 6], exclude_types=[[0, 1]])
    tables = tabulate(two_sided.descriptor, 1.0)
    assert all(tables.tabulated(k) for k in range(4))


def test_grid_counts():
    x, h = table_grid(-1.0, 3.0, 0.01, 5.0)
    assert h.shape[0] == 400 + 120 and (h[:400] == 0.01).all() and (h[400:] == 0.1).all()
    assert x.shape[0] >= h.shape[0] + 1 and x[-1] == 15.0


def test_lookup_equals_deepmd_kit_tabulate_fusion_including_extrapolation():
    fusion = pytest.importorskip("deepmd.dpmodel.utils.tabulate").tabulate_fusion
    model = make_model(resnet_dt=False, neuron=[4, 8, 16])
    tables = tabulate(model.descriptor, 1.0, 0.02, 2.0)
    lower, upper, top = tables.info_values[0][:3]
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(lower - 3, top + 3, 200), [lower, upper, top, lower - 1e-9, top + 1e-9]])
    g, _ = table_lookup(tables.data(0), tables.info_values[0], torch.as_tensor(x))
    ref = fusion(tables.data(0).numpy(), tables.info(0).numpy(), x.reshape(1, -1, 1), 16)
    np.testing.assert_allclose(g.numpy(), ref.reshape(-1, 16), rtol=0, atol=1e-13)
    assert (x < lower).sum() > 10 and (x > top).sum() > 10  # both extrapolation regions were exercised


def test_lookup_derivative_is_the_derivative_of_the_lookup():
    model = make_model(resnet_dt=False, neuron=[4, 8, 16])
    tables = tabulate(model.descriptor, 1.0, 0.02, 2.0)
    lower, _, top = tables.info_values[0][:3]
    x = torch.cat([torch.linspace(lower - 2, top + 2, 157, dtype=torch.float64)])
    eps = 1e-6
    g_plus, _ = table_lookup(tables.data(0), tables.info_values[0], x + eps)
    g_minus, _ = table_lookup(tables.data(0), tables.info_values[0], x - eps)
    _, dg = table_lookup(tables.data(0), tables.info_values[0], x)
    err = ((g_plus - g_minus) / (2 * eps) - dg).abs().max().item()
    assert err < 1e-6, err
