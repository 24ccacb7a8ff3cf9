"""dE/dr_ij from dE/dT through the Triton kernels (`deeppot.kernels.pair_grad`) against
`deeppot.model.analytic.pair_grad`, values and the backward in G, dG/ds and dE/dT (GPU, or Triton's interpreter)."""

from __future__ import annotations

import pytest
import torch
from helpers import assert_same_training, make_model, pairs_of, training_gradients, trimmed_pairs

from deeppot.model import analytic

kernels = pytest.importorskip("deeppot.kernels.pair_grad")
env_mat = pytest.importorskip("deeppot.kernels.env_mat")
pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")
if kernels.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
TOL = {torch.float64: dict(rtol=1e-12, atol=1e-12), torch.float32: dict(rtol=2e-5, atol=2e-6)}


def inputs(precision: str, nframes: int = 2, trimmed: bool = False):
    """A model's rows (the environment-matrix kernel's, as training has them) and random G, dG/ds, dE/dT."""
    model = make_model(precision=precision, sel=(7, 25)).to(DEVICE)
    pairs = pairs_of(model, nframes=nframes).to(DEVICE)
    pairs = trimmed_pairs(model, pairs) if trimmed else pairs
    d = model.descriptor
    rows = env_mat.env_rows(d, *pairs.tensors(), pairs.layout)
    nf, nloc, nnei = pairs.nlist_loc.shape
    m1 = d.nets.neuron[-1]
    gen = torch.Generator().manual_seed(5)
    g, dg = (torch.randn(nf, nloc, nnei, m1, generator=gen, dtype=d.dtype).to(DEVICE) for _ in range(2))
    t_bar = torch.randn(nf, nloc, 4, m1, generator=gen, dtype=d.dtype).to(DEVICE)
    return d, rows, [t.requires_grad_(True) for t in (g, dg, t_bar)]


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("trimmed", [False, True])
def test_pair_grad_and_its_backward_equal_the_reference(precision, trimmed):
    d, rows, leaves = inputs(precision, trimmed=trimmed)
    assert kernels._abc_packed(rows)
    got, want = kernels.pair_grad(d, rows, *leaves), analytic.pair_grad(d, rows, *leaves)
    assert type(got.grad_fn).__name__ == "PairGradBackward"
    torch.testing.assert_close(got, want, **TOL[d.dtype])
    assert (got == 0).any() and (got != 0).any()  # padding slots and neighbours both checked
    o = torch.randn(got.shape, generator=torch.Generator().manual_seed(9), dtype=got.dtype).to(DEVICE)
    for name, a, b in zip(("G", "dG/ds", "dE/dT"), torch.autograd.grad((got * o).sum(), leaves),
                          torch.autograd.grad((want * o).sum(), leaves), strict=True):
        torch.testing.assert_close(a, b, **TOL[d.dtype], msg=name)


def test_masked_or_differentiable_rows_take_the_reference():
    d, rows, leaves = inputs("float64")
    masked = rows._replace(keep=torch.ones_like(rows.rr[..., :1]))
    assert type(kernels.pair_grad(d, masked, *leaves).grad_fn).__name__ != "PairGradBackward"
    unpacked = rows._replace(a=rows.a.clone())
    assert type(kernels.pair_grad(d, unpacked, *leaves).grad_fn).__name__ != "PairGradBackward"


def test_float32_models_take_the_kernels():
    model = make_model(precision="float32").to(DEVICE)
    assert model.use_pair_grad_kernel(DEVICE) and model.pair_grad_fn is kernels.pair_grad


def test_training_gradients_through_the_kernels():
    """Force training with the environment-matrix and pair-gradient kernels: outputs and every parameter's gradient
    as through autograd's reference."""
    model = make_model(precision="float64").to(DEVICE)
    pairs = pairs_of(model, nframes=2).to(DEVICE)
    want = training_gradients(model, pairs, analytic=False)
    assert model.use_env_kernel(DEVICE) and not model.use_pair_grad_kernel(DEVICE)  # float64: measured slower
    model.pair_grad_fn = kernels.pair_grad
    got = training_gradients(model, pairs, analytic=True)
    assert_same_training(model, got, want, dict(rtol=1e-11, atol=1e-11), dict(rtol=1e-10, atol=1e-12))
