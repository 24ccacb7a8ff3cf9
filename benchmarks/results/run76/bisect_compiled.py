"""Run 80: which part of the new pair_grad makes Inductor (CUDA) compute wrong forces (runs 78-79): variants of
`analytic.pair_grad` patched in, each compiled afresh, forces against the eager reference."""
import sys

import torch
import torch._dynamo

sys.path.insert(0, "tests")
from helpers import make_model, pairs_of

from deeppot.model import analytic
from deeppot.model.env_mat import smooth_switch, smooth_switch_derivative


def bars(d, rows, g, dg, t_bar, early):
    nnei = sum(d.sel)
    tb = t_bar / nnei if early else t_bar
    r_bar = torch.einsum("fncm,fnjm->fnjc", tb, g)
    s_bar = (torch.einsum("fncm,fnjc->fnjm", tb, rows.rr) * dg).sum(-1, keepdim=True)
    if not early:
        r_bar, s_bar = r_bar / nnei, s_bar / nnei
    return (r_bar + torch.nn.functional.pad(s_bar, (0, 3))) * rows.scale


def factors_new(d, rows, q):
    q0, qv = q[..., :1], q[..., 1:]
    return rows.x * (q0 * rows.a + (qv * rows.x).sum(-1, keepdim=True) * rows.b) + qv * rows.c


def factors_old(d, rows, q):
    x = rows.x
    r = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    inv = 1.0 / (r + d.env_protection)
    w, dw = smooth_switch(r, d.rcut_smth, d.rcut), smooth_switch_derivative(r, d.rcut_smth, d.rcut)
    radial = q[..., :1] * (dw * inv - w * inv * inv) + (q[..., 1:] * x).sum(-1, keepdim=True) * (
        dw * inv * inv - 2.0 * w * inv * inv * inv)
    return radial * x / r + q[..., 1:] * (w * inv * inv)


def variant(early, factors):
    return lambda d, rows, g, dg, t_bar: factors(d, rows, bars(d, rows, g, dg, t_bar, early))


model = make_model(resnet_dt=False, neuron=[8, 16, 32], sel=(24, 40)).cuda()
pairs = pairs_of(model, nframes=2, seed=3).to("cuda")
ref = model.forward_pairs(pairs)["force"]
for name, early, factors in (("early/new", True, factors_new), ("late/new", False, factors_new),
                             ("early/old", True, factors_old), ("late/old", False, factors_old)):
    analytic.pair_grad = variant(early, factors)
    model.pair_energy_fn = analytic.energy_and_pair_grad
    eager = model.forward_pairs(pairs)["force"]
    torch._dynamo.reset()
    model.compile_forces()
    compiled = model.forward_pairs(pairs)["force"]
    print(name, "eager-ref", (eager - ref).abs().max().item(), "compiled-ref", (compiled - ref).abs().max().item(),
          flush=True)
