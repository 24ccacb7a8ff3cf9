"""Run 259: where a prebuilt-list call of the current tree goes, kernel by kernel (torch.profiler), on trained
models: each kernel's CUDA ms a call, their sum against the call's wall ms (the difference: idle gaps and host time).

Usage (GPU, repository root): python profile_probe.py water=.mid/water/model.dp ... --natoms 98304
"""
import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from infer_bench import load_frame, replicas_for, replicate
from variant_probe import prebuilt, sync, wall_ms


def profile(system, path, frame, calls):
    ev, flat = prebuilt(path, frame)

    def call():
        return ev.evaluate_neighbors(flat)

    ms = wall_ms(call, calls)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        sync()
    rows = sorted(((e.key[:60], e.count // calls, e.device_time_total / calls / 1e3) for e in prof.key_averages()
                   if e.device_time_total > 0), key=lambda r: -r[2])
    total = sum(r[2] for r in rows)
    print(json.dumps({"system": system, "model": path, "natoms": len(frame[2]), "wall_ms": round(ms, 3),
                      "kernel_ms": round(total, 3), "launches": sum(r[1] for r in rows)}), flush=True)
    for name, n, k in rows:
        print(json.dumps({"system": system, "kernel": name, "per_call": n, "ms": round(k, 4)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--natoms", type=int, default=98304)
    ap.add_argument("--data", default=".peer/data")
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args()
    for spec in args.models:
        label, path = spec.split("=")
        system = label.split(":")[0]
        coord, box, atype = load_frame(Path(args.data), system)
        profile(label, path, replicate(coord, box, atype, replicas_for(args.natoms, len(atype))), args.calls)


if __name__ == "__main__":
    main()
