"""Run 265: why issue 9's benchmark times water's 98,304-atom prebuilt-list call at 10.85 ms (run 264: fresh
weights, a sync after every call) where run 261's probe times 10.4-10.5 ms (trained weights, one sync after 20
calls). Per model (fresh weights as infer_bench.py makes them, and each trained model given) and per timing:
  synced    infer_bench.time_calls: a device sync after every call (the benchmark's ms_per_call);
  batched   20 calls, then one sync (run 250's wall_ms);
  graphed   the same two timings of the call replayed from a CUDA graph (GraphedEvaluation);
and, from torch.profiler over 5 synced calls, the kernels' CUDA ms a call (the GPU's idle time is wall minus that).
Usage (GPU, repository root): python harness_probe.py trained=.mid/water/model.dp --rounds 2
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from infer_bench import load_frame, make_model, replicas_for, replicate, time_calls
from variant_probe import prebuilt, sync, wall_ms

from deeppot.infer.graph import GraphedEvaluation
from deeppot.io import save_model


def kernels_ms(fn, calls=5):
    """Wall ms and summed CUDA kernel ms a call, each call synchronised, under torch.profiler."""
    if not torch.cuda.is_available():
        return None, None
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        t = time.perf_counter()
        for _ in range(calls):
            fn()
            sync()
        wall = (time.perf_counter() - t) / calls * 1e3
    cuda = sum(e.self_device_time_total for e in prof.key_averages()) / calls / 1e3
    return round(wall, 3), round(cuda, 3)


def measure(name, path, frame):
    ev, flat = prebuilt(path, frame)
    calls = [("eager", lambda: ev.evaluate_neighbors(flat))]
    if torch.cuda.is_available():  # the CPU: a dry run of the eager call under TRITON_INTERPRET=1
        graphed = GraphedEvaluation(ev)
        calls.append(("graphed", lambda: graphed(flat)))
    row = {"model": name, "natoms": len(frame[2]), "products": ev.products}
    for label, fn in calls:
        fn()
        sync()
        stats, _ = time_calls(fn, sync, 1.0, 10.0)
        row[f"{label}_synced_ms"] = stats["ms_per_call"]
        row[f"{label}_batched_ms"] = round(wall_ms(fn, 20), 3)
        row[f"{label}_profiled_wall_ms"], row[f"{label}_kernels_ms"] = kernels_ms(fn)
    print(json.dumps(row), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*", help="NAME=PATH of trained water models")
    ap.add_argument("--natoms", type=int, default=98304)
    ap.add_argument("--data", default=".peer/data")
    ap.add_argument("--inputs", default=".peer/inputs")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    fresh = Path(tempfile.mkdtemp()) / "water_float32.dp"
    save_model(make_model(Path(args.inputs), "water", "float32"), fresh)
    models = [("fresh", str(fresh))] + [tuple(m.split("=")) for m in args.models]
    coord, box, atype = load_frame(Path(args.data), "water")
    frame = replicate(coord, box, atype, replicas_for(args.natoms, len(atype)))
    for _ in range(args.rounds):
        for name, path in models:
            measure(name, path, frame)


if __name__ == "__main__":
    main()
