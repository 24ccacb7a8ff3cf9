"""Training's T with D and dE/dT through Triton (`deeppot.kernels.descriptor_training`): values and gradients
against autograd through their PyTorch twins in `deeppot.model.analytic` (GPU, or Triton's interpreter)."""

from __future__ import annotations

import pytest
import torch
from helpers import assert_same_training, make_model, pairs_of, training_gradients, trimmed_pairs

from deeppot.model import analytic
from deeppot.model.slots import SlotLayout

kernels = pytest.importorskip("deeppot.kernels.descriptor_training")
if kernels.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def random(shape, dtype, seed):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed)).to(DEVICE)


def tolerance(dtype):
    return dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=2e-5, atol=2e-5)


def both_ways(fns, leaves, weights, args):
    """Outputs of fns(*args) and the gradients of their weighted sum with respect to the leaves."""
    outs = fns(*args)
    loss = sum((o * w).sum() for o, w in zip(outs, weights, strict=True))
    return (*outs, *torch.autograd.grad(loss, leaves))


@pytest.mark.parametrize(("dtype", "m1", "m2", "nnei", "weighted"), [
    (torch.float64, 12, 5, 37, False),   # chunks of 32 slots, a ragged last one; padded columns
    (torch.float32, 100, 16, 45, True),  # the water net's widths, a trimmed list's weights
    (torch.float64, 16, 4, 8, True),     # less than a chunk
])
@pytest.mark.parametrize("form", ["trainable_t_and_descriptor", "t_then_descriptor"])
def test_t_and_descriptor_and_its_backward_equal_autograd(dtype, m1, m2, nnei, weighted, form):
    """Random weightings of T and D: their gradients with respect to G through the kernels (T and D in one; or T by
    PyTorch, D by its kernel) against autograd."""
    rr = random((2, 3, nnei, 4), dtype, 0)
    g = random((2, 3, nnei, m1), dtype, 1).requires_grad_(True)
    weight = torch.randint(1, 4, (nnei, 1), generator=torch.Generator().manual_seed(2)).to(DEVICE)
    layout = SlotLayout((nnei,), torch.arange(nnei, device=DEVICE), weight) if weighted else None
    weights = random((2, 3, 4, m1), dtype, 3), random((2, 3, m1 * m2), dtype, 4)
    got = both_ways(getattr(kernels, form), [g], weights, (rr, layout, g, 29, m2))
    want = both_ways(analytic.t_and_descriptor, [g], weights, (rr, layout, g, 29, m2))
    for name, a, b in zip(("T", "D", "dL/dG"), got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        torch.testing.assert_close(a, b, **tolerance(dtype), msg=name)


def test_only_d_or_only_t_taking_a_gradient():
    """The backward takes a missing gradient of T or D as zero."""
    rr, g = random((1, 4, 9, 4), torch.float64, 5), random((1, 4, 9, 8), torch.float64, 6).requires_grad_(True)
    for pick in (0, 1):
        got = torch.autograd.grad(kernels.trainable_t_and_descriptor(rr, None, g, 9, 4)[pick].sum(), g)[0]
        want = torch.autograd.grad(analytic.t_and_descriptor(rr, None, g, 9, 4)[pick].sum(), g)[0]
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_rows_that_take_a_gradient_keep_the_reference():
    rr = random((1, 2, 5, 4), torch.float64, 7).requires_grad_(True)
    t_mat, _ = kernels.trainable_t_and_descriptor(rr, None, random((1, 2, 5, 8), torch.float64, 8), 5, 4)
    assert "TAndD" not in type(t_mat.grad_fn).__name__
    assert torch.autograd.grad(t_mat.sum(), rr)[0].abs().sum() > 0


@pytest.mark.parametrize(("dtype", "fit_dtype"), [(torch.float64, torch.float64), (torch.float32, torch.float32),
                                                  (torch.float64, torch.float32)])
def test_t_bar_and_its_gradients_equal_autograd(dtype, fit_dtype):
    """Leading axes (frames, atoms) as training has them; gradients with respect to T and dE/dD."""
    t_mat = random((2, 5, 4, 12), dtype, 6).requires_grad_(True)
    d_desc = random((2, 5, 12, 5), fit_dtype, 7).requires_grad_(True)
    weights = [random((2, 5, 4, 12), dtype, 9)]
    got = both_ways(lambda *a: [kernels.trainable_t_bar(*a)], [t_mat, d_desc], weights, (d_desc.to(dtype), t_mat))
    want = both_ways(lambda *a: [analytic.t_bar_from_desc_grad(*a)], [t_mat, d_desc], weights,
                     (d_desc.to(dtype), t_mat))
    for name, a, b in zip(("dE/dT", "dL/dT", "dL/d(dE/dD)"), got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        torch.testing.assert_close(a, b, **tolerance(fit_dtype), msg=name)


@pytest.mark.parametrize("trimmed", [False, True])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_training_gradients_through_the_descriptor_kernels(trimmed, precision):
    """Force training with the kernels (float32: T and D in one kernel; float64: D's alone): outputs and every
    parameter's gradient as through autograd."""
    model = make_model(precision=precision, sel=(7, 25)).to(DEVICE)
    pairs = pairs_of(model, nframes=2).to(DEVICE)
    pairs = trimmed_pairs(model, pairs) if trimmed else pairs
    want = training_gradients(model, pairs, analytic=False)
    assert model.use_descriptor_kernel(DEVICE) and model.t_bar_fn is kernels.trainable_t_bar
    form = kernels.trainable_t_and_descriptor if precision == "float32" else kernels.t_then_descriptor
    assert model.descriptor_fn is form
    got = training_gradients(model, pairs, analytic=True)
    tol = dict(rtol=1e-11, atol=1e-11) if precision == "float64" else dict(rtol=1e-4, atol=1e-5)
    assert_same_training(model, got, want, tol, dict(tol, rtol=tol["rtol"] * 10))
