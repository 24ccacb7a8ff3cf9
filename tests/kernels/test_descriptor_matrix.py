"""D = T^T T< and dE/dT from dE/dD in Triton against their PyTorch twins in `deeppot.model.analytic` (their training
forms: tests/kernels/test_descriptor_training.py)."""

from __future__ import annotations

import pytest
import torch

from deeppot.model import analytic

matrix = pytest.importorskip("deeppot.kernels.descriptor_matrix")
if matrix.embedding.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def random(shape, dtype, seed):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed)).to(DEVICE)


@pytest.mark.parametrize(("dtype", "n", "m1", "m2", "fit_dtype"), [
    (torch.float64, 7, 16, 4, torch.float64),    # partial last program
    (torch.float32, 9, 100, 16, torch.float32),  # the water net, padded columns
    (torch.float64, 5, 12, 5, torch.float32),    # a float32 fitting net on a float64 descriptor
])
def test_descriptor_and_t_bar_equal_pytorch(dtype, n, m1, m2, fit_dtype):
    t_mat = random((n, 4, m1), dtype, 0)
    tol = dict(rtol=1e-12, atol=1e-12) if fit_dtype == torch.float64 else dict(rtol=2e-6, atol=2e-6)
    desc = matrix.descriptor_from_t(t_mat, m2, fit_dtype)
    torch.testing.assert_close(desc, analytic.descriptor_from_t(t_mat, m2).to(fit_dtype), **tol)
    d_desc = random((n, m1 * m2), fit_dtype, 1)
    expected = analytic.t_bar_from_desc_grad(d_desc.to(dtype).reshape(n, m1, m2), t_mat)
    torch.testing.assert_close(matrix.t_bar_from_desc_grad(d_desc, t_mat), expected,
                               **(tol if dtype == torch.float64 else dict(rtol=2e-5, atol=2e-5)))


def test_an_index_picks_the_rows_of_d_and_places_those_of_t_bar():
    """D of the atoms in `index`, in their order; dE/dT of those atoms into their rows of `out`, the rest left."""
    t_mat = random((11, 4, 8), torch.float64, 2)
    index = torch.tensor([9, 2, 5, 0, 10], device=DEVICE)
    desc = matrix.descriptor_from_t(t_mat, 4, torch.float64, index)
    torch.testing.assert_close(desc, analytic.descriptor_from_t(t_mat[index], 4), rtol=1e-14, atol=1e-14)
    d_desc = random((5, 32), torch.float64, 3)
    out = torch.full_like(t_mat, 7.0)
    matrix.t_bar_from_desc_grad(d_desc, t_mat, index, out)
    expected = torch.full_like(t_mat, 7.0)
    expected[index] = analytic.t_bar_from_desc_grad(d_desc.reshape(5, 8, 4), t_mat[index])
    torch.testing.assert_close(out, expected, rtol=1e-14, atol=1e-14)


def test_the_symmetric_product_is_u_t_plus_t_u():
    """With `other` = U: D[m, k] = sum_c U[c, m] T[c, k] + T[c, m] U[c, k], k < m2 (a mix-up of U and T fails)."""
    t_mat, u = random((6, 4, 12), torch.float64, 4), random((6, 4, 12), torch.float64, 5)
    want = (torch.einsum("ncm,nck->nmk", u, t_mat[..., :5]) + torch.einsum("ncm,nck->nmk", t_mat, u[..., :5]))
    got = matrix.descriptor_from_t(t_mat, 5, torch.float64, other=u)
    torch.testing.assert_close(got, want.reshape(6, -1), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(("n", "m1", "m2", "k", "indexed", "columns"), [
    (70, 100, 16, 720, True, 256),  # water's net: two programs, the last partial; 7 chunks, the last partial; K % BK
    (9, 24, 4, 48, False, 256),     # a chunk of 64 of M1's columns holds all 24: one chunk
    (33, 40, 8, 96, True, 256),
    (20, 40, 16, 96, False, 64),    # chunks of 4 of M1's columns: the first m2 = 16 in four of them
])
def test_t_bar_from_the_fitting_gradient_equals_t_bar_from_stored_d_desc(n, m1, m2, k, indexed, columns,
                                                                         monkeypatch):
    """dE/dT made from the fitting net's float16 gradient parts and weights (`t_bar_from_fitting_grad`) equals
    dE/dT from dE/dD = scale gz w stored (`fitting_stack.input_grad`'s product) and read back; the atoms of an index
    into their rows of out, the others untouched."""
    from deeppot.kernels import fitting_stack

    monkeypatch.setattr(matrix, "GZ_TILE", dict(matrix.GZ_TILE, COLUMNS=columns))
    assert matrix.fuses_fitting_grad(random((1, 4, m1), torch.float32, 0), m2)
    gz = random((n, k), torch.float32, 1).half()
    w = (random((k, m1 * m2), torch.float32, 2) / 4).half()
    natoms = n + 5 if indexed else n
    t_mat = random((natoms, 4, m1), torch.float32, 3)
    index = torch.randperm(natoms, generator=torch.Generator().manual_seed(4))[:n].to(DEVICE) if indexed else None
    d_desc = fitting_stack.input_grad(gz, w) if DEVICE.type == "cpu" else (gz.float() @ w.float()) * 2.0**-11
    expected = matrix.t_bar_from_desc_grad(d_desc, t_mat, index, torch.full_like(t_mat, 7.0))
    got = matrix.t_bar_from_fitting_grad(gz, w, 2.0**-11, t_mat, index, torch.full_like(t_mat, 7.0))
    scale = expected.abs().max()
    torch.testing.assert_close(got / scale, expected / scale, rtol=0, atol=2e-6)
    if indexed:
        assert (got[torch.isin(torch.arange(natoms, device=DEVICE), index, invert=True)] == 7.0).all()
