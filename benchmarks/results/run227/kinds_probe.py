"""Run 227: which whole-call graph serves one small periodic water frame faster: "whole" (every periodic image
walked, every fitting net on every atom; the default under 4,096 atoms) or "cells" (the cell list of static sizes,
the default from 4,096 atoms on), forced by moving `graph.GRAPH_MAX_CENTRES` around each DeepPot's calls. One
process, the two alternating in blocks of 50 calls; median (min) ms of `DeepPot.eval`, energies of both.
Usage: python kinds_probe.py"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import DeepPot, graph

PEER = Path(__file__).resolve().parents[3] / ".peer"
LIMITS = {"whole": graph.GRAPH_MAX_CENTRES, "cells": 0}


def block(pot, args, kind, n=50):
    graph.GRAPH_MAX_CENTRES = LIMITS[kind]
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        pot.eval(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return times


coord, box, atype = load_frame(PEER / "data", "water")
for precision in ("float32", "float64"):
    model = make_model(PEER / "inputs", "water", precision)
    for reps in (1, 2, 3):
        c, b, t = replicate(coord, box, atype, reps)
        args = (c[None], b.reshape(1, 9), t)
        pots = {kind: DeepPot(model) for kind in LIMITS}
        times = {kind: [] for kind in LIMITS}
        for kind, pot in pots.items():
            block(pot, args, kind, n=5)  # capture
        for _ in range(4):
            for kind, pot in pots.items():
                times[kind] += block(pot, args, kind)
        energy = {}
        for kind, pot in pots.items():
            graph.GRAPH_MAX_CENTRES = LIMITS[kind]
            energy[kind] = float(pot.eval(*args)[0][0, 0])
        keys = {kind: pot.graphed.captured.key[0] for kind, pot in pots.items()}
        print(f"water {precision} {len(t)} atoms: " + "; ".join(
            f"{kind} ({keys[kind]}) {np.median(v):.3f} ({min(v):.3f}) ms, energy {energy[kind]:.8f}, "
            f"captures {pots[kind].graphed.captures}" for kind, v in times.items()), flush=True)
