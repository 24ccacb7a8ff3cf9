"""The fused environment-matrix kernel against `deeppot.model.analytic.env_rows` (GPU, or Triton's interpreter)."""

from __future__ import annotations

import pytest
import torch
from helpers import make_model, pairs_of, trimmed_pairs

from deeppot.model import analytic

env_mat = pytest.importorskip("deeppot.kernels.env_mat")
pytestmark = pytest.mark.filterwarnings("ignore::deeppot.nlist.NeighborOverflowWarning")
if env_mat.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
TOL = {torch.float64: dict(rtol=1e-13, atol=1e-13), torch.float32: dict(rtol=2e-6, atol=2e-6)}


def model_and_pairs(precision: str, sel=(5, 40), trimmed=False, **kwargs):
    model = make_model(precision=precision, sel=list(sel), **kwargs).to(DEVICE)
    d = model.descriptor
    with torch.no_grad():  # statistics that differ per slot and column: each slot must read its own
        d.davg.copy_(torch.rand(d.davg.shape, dtype=d.davg.dtype) * 0.3)
        d.dstd.copy_(0.5 + torch.rand(d.dstd.shape, dtype=d.dstd.dtype))
    pairs = pairs_of(model, nframes=3).to(DEVICE)
    return model, trimmed_pairs(model, pairs) if trimmed else pairs


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("trimmed", [False, True])
def test_rows_equal_the_reference(precision, trimmed):
    # radii that a float32 cannot hold: they must reach a float64 kernel in float64
    model, pairs = model_and_pairs(precision, trimmed=trimmed, rcut=4.1, rcut_smth=1.3)
    d = model.descriptor
    got = env_mat.env_rows(d, *pairs.tensors(), pairs.layout)
    want = analytic.env_rows(d, *pairs.tensors(), pairs.layout)
    assert (pairs.nlist_loc < 0).any() and (pairs.nlist_loc >= 0).any()  # padding and neighbours both checked
    assert got.keep is None and want.keep is None
    for name in ("rr", "x", "a", "b", "c", "scale"):
        assert getattr(got, name).dtype == d.dtype, name
        torch.testing.assert_close(getattr(got, name), getattr(want, name), **TOL[d.dtype], msg=name)


def test_forces_through_the_kernel_rows():
    """The whole analytic force path with the kernel's rows: energies and forces as with the reference's."""
    model, pairs = model_and_pairs("float64", trimmed=True)
    ref = model.forward_pairs(pairs)
    model.env_fn = env_mat.env_rows
    got = model.forward_pairs(pairs)
    for key in ("energy", "force", "virial"):
        torch.testing.assert_close(got[key], ref[key], rtol=1e-12, atol=1e-12)


def test_excluded_types_and_position_gradients_take_the_reference():
    model, pairs = model_and_pairs("float64", exclude_types=[[0, 1]])
    d = model.descriptor
    assert env_mat.env_rows(d, *pairs.tensors()).keep is not None
    model, pairs = model_and_pairs("float64")
    rij = pairs.rij.clone().requires_grad_(True)
    rows = env_mat.env_rows(model.descriptor, rij, *pairs.tensors()[1:])
    assert rows.rr.requires_grad
