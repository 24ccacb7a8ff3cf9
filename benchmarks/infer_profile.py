"""Where inference time goes: the fused pair stage split into its parts, kernel variants, eager against graphed.

One JSON line per measurement. Water supercells (replicas of examples/water data_0 frame 0), the water benchmark
model with random weights. Usage (GPU): python benchmarks/infer_profile.py --reps 1 4 8 --out profile.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from deeppot.infer import Evaluator
from deeppot.infer.evaluate import evaluate_flat
from deeppot.kernels import descriptor as kernels
from deeppot.model import EnergyModel

ROOT = Path(__file__).resolve().parents[1]
WATER = ROOT / "examples" / "water" / "data" / "data_0"
WATER_MODEL = {"type_map": ["O", "H"],
               "descriptor": {"type": "se_e2_a", "sel": [46, 92], "rcut": 6.0, "rcut_smth": 0.5,
                              "neuron": [25, 50, 100], "axis_neuron": 16, "seed": 1},
               "fitting_net": {"neuron": [240, 240, 240], "resnet_dt": True, "seed": 1}}


def water_supercell(reps: int, device: torch.device):
    coord = np.load(WATER / "set.000" / "coord.npy")[0].reshape(-1, 3)
    box = np.load(WATER / "set.000" / "box.npy")[0].reshape(3, 3)
    atype = np.loadtxt(WATER / "type.raw", dtype=np.int64)
    shifts = np.array([[i, j, k] for i in range(reps) for j in range(reps) for k in range(reps)]) @ box
    coord = (coord[None] + shifts[:, None]).reshape(1, -1, 3)
    as_t = lambda a, dt: torch.as_tensor(a, dtype=dt, device=device)  # noqa: E731
    return as_t(coord, torch.float64), as_t(np.tile(atype, reps**3)[None], torch.long), \
        as_t((box * reps)[None], torch.float64)


def timed(fn, repeat: int = 3) -> float:
    """Milliseconds per call after one warm-up call."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / repeat * 1e3


def stage_parts(model: EnergyModel, flat, n: int) -> dict[str, float]:
    """ms of each part of the fused stage on the first n centres (the fitting parts: `energy_and_t_bar`, D and
    dE/dT included, every net on every atom or each on its own type's atoms)."""
    d = model.descriptor
    rij = flat.pair_vectors(0, n, model.rcut).to(d.dtype)
    ct = flat.center_type[:n]
    t_mat = kernels.descriptor_t(d, rij, ct)
    t_bar = kernels.energy_and_t_bar(model, t_mat, ct, sync_free=False)[1]
    return {"pair_vectors_ms": timed(lambda: flat.pair_vectors(0, n, model.rcut).to(d.dtype)),
            "descriptor_t_ms": timed(lambda: kernels.descriptor_t(d, rij, ct)),
            "fitting_at_once_ms": timed(lambda: kernels.energy_and_t_bar(model, t_mat, ct, sync_free=True)),
            "fitting_grouped_ms": timed(lambda: kernels.energy_and_t_bar(model, t_mat, ct, sync_free=False)),
            "pair_grad_ms": timed(lambda: kernels.pair_grad_from_t_bar(d, rij, ct, t_bar))}


def kernel_variants(model: EnergyModel, flat, n: int, t_variants, grad_variants, precision: str) -> list[dict]:
    """ms of the T kernel and of the gradient kernel for each of their (BLOCK, warps), on the first n centres;
    the defaults are restored afterwards."""
    d = model.descriptor
    rij = flat.pair_vectors(0, n, model.rcut).to(d.dtype)
    ct = flat.center_type[:n]
    t_bar = torch.randn(n, 4, d.neuron[-1], dtype=d.dtype, device=rij.device)
    saved = dict(kernels.TILES)
    rows = []
    try:
        for block, warps in t_variants:
            kernels.TILES["t"] = (block, warps)
            rows.append({"kernel": "t", "block": block, "warps": warps,
                         "ms": timed(lambda: kernels.descriptor_t(d, rij, ct, precision))})
        for block, warps in grad_variants:
            kernels.TILES["grad"] = (block, warps)
            rows.append({"kernel": "grad", "block": block, "warps": warps,
                         "ms": timed(lambda: kernels.pair_grad_from_t_bar(d, rij, ct, t_bar, precision))})
    finally:
        kernels.TILES.update(saved)
    return rows


def graphed_ms(ev: Evaluator, flat) -> float:
    """ms per replay of the whole evaluation from a CUDA graph."""
    from deeppot.infer.graph import GraphedEvaluation

    graphed = GraphedEvaluation(ev)
    return timed(lambda: graphed(flat), 20)


def profile(precision: str, reps: int, args, device: torch.device) -> list[dict]:
    cfg = json.loads(json.dumps(WATER_MODEL))
    cfg["descriptor"]["precision"] = cfg["fitting_net"]["precision"] = precision
    ev = Evaluator(EnergyModel.from_config(cfg), device, tf32=args.tf32)
    coord, atype, box = water_supercell(reps, device)
    n = coord.shape[1]
    base = {"case": f"water:{precision}:{n}", "gpu": torch.cuda.get_device_name(device), "chunk": ev.chunk_atoms,
            "tf32": args.tf32}
    rows = [{**base, "nlist_build_ms": timed(lambda: ev.neighbors(coord, atype, box), 1)}]
    flat = ev.neighbors(coord, atype, box)
    m = min(n, ev.chunk_atoms)
    rows.append({**base, **stage_parts(ev.model, flat, m)})
    rows += [{**base, **row} for row in kernel_variants(ev.model, flat, m, args.t_variants, args.grad_variants,
                                                           "tf32" if args.tf32 else "tf32x3")]
    torch.cuda.reset_peak_memory_stats(device)
    ms = timed(lambda: evaluate_flat(ev.model, flat, ev.chunk_atoms, ev.pair_stage, scatter=ev.scatter))
    rows.append({**base, "whole": "eager", "ms_per_step": ms, "atom_steps_per_s": n / ms * 1e3,
                 "peak_mem_MiB": torch.cuda.max_memory_allocated(device) / 2**20})
    if n <= args.graph_max_atoms:
        ms = graphed_ms(ev, flat)
        rows.append({**base, "whole": "graphed", "ms_per_step": ms, "atom_steps_per_s": n / ms * 1e3})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--reps", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--precisions", nargs="+", default=["float32", "float64"])
    p.add_argument("--t-variants", nargs="+", default=["32x4", "16x4"], help="BLOCKxWARPS of the T kernel")
    p.add_argument("--grad-variants", nargs="+", default=["16x4", "16x8"], help="BLOCKxWARPS of the gradient kernel")
    p.add_argument("--tf32", action="store_true", help="the fused kernels' one-pass TF32 opt-in (float32)")
    p.add_argument("--graph-max-atoms", type=int, default=20000, help="also time a graphed evaluation up to here")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    args.t_variants = [tuple(int(x) for x in v.split("x")) for v in args.t_variants]
    args.grad_variants = [tuple(int(x) for x in v.split("x")) for v in args.grad_variants]
    torch.set_grad_enabled(False)
    for precision in args.precisions:
        for reps in args.reps:
            for row in profile(precision, reps, args, torch.device("cuda")):
                line = json.dumps(row)
                print(line, flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(line + "\n")


if __name__ == "__main__":
    main()
