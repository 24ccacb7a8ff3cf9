"""Run 208: the evaluation's list (`evaluation_neighbors`, the box given on the host as `DeepPot.eval` gives it) of
water supercells, for the tree on PYTHONPATH: synchronised wall times, ms, median and min of 20 calls.
Usage: python list_probe.py LABEL [REPLICAS...]"""
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, replicate

from deeppot.infer.candidates import evaluation_neighbors

PEER = Path(__file__).resolve().parents[3] / ".peer"
coord, box, atype = load_frame(PEER / "data", "water")
for reps in [int(r) for r in sys.argv[2:]] or [4, 8]:
    c, b, t = replicate(coord, box, atype, reps)
    dc, dt = torch.tensor(c[None], device="cuda"), torch.tensor(t[None], device="cuda")
    hb = torch.tensor(b.reshape(1, 3, 3))
    db = hb.cuda()
    for _ in range(3):
        nd = evaluation_neighbors(dc, dt, db, 6.0, [46, 92], host_box=hb)
    times = []
    for _ in range(20):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        evaluation_neighbors(dc, dt, db, 6.0, [46, 92], host_box=hb)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    print(f"{sys.argv[1]} {len(t):7d} atoms evaluation_neighbors {np.median(times):7.3f} ms (min {min(times):.3f}); "
          f"{int((nd.nlist >= 0).sum())} neighbours, nall {nd.ext_coord.shape[1]}")
