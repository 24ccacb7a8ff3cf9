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
