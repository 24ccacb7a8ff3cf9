"""Run 222: the host's steps of a graphed whole `DeepPot.eval` call of one water frame (issue 9): wall us a call
(median of 50 calls) of each step, timed by wrapping the functions that take them (those a tree lacks are left
out), the call as a whole, and the replay alone (CUDA events).
Usage: python call_steps.py PRECISION REPLICAS"""
import collections
import functools
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import DeepPot, deep_pot, graph

PEER = Path(__file__).resolve().parents[3] / ".peer"
spent = collections.defaultdict(list)


def timed(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name].append((time.perf_counter() - t0) * 1e6)
    return wrapper


deep_pot.standard_input = timed("standard_input", deep_pot.standard_input)
for name in ("key", "_host_rows", "_plan", "_held_plan"):
    if hasattr(graph.GraphedCall, name):
        setattr(graph.GraphedCall, name, timed(name, getattr(graph.GraphedCall, name)))
if hasattr(graph._CallGraph, "copy_in"):
    graph._CallGraph.copy_in = timed("copy_in", graph._CallGraph.copy_in)
torch.cuda.CUDAGraph.replay = timed("replay (launch)", torch.cuda.CUDAGraph.replay)
torch.Tensor.cpu = timed("outputs to the host (waits)", torch.Tensor.cpu)

precision, reps = sys.argv[1], int(sys.argv[2])
coord, box, atype = load_frame(PEER / "data", "water")
c, b, t = replicate(coord, box, atype, reps)
pot = DeepPot(make_model(PEER / "inputs", "water", precision))
args = (c[None], b.reshape(1, 9), t)
for _ in range(5):
    pot.eval(*args)
spent.clear()
calls = []
for _ in range(50):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    pot.eval(*args)
    calls.append((time.perf_counter() - t0) * 1e6)
steps = "; ".join(f"{k} {np.median(v):.0f}" for k, v in spent.items())
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
replays = []
for _ in range(20):
    start.record()
    pot.graphed.captured.graph.replay()
    stop.record()
    stop.synchronize()
    replays.append(start.elapsed_time(stop) * 1e3)
print(f"water {precision} {len(t)} atoms, us: call {np.median(calls):.0f}; replay's GPU time {np.median(replays):.0f}; "
      f"{steps}")
