"""Run 209: the cell list's evaluation list two ways in one process, alternating: "rows" (run 198's way, the
candidate rows of `build_candidates(ascending=False)`, then the selection kernel) against "walk" (`cell_neighbors`,
the selection in the bins' walk, `cell_pairs.select_pairs`); synchronised wall ms (median, min of 30) and the GPU's
kernel time of one build (torch.profiler, CUDA time summed over kernels, and the launch count); then whole
`DeepPot.eval` calls with either list (water float32, median, min of 30). Usage: python list_ab.py [REPLICAS...]"""
import functools
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import DeepPot, candidates
from deeppot.nlist.cell_list import build_candidates

PEER = Path(__file__).resolve().parents[3] / ".peer"
walk = candidates.cell_neighbors


def rows(coord, atype, box, rcut, sel, host_box=None):
    ext_coord, ext_atype, mapping, cand = build_candidates(coord, atype, box, rcut, ascending=False)
    nlist, over = candidates.unsorted_selection(coord.device)(ext_coord, ext_atype, cand,
                                                              candidates.candidate_types(ext_atype, cand), rcut, sel)
    return ext_coord, ext_atype, mapping, nlist, over


def timed(fn, n=30):
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return np.median(times), min(times)


def kernel_time(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
    return sum(e.self_device_time_total for e in events) / 1e3, sum(e.count for e in events)


coord, box, atype = load_frame(PEER / "data", "water")
model = make_model(PEER / "inputs", "water", "float32")
ways = {"rows": rows, "walk": walk}
for reps in [int(r) for r in sys.argv[1:]] or [4, 8]:
    c, b, t = replicate(coord, box, atype, reps)
    dc, dt = torch.tensor(c[None], device="cuda"), torch.tensor(t[None], device="cuda")
    hb = torch.tensor(b.reshape(1, 3, 3))
    db = hb.cuda()
    outs = {name: way(dc, dt, db, 6.0, [46, 92], hb) for name, way in ways.items()}
    same = all(torch.equal(x, y) for x, y in zip(outs["rows"][:4], outs["walk"][:4], strict=True))
    builds = {name: functools.partial(way, dc, dt, db, 6.0, [46, 92], hb) for name, way in ways.items()}
    res = {name: [] for name in ways}
    for _ in range(3):  # rounds, alternating
        for name, build in builds.items():
            res[name].append(timed(build))
    for name, build in builds.items():
        ms, launches = kernel_time(build)
        print(f"{len(t):7d} atoms list {name:5s} " + ", ".join(f"{m:.3f} ({lo:.3f})" for m, lo in res[name])
              + f" ms; kernels {ms:.3f} ms in {launches} launches; equal lists {same}", flush=True)
    pot = DeepPot(model)
    call = functools.partial(pot.eval, c[None], b.reshape(1, 9), t)
    calls = {name: [] for name in ways}
    for _ in range(3):
        for name, way in ways.items():
            candidates.cell_neighbors = way
            call()
            calls[name].append(timed(call, 20))
    candidates.cell_neighbors = walk
    for name in ways:
        print(f"{len(t):7d} atoms DeepPot.eval with {name:5s} "
              + ", ".join(f"{m:.3f} ({lo:.3f})" for m, lo in calls[name]) + " ms", flush=True)
