"""Run 213: `DeepPot.eval` of one water frame of the sizes given (replicas of the 192-atom cell), graphed (the
default) and eager (graph=False), for the tree on PYTHONPATH (run once per tree, alternating): median and min ms of
100 calls, NumPy in and out, the captures and replays. Usage: python stage_calls.py LABEL REPLICAS..."""
import functools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import DeepPot

PEER = Path(__file__).resolve().parents[3] / ".peer"


def timed(fn, n=100):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return np.median(times), min(times)


coord, box, atype = load_frame(PEER / "data", "water")
for precision in ("float32", "float64"):
    model = make_model(PEER / "inputs", "water", precision)
    pots = {"graphed": DeepPot(model), "eager": DeepPot(model, graph=False)}
    for reps in [int(r) for r in sys.argv[2:]]:
        c, b, t = replicate(coord, box, atype, reps)
        calls = {name: functools.partial(pot.eval, c[None], b.reshape(1, 9), t) for name, pot in pots.items()}
        for call in calls.values():
            for _ in range(3):
                call()
        rows = {name: timed(call) for name, call in calls.items()}
        e = {name: float(call()[0][0, 0]) for name, call in calls.items()}
        g = pots["graphed"].graphed
        print(f"{sys.argv[1]} water {precision} {len(t)} atoms: graphed median {rows['graphed'][0]:.3f} ms (min "
              f"{rows['graphed'][1]:.3f}), eager {rows['eager'][0]:.3f} ({rows['eager'][1]:.3f}); captures "
              f"{g.captures} replays {g.replays} staged {getattr(g, 'staged', '-')}; energy graphed {e['graphed']:.8f} "
              f"eager {e['eager']:.8f}", flush=True)
