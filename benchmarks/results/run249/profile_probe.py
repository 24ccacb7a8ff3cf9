"""Run 249: where a trained model's inference call goes, kernel by kernel (torch.profiler, CUDA time).

Usage (GPU, repository root): python profile_probe.py water=.mid/water/model.dp copper=... --natoms 98304
Prints, per model, the eval call's wall ms, the prebuilt-list call's wall ms, and the top kernels of the latter;
with --trace DIR, writes a Chrome trace (host and GPU) of two eval calls per model too.
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, replicas_for, replicate

from deeppot.infer import DeepPot


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def wall_ms(fn, n=10):
    fn()
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t) / n * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--natoms", type=int, default=98304)
    ap.add_argument("--data", default=".peer/data")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--trace", help="folder: write a Chrome trace (host and GPU) of two eval calls per model")
    args = ap.parse_args()
    for spec in args.models:
        profile_model(*spec.split("="), args)


def trace_eval(dp, c, b, t, path):
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(2):
            dp.eval(c[None], b.reshape(1, 9), t)
        sync()
    prof.export_chrome_trace(str(path))


def profile_model(system, path, args):
    coord, box, atype = load_frame(Path(args.data), system)
    c, b, t = replicate(coord, box, atype, replicas_for(args.natoms, len(atype)))
    dp = DeepPot(path, device=args.device)
    ev = dp.evaluator
    eval_ms = wall_ms(lambda: dp.eval(c[None], b.reshape(1, 9), t))
    ct = torch.as_tensor(c, device=args.device).reshape(1, -1, 3)
    tt = torch.as_tensor(t, device=args.device).reshape(1, -1)
    bt = torch.as_tensor(b, device=args.device).reshape(1, 3, 3)
    nl_ms = wall_ms(lambda: ev.neighbors(ct, tt, bt), 5)
    flat = ev.neighbors(ct, tt, bt)
    pre_ms = wall_ms(lambda: ev.evaluate_neighbors(flat))
    if args.trace:
        trace_eval(dp, c, b, t, Path(args.trace) / f"{system}_eval_trace.json")
    print(f"## {system} natoms {len(t)} products {ev.products}: eval {eval_ms:.2f} ms, nlist {nl_ms:.2f} ms, "
          f"prebuilt {pre_ms:.2f} ms", flush=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            ev.evaluate_neighbors(flat)
        sync()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=args.top, max_name_column_width=70),
          flush=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            ev.neighbors(ct, tt, bt)
        sync()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=70),
          flush=True)


if __name__ == "__main__":
    main()
