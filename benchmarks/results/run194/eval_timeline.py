"""Run 194: where a whole `DeepPot.eval` call of 98,304 water atoms goes (NumPy in and out, the list built in the
call): 32-33 ms float32 in run 193 against ~11 ms for the list and ~13.5 ms for the evaluation of prebuilt data.
Under torch.profiler: wall, kernel time by name, GPU idle gaps with the CPU ops meanwhile, and the top CPU ops.
Usage: python eval_timeline.py OUT_DIR [float32|float64]"""
import collections
import itertools
import json
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import DeepPot
from deeppot.io import save_model

data, inputs, out = Path(".peer/data"), Path(".peer/inputs"), Path(sys.argv[1])
precision = sys.argv[2] if len(sys.argv) > 2 else "float32"
coord, box, atype = load_frame(data, "water")
c, b, t = replicate(coord, box, atype, 8)
path = out / f"water_{precision}.dp"
save_model(make_model(inputs, "water", precision), path)
dp = DeepPot(str(path))
cc, bb = c[None], b.reshape(1, 9)
for _ in range(3):
    dp.eval(cc, bb, t)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(3):
        with record_function("eval_call"):
            dp.eval(cc, bb, t)
            torch.cuda.synchronize()
trace = out / "trace.json"
prof.export_chrome_trace(str(trace))
events = json.loads(trace.read_text())["traceEvents"]
trace.unlink()
path.unlink()
kernels = sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"])
cpu = sorted((e for e in events if e.get("cat") == "cpu_op" and "dur" in e), key=lambda e: e["ts"])
span = [e for e in events if e.get("name") == "eval_call" and e.get("cat") == "user_annotation"][-1]
t0, t1 = span["ts"], span["ts"] + span["dur"]
ks = [k for k in kernels if t0 <= k["ts"] <= t1]
by, count = collections.Counter(), collections.Counter()
for k in ks:
    by[k["name"][:70]] += k["dur"]
    count[k["name"][:70]] += 1
print(f"== water {precision} {len(t)} atoms: wall {span['dur'] / 1e3:.3f} ms, kernels "
      f"{sum(k['dur'] for k in ks) / 1e3:.3f} ms in {len(ks)}, before the first {(ks[0]['ts'] - t0) / 1e3:.3f}, "
      f"after the last {(t1 - ks[-1]['ts'] - ks[-1]['dur']) / 1e3:.3f}")
for name, us in by.most_common(22):
    print(f"   {us / 1e3:8.3f} ms {count[name]:4d}x  {name}")
gaps = []
for a, bk in itertools.pairwise(ks):
    gap = bk["ts"] - (a["ts"] + a["dur"])
    if gap > 15:
        during = [e["name"][:40] for e in cpu if a["ts"] + a["dur"] - 50 <= e["ts"] <= bk["ts"]][:6]
        gaps.append((gap, a["name"][:40], bk["name"][:40], during))
print(f"   gaps > 15 us: {len(gaps)}, {sum(g[0] for g in gaps) / 1e3:.3f} ms")
for gap, before, after, during in sorted(gaps, reverse=True)[:16]:
    print(f"   {gap:8.1f} us  {before} -> {after} | {during}")
top = collections.Counter()
for e in cpu:
    if t0 <= e["ts"] <= t1:
        top[e["name"][:50]] += e["dur"]
print("   CPU ops by total time (nested ops counted in their parents too):")
for name, us in top.most_common(15):
    print(f"   {us / 1e3:8.3f} ms  {name}")
