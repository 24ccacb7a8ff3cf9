"""The hand-written first derivative (fast path) against autograd (reference): values, forces, training grads."""

from __future__ import annotations

import pytest
import torch
from helpers import make_model, pairs_of, training_gradients


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
