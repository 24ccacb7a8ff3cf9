"""Run 180: where the wall time of a whole 98,304-atom water call goes beyond its kernels (issue 9). One
evaluate_neighbors call at a time, each synchronised, under torch.profiler; from its Chrome trace, per call: wall
(the annotation), kernel-busy time, the idle time before the first kernel, after the last, and the largest gaps
between kernels with the kernels and CPU ops around them.
Usage: python timeline.py OUT_DIR [float32|float64] [--compressed]"""
import itertools
import json
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import frame_min_dist, load_frame, make_model, replicate

from deeppot.infer import DeepPot
from deeppot.io import save_model
from deeppot.io.compress import compress_model

data, inputs, out = Path(".peer/data"), Path(".peer/inputs"), Path(sys.argv[1])
precision = sys.argv[2] if len(sys.argv) > 2 else "float32"
compressed = "--compressed" in sys.argv
coord, box, atype = load_frame(data, "water")
c, b, t = replicate(coord, box, atype, 8)
model = make_model(inputs, "water", precision)
if compressed:
    model.min_nbor_dist.fill_(frame_min_dist(data, "water"))
    model = compress_model(model)
path = out / f"water_{precision}_{compressed}.dp"
save_model(model, path)
dp = DeepPot(str(path))
natoms, dev = len(t), dp.evaluator.device
ct = torch.as_tensor(c, dtype=torch.float64, device=dev).reshape(1, natoms, 3)
tt = torch.as_tensor(t, dtype=torch.int64, device=dev).reshape(1, natoms)
bt = torch.as_tensor(b, dtype=torch.float64, device=dev).reshape(1, 3, 3)
flat = dp.evaluator.neighbors(ct, tt, bt)
for _ in range(5):
    dp.evaluator.evaluate_neighbors(flat)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(4):
        with record_function("whole_call"):
            dp.evaluator.evaluate_neighbors(flat)
            torch.cuda.synchronize()
trace = out / "trace.json"
prof.export_chrome_trace(str(trace))
events = json.loads(trace.read_text())["traceEvents"]
trace.unlink()
path.unlink()
calls = sorted((e for e in events if e.get("name") == "whole_call" and e.get("cat") == "user_annotation"),
               key=lambda e: e["ts"])
kernels = sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"])
cpu = sorted((e for e in events if e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver") and "dur" in e),
             key=lambda e: e["ts"])
tag = f"water {precision} compressed={compressed} {natoms}"
for call in calls:
    t0, t1 = call["ts"], call["ts"] + call["dur"]
    ks = [k for k in kernels if t0 <= k["ts"] <= t1]
    busy = sum(k["dur"] for k in ks)
    print(f"== {tag}: wall {call['dur'] / 1e3:.3f} ms, kernels {busy / 1e3:.3f} ms in {len(ks)}, before first "
          f"{(ks[0]['ts'] - t0) / 1e3:.3f}, after last {(t1 - ks[-1]['ts'] - ks[-1]['dur']) / 1e3:.3f}")
    gaps = []
    for a, bk in itertools.pairwise(ks):
        gap = bk["ts"] - (a["ts"] + a["dur"])
        if gap > 15:
            # the CPU ops that ran while the GPU waited (outermost ones, by name)
            during = [e["name"][:60] for e in cpu if a["ts"] + a["dur"] - 50 <= e["ts"] <= bk["ts"]
                      and e.get("cat") == "cpu_op"][:6]
            gaps.append((gap, a["name"][:50], bk["name"][:50], during))
    print(f"   gaps > 15 us: {len(gaps)}, total {sum(g[0] for g in gaps) / 1e3:.3f} ms")
    for gap, before, after, during in sorted(gaps, reverse=True)[:12]:
        print(f"   {gap:8.1f} us  {before} -> {after}  | {during}")
