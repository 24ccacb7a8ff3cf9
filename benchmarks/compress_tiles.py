"""Tile sweep of the compressed kernels: each kernel alone and the whole evaluation, one JSON line per (BLOCK, warps).

Water-like box of benchmarks/compress_bench.py (no data files), 98,304 atoms, float32 and float64, on a GPU:
    PYTHONPATH=$PWD python benchmarks/compress_tiles.py > tiles.jsonl
(run13_h100_compress_tiles.jsonl was measured with BLOCK=32 as the default, before BLOCK=16 was chosen from it).
"""

from __future__ import annotations

import json
import time

import torch
from compress_bench import model_pair, water_box

from deeppot.infer import Evaluator
from deeppot.kernels import compressed as kernels

VARIANTS = [(32, 4), (16, 4), (64, 4), (32, 2), (64, 8), (128, 8)]


def timed(fn, calls: int = 5) -> float:
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e3


def sweep(precision: str, natoms: int) -> None:
    _, model = model_pair(precision)
    ev = Evaluator(model, "cuda")
    flat = ev.neighbors(*water_box(natoms, "cuda"))
    n, d = flat.ncentre, ev.model.descriptor
    rij = flat.pair_vectors(0, n, model.rcut).to(d.dtype)
    t_bar = torch.randn(n, 4, d.neuron[-1], dtype=d.dtype, device="cuda")
    for block, warps in VARIANTS:
        kernels.BLOCK, kernels.NUM_WARPS = block, warps
        row = {"precision": precision, "natoms": n, "block": block, "warps": warps, "fused": ev.fused,
               "t_ms": timed(lambda: kernels.compressed_descriptor_t(d, rij, flat.center_type)),
               "grad_ms": timed(lambda: kernels.compressed_pair_grad(d, rij, flat.center_type, t_bar)),
               "whole_ms": timed(lambda: ev.evaluate_neighbors(flat))}
        row["atom_steps_per_s"] = n / row["whole_ms"] * 1e3
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    torch.set_grad_enabled(False)
    for precision in ("float32", "float64"):
        sweep(precision, 98304)
