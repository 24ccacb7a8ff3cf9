"""FlatAdam (one Triton kernel over flat buffers, deeppot.kernels.adam) against torch.optim's fused Adam/AdamW, its
reference: the same parameters, moments and step counts after several steps, with a parameter that misses its
gradient on some steps; state dicts that load both ways. The same to 16 units of the last place of 1 (parameters
of order 1; a wrong term would show at the size of an update, ~1e-2 here), not bit for bit: on an H100 a few
elements round differently from torch's CUDA kernel (run 92), and Triton's interpreter computes in NumPy."""

from __future__ import annotations

import pytest
import torch

from deeppot.kernels.embedding import triton

pytestmark = pytest.mark.skipif(triton is None, reason="Triton is not installed")

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _params(seed: int, dtype: torch.dtype) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    shapes = ((5, 3), (7,), (40, 30), (1200,))  # the last two span several of the kernel's blocks
    return [torch.nn.Parameter(torch.randn(s, generator=g, dtype=dtype).to(DEVICE)) for s in shapes]


def _run(opt, params, steps: range, lr_tensor: torch.Tensor | None = None, skip: int | None = None) -> None:
    """Steps of a quadratic loss whose coefficients depend on the step number alone; parameter `skip` gets no
    gradient on odd steps."""
    for step in steps:
        g = torch.Generator().manual_seed(step)
        if lr_tensor is not None:
            lr_tensor.fill_(1e-2 * 0.9**step)
        used = [p for k, p in enumerate(params) if not (k == skip and step % 2)]
        loss = sum((p * torch.randn(p.shape, generator=g, dtype=p.dtype).to(DEVICE)).sum() ** 2 for p in used)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def _assert_same(ours: list[torch.Tensor], theirs: list[torch.Tensor]) -> None:
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=16 * torch.finfo(a.dtype).eps)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(("decoupled", "weight_decay", "tensor_lr"), [(False, 0.0, False), (False, 0.01, True),
                                                                      (True, 0.01, False)])
def test_same_updates_as_torch_fused_adam(dtype, decoupled, weight_decay, tensor_lr):
    from deeppot.train.adam import FlatAdam

    ours, theirs = _params(0, dtype), _params(0, dtype)
    lr_ours = torch.tensor([1e-2], device=DEVICE) if tensor_lr else 1e-2
    lr_theirs = torch.tensor(1e-2, device=DEVICE) if tensor_lr else 1e-2
    opt = FlatAdam(ours, lr=lr_ours, betas=(0.9, 0.99), weight_decay=weight_decay, decoupled=decoupled)
    assert all(torch.equal(a, b) for a, b in zip(ours, _params(0, dtype), strict=True))  # moved, not changed
    _run(opt, ours, range(6), lr_tensor=lr_ours if tensor_lr else None, skip=1)
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    _run(cls(theirs, lr=lr_theirs, betas=(0.9, 0.99), weight_decay=weight_decay, fused=True), theirs, range(6),
         lr_tensor=lr_theirs if tensor_lr else None, skip=1)
    _assert_same(ours, theirs)
    assert not torch.equal(ours[0], _params(0, dtype)[0])
    assert [float(opt.state[p]["step"]) for p in ours] == [6.0, 3.0, 6.0, 6.0]  # the skipped one stepped 3 times


def test_state_dicts_load_both_ways():
    """Torch's three steps, its state loaded into ours, three steps, ours loaded back into torch's, two more:
    the same as eight steps of one torch optimizer."""
    from deeppot.train.adam import FlatAdam

    straight, resumed = _params(2, torch.float64), _params(2, torch.float64)
    _run(torch.optim.Adam(straight, lr=1e-2, fused=True), straight, range(8))
    theirs = torch.optim.Adam(resumed, lr=1e-2, fused=True)
    _run(theirs, resumed, range(3))
    ours = FlatAdam(resumed, lr=1e-2)
    ours.load_state_dict(theirs.state_dict())
    _run(ours, resumed, range(3, 6))
    back = torch.optim.Adam(resumed, lr=1e-2, fused=True)
    back.load_state_dict(ours.state_dict())
    _run(back, resumed, range(6, 8))
    _assert_same(resumed, straight)
    assert all(float(s["step"]) == 8.0 for s in back.state.values())
