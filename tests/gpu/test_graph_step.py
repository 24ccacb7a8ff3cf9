"""The CUDA-graph training step against the eager step (GPU only; skipped without CUDA)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
from test_trainer import small_system, tiny_input  # noqa: E402

from deeppot.config.input import normalize_input  # noqa: E402
from deeppot.train.trainer import RunOptions, Trainer  # noqa: E402


def trainer(config, workdir, graph):
    return Trainer(normalize_input(copy.deepcopy(config)),
                   RunOptions(workdir=workdir, device=torch.device("cuda"), cuda_graph=graph, progress=False,
                              fused_kernels=True))  # one embedding for both (auto could time them apart)


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("type_one_side", [True, False])
def test_graph_step_equals_eager_step(tmp_path, precision, type_one_side):
    systems = [small_system(tmp_path, "a", nframes=5), small_system(tmp_path, "b", nframes=4)]
    config = tiny_input(systems, None, steps=12, precision=precision)
    config["model"]["descriptor"]["type_one_side"] = type_one_side
    config["training"]["training_data"]["batch_size"] = 2  # 5 frames: a short last batch, a second graph shape
    config["training"]["gradient_max_norm"] = 5.0
    eager, graphed = trainer(config, tmp_path / "eager", False), trainer(config, tmp_path / "graph", True)
    for step in range(12):
        m_eager, m_graph = eager.step(step), graphed.step(step)
        for key in m_eager:
            tol = 1e-7 if precision == "float64" else 1e-4  # Adam reads a float32 lr tensor in the graph
            torch.testing.assert_close(m_graph[key], m_eager[key], rtol=tol, atol=0)
    assert len(graphed.graphed.graphs) >= 2
    for p_e, p_g in zip(eager.model.parameters(), graphed.model.parameters(), strict=True):
        torch.testing.assert_close(p_g, p_e, rtol=1e-7 if precision == "float64" else 1e-3, atol=1e-9)


def test_graphed_validation_equals_eager(tmp_path):
    systems = [small_system(tmp_path, "a", nframes=5)]
    config = tiny_input(systems, [small_system(tmp_path, "v", nframes=4)], steps=6)
    for name, graph in (("eager", False), ("graph", True)):
        trainer(config, tmp_path / name, graph).run()
    eager = (tmp_path / "eager" / "lcurve.out").read_text()
    assert (tmp_path / "graph" / "lcurve.out").read_text() == eager


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_analytic_forces_equal_autograd_on_cuda(tmp_path, precision):
    config = tiny_input([small_system(tmp_path, "a", nframes=3)], None, precision=precision)
    config["model"]["descriptor"]["type_one_side"] = False
    t = trainer(config, tmp_path / "run", False)
    batch = t.train_data.next()
    results = []
    for analytic in (True, False):
        t.model.analytic_forces = analytic
        out = t.model.forward_pairs(batch.pairs, create_graph=True)
        loss = out["force"].square().mean() + out["energy"].square().mean()
        results.append((out, torch.autograd.grad(loss, list(t.model.parameters()))))
    (fast, g_fast), (ref, g_ref) = results
    tol = 1e-10 if precision == "float64" else 2e-4
    torch.testing.assert_close(fast["force"], ref["force"], rtol=tol, atol=tol)
    for a, b in zip(g_fast, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=tol * 10, atol=tol)


@pytest.mark.parametrize(("precision", "tf32"), [("float32", False), ("float32", True), ("float64", False)])
@pytest.mark.parametrize("type_one_side", [True, False])
def test_fused_kernels_train_like_the_plain_path(tmp_path, precision, tf32, type_one_side):
    """Fused Triton embedding vs PyTorch embedding, both graphed: batches of 2, two systems, a short last batch."""
    systems = [small_system(tmp_path, "a", nframes=5), small_system(tmp_path, "b", nframes=4)]
    config = tiny_input(systems, None, steps=12, precision=precision)
    config["model"]["descriptor"].update(neuron=[25, 50, 100], type_one_side=type_one_side)
    config["training"]["training_data"]["batch_size"] = 2
    runs = []
    for fused in (False, True):
        options = RunOptions(workdir=tmp_path / f"fused{fused}", device=torch.device("cuda"), progress=False,
                             fused_kernels=fused, tf32=tf32 and fused)
        runs.append(Trainer(normalize_input(copy.deepcopy(config)), options))
    plain, fused = runs
    assert fused.model.embed_fn is not plain.model.embed_fn
    assert torch.backends.cuda.matmul.allow_tf32 == tf32  # --tf32: cuBLAS's GEMMs too (both runs: one process)
    for step in range(12):
        m_plain, m_fused = plain.step(step), fused.step(step)
        for key in m_plain:
            # float32: summation order differs, and compounds over steps; TF32 rounds GEMM inputs
            tol = 1e-9 if precision == "float64" else 2e-2 if tf32 else 2e-3
            torch.testing.assert_close(m_fused[key], m_plain[key], rtol=tol, atol=0)


def test_released_graphs_leave_an_eager_trainer(tmp_path):
    """release_graphs (called before an NCCL group is destroyed) frees the graphs; the trainer steps on, eagerly,
    exactly as a trainer that never captured."""
    config = tiny_input([small_system(tmp_path, "a", nframes=4)], None, steps=6)
    graphed, eager = trainer(config, tmp_path / "graph", True), trainer(config, tmp_path / "eager", False)
    for step in range(3):
        graphed.step(step), eager.step(step)
    graphed.release_graphs()
    assert graphed.graphed is None and graphed.graphed_valid is None
    for step in range(3, 6):
        m_graph, m_eager = graphed.step(step), eager.step(step)
        for key in m_eager:
            torch.testing.assert_close(m_graph[key], m_eager[key], rtol=1e-7, atol=0)
