"""Run 250: two variants of the float32 (f16x3) atom-tile kernels, timed in one process on trained models.

- TRANSPOSE (`atom_tiles.TRANSPOSE`): T's per-chunk contraction as G^T R, 128 x 16 on a warp-group GEMM, where R^T G
  (16 x 128) ran as mma.sync with G through shared memory into registers;
- HALVES (`atom_tiles.HALVES`): the gradient kernel's doubling last layer in two column halves.

Both constants and their kernel code were measured, not kept, and are not in the tree (README, run 250).

Usage (GPU, repository root): python variant_probe.py water=.mid/water/model.dp ... --natoms 98304 --rounds 3
Per model and variant: the prebuilt-list call's wall ms (a fresh DeepPot per variant), each fused kernel's CUDA ms
a call (torch.profiler), and the largest deviation of energy and forces from the base variant's.
"""
import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, replicas_for, replicate

from deeppot.infer import DeepPot
from deeppot.kernels import atom_tiles

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU: a dry run under TRITON_INTERPRET=1
VARIANTS = {"base": (False, False), "transpose": (True, False), "halves": (False, True), "both": (True, True)}


def set_flags(name):
    atom_tiles.TRANSPOSE, atom_tiles.HALVES = VARIANTS[name]


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def wall_ms(fn, n=20):
    fn()
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t) / n * 1e3


def kernel_ms(fn, calls=5, keep=("tiled",)):
    """CUDA ms a call of the kernels whose names hold one of `keep`."""
    if not torch.cuda.is_available():
        return {}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        sync()
    return {e.key[:40]: round(e.device_time_total / calls / 1e3, 4) for e in prof.key_averages()
            if any(k in e.key for k in keep)}


def prebuilt(path, frame):
    """A fresh `DeepPot`'s evaluator for the model at path and its neighbour data of frame (coord, box, atype)."""
    ev = DeepPot(path, device=DEVICE).evaluator
    c, b, t = frame
    flat = ev.neighbors(torch.as_tensor(c, device=DEVICE).reshape(1, -1, 3), torch.as_tensor(t, device=DEVICE)
                        .reshape(1, -1), torch.as_tensor(b, device=DEVICE).reshape(1, 3, 3))
    return ev, flat


def run_variant(system, path, name, frame, ref, calls, apply, keep=("tiled",)):
    apply(name)
    ev, flat = prebuilt(path, frame)
    out = ev.evaluate_neighbors(flat)
    row = {"system": system, "variant": name, "natoms": len(frame[2]), "products": ev.products,
           "ms": round(wall_ms(lambda: ev.evaluate_neighbors(flat), calls), 3),
           "kernels": kernel_ms(lambda: ev.evaluate_neighbors(flat), max(1, calls // 4), keep)}
    if ref is not None:
        row["d_energy_rel"] = float((out["energy"] - ref["energy"]).abs().max() / ref["energy"].abs().max())
        row["d_force_rel"] = float((out["force"] - ref["force"]).abs().max() / ref["force"].abs().max())
    print(json.dumps(row), flush=True)
    return out


def main(variants=VARIANTS, apply=set_flags, keep=("tiled",)):
    """Time `variants` (names; `apply(name)` sets a variant's module constants) on each model given; the kernels
    profiled: those whose names hold one of `keep`."""
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--natoms", type=int, default=98304)
    ap.add_argument("--data", default=".peer/data")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=20, help="timed calls a variant")
    ap.add_argument("--variants", nargs="+", default=list(variants))
    args = ap.parse_args()
    for spec in args.models:
        system, path = spec.split("=")
        coord, box, atype = load_frame(Path(args.data), system)
        frame = replicate(coord, box, atype, replicas_for(args.natoms, len(atype)))
        ref = None
        for _ in range(args.rounds):
            for name in args.variants:
                out = run_variant(system, path, name, frame, ref, args.calls, apply, keep)
                ref = out if ref is None else ref


if __name__ == "__main__":
    main()
