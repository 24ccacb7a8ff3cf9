"""The fused `ener` loss (`deeppot.kernels.loss`) against `deeppot.train.loss.EnergyLoss`'s reference (GPU, or
Triton's interpreter on a CPU): loss, metrics (NaN where a label is absent) and the predictions' gradients."""

from __future__ import annotations

import math

import pytest
import torch

from deeppot.train.loss import EnergyLoss

fused = pytest.importorskip("deeppot.kernels.loss")
if fused.triton is None:
    pytest.skip("triton is not installed", allow_module_level=True)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SECTIONS = {
    "e f": dict(start_pref_e=0.02, limit_pref_e=1.0, start_pref_f=1000.0, limit_pref_f=1.0),
    "e f v": dict(start_pref_e=0.02, limit_pref_e=1.0, start_pref_f=1000.0, limit_pref_f=1.0,
                  start_pref_v=0.5, limit_pref_v=2.0),
    "f v intensive": dict(start_pref_f=10.0, limit_pref_f=1.0, start_pref_v=0.5, limit_pref_v=2.0,
                          intensive_ener_virial=True),
    "e": dict(start_pref_e=1.0, limit_pref_e=3.0),
}


def batch(nf: int, nloc: int, found: dict[str, float], seed: int = 0):
    """Predictions (requiring grad) and labels as a training batch holds them: views of one packed row a frame."""
    gen = torch.Generator().manual_seed(seed)
    pred = {"energy": torch.randn(nf, generator=gen, dtype=torch.float64),
            "force": torch.randn(nf, nloc, 3, generator=gen, dtype=torch.float64),
            "virial": torch.randn(nf, 9, generator=gen, dtype=torch.float64)}
    pred = {k: v.to(DEVICE).requires_grad_(True) for k, v in pred.items()}
    width = 1 + 3 * nloc + 9 + 5 + 7  # a row with other fields around the labels
    rows = torch.randn(nf, width, generator=gen, dtype=torch.float64).to(DEVICE)
    label = {"energy": rows[:, 0], "force": rows[:, 1:1 + 3 * nloc].view(nf, nloc, 3),
             "virial": rows[:, 1 + 3 * nloc:10 + 3 * nloc]}
    flags = rows[0, 10 + 3 * nloc:15 + 3 * nloc]
    for i, key in enumerate(("energy", "force", "virial")):
        flags[i] = found.get(key, 1.0)
    return pred, label, {key: flags[i] for i, key in enumerate(("energy", "force", "virial"))}


def loss_and_grads(loss, pred, label, find, natoms, lr):
    value, metrics = loss(pred, label, find, natoms, lr)
    grads = torch.autograd.grad(value * 1.7, [pred[k] for k in ("energy", "force", "virial")], allow_unused=True)
    return value, metrics, grads


@pytest.mark.parametrize("section", list(SECTIONS))
@pytest.mark.parametrize("nf, nloc", [(1, 5), (3, 300)])  # 2,700 forces: a masked fourth block
@pytest.mark.parametrize("absent", [None, "virial", "energy"])
def test_fused_loss_equals_the_reference(section, nf, nloc, absent):
    found = {} if absent is None else {absent: 0.0}
    pred, label, find = batch(nf, nloc, found)
    lr = torch.tensor(3.7e-4, dtype=torch.float64, device=DEVICE)
    reference = EnergyLoss(SECTIONS[section], start_lr=1e-3)
    kernel = EnergyLoss(SECTIONS[section], start_lr=1e-3)
    assert kernel.use_kernel(DEVICE) and kernel.kernel.applies(kernel, label, find, lr)
    want = loss_and_grads(reference, pred, label, find, nloc, lr)
    got = loss_and_grads(kernel, pred, label, find, nloc, lr)
    torch.testing.assert_close(got[0], want[0], rtol=1e-13, atol=0)
    assert sorted(got[1]) == sorted(want[1]) == kernel.metric_keys
    for key, value in want[1].items():
        if math.isnan(value):
            assert math.isnan(got[1][key]), key
        else:
            torch.testing.assert_close(got[1][key], value, rtol=1e-13, atol=0, msg=key)
    for a, b in zip(got[2], want[2], strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-13, atol=1e-300)


def test_other_terms_and_host_rates_take_the_reference():
    _, label, find = batch(2, 4, {})
    lr = torch.tensor(1e-3, dtype=torch.float64, device=DEVICE)
    loss = EnergyLoss(SECTIONS["e f"], start_lr=1e-3)
    assert loss.use_kernel(DEVICE)
    assert not loss.kernel.applies(loss, label, find, 1e-3)  # a Python rate: the eager step's
    assert loss.kernel.applies(loss, label, find, lr)
    with_pf = EnergyLoss({**SECTIONS["e f"], "start_pref_pf": 1.0, "limit_pref_pf": 1.0}, start_lr=1e-3)
    assert not with_pf.use_kernel(DEVICE)  # atom_pref weights: the reference
