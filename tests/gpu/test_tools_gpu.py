"""neighbor-stat and change-bias on a GPU: the same numbers as on the CPU (skipped without CUDA)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from deeppot.cli.main import main
from deeppot.io import load_model, save_model
from deeppot.model import EnergyModel
from deeppot.nlist.stat import frame_neighbor_stat

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

WATER = Path(__file__).resolve().parents[2] / "examples" / "water"


def supercell(reps: int, nframes: int = 2):
    frame = WATER / "data" / "data_0"
    coord = np.load(frame / "set.000" / "coord.npy")[:nframes].astype(np.float64).reshape(nframes, -1, 3)
    box = np.load(frame / "set.000" / "box.npy")[:nframes].astype(np.float64).reshape(nframes, 3, 3)
    atype = np.loadtxt(frame / "type.raw", dtype=np.int64)
    shifts = np.array([[i, j, k] for i in range(reps) for j in range(reps) for k in range(reps)]) @ box[0]
    coord = (coord[:, None] + shifts[None, :, None]).reshape(nframes, -1, 3)
    return (torch.tensor(coord), torch.tensor(np.tile(atype, reps**3)).expand(nframes, -1).clone(),
            torch.tensor(box * reps))


@pytest.mark.parametrize(("reps", "method"), [(1, "reference"), (1, "cell"), (4, "cell")])
def test_neighbor_stat_gpu_equals_cpu(reps, method):
    coord, atype, box = supercell(reps)
    cpu = frame_neighbor_stat(coord, atype, box, 6.0, 2, method=method)
    torch.cuda.synchronize()
    start = time.perf_counter()
    gpu = frame_neighbor_stat(coord.cuda(), atype.cuda(), box.cuda(), 6.0, 2, method=method)
    torch.cuda.synchronize()
    print(f"neighbor stat, {coord.shape[1]} atoms x {coord.shape[0]} frames, {method}: "
          f"{time.perf_counter() - start:.3f} s on the GPU")
    assert torch.equal(gpu[0].cpu(), cpu[0])
    torch.testing.assert_close(gpu[1].cpu(), cpu[1], rtol=1e-12, atol=0)
    if reps > 1:  # a supercell of the same frames: the same counts and distance as the cell itself
        small = frame_neighbor_stat(*supercell(1), 6.0, 2)
        assert torch.equal(gpu[0].cpu(), small[0])


def test_change_bias_gpu_equals_cpu(tmp_path):
    cfg = json.loads((WATER / "input.json").read_text())["model"]
    cfg["descriptor"]["sel"] = [46, 92]
    torch.manual_seed(0)
    save_model(EnergyModel.from_config(cfg), tmp_path / "m.dp")
    data = [str(WATER / "data" / "data_0"), str(WATER / "data" / "data_3")]
    biases = []
    for device in ("cpu", "cuda"):
        out = tmp_path / f"{device}.dp"
        assert main(["change-bias", str(tmp_path / "m.dp"), "-s", *data, "-n", "4", "-o", str(out),
                     "--device", device]) == 0
        biases.append(load_model(out).fitting.out_bias.numpy())
    np.testing.assert_allclose(biases[1], biases[0], rtol=1e-9)
