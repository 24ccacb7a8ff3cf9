"""Run 197: every host sync of a whole `DeepPot.eval` call (98,304 water atoms, NumPy in and out, the list built
in the call), found with torch.cuda.set_sync_debug_mode("warn"), each with the deeppot line that caused it; then the
call's phases timed one by one (synchronised): input checks, copies in, frame batches, list build, flat data,
evaluation, copies out.
Usage: python sync_probe.py OUT_DIR [float32|float64] [REPLICAS]"""
import collections
import itertools
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import DeepPot
from deeppot.infer.deep_pot import standard_input
from deeppot.io import save_model

data, inputs, out = Path(".peer/data"), Path(".peer/inputs"), Path(sys.argv[1])
precision = sys.argv[2] if len(sys.argv) > 2 else "float32"
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 8
coord, box, atype = load_frame(data, "water")
c, b, t = replicate(coord, box, atype, reps)
path = out / f"water_{precision}.dp"
save_model(make_model(inputs, "water", precision), path)
dp = DeepPot(str(path))
path.unlink()
cc, bb = c[None], b.reshape(1, 9)
for _ in range(3):
    dp.eval(cc, bb, t)
torch.cuda.synchronize()

sites = collections.Counter()


def record(message, category, filename, lineno, file=None, line=None):
    frames = [f for f in traceback.extract_stack()[:-1] if "deeppot" in f.filename and "warnings" not in f.filename]
    key = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames[-3:]))
    sites[(str(message)[:60], key)] += 1


warnings.showwarning = record
with warnings.catch_warnings():
    warnings.simplefilter("always")
    warnings.showwarning = record
    torch.cuda.set_sync_debug_mode("warn")
    dp.eval(cc, bb, t)
    torch.cuda.set_sync_debug_mode(0)
print(f"== water {precision} {len(t)} atoms: {sum(sites.values())} syncs in one DeepPot.eval call")
for (msg, key), n in sorted(sites.items(), key=lambda kv: -kv[1]):
    print(f"  {n:3d}x  {msg:40s} | {key}")


def phases():
    ev = dp.evaluator
    marks = [("start", time.perf_counter())]

    def mark(name):
        torch.cuda.synchronize()
        marks.append((name, time.perf_counter()))

    coord_, atype_, box_ = standard_input(cc, bb, t, dp.get_ntypes())
    mark("standard_input")
    dev = ev.device
    xc, xt, xb = (torch.from_numpy(a).to(dev) for a in (coord_, atype_, box_))
    mark("copies in")
    parts = ev.frame_batches(xc, xb)
    mark("frame_batches")
    with torch.no_grad():
        from deeppot.nlist import build_neighbor_data
        nd = build_neighbor_data(xc, xt, xb, ev.model.rcut, ev.model.sel)
    mark("build_neighbor_data")
    from deeppot.infer.evaluate import FlatNeighbors
    flat = FlatNeighbors.from_frames(nd.ext_coord, nd.ext_atype, nd.nlist, nd.mapping)
    mark("FlatNeighbors")
    o = ev.evaluate_neighbors(flat)
    mark("evaluate_neighbors (type rows made)")
    res = [o["energy"].reshape(1, 1), o["force"], o["virial"]]
    res = tuple(r.cpu().numpy() for r in res)
    mark("copies out")
    assert len(parts) == 1
    return [(n, (t1 - t0) * 1e3) for (_, t0), (n, t1) in itertools.pairwise(marks)]


rows = [phases() for _ in range(5)]
print("== phases, ms (synchronised after each; 5 calls, median):")
for i, (name, _) in enumerate(rows[0]):
    print(f"  {np.median([r[i][1] for r in rows]):8.3f}  {name}")
print(f"  {np.median([sum(x for _, x in r) for r in rows]):8.3f}  total")
w = []
for _ in range(10):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    dp.eval(cc, bb, t)
    w.append((time.perf_counter() - t0) * 1e3)
print(f"== whole calls, ms: median {np.median(w):.3f}, min {min(w):.3f}")
