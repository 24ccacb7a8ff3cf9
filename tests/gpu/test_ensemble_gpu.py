"""The batched ensemble of model deviation on a GPU (skipped without CUDA): four water-shaped models stacked in
one call against the same models one after another (the fused kernels, and the PyTorch path)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from deeppot.infer import Evaluator
from deeppot.infer.ensemble import EnsembleEvaluator
from deeppot.model import EnergyModel

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

WATER = Path(__file__).resolve().parents[2] / "examples" / "water"


def water_models(precision: str, nm: int = 4) -> list[EnergyModel]:
    """nm models of the water example's shape, each with its own random weights and statistics."""
    cfg = json.loads((WATER / "input.json").read_text())["model"]
    cfg["descriptor"]["precision"] = cfg["fitting_net"]["precision"] = precision
    models = []
    for k in range(nm):
        cfg["descriptor"]["seed"], cfg["fitting_net"]["seed"] = 10 + k, 20 + k
        model = EnergyModel.from_config(cfg)
        with torch.no_grad():
            model.descriptor.davg[..., 0] = 0.1 * (k + 1)
            model.descriptor.dstd[...] = 0.7 + 0.05 * k
            model.fitting.out_bias.fill_(-1.0 - k)
        models.append(model)
    return models


def water_neighbors(evaluator: Evaluator):
    """The two first frames of water/data_0 (192 atoms each) as flat neighbour data on the GPU."""
    frame = WATER / "data" / "data_0" / "set.000"
    coord = torch.tensor(np.load(frame / "coord.npy")[:2].reshape(2, -1, 3), device="cuda")
    box = torch.tensor(np.load(frame / "box.npy")[:2].reshape(2, 3, 3), device="cuda")
    atype = torch.tensor(np.loadtxt(frame.parent / "type.raw", dtype=np.int64), device="cuda")
    return evaluator.neighbors(coord, atype[None].expand(2, -1), box)


@pytest.mark.parametrize("fused", [None, False])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_batched_equals_sequential_on_gpu(precision: str, fused: bool | None) -> None:
    evaluators = [Evaluator(m, "cuda", fused=fused) for m in water_models(precision)]
    flat = water_neighbors(evaluators[0])
    assert EnsembleEvaluator(evaluators).batched  # the automatic choice on a GPU
    batched = EnsembleEvaluator(evaluators, batched=True)
    got = batched.evaluate_neighbors(flat)
    want = EnsembleEvaluator(evaluators, batched=False).evaluate_neighbors(flat)
    tol = 1e-10 if precision == "float64" else 2e-5
    for key in ("energy", "force", "virial"):
        assert got[key].shape == want[key].shape and got[key].shape[0] == 4
        err, scale = float((got[key] - want[key]).abs().max()), float(want[key].abs().max())
        assert err <= tol * scale, (key, err, scale)
    assert (got["energy"][0] - got["energy"][1]).abs().min() > 1e-3  # four different models
