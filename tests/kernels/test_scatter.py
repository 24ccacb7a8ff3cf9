"""The fused force/virial scatter against its PyTorch twin (`deeppot.infer.evaluate.add_forces_and_virial`)."""

from __future__ import annotations

import pytest
import torch

from deeppot.infer.evaluate import add_forces_and_virial

kernels = pytest.importorskip("deeppot.kernels.scatter")
if kernels.embedding.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def chunk(n: int, nnei: int, ncentre: int, dtype: torch.dtype, seed: int = 0):
    """Random g and r_ij of n centres with padded slots (owner -1, g = 0), owners among ncentre centres."""
    gen = torch.Generator().manual_seed(seed)
    owner = torch.randint(0, ncentre, (n, nnei), generator=gen)
    owner[torch.rand(n, nnei, generator=gen) < 0.3] = -1
    g = torch.randn(n, nnei, 3, generator=gen, dtype=torch.float64).masked_fill((owner < 0)[..., None], 0.0)
    rij = torch.randn(n, nnei, 3, generator=gen, dtype=torch.float64)
    return g.to(dtype).to(DEVICE), rij.to(DEVICE), owner.to(DEVICE)


@pytest.mark.parametrize(("dtype", "nnei"), [(torch.float64, 7), (torch.float32, 138), (torch.float64, 200)])
def test_scatter_equals_its_pytorch_twin(dtype, nnei):
    ncentre, start, n = 40, 9, 25  # a chunk in the middle of the centres
    g, rij, owner = chunk(n, nnei, ncentre, dtype)
    outs = []
    for fused in (False, True):
        force = torch.randn(ncentre, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(DEVICE)
        virial = torch.randn(ncentre, 9, generator=torch.Generator().manual_seed(2), dtype=torch.float64).to(DEVICE)
        if fused:
            kernels.scatter_forces_and_virial(force, virial, g, rij, owner, start)
        else:
            add_forces_and_virial(force, virial, g, rij, owner, start, atomic=False)
        outs.append((force, virial))
    (f_ref, v_ref), (f, v) = outs
    torch.testing.assert_close(f, f_ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(v, v_ref, rtol=1e-12, atol=1e-12)
    assert (v_ref[start:start + n] != torch.randn(ncentre, 9, generator=torch.Generator().manual_seed(2),
                                                  dtype=torch.float64).to(DEVICE)[start:start + n]).all()


def frames(nf: int, nloc: int, nnei: int, dtype: torch.dtype, seed: int = 3):
    """Training-shaped g, r_ij (in dtype) and frame-local owners (nf, nloc, nnei): `chunk`'s rows, frame by frame."""
    g, rij, owner = chunk(nf * nloc, nnei, nloc, dtype, seed)
    shape = (nf, nloc, nnei)
    return g.reshape(*shape, 3), rij.to(dtype).reshape(*shape, 3), owner.reshape(shape)


@pytest.mark.parametrize(("dtype", "nf", "nnei"), [(torch.float64, 1, 7), (torch.float32, 3, 138),
                                                    (torch.float64, 2, 200)])
def test_training_forces_and_their_gradient_equal_the_reference(dtype, nf, nnei):
    from deeppot.model.energy_model import forces_and_virial

    g, rij, owner = frames(nf, 11, nnei, dtype)
    gen = torch.Generator().manual_seed(4)
    weights = (torch.randn(nf, 11, 3, generator=gen, dtype=torch.float64).to(DEVICE),
               torch.randn(nf, 9, generator=gen, dtype=torch.float64).to(DEVICE))
    results = []
    for fn in (forces_and_virial, kernels.training_forces_and_virial):
        g_in = g.clone().requires_grad_(True)
        out = fn(g_in, rij, owner)
        (grad,) = torch.autograd.grad((out["force"] * weights[0]).sum() + (out["virial"] * weights[1]).sum(), g_in)
        results.append((out["force"], out["virial"], grad))
    assert type(results[1][0].grad_fn).__name__ == "TrainingForcesBackward"
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-6, atol=1e-6)
    for got, want, name in zip(results[1], results[0], ("force", "virial", "dL/dg"), strict=True):
        assert got.dtype == want.dtype, name
        torch.testing.assert_close(got, want, **tol, msg=name)
    g_in = g.clone().requires_grad_(True)  # a loss without the force term
    (grad,) = torch.autograd.grad(kernels.TrainingForces.apply(g_in, rij, owner)[1].sum(), g_in)
    g_ref = g.clone().requires_grad_(True)
    (want,) = torch.autograd.grad(forces_and_virial(g_ref, rij, owner)["virial"].sum(), g_ref)
    torch.testing.assert_close(grad, want, **tol)


def test_training_gradients_through_the_force_kernel():
    """Force training with the force/virial kernel: outputs and every parameter's gradient as through autograd's
    reference."""
    from helpers import assert_same_training, make_model, pairs_of, training_gradients

    model = make_model(precision="float64").to(DEVICE)
    pairs = pairs_of(model, nframes=2).to(DEVICE)
    want = training_gradients(model, pairs, analytic=False)
    assert model.use_forces_kernel(DEVICE) and model.forces_fn is kernels.training_forces_and_virial
    got = training_gradients(model, pairs, analytic=True)
    assert_same_training(model, got, want, dict(rtol=1e-11, atol=1e-11), dict(rtol=1e-10, atol=1e-12))
