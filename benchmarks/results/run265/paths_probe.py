"""Run 265: why the graphed prebuilt-list call's kernels take ~0.3 ms more than the eager call's (call 1: 10.6-10.8
against 10.2-10.5 ms at 98,304 water atoms), and where `DeepPot.eval` (NumPy in and out, list built, replayed from a
graph) spends its ~2.4 ms more. Per path, torch.profiler over `calls` calls: each kernel's launches and CUDA ms a call
(the largest first), their sum, and the wall ms a call of unprofiled calls (one sync after them).
Usage (GPU, repository root): python paths_probe.py .mid/water/model.dp --natoms 98304
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

from deeppot.infer import DeepPot
from deeppot.infer.graph import GraphedEvaluation


def kernels(fn, calls):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        sync()
    rows = sorted(((e.key[:70], e.count // calls, round(e.device_time_total / calls / 1e3, 4))
                   for e in prof.key_averages() if e.device_time_total > 0), key=lambda r: -r[2])
    return rows


def report(path_name, fn, calls):
    fn()
    sync()
    ms = wall_ms(fn, calls)
    rows = kernels(fn, calls)
    print(json.dumps({"path": path_name, "wall_ms": round(ms, 3), "kernels_ms": round(sum(r[2] for r in rows), 3),
                      "launches": sum(r[1] for r in rows), "top": rows[:30]}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--natoms", type=int, default=98304)
    ap.add_argument("--data", default=".peer/data")
    ap.add_argument("--calls", type=int, default=10)
    args = ap.parse_args()
    coord, box, atype = load_frame(Path(args.data), "water")
    frame = replicate(coord, box, atype, replicas_for(args.natoms, len(atype)))
    ev, flat = prebuilt(args.model, frame)
    report("eager", lambda: ev.evaluate_neighbors(flat), args.calls)
    graphed = GraphedEvaluation(ev)
    report("graphed", lambda: graphed(flat), args.calls)
    dp = DeepPot(args.model, device="cuda")
    c, b, t = frame
    report("eval", lambda: dp.eval(c[None], b.reshape(1, 9), t), args.calls)
    dp_eager = DeepPot(args.model, device="cuda", graph=False)
    report("eval_no_graph", lambda: dp_eager.eval(c[None], b.reshape(1, 9), t), args.calls)


if __name__ == "__main__":
    main()
