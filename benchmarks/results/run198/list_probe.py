"""Run 198: the evaluation's list (`evaluation_neighbors`: the cell list's rows at rcut in candidate order, the
selection kernel) against DeePMD's sorted cell list (`build_neighbor_data(method="cell")`) in one process, and
the candidate build alone; synchronised wall times (ms, median of 15, alternating) of water supercells, the box
given on the host as `DeepPot.eval` gives it.
Usage: python list_probe.py [REPLICAS...]"""
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, replicate

from deeppot.infer.candidates import evaluation_neighbors
from deeppot.nlist import build_neighbor_data
from deeppot.nlist.cell_list import build_candidates

coord, box, atype = load_frame(Path(".peer/data"), "water")
for reps in [int(r) for r in sys.argv[1:]] or [4, 8]:
    c, b, t = replicate(coord, box, atype, reps)
    dc = torch.tensor(c[None], device="cuda")
    dt = torch.tensor(t[None], device="cuda")
    hb = torch.tensor(b.reshape(1, 3, 3))
    db = hb.cuda()
    cases = {
        "evaluation_neighbors": lambda: evaluation_neighbors(dc, dt, db, 6.0, [46, 92], host_box=hb),  # noqa: B023
        "build_neighbor_data(cell)": lambda: build_neighbor_data(dc, dt, db, 6.0, [46, 92], method="cell"),  # noqa: B023
        "build_candidates(rcut, unsorted)": lambda: build_candidates(dc, dt, db, 6.0, ascending=False),  # noqa: B023
    }
    times = {k: [] for k in cases}
    for _ in range(3):
        for f in cases.values():
            f()
    for _ in range(15):
        for name, f in cases.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            f()
            torch.cuda.synchronize()
            times[name].append((time.perf_counter() - t0) * 1e3)
    for name, ts in times.items():
        print(f"{len(t):7d} atoms  {name:34s} {np.median(ts):7.3f} ms (min {min(ts):.3f})")
