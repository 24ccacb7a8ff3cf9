"""Run 182: water calls on a prebuilt list, eager (each net on its own type's atoms, lists kept by the neighbour
data) against replays of a CUDA graph with the fitting nets every net on every atom ("sync_free") or by type
("by_type"); sizes from 192 to 98,304 atoms, float32 (compressed too) and float64. ms a call: median and min of
synchronised calls over ~0.4 s, the variants interleaved in three rounds (issue 9: where graphs and lists pay).
Usage: python graph_by_type.py [SIZES...]"""
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import frame_min_dist, load_frame, make_model, replicate

from deeppot.infer import DeepPot
from deeppot.infer import graph as graph_module
from deeppot.infer.graph import GraphedEvaluation
from deeppot.io.compress import compress_model

data, inputs = Path(".peer/data"), Path(".peer/inputs")
sizes = [int(s) for s in sys.argv[1:]] or [192, 1536, 12288, 98304]
coord, box, atype = load_frame(data, "water")


def timed(fn, seconds=0.4):
    fn()
    torch.cuda.synchronize()
    times, t_end = [], time.perf_counter() + seconds
    while time.perf_counter() < t_end or len(times) < 5:
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times)), 1e3 * float(np.min(times))


for precision, compressed in [("float32", False), ("float32", True), ("float64", False)]:
    model = make_model(inputs, "water", precision)
    if compressed:
        model.min_nbor_dist.fill_(frame_min_dist(data, "water"))
        model = compress_model(model)
    dp = DeepPot(model)
    ev = dp.evaluator
    for natoms in sizes:
        reps = round((natoms / len(atype)) ** (1 / 3))
        c, b, t = replicate(coord, box, atype, reps)
        n = len(t)
        flat = ev.neighbors(torch.as_tensor(c, device=ev.device).reshape(1, n, 3),
                            torch.as_tensor(t, device=ev.device).reshape(1, n),
                            torch.as_tensor(b, device=ev.device).reshape(1, 3, 3))
        variants = {"eager": lambda ev=ev, flat=flat: ev.evaluate_neighbors(flat)}
        for name, limit in (("sync_free", 10**9), ("by_type", 0)):
            graph_module.BY_TYPE_MIN_CENTRES = limit
            g = GraphedEvaluation(ev)
            g(flat)
            variants[name] = (lambda g=g, flat=flat: g(flat))
        ref = {k: v.clone() for k, v in ev.evaluate_neighbors(flat).items()}
        for name, fn in variants.items():
            out = fn()
            err = float((out["force"] - ref["force"]).abs().max() / ref["force"].abs().max())
            assert err < (1e-4 if precision == "float32" else 1e-10), (name, err)
        rounds = {name: [] for name in variants}
        for _ in range(3):
            for name, fn in variants.items():
                rounds[name].append(timed(fn))
        for name, r in rounds.items():
            med = [round(x[0], 4) for x in r]
            print(json.dumps({"case": f"water:{precision}:{n}" + (":compressed" if compressed else ""),
                              "variant": name, "ms_median": med, "ms_min": [round(x[1], 4) for x in r],
                              "atom_steps_per_s": round(n / (min(med) / 1e3)),
                              "gpu": torch.cuda.get_device_name()}), flush=True)
        variants = ref = None
        torch.cuda.empty_cache()
