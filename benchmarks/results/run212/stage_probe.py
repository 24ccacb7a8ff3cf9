"""Run 212: how a mid-size `DeepPot.eval` call divides, and what a CUDA graph of its evaluation stage would save:
per water size, synchronised wall ms (median, min of 20) of the whole call (NumPy in and out), the list
(`Evaluator.host_neighbors`, host inputs as the call gives them), the evaluation of that list eagerly
(`evaluate_neighbors`) and replayed (`GraphedEvaluation`, the copy of the list into its buffers included).
Usage: python stage_probe.py [float32|float64] [REPLICAS...]"""
import functools
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import DeepPot
from deeppot.infer.graph import GraphedEvaluation

PEER = Path(__file__).resolve().parents[3] / ".peer"


def timed(fn, n=20):
    fn()
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return f"{np.median(times):.3f} ({min(times):.3f})"


precision = sys.argv[1] if len(sys.argv) > 1 else "float32"
coord, box, atype = load_frame(PEER / "data", "water")
pot = DeepPot(make_model(PEER / "inputs", "water", precision), graph=False)
ev = pot.evaluator
for reps in [int(r) for r in sys.argv[2:]] or [2, 4, 8]:
    c, b, t = replicate(coord, box, atype, reps)
    host = torch.tensor(c[None]), torch.tensor(t[None]), torch.tensor(b.reshape(1, 3, 3))
    flat = ev.host_neighbors(*host)
    graphed = GraphedEvaluation(ev)
    graphed(flat)
    rows = {"whole call": timed(functools.partial(pot.eval, c[None], b.reshape(1, 9), t)),
            "list": timed(functools.partial(ev.host_neighbors, *host)),
            "evaluation eager": timed(functools.partial(ev.evaluate_neighbors, flat)),
            "evaluation replayed": timed(functools.partial(graphed, flat))}
    print(f"water {precision} {len(t)} atoms: " + "; ".join(f"{k} {v}" for k, v in rows.items())
          + f"; captures {graphed.captures}", flush=True)
