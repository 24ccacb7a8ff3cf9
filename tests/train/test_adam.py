"""FusedAdam (deeppot.train.adam) against torch.optim's fused Adam/AdamW: the same updates bit for bit, and
state dicts that load both ways. PyTorch's fused kernels run on the CPU too, so this runs in CI."""

from __future__ import annotations

import pytest
import torch

from deeppot.train import adam
from deeppot.train.adam import FusedAdam


def _params(seed: int) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(shape, generator=g, dtype=dtype))
            for shape, dtype in (((5, 3), torch.float64), ((7,), torch.float64), ((4, 4), torch.float32))]


def _run(opt, params, steps: range, lr_tensor: torch.Tensor | None = None) -> None:
    """Steps of a quadratic loss whose random coefficients depend on the step number alone."""
    for step in steps:
        g = torch.Generator().manual_seed(step)
        if lr_tensor is not None:
            lr_tensor.fill_(1e-2 * 0.9**step)
        loss = sum((p * torch.randn(p.shape, generator=g, dtype=p.dtype)).sum() ** 2 for p in params)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


@pytest.mark.parametrize(("decoupled", "weight_decay", "tensor_lr"), [(False, 0.0, False), (False, 0.01, True),
                                                                      (True, 0.01, False)])
@pytest.mark.parametrize("piece", [adam.PIECE, 4])
def test_same_updates_as_torch_fused_adam(decoupled, weight_decay, tensor_lr, piece, monkeypatch):
    """piece 4: every parameter above 4 elements is updated as views of 4 (the last shorter), as large ones are."""
    monkeypatch.setattr(adam, "PIECE", piece)
    ours, theirs = _params(0), _params(0)
    lr_ours = torch.tensor(1e-2) if tensor_lr else 1e-2
    lr_theirs = torch.tensor(1e-2) if tensor_lr else 1e-2
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    _run(FusedAdam(ours, lr=lr_ours, betas=(0.9, 0.99), weight_decay=weight_decay, decoupled=decoupled), ours,
         range(6), lr_tensor=lr_ours if tensor_lr else None)
    _run(cls(theirs, lr=lr_theirs, betas=(0.9, 0.99), weight_decay=weight_decay, fused=True), theirs, range(6),
         lr_tensor=lr_theirs if tensor_lr else None)
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(ours[0], _params(0)[0])


def test_state_dicts_load_both_ways():
    """Three steps of torch's, its state loaded into ours, three more: the same as six steps of torch's; and our
    state loads back into torch's."""
    straight, resumed = _params(2), _params(2)
    _run(torch.optim.Adam(straight, lr=1e-2, fused=True), straight, range(6))
    theirs = torch.optim.Adam(resumed, lr=1e-2, fused=True)
    _run(theirs, resumed, range(3))
    ours = FusedAdam(resumed, lr=1e-2)
    ours.load_state_dict(theirs.state_dict())
    _run(ours, resumed, range(3, 6))
    for a, b in zip(resumed, straight, strict=True):
        assert torch.equal(a, b)
    back = torch.optim.Adam(resumed, lr=1e-2, fused=True)
    back.load_state_dict(ours.state_dict())
    for p in resumed:
        for key in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(back.state[p][key], ours.state[p][key])


def test_a_mismatched_state_is_refused():
    ours = FusedAdam(_params(0), lr=1e-3)
    other = torch.optim.Adam(_params(0)[:2], lr=1e-3)
    with pytest.raises(ValueError, match="holds 2 parameters in 1 group"):
        ours.load_state_dict(other.state_dict())


def test_building_and_stepping_imports_no_dynamo():
    """What the class is for: a fresh interpreter builds and steps it without importing torch._dynamo."""
    import subprocess
    import sys

    code = ("import sys, torch\nfrom deeppot.train.adam import FusedAdam\n"
            "p = torch.nn.Parameter(torch.ones(3)); opt = FusedAdam([p], lr=0.1)\n"
            "p.sum().backward(); opt.step(); opt.zero_grad()\n"
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
