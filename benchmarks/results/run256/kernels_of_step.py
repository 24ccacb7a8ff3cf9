"""One profiled training step's kernels in launch order: duration, grid, and the innermost operator that launched
each (run 256; reads the Chrome trace `train_bench.py --profile` writes; `python kernels_of_step.py TRACE STEPS`)."""

import bisect
import json
import sys

with open(sys.argv[1]) as f:
    events = json.load(f)["traceEvents"]
steps = int(sys.argv[2])
kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
runtime = {e["args"].get("correlation"): e for e in events if e.get("cat") == "cuda_runtime"}
ops = sorted((e for e in events if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
starts = [e["ts"] for e in ops]


def owner(launch):
    """The shortest cpu_op on the launching thread that contains the launch."""
    best = None
    i = bisect.bisect_right(starts, launch["ts"])
    for e in reversed(ops[max(0, i - 400):i]):
        inside = e["tid"] == launch["tid"] and e["ts"] + e["dur"] >= launch["ts"]
        if inside and (best is None or e["dur"] < best["dur"]):
            best = e
    return best["name"] if best else "?"


per_step = len(kernels) // steps
last = kernels[-per_step:]
total = 0.0
for k in last:
    launch = runtime.get(k["args"].get("correlation"))
    total += k["dur"]
    grid = str(k["args"].get("grid"))
    print(f"{k['dur']:7.2f} us  {grid:>16}  {k['name'][:58]:<58}  {owner(launch) if launch else '?'}")
span = last[-1]["ts"] + last[-1]["dur"] - last[0]["ts"]
print(f"{per_step} kernels, {total:.1f} us of kernel time, span {span:.1f} us")
