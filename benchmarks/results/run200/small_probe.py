"""Run 200: `DeepPot.eval` on small water systems with the whole call replayed from a CUDA graph (graph=True, the
default) against the eager call (graph=False), in one process, alternating: median and min ms of 300 calls each,
NumPy in and out. Usage: python small_probe.py"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model

from deeppot.infer import DeepPot

coord, box, atype = load_frame(Path(".peer/data"), "water")
for precision in ("float32", "float64"):
    model = make_model(Path(".peer/inputs"), "water", precision)
    pots = {"graphed": DeepPot(model), "eager": DeepPot(model, graph=False)}
    for nf in (1, 4):
        cc, bb = np.repeat(coord[None], nf, 0), np.repeat(box.reshape(1, 9), nf, 0)
        times = {k: [] for k in pots}
        for _ in range(3):
            for pot in pots.values():
                pot.eval(cc, bb, atype)
        for _ in range(300):
            for name, pot in pots.items():
                t0 = time.perf_counter()
                pot.eval(cc, bb, atype)
                times[name].append((time.perf_counter() - t0) * 1e3)
        e = {k: float(p.eval(cc, bb, atype)[0][0, 0]) for k, p in pots.items()}
        for name, ts in times.items():
            print(f"water {precision} {nf} x {len(atype)} atoms {name:8s} median {np.median(ts):6.3f} ms, min "
                  f"{min(ts):6.3f}, energy {e[name]:.10f}, captures {getattr(pots[name].graphed, 'captures', '-')}, "
                  f"replays {getattr(pots[name].graphed, 'replays', '-')}")
