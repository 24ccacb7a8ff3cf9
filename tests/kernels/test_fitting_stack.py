"""A fitting net's hidden stack in one kernel (`deeppot.kernels.fitting_stack`) against float64 PyTorch and against
the stage's six-product path (`fitting_gemm.value_and_input_grad`), on a GPU or under Triton's interpreter."""

from __future__ import annotations

import copy

import pytest
import torch
from helpers import model_config

from deeppot.model import EnergyModel, analytic
from deeppot.model.energy_model import type_groups

fitting_stack = pytest.importorskip("deeppot.kernels.fitting_stack")
if fitting_stack.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)
from deeppot.kernels import descriptor, fitting_gemm  # noqa: E402 (after the skip: they need Triton)
from deeppot.kernels.precision import STACKED_LIMIT, fitting_bounds  # noqa: E402

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
M1, M2 = 16, 4  # the descriptor's width and axis_neuron: D has 64 columns


def stack_model(ntypes: int = 2, resnet_dt: bool = True, neuron=(16, 16, 16)) -> EnergyModel:
    """A float32 model whose fitting nets have the kernel's shape (by default), weights moved off their init."""
    config = model_config(ntypes=ntypes, sel=(8,) * ntypes, precision="float32", neuron=[4, 8, M1], axis_neuron=M2)
    config["fitting_net"].update(neuron=list(neuron), resnet_dt=resnet_dt)
    torch.manual_seed(3)
    model = EnergyModel.from_config(config)
    with torch.no_grad():
        for p in model.fitting.parameters():
            p.add_(torch.randn_like(p) * 1.2 / p.shape[-1] ** 0.5)  # by width: 240-wide layers keep off tanh's tails
    return model.to(DEVICE)


def rows_of_d(rows: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, M1 * M2, generator=g) * 0.3).to(DEVICE)


def reference(nets, x, k):
    """Value and dE/dD in float64: `analytic.fit_with_input_grad` on a float64 copy of the nets."""
    return analytic.fit_with_input_grad(copy.deepcopy(nets).double(), x.double(), k)


def assert_float32_close(got, want):
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5 * want.abs().max().item())


@pytest.mark.parametrize("resnet_dt", [True, False])
@pytest.mark.parametrize("neuron", [(16, 16, 16), (240, 240, 240)])
def test_value_and_input_grad_equal_float64(resnet_dt, neuron, monkeypatch):
    """Net 1's value and dE/dD on a ragged last row block to float32's accuracy, for a narrow net (one column tile)
    and water's 240-wide one (four column tiles of the scratch, padding to 256, k steps of the tile)."""
    monkeypatch.setattr(fitting_gemm, "worth_it", lambda x: True)  # the f16x3 products at any size, as on a GPU
    nets = stack_model(resnet_dt=resnet_dt, neuron=neuron).fitting.nets
    x = rows_of_d(150)
    calls = []
    stack = fitting_stack.hidden_stack
    monkeypatch.setattr(fitting_stack, "hidden_stack", lambda *a, **kw: calls.append(1) or stack(*a, **kw))
    with torch.no_grad():
        value, grad = fitting_stack.value_and_input_grad(nets, x, 1, "f16x3")
    assert calls == [1]
    want_value, want_grad = reference(nets, x, 1)
    assert value.shape == want_value.shape and grad.shape == want_grad.shape
    assert_float32_close(value, want_value)
    assert_float32_close(grad, want_grad)


@pytest.mark.parametrize("neuron", [(16, 16, 16), (240, 240, 240)])
def test_input_grad_from_gz1_parts_equals_float64(neuron, monkeypatch):
    """Where gz1 provably stays within STACKED_LIMIT (trained models' bound is ~1), dE/dD is one product of depth
    3 d on the float16 parts that the kernel writes ([2^11 hi | hi | lo]; cuBLAS on a GPU, its float32 twin here)."""
    monkeypatch.setattr(fitting_gemm, "worth_it", lambda x: True)
    nets = stack_model(neuron=neuron).fitting.nets
    with torch.no_grad():
        nets.layers[-1].matrix.mul_(0.05)  # every gradient scales with the output weights: the bound within the limit
    assert fitting_bounds(nets, 0.0)["the fitting gradients"] <= STACKED_LIMIT
    x = rows_of_d(150, seed=2)
    calls = []
    product = fitting_stack.input_grad
    monkeypatch.setattr(fitting_stack, "input_grad", lambda *a: calls.append(a[0].dtype) or product(*a))
    with torch.no_grad():
        value, grad = fitting_stack.value_and_input_grad(nets, x, 1, "f16x3")
    assert calls == [torch.float16]
    want_value, want_grad = reference(nets, x, 1)
    assert_float32_close(value, want_value)
    assert_float32_close(grad, want_grad)


def test_input_grad_keeps_the_f16x3_product_where_gz1_may_be_large(monkeypatch):
    """A net whose gradients' bound exceeds STACKED_LIMIT (2^11 hi could leave float16) takes `product_t` on gz1
    whole."""
    monkeypatch.setattr(fitting_gemm, "worth_it", lambda x: True)
    nets = stack_model().fitting.nets
    assert fitting_bounds(nets, 0.0)["the fitting gradients"] > STACKED_LIMIT
    monkeypatch.setattr(fitting_stack, "input_grad", lambda *a: pytest.fail("gz1's parts taken"))
    with torch.no_grad():
        _, grad = fitting_stack.value_and_input_grad(nets, rows_of_d(40), 0, "f16x3")
    assert_float32_close(grad, reference(nets, rows_of_d(40), 0)[1])


def test_one_net_on_all_rows_equals_float64(monkeypatch):
    """A one-type model's net on x (1, rows, n0), k None (`analytic.atomic_energy_and_grad`'s call)."""
    monkeypatch.setattr(fitting_gemm, "worth_it", lambda x: True)
    nets = stack_model(ntypes=1).fitting.nets
    x = rows_of_d(70, seed=5)[None]
    with torch.no_grad():
        value, grad = fitting_stack.value_and_input_grad(nets, x, None, "f16x3")
    want_value, want_grad = reference(nets, x, None)
    assert_float32_close(value, want_value)
    assert_float32_close(grad, want_grad)


def test_operands_are_kept_until_any_parameter_changes(monkeypatch):
    """The stack's weight operands are made once, made again when a parameter other than the first matrix changes
    (layer 3's bias), and replace the entry they were kept in instead of adding one."""
    from deeppot.kernels import precision

    monkeypatch.setattr(fitting_gemm, "worth_it", lambda x: True)
    nets = stack_model().fitting.nets
    x = rows_of_d(20)
    made = []
    operands = fitting_stack._stack_operands
    monkeypatch.setattr(fitting_stack, "_stack_operands", lambda *a: made.append(1) or operands(*a))
    with torch.no_grad():
        before = fitting_stack.value_and_input_grad(nets, x, 1, "f16x3")[0]
        entries = len(precision._PARTS)
        fitting_stack.value_and_input_grad(nets, x, 1, "f16x3")
        assert len(made) == 1
        nets.layers[2].bias.add_(0.5)
        after = fitting_stack.value_and_input_grad(nets, x, 1, "f16x3")[0]
    assert len(made) == 2 and len(precision._PARTS) == entries
    assert_float32_close(after, reference(nets, x, 1)[0])
    assert not torch.allclose(after, before)


def test_only_nets_of_the_kernels_shape_apply(monkeypatch):
    monkeypatch.setattr(fitting_gemm, "worth_it", lambda x: True)
    x = torch.zeros(10, M1 * M2, device=DEVICE)
    assert fitting_stack.applies(stack_model().fitting.nets, x, "f16x3")
    assert not fitting_stack.applies(stack_model().fitting.nets, x, "tf32x3")
    assert not fitting_stack.applies(stack_model().fitting.nets, x[None], "f16x3")  # all nets at once
    assert not fitting_stack.applies(stack_model(neuron=(16, 32, 32)).fitting.nets, x, "f16x3")  # a doubling skip
    assert not fitting_stack.applies(stack_model(neuron=(16, 16)).fitting.nets, x, "f16x3")
    assert not fitting_stack.applies(stack_model(neuron=(300, 300, 300)).fitting.nets, x, "f16x3")  # over 256 wide
    monkeypatch.setattr(fitting_stack, "ENABLED", False)
    assert not fitting_stack.applies(stack_model().fitting.nets, x, "f16x3")
    monkeypatch.undo()
    assert fitting_stack.applies(stack_model().fitting.nets, x, "f16x3") == fitting_gemm.worth_it(x[None])


@pytest.mark.parametrize("ntypes", [1, 2, 3])
def test_stage_t_bar_straight_from_the_fitting_gradient(ntypes, monkeypatch):
    """With `descriptor.T_BAR_FROM_FITTING_GRAD` each type's dE/dT comes from its net's first-layer gradient parts
    (`descriptor_matrix.t_bar_from_fitting_grad`), dE/dD neither made nor read back: the stage's energies and dE/dT
    as without it."""
    model = stack_model(ntypes=ntypes)
    with torch.no_grad():
        model.fitting.nets.layers[-1].matrix.mul_(0.05)  # gz1's float16 parts serve (as in trained models)
    assert fitting_bounds(model.fitting.nets, 0.0)["the fitting gradients"] <= STACKED_LIMIT
    natoms = 90
    center_type = torch.randint(0, ntypes, (natoms,), generator=torch.Generator().manual_seed(2)).to(DEVICE)
    t_mat = (torch.randn(natoms, 4, M1, generator=torch.Generator().manual_seed(4)) * 0.5).to(DEVICE)
    type_rows = type_groups(center_type, ntypes) if ntypes > 1 else None  # one type: its net on every atom
    monkeypatch.setattr(fitting_gemm, "worth_it", lambda x: True)  # the fused products, as on a GPU
    with torch.no_grad():
        want = descriptor.energy_and_t_bar(model, t_mat, center_type, False, "f16x3", type_rows)
        monkeypatch.setattr(descriptor, "T_BAR_FROM_FITTING_GRAD", True)
        monkeypatch.setattr(fitting_stack, "input_grad", lambda *_: pytest.fail("dE/dD made"))
        monkeypatch.setattr(descriptor.descriptor_matrix, "t_bar_from_desc_grad", lambda *_: pytest.fail("read"))
        got = descriptor.energy_and_t_bar(model, t_mat, center_type, False, "f16x3", type_rows)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5 * b.abs().max().item())
    assert want[1].abs().max() > 1e-3


@pytest.mark.parametrize("ntypes", [1, 2])
def test_stage_energies_and_t_bar_through_the_stack(ntypes, monkeypatch):
    """`descriptor.energy_and_t_bar` with the stack (by type, or one type's atoms all at once) gives the six
    products' energies and dE/dT; sync_free (graphed) calls take it for one type, and the six products where
    every net runs on every atom of two."""
    model = stack_model(ntypes=ntypes)
    model.fitting.all_nets_at_once = True  # as on a GPU: one type's net through the stage's `fit`
    natoms = 90
    center_type = torch.randint(0, ntypes, (natoms,), generator=torch.Generator().manual_seed(2)).to(DEVICE)
    t_mat = (torch.randn(natoms, 4, M1, generator=torch.Generator().manual_seed(4)) * 0.5).to(DEVICE)
    type_rows = type_groups(center_type, ntypes) if ntypes > 1 else None
    monkeypatch.setattr(fitting_gemm, "worth_it", lambda x: True)  # the fused products, as on a GPU
    calls = []
    stack = fitting_stack.hidden_stack
    monkeypatch.setattr(fitting_stack, "hidden_stack", lambda *a, **kw: calls.append(1) or stack(*a, **kw))
    with torch.no_grad():
        got = descriptor.energy_and_t_bar(model, t_mat, center_type, False, "f16x3", type_rows)
        assert len(calls) == ntypes
        graphed = descriptor.energy_and_t_bar(model, t_mat, center_type, True, "f16x3", type_rows)
        assert len(calls) == (2 if ntypes == 1 else ntypes)
        monkeypatch.setattr(fitting_stack, "ENABLED", False)
        want = descriptor.energy_and_t_bar(model, t_mat, center_type, False, "f16x3", type_rows)
    assert len(calls) == (2 if ntypes == 1 else ntypes)
    for a, b, c in zip(got, graphed, want, strict=True):
        torch.testing.assert_close(a, c.to(a.dtype), rtol=1e-5, atol=1e-5 * c.abs().max().item())
        torch.testing.assert_close(b, c.to(b.dtype), rtol=1e-5, atol=1e-5 * c.abs().max().item())
