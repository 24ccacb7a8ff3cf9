"""The hand-written first derivative (fast path) against autograd (reference): values, forces, training grads."""

from __future__ import annotations

import pytest
import torch
from helpers import make_model, pairs_of, training_gradients

from deeppot.model.fitting import own_type_rows


@pytest.mark.parametrize(("type_one_side", "activation", "exclude", "resnet_dt"), [
    (True, "tanh", [], True), (False, "tanh", [[0, 1]], False), (True, "gelu", [], False),
    (False, "softplus", [], True), (True, "sigmoid", [[1, 1]], True), (True, "relu", [], False),
])
@pytest.mark.parametrize("fit_at_once", [True, False])
def test_analytic_equals_autograd(type_one_side, activation, exclude, resnet_dt, fit_at_once):
    model = make_model(type_one_side=type_one_side, exclude_types=exclude, activation_function=activation,
                       resnet_dt=resnet_dt, env_protection=0.05)
    model.fitting.all_nets_at_once = fit_at_once
    pairs = pairs_of(model)
    fast, fast_grads = training_gradients(model, pairs, analytic=True)
    ref, ref_grads = training_gradients(model, pairs, analytic=False)
    for key in ("energy", "atom_energy", "force", "virial"):
        torch.testing.assert_close(fast[key], ref[key], rtol=1e-11, atol=1e-12)
    for g, g_ref in zip(fast_grads, ref_grads, strict=True):
        torch.testing.assert_close(g, g_ref, rtol=1e-9, atol=1e-11)
    assert max(float(g.abs().max()) for g in ref_grads) > 1e-3


@pytest.mark.parametrize("neuron", [[2, 4], [3, 3, 6], [5], [4, 8, 16]])
@pytest.mark.parametrize("compiling", [False, True])
def test_analytic_embedding_widths(neuron, compiling, monkeypatch):
    """Value and tangent through nets whose first layer is doubled from the scalar input (skip [s, s]),
    same-width and single-layer nets; also the stacked form taken under torch.compile (run eagerly here)."""
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: compiling)
    model = make_model(neuron=neuron, axis_neuron=2, resnet_dt=False)
    pairs = pairs_of(model)
    fast, fast_grads = training_gradients(model, pairs, analytic=True)
    ref, ref_grads = training_gradients(model, pairs, analytic=False)
    torch.testing.assert_close(fast["force"], ref["force"], rtol=1e-11, atol=1e-12)
    for g, g_ref in zip(fast_grads, ref_grads, strict=True):
        torch.testing.assert_close(g, g_ref, rtol=1e-9, atol=1e-11)


def test_analytic_float32_close_to_float64():
    m64, m32 = make_model(precision="float64"), make_model(precision="float32")
    m32.load_state_dict(m64.state_dict())
    pairs = pairs_of(m64)
    out64, out32 = m64.forward_pairs(pairs), m32.forward_pairs(pairs)
    torch.testing.assert_close(out32["force"], out64["force"], rtol=1e-4, atol=1e-5)


def test_long_float32_products_split_along_k_give_the_plain_products():
    from deeppot.model import analytic

    assert analytic.k_parts(37, 1024, 16, 3, torch.float32) > 1
    assert analytic.k_parts(37, 240, 240, 3, torch.float32) == 1  # short k
    assert analytic.k_parts(4096, 1600, 240, 2, torch.float32) == 1  # enough output tiles already
    assert analytic.k_parts(37, 1024, 16, 3, torch.float64) == 1
    gen = torch.Generator().manual_seed(5)
    w = torch.randn(3, 1600, 24, generator=gen)
    for nets_in_a in (1, 3):  # the first layer's shared input; the input-gradient pass's rows per net
        a = torch.randn(nets_in_a, 37, 1600, generator=gen)
        exact = a.double() @ w.double()
        torch.testing.assert_close(analytic.split_k_matmul(a, w).double(), exact, rtol=0, atol=2e-4)
    g = torch.randn(3, 37, 24, generator=gen, requires_grad=True)
    out = analytic.split_k_matmul_t(g, w)
    torch.testing.assert_close(out.double(), g.double() @ w.double().transpose(1, 2), rtol=0, atol=2e-5)
    weight = torch.randn(out.shape, generator=gen)
    (grad,) = torch.autograd.grad((out * weight).sum(), g)  # dL/dg = weight @ w, the product split along k
    torch.testing.assert_close(grad.double(), weight.double() @ w.double(), rtol=0, atol=2e-4)


def test_compiled_fitting_branch_with_split_products_equals_the_plain_one(monkeypatch):
    """fit_with_input_grad's products split along a long k under torch.compile (run eagerly here), float32."""
    from deeppot.model import analytic
    from deeppot.model.fitting import EnergyFitting

    nets = EnergyFitting(3, 1024, [16, 16], dtype=torch.float32, seed=3).nets
    x = (torch.randn(1, 37, 1024, generator=torch.Generator().manual_seed(7)) / 8).requires_grad_(True)
    assert analytic.k_parts(37, 1024, 16, 3, torch.float32) > 1

    def value_grad_and_gradients(compiling: bool):
        monkeypatch.setattr(torch.compiler, "is_compiling", lambda: compiling)
        value, g = analytic.fit_with_input_grad(nets, x, None)
        loss = value.square().sum() + (g * torch.linspace(-1, 1, g.shape[-1])).sum()
        return value, g, *torch.autograd.grad(loss, [x, *nets.parameters()])

    for got, want in zip(value_grad_and_gradients(True), value_grad_and_gradients(False), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5 * max(1.0, want.abs().max().item()))


@pytest.mark.parametrize("ntypes", [1, 3])
def test_own_type_rows_picks_each_atoms_own_nets_row(ntypes):
    """Row i of (ntypes, rows, k) at atom i's type, virtual atoms (type -1) at type 0; one type needs no gather."""
    atype = torch.tensor([[0, ntypes - 1, -1], [ntypes // 2, 0, ntypes - 1]])
    per_type = torch.randn(ntypes, atype.numel(), 4, dtype=torch.float64)
    want = torch.stack([per_type[max(int(t), 0), i] for i, t in enumerate(atype.reshape(-1))])
    assert torch.equal(own_type_rows(per_type, atype), want)
