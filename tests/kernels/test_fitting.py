"""The fitting nets' hand-written value, input gradient and backward (`deeppot.kernels.fitting.FittingJet`) against
autograd through the reference `deeppot.model.analytic.fit_with_input_grad`, and inference's value and input
gradient with the fused float32 products (`deeppot.kernels.fitting_gemm`) against the reference (GPU, or Triton's
interpreter)."""

from __future__ import annotations

import functools

import pytest
import torch
from helpers import assert_same_training, make_model, pairs_of, training_gradients, with_type_rows

from deeppot.model import analytic
from deeppot.model.fitting import EnergyFitting

fitting = pytest.importorskip("deeppot.kernels.fitting")
fitting_gemm = pytest.importorskip("deeppot.kernels.fitting_gemm")
if fitting.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
TOL = {torch.float64: dict(rtol=1e-11, atol=1e-11), torch.float32: dict(rtol=2e-4, atol=2e-5)}

SHAPES = {  # (input width, neuron): skips of every kind, with and without timesteps
    "water-like": (24, [16, 16, 16]),  # no skip into the first layer, then same-width skips
    "doubling": (6, [8, 16, 16]),  # none, doubling, same
    "first-layer-skip": (8, [8, 16]),  # same width into the first layer, then doubling
    "wide-input": (1024, [16, 16]),  # long enough for float32 first-layer GEMMs to split (`analytic.k_parts`)
}


def nets_and_input(shape: str, ntypes: int, resnet_dt: bool, dtype: torch.dtype, atoms: int = 37):
    n_in, neuron = SHAPES[shape]
    fit = EnergyFitting(ntypes, n_in, neuron, resnet_dt=resnet_dt, dtype=dtype, seed=3).to(DEVICE)
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():  # biases and timesteps away from DeePMD's init, so each term of the backward counts
        for p in fit.parameters():
            p.add_(torch.randn(p.shape, generator=gen, dtype=dtype).to(DEVICE) * 0.3)
    x = torch.randn(1, atoms, n_in, generator=gen, dtype=dtype).to(DEVICE)
    x *= min(1.0, (24 / n_in) ** 0.5)  # wide inputs scaled so the first layer's tanh does not saturate
    return fit.nets, x


def value_grad_and_gradients(fit_fn, nets, x, weights):
    """(value, dvalue/dx) and the gradients of a fixed linear functional of both wrt x and every parameter."""
    x = x.clone().requires_grad_(True)
    value, g = fit_fn(nets, x, None)
    loss = (value * weights[0]).sum() + (g * weights[1]).sum()
    params = [p for p in nets.parameters()]
    return value, g, torch.autograd.grad(loss, [x, *params])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("resnet_dt", [True, False])
@pytest.mark.parametrize("ntypes", [1, 3])
def test_jet_and_its_backward_equal_autograd(dtype, shape, resnet_dt, ntypes):
    check_jet(dtype, shape, resnet_dt, ntypes, None)


@pytest.mark.parametrize("shape", ["water-like", "doubling", "wide-input"])
@pytest.mark.parametrize("resnet_dt", [True, False])
@pytest.mark.parametrize("atoms", [37, 150])  # one k step of the backward's dL/dW, or three with a ragged last one
def test_jet_with_the_training_products_equals_autograd(shape, resnet_dt, atoms):
    """The forward's products as f16x3 on small tiles, the weights split in the kernel, and the backward's as
    tf32x3 (`TrainingProducts`)."""
    check_jet(torch.float32, shape, resnet_dt, 3, fitting_gemm.TrainingProducts(), atoms)


def test_long_k_training_products_split_and_leave_their_counters_zero():
    """The wide input's first-layer products (the forward's x W, the backward's dg W) split along k, so that the
    training jet's test above checks the parts' sums (`fitting_gemm._split_sum`); after them every tile's counter
    is zero again, as the next launch needs."""
    check_jet(torch.float32, "wide-input", False, 3, fitting_gemm.TrainingProducts())
    programs = 3  # 37 rows and 16 columns: one tile a net
    parts, steps = fitting_gemm._splits(programs, SHAPES["wide-input"][0], fitting_gemm.SMALL_TILE, DEVICE,
                                        fitting_gemm.SPLIT_K["min_steps"])
    assert parts > 1 and parts * steps >= 1024 // fitting_gemm.SMALL_TILE["BK"]
    assert fitting_gemm._counters(DEVICE, programs).count_nonzero() == 0


@pytest.mark.parametrize("one_h", [True, False])
@pytest.mark.parametrize("timestep", [True, False])
def test_layer_grads_equal_float64_products_and_sums(one_h, timestep):
    """`fitting_gemm.layer_grads` against float64: dg^T gz + h^T dz and zt's sums over rows, on ragged tiles, h one
    net for all or one a net at a row stride that is not its width."""
    gen = torch.Generator().manual_seed(5)
    rand = functools.partial(torch.randn, generator=gen, dtype=torch.float64)
    nets, rows, n, m = 3, 150, 70, 40
    dg, gz, zt = rand(nets, rows, n), rand(nets, rows, m), rand(2 if timestep else 1, nets, rows, m)
    h = rand(1 if one_h else nets, rows, n + 5)[..., :n]
    dw, sums = fitting_gemm.layer_grads(*(t.float().to(DEVICE) for t in (dg, gz, h, zt)))
    want = dg.transpose(1, 2) @ gz + h.expand(nets, -1, -1).transpose(1, 2) @ zt[0]
    assert dw.shape == (nets, n, m) and dw.is_contiguous() and sums.shape == (zt.shape[0], nets, 1, m)
    torch.testing.assert_close(dw.double().cpu(), want, rtol=1e-5, atol=2e-5 * want.abs().max().item())
    torch.testing.assert_close(sums.double().cpu(), zt.sum(2, keepdim=True), rtol=1e-5, atol=1e-4)


def check_jet(dtype, shape, resnet_dt, ntypes, products, atoms=37):
    nets, x = nets_and_input(shape, ntypes, resnet_dt, dtype, atoms)
    gen = torch.Generator().manual_seed(11)
    weights = [torch.randn(ntypes, x.shape[1], k, generator=gen, dtype=dtype).to(DEVICE) for k in (1, x.shape[-1])]
    want = value_grad_and_gradients(analytic.fit_with_input_grad, nets, x, weights)
    got = value_grad_and_gradients(functools.partial(fitting.fit_all, products=products), nets, x, weights)
    names = ["x"] + [name for name, _ in nets.named_parameters()]

    def close(a, b, msg):
        tol = dict(TOL[dtype])
        if shape == "wide-input":  # float32 sums of 1024 terms differ by ~1e-5 of the largest between two orders
            tol["atol"] *= max(1.0, b.abs().max().item())
        torch.testing.assert_close(a, b, **tol, msg=msg)

    close(got[0], want[0], "value")
    close(got[1], want[1], "input gradient")
    assert len(got[2]) == len(want[2])
    for name, a, b in zip(names, got[2], want[2], strict=True):
        assert a.shape == b.shape and a.is_contiguous(), name  # the parameter's layout: no copy on accumulation
        close(a, b, f"d loss / d {name}")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("resnet_dt", [True, False])
def test_inference_value_and_input_grad_equal_the_reference(dtype, shape, resnet_dt):
    nets, x = nets_and_input(shape, 3, resnet_dt, dtype)
    tol = dict(TOL[dtype])
    if shape == "wide-input":
        tol["atol"] *= 10.0
    with torch.no_grad():
        for k in (None, 0, 2):  # every net on every atom (CUDA graphs), or one type's net on its own rows
            rows = x if k is None else x[0, k:]
            got = fitting_gemm.value_and_input_grad(nets, rows, k)
            want = analytic.fit_with_input_grad(nets, rows, k)
            assert [g.shape for g in got] == [w.shape for w in want]
            for a, b, what in zip(got, want, ("value", "input gradient"), strict=True):
                torch.testing.assert_close(a, b, **tol, msg=f"{what} of net {k}")


def test_the_jet_takes_the_parameters_themselves():
    """A view between a parameter and `FittingJet` would add a backward node (and a copy) a parameter a step."""
    nets, _ = nets_and_input("water-like", 2, True, torch.float64)
    _, params = fitting._flat_params(nets)
    assert all(any(p is q for q in nets.parameters()) for p in params)
    _, one = fitting._flat_params(nets, 1)
    assert [p.shape[0] for p in one] == [1] * len(params)


def test_the_jet_is_used_only_where_it_applies():
    nets, x = nets_and_input("water-like", 2, True, torch.float64)
    assert fitting.supports(nets)
    with torch.no_grad():  # validation: no graph, the same numbers
        plain = fitting.fit_all(nets, x, None)
    assert plain[0].grad_fn is None
    value, g = fitting.fit_all(nets, x, None)
    assert type(value.grad_fn).__name__ == "FittingJetBackward"
    torch.testing.assert_close((value, g), plain, rtol=0, atol=0)
    one_net, _ = fitting.fit_all(nets, x, 0)  # one net: the reference
    assert type(one_net.grad_fn).__name__ != "FittingJetBackward"
    gelu = EnergyFitting(2, 24, [16, 16], activation_function="gelu", dtype=torch.float64)
    assert not fitting.supports(gelu.nets)


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("type_rows", [False, True])
def test_training_gradients_through_the_jet(precision, type_rows):
    """The whole force-training pass with the model's fitting nets through the kernels (`use_fitting_kernel`),
    every net on every atom or each on its own type's atoms (`TypeRows`, one x a net): energies, forces, virials
    and every parameter's gradient as through autograd's reference."""
    model = make_model(precision=precision).to(DEVICE)
    model.fitting.all_nets_at_once = True  # the GPU branch, here on any device
    pairs = pairs_of(model, nframes=2)
    pairs = (with_type_rows(pairs) if type_rows else pairs).to(DEVICE)  # PairData.to carries the rows
    want = training_gradients(model, pairs, analytic=False)
    hopper = DEVICE.type == "cuda" and torch.cuda.get_device_capability() >= (9, 0)
    assert model.use_fitting_kernel(DEVICE) == ("f16x3" if hopper and precision == "float32" else "cuBLAS")
    got = training_gradients(model, pairs, analytic=True)
    assert_same_training(model, got, want, TOL[model.fitting.dtype], TOL[model.fitting.dtype])


def fused_value_and_grad(nets, x: torch.Tensor, k: int | None, products: str = "tf32x3"):
    """`fitting_gemm.value_and_input_grad`'s fused branch, whatever `worth_it` says of x."""
    hidden, w_out, b_out = fitting._unpack(*fitting._flat_params(nets, k))
    value, g0, _, _ = fitting._forward(x, hidden, w_out, b_out, fitting_gemm.FusedProducts(products))
    return value, g0


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("resnet_dt", [True, False])
@pytest.mark.parametrize("atoms", [37, 300])  # one tile of rows, or several with a ragged last one
@pytest.mark.parametrize("products", ["tf32x3", "f16x3"])
def test_fused_products_equal_the_reference(shape, resnet_dt, atoms, products):
    dtype = torch.float32
    nets, x = nets_and_input(shape, 3, resnet_dt, dtype, atoms=atoms)
    with torch.no_grad():
        for k in (None, 1):  # every net on one shared x (stride 0 over nets), or one net on its own rows
            rows = x if k is None else x[:, k:]
            got = fused_value_and_grad(nets, rows, k, products)
            want = analytic.fit_with_input_grad(nets, rows if k is None else rows[0], k)
            if k is not None:
                want = tuple(w[None] for w in want)
            for a, b, what in zip(got, want, ("value", "input gradient"), strict=True):
                assert a.shape == b.shape
                tol = dict(TOL[dtype])
                tol["atol"] *= max(1.0, b.abs().max().item())  # 1024-term float32 sums in two orders (wide-input)
                torch.testing.assert_close(a, b, **tol, msg=f"{what} of net {k}")


@pytest.mark.parametrize("shape", ["water-like", "wide-input", "first-layer-skip"])
def test_persistent_products_equal_the_tiled_ones(shape, monkeypatch):
    """f16x3 products on W's parts by the persistent TMA kernel (`PERSISTENT`: every epilogue, one x for all nets
    or a net's own rows, a ragged last row block) give `_gemm_kernel`'s values and input gradients."""
    nets, x = nets_and_input(shape, 3, False, torch.float32, atoms=300)
    launches = []
    persistent, kept = fitting_gemm._launch_persistent, fitting_gemm.PERSISTENT
    monkeypatch.setattr(fitting_gemm, "_launch_persistent", lambda *a: launches.append(a[-1]) or persistent(*a))
    with torch.no_grad():
        for k in (None, 1):
            rows = x if k is None else x[:, k:]
            got = fused_value_and_grad(nets, rows, k, "f16x3")
            assert {tail["EPILOGUE"] for tail in launches} >= {fitting_gemm.LAYER, fitting_gemm.GRAD}
            launches.clear()
            monkeypatch.setattr(fitting_gemm, "PERSISTENT", None)
            want = fused_value_and_grad(nets, rows, k, "f16x3")
            assert not launches
            monkeypatch.setattr(fitting_gemm, "PERSISTENT", kept)
            for a, b in zip(got, want, strict=True):
                torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6 * b.abs().max().item())


def test_the_fused_products_serve_only_many_float32_rows():
    x = torch.zeros(1, fitting_gemm.MIN_ROWS, 8, device=DEVICE)
    assert fitting_gemm.worth_it(x) == (DEVICE.type == "cuda" and torch.cuda.get_device_capability() >= (9, 0))
    assert not fitting_gemm.worth_it(x[:, :-1])
    assert not fitting_gemm.worth_it(x.double())
    before = torch.backends.cuda.matmul.allow_tf32
    try:  # the tf32 opt-in keeps cuBLAS's one-pass TF32 products
        torch.backends.cuda.matmul.allow_tf32 = True
        assert not fitting_gemm.worth_it(x)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
