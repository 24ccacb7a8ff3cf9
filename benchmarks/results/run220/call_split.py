"""Run 220: where a graphed whole `DeepPot.eval` call of one large water frame goes (issue 9): the call's wall time,
the replay alone (CUDA events), the host's share (cProfile of the calls), and the replay's kernels
(torch.profiler: the kernels of the graph, device ms a call).
Usage: python call_split.py PRECISION REPLICAS [profile]   (without "profile": the timings only)"""
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import DeepPot

PEER = Path(__file__).resolve().parents[3] / ".peer"
precision, reps = sys.argv[1], int(sys.argv[2])
coord, box, atype = load_frame(PEER / "data", "water")
c, b, t = replicate(coord, box, atype, reps)
pot = DeepPot(make_model(PEER / "inputs", "water", precision))
args = (c[None], b.reshape(1, 9), t)
for _ in range(3):
    pot.eval(*args)
gc = pot.graphed
print(f"water {precision} {len(t)} atoms: key {gc.captured.key[0]}, captures {gc.captures}, replays {gc.replays}")


def wall(fn, n=30):
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return np.median(times), min(times)


def replay_events(n=30):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(n):
        start.record()
        gc.captured.graph.replay()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return np.median(times), min(times)


def fmt(pair):
    return f"{pair[0]:.3f} ({pair[1]:.3f})"


for rnd in range(2):
    print("round", rnd, "eval", fmt(wall(lambda: pot.eval(*args))), "replay wall", fmt(wall(gc.captured.graph.replay)),
          "replay events", fmt(replay_events()))
if sys.argv[3:] != ["profile"]:
    sys.exit()
prof = cProfile.Profile()
prof.enable()
for _ in range(20):
    pot.eval(*args)
prof.disable()
pstats.Stats(prof).sort_stats("tottime").print_stats(25)
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as tp:
    for _ in range(5):
        pot.eval(*args)
    torch.cuda.synchronize()
kernels = sorted((e for e in tp.key_averages() if e.device_time_total > 0 and e.device_type.name == "CUDA"),
                 key=lambda e: e.device_time_total, reverse=True)
busy = sum(e.device_time_total for e in kernels) / 5e3
print(f"== device {busy:.2f} ms a call, {sum(e.count for e in kernels) / 5:.0f} kernels")
for e in kernels[:45]:
    print(f"{e.key[:100]:<100} {e.device_time_total / 5e3:8.3f} {e.count / 5:6.1f}")
tp.export_chrome_trace(f"/tmp/trace_{precision}_{reps}.json")
