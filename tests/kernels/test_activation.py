"""The kernels' tanh (`deeppot.kernels.activation`) against torch.tanh: float64 to 2 eps relative (run by the
interpreter on a CPU too), float32 to float32's level (on a GPU: the PTX approximations)."""

import pytest
import torch

from deeppot.kernels.embedding import triton, triton_available

pytestmark = pytest.mark.skipif(triton is None, reason="Triton is not installed")
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

if triton is not None:
    import triton.language as tl

    from deeppot.kernels.activation import _tanh

    @triton.jit
    def _tanh_kernel(z_ptr, out_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + i, _tanh(tl.load(z_ptr + i, mask=i < n)), mask=i < n)


def kernel_tanh(z: torch.Tensor) -> torch.Tensor:
    out = torch.full_like(z, 7.0)  # poisoned: every element must be written
    _tanh_kernel[(triton.cdiv(z.numel(), 256),)](z, out, z.numel(), BLOCK=256)
    return out


def arguments(dtype: torch.dtype) -> torch.Tensor:
    """Both signs over the range the nets see and past it: tiny, around 1, large, and where tanh rounds to 1."""
    g = torch.Generator().manual_seed(7)
    mag = torch.cat([10 ** torch.empty(3000, dtype=torch.float64).uniform_(-3, 1.6, generator=g),
                     torch.tensor([0.0, 1e-300, 0.5, 19.0, 20.0, 21.0, 40.0, 700.0, 1e300], dtype=torch.float64)])
    return torch.cat([mag, -mag]).to(dtype).to(DEVICE)


@pytest.mark.skipif(not triton_available(DEVICE), reason="no CUDA and no Triton interpreter")
def test_float64_tanh_within_two_eps_relative_everywhere():
    z = torch.cat([arguments(torch.float64), torch.linspace(-1, 1, 2001, dtype=torch.float64, device=DEVICE)])
    got, want = kernel_tanh(z), torch.tanh(z)
    eps = torch.finfo(torch.float64).eps
    assert ((got - want).abs() <= 2 * eps * want.abs()).all(), ((got - want).abs() / want.abs()).max() / eps
    assert got[z.abs() >= 20].abs().eq(1.0).all()


@pytest.mark.skipif(not triton_available(DEVICE), reason="no CUDA and no Triton interpreter")
def test_float32_tanh_at_float32_level():
    """Absolute error within 3 float32 eps (on a GPU 2^x and 1/x are the special-function unit's, each within 2 ulp,
    and 1 - 2 / (1 + e^2z) cancels near 0); relative to eps where the cancellation is mild."""
    z = arguments(torch.float32)
    got, want = kernel_tanh(z).double(), torch.tanh(z.double())
    eps = torch.finfo(torch.float32).eps
    assert (got - want).abs().max() < 3 * eps
    big = z.abs() >= 0.5
    assert ((got - want).abs() / want.abs())[big].max() < 4 * eps


@pytest.mark.skipif(not triton_available(DEVICE), reason="no CUDA and no Triton interpreter")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_tanh_keeps_nan_and_saturates_infinities(dtype):
    got = kernel_tanh(torch.tensor([float("nan"), float("inf"), -float("inf")], dtype=dtype, device=DEVICE))
    assert got[0].isnan() and got[1] == 1.0 and got[2] == -1.0
