"""Run 259: D as float16 parts written by the T kernels for the first fitting layer (`fitting_gemm.X_PARTS`), timed
in one process on trained models against D written whole (float32) and split in every program of the product.

Needs `d_parts.patch` (beside this file) applied: the tree keeps D whole. Per model and variant: the prebuilt-list
call's wall ms (a fresh `DeepPot` each), the T and product kernels' CUDA ms a call (torch.profiler), and the largest
deviation of energy and forces from the first variant's.
Usage (GPU, repository root): python parts_probe.py water=.mid/water/model.dp ... --rounds 2
"""
import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from infer_bench import load_frame, replicas_for, replicate
from variant_probe import DEVICE, sync, wall_ms

from deeppot.infer import DeepPot
from deeppot.kernels import fitting_gemm

VARIANTS = {"whole": (False, None), "parts": (True, dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=2)),
            "parts_bk32": (True, dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=4))}


def kernel_ms(fn, calls):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        sync()
    keep = ("_t_kernel", "_persistent_kernel", "_t_bar_kernel")
    return {e.key[:30]: round(e.device_time_total / calls / 1e3, 4) for e in prof.key_averages()
            if any(k in e.key for k in keep)}


def run_variant(system, path, name, frame, ref, calls):
    fitting_gemm.X_PARTS, tile = VARIANTS[name]
    fitting_gemm.PARTS_TILE = tile or fitting_gemm.PARTS_TILE
    ev = DeepPot(path, device=DEVICE).evaluator
    c, b, t = frame
    flat = ev.neighbors(torch.as_tensor(c, device=DEVICE).reshape(1, -1, 3), torch.as_tensor(t, device=DEVICE)
                        .reshape(1, -1), torch.as_tensor(b, device=DEVICE).reshape(1, 3, 3))

    def call():
        return ev.evaluate_neighbors(flat)

    out = call()
    row = {"system": system, "model": path, "variant": name, "natoms": len(t), "ms": round(wall_ms(call, calls), 3),
           "kernels": kernel_ms(call, 5)}
    if ref is not None:
        row["d_energy_rel"] = float((out["energy"] - ref["energy"]).abs().max() / ref["energy"].abs().max())
        row["d_force_rel"] = float((out["force"] - ref["force"]).abs().max() / ref["force"].abs().max())
    print(json.dumps(row), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--natoms", type=int, default=98304)
    ap.add_argument("--data", default=".peer/data")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    args = ap.parse_args()
    for spec in args.models:
        system, path = spec.split("=")
        coord, box, atype = load_frame(Path(args.data), system)
        frame = replicate(coord, box, atype, replicas_for(args.natoms, len(atype)))
        ref = None
        for _ in range(args.rounds):
            for name in args.variants:
                out = run_variant(system, path, name, frame, ref, args.calls)
                ref = out if ref is None else ref


if __name__ == "__main__":
    main()
