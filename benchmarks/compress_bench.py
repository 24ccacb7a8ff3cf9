"""Compressed vs uncompressed inference on a random water-like box, no data files needed: one JSON line per case.

Usage (repository root, on a GPU):  PYTHONPATH=$PWD python benchmarks/compress_bench.py --atoms 12288 98304
The model is the water example's shape (se_e2_a, sel [46, 92], rcut 6, neuron [25, 50, 100], axis_neuron 16,
type_one_side, fitting [240, 240, 240]) with random weights and statistics; the box holds O and H at water's
density (0.1 atoms/Å^3) on a jittered grid (no pair closer than ~0.9 Å). Timed: Evaluator.evaluate_neighbors
with the neighbour list built once (what MD uses), per pair stage. With real data, use
benchmarks/infer_bench.py --compress instead (cases SYSTEM:PRECISION:NATOMS:compressed).
"""

from __future__ import annotations

import argparse
import copy
import json
import time

import torch

from deeppot.infer.deep_pot import Evaluator
from deeppot.model import EnergyModel

MODEL = {"type_map": ["O", "H"],
         "descriptor": {"type": "se_e2_a", "sel": [46, 92], "rcut": 6.0, "rcut_smth": 0.5, "neuron": [25, 50, 100],
                        "axis_neuron": 16, "type_one_side": True, "resnet_dt": False, "seed": 1},
         "fitting_net": {"neuron": [240, 240, 240], "resnet_dt": True, "seed": 2}}


def water_box(natoms: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    n = round((natoms / 3) ** (1 / 3))  # molecules per edge, grid spacing 3.1 Å (0.1 atoms/Å^3)
    grid = torch.stack(torch.meshgrid(*[torch.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3).double() * 3.1
    g = torch.Generator().manual_seed(0)
    oxygen = grid + 0.2 * torch.rand(grid.shape, generator=g, dtype=torch.float64)
    coord = torch.cat([oxygen, oxygen + torch.tensor([0.96, 0.0, 0.0]), oxygen + torch.tensor([-0.24, 0.93, 0.0])])
    atype = torch.cat([torch.zeros(len(grid)), torch.ones(2 * len(grid))]).long()
    box = torch.eye(3, dtype=torch.float64) * 3.1 * n
    return coord[None].to(device), atype[None].to(device), box[None].to(device)


def box_pairs(model: EnergyModel, natoms: int, device) -> tuple[Evaluator, object, torch.Tensor, torch.Tensor]:
    """The kernels' inputs on the water-like box: the evaluator, its neighbour data, the pair vectors in the
    descriptor precision and a random dE/dT (what the gradient kernels take)."""
    ev = Evaluator(model, device)
    flat = ev.neighbors(*water_box(natoms, device))
    d = ev.model.descriptor
    rij = flat.pair_vectors(0, flat.ncentre, model.rcut).to(d.dtype)
    return ev, flat, rij, torch.randn(flat.ncentre, 4, d.neuron[-1], dtype=d.dtype, device=device)


def model_pair(precision: str) -> tuple[EnergyModel, EnergyModel]:
    cfg = copy.deepcopy(MODEL)
    cfg["descriptor"]["precision"] = cfg["fitting_net"]["precision"] = precision
    model = EnergyModel.from_config(cfg)
    with torch.no_grad():
        model.descriptor.davg[..., 0] = 0.05
        model.descriptor.dstd[..., 0] = 0.3
        model.descriptor.dstd[..., 1:] = 0.2
    compressed = copy.deepcopy(model)
    compressed.descriptor.enable_compression(0.9)
    return model, compressed


def timed(fn, sync, seconds: float = 1.0) -> float:
    fn(), fn()
    sync()
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or calls < 3:
        fn()
        sync()
        calls += 1
    return (time.perf_counter() - t0) / calls * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--atoms", nargs="+", type=int, default=[12288])
    p.add_argument("--precisions", nargs="+", default=["float32", "float64"])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for precision in args.precisions:
        model, compressed = model_pair(precision)
        for natoms in args.atoms:
            coord, atype, box = water_box(natoms, device)
            ref = None
            for name, m in (("uncompressed", model), ("compressed", compressed)):
                ev = Evaluator(m, device)
                flat = ev.neighbors(coord, atype, box)
                out = ev.evaluate_neighbors(flat)
                ref = out if ref is None else ref
                ms = timed(lambda ev=ev, flat=flat: ev.evaluate_neighbors(flat), sync)
                print(json.dumps({"case": f"water:{precision}:{coord.shape[1]}:{name}", "fused": ev.fused,
                                  "ms_per_call": round(ms, 3), "atom_steps_per_s": round(coord.shape[1] / ms * 1e3),
                                  "e_per_atom": float(out["energy"][0]) / coord.shape[1],
                                  "max_force_diff": float((out["force"] - ref["force"]).abs().max())}), flush=True)


if __name__ == "__main__":
    main()
