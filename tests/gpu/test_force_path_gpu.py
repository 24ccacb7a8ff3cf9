"""On a GPU: the compiled force path (PyTorch's embedding compiled with the rest, or the fused kernels between
compiled graphs) computes what the uncompiled one does; a trainer with --compile on trains like one without; the
optimizer without torch.optim (FusedAdam) replays from a CUDA graph to the same weights as torch.optim's."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import torch
from helpers import make_model, padding_chunks, pairs_of, trimmed_pairs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
from test_trainer import small_system, tiny_input

from deeppot.config.input import normalize_input
from deeppot.kernels import embedding
from deeppot.train.adam import FusedAdam
from deeppot.train.kernel_choice import force_training_pass
from deeppot.train.trainer import RunOptions, Trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.parametrize(("fused", "trimmed"), [(False, False), (True, False), (True, True)])
def test_compiled_forces_and_gradients(fused, trimmed):
    model = make_model(resnet_dt=False, neuron=[8, 16, 32], sel=(24, 40)).cuda()
    pairs = pairs_of(model, nframes=2, seed=3).to("cuda")
    if trimmed:  # the fused kernels skip chunks of padding only
        pairs = trimmed_pairs(model, pairs)
        assert padding_chunks(pairs, embedding.BLOCK_J) > 0
    if fused:
        assert model.use_fused_kernels(torch.device("cuda"))
    reference = force_training_pass(model, pairs)()
    forces = model.forward_pairs(pairs)["force"]
    model.compile_forces()
    compiled = force_training_pass(model, pairs)()
    torch.testing.assert_close(model.forward_pairs(pairs)["force"], forces, rtol=1e-9, atol=1e-11)
    for a, b in zip(compiled, reference, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10)


def test_compiled_trainer_trains_like_an_uncompiled_one(tmp_path):
    config = tiny_input([small_system(tmp_path, "a", nframes=4)], None, steps=4)
    runs = {}
    for name, compiled in (("compiled", True), ("plain", False)):
        options = RunOptions(workdir=tmp_path / name, device=torch.device("cuda"), progress=False,
                             fused_kernels=False, compile=compiled)
        runs[name] = Trainer(normalize_input(copy.deepcopy(config)), options)
    assert runs["compiled"].model.pair_energy_fn is not runs["plain"].model.pair_energy_fn
    for step in range(4):
        m_compiled, m_plain = runs["compiled"].step(step), runs["plain"].step(step)
        for key in m_plain:
            torch.testing.assert_close(m_compiled[key], m_plain[key], rtol=1e-7, atol=0)


def _graphed_adam_run(make, weights: list[torch.Tensor]) -> list[torch.Tensor]:
    """Five updates replayed from one captured step, the rate refilled before each: the final weights."""
    params = [torch.nn.Parameter(w.clone()) for w in weights]
    lr = torch.tensor(1e-2, device="cuda")
    opt = make(params, lr)
    x = torch.randn(16, 64, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1),
                    dtype=torch.float64)

    def step():
        opt.zero_grad(set_to_none=False)
        ((x @ params[0] + params[1]).tanh().square().sum()).backward()
        opt.step()

    for p in params:
        p.grad = torch.zeros_like(p)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()  # warm-up, as capture requires; it also creates the optimizer state
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    for i in range(5):
        lr.fill_(1e-2 * 0.8**i)
        graph.replay()
    return [p.detach().clone() for p in params]


def test_fused_adam_replayed_from_a_graph_equals_torch_optim():
    g = torch.Generator(device="cuda").manual_seed(0)
    weights = [torch.randn(shape, device="cuda", generator=g, dtype=torch.float64) for shape in ((64, 32), (32,))]
    ours = _graphed_adam_run(lambda ps, lr: FusedAdam(ps, lr=lr), weights)
    theirs = _graphed_adam_run(lambda ps, lr: torch.optim.Adam(ps, lr=lr, fused=True, capturable=True), weights)
    for a, b, w in zip(ours, theirs, weights, strict=True):
        assert torch.equal(a, b) and not torch.equal(a, w)


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_default_trainer_takes_the_step_kernels_and_trains_like_the_references(tmp_path, precision):
    """The uncompiled graphed step with the fitting, loss, environment, force (and for float32 pair-gradient)
    kernels gives the metrics of the same step on the PyTorch references (`--fused-kernels off`)."""
    from deeppot.kernels import fitting, loss, pair_grad, scatter
    from deeppot.model import analytic
    from deeppot.model.energy_model import forces_and_virial

    config = tiny_input([small_system(tmp_path, "a", nframes=4, virial=True)], None, steps=4, precision=precision,
                        virial=True)
    runs = {}
    for name, fused in (("kernels", None), ("references", False)):
        options = RunOptions(workdir=tmp_path / name, device=torch.device("cuda"), progress=False,
                             fused_kernels=fused, compile=False)
        runs[name] = Trainer(normalize_input(copy.deepcopy(config)), options)
    fast, ref = runs["kernels"], runs["references"]
    assert fast.model.fit_fn.func is fitting.atomic_energy_and_grad and fast.loss.kernel is loss
    products = fast.model.fit_fn.keywords["products"]  # the forward's: f16x3 tiles only for float32 on Hopper GPUs
    assert products is None or (precision == "float32" and torch.cuda.get_device_capability() >= (9, 0))
    assert fast.model.pair_grad_fn is (pair_grad.pair_grad if precision == "float32" else analytic.pair_grad)
    assert ref.model.fit_fn is analytic.atomic_energy_and_grad and ref.loss.kernel is None
    assert fast.model.forces_fn is scatter.training_forces_and_virial and ref.model.forces_fn is forces_and_virial
    tol = dict(rtol=1e-9, atol=1e-12) if precision == "float64" else dict(rtol=2e-4, atol=1e-6)
    for step in range(4):
        m_fast, m_ref = fast.step(step), ref.step(step)
        for key in m_ref:
            torch.testing.assert_close(m_fast[key], m_ref[key], **tol, msg=f"step {step} {key}")
