"""Run 207: where a small `DeepPot.eval` call's time goes, for the tree on PYTHONPATH (run once per tree, alternating):
the whole call (graphed, the default; and eager, graph=False), median and min ms of 400 calls, NumPy in and out;
the captured graph's replay alone (CUDA events around 200 replays: the GPU's share); the replay of the evaluation
alone on a prebuilt list (`GraphedEvaluation`), so the list's share is the difference. With --profile, the eager
call's kernels (torch.profiler, CUDA time by kernel name). Usage: python small_probe.py LABEL [--profile]"""
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, make_model

from deeppot.infer import DeepPot

LABEL = sys.argv[1]


def timed(fn, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return np.median(times), min(times)


def replay_ms(graph, n=200):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    start.record()
    for _ in range(n):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / n


def evaluation_replay_ms(pot, cc, bb, atype):
    from deeppot.infer.graph import GraphedEvaluation

    ev = pot.evaluator
    flat = ev.neighbors(*(torch.as_tensor(x).to(ev.device) for x in (cc, atype[None].repeat(len(cc), 0),
                                                                      bb.reshape(-1, 3, 3))))
    graphed = GraphedEvaluation(ev)
    graphed(flat)
    graphed(flat)
    return replay_ms(graphed.captured.graph)


PEER = Path(__file__).resolve().parents[3] / ".peer"
coord, box, atype = load_frame(PEER / "data", "water")
for precision in ("float32", "float64"):
    model = make_model(PEER / "inputs", "water", precision)
    pots = {"graphed": DeepPot(model), "eager": DeepPot(model, graph=False)}
    for nf in (1, 4):
        cc, bb = np.repeat(coord[None], nf, 0), np.repeat(box.reshape(1, 9), nf, 0)
        for pot in pots.values():
            for _ in range(3):
                pot.eval(cc, bb, atype)
        rows = {name: timed(lambda p=pot, c=cc, b=bb: p.eval(c, b, atype), 400) for name, pot in pots.items()}
        g = pots["graphed"].graphed
        e = {k: float(p.eval(cc, bb, atype)[0][0, 0]) for k, p in pots.items()}
        print(f"{LABEL} water {precision} {nf} x {len(atype)}: graphed median {rows['graphed'][0]:.3f} ms (min "
              f"{rows['graphed'][1]:.3f}), eager {rows['eager'][0]:.3f} ({rows['eager'][1]:.3f}); replay alone "
              f"{replay_ms(g.captured.graph):.3f} ms, evaluation replay alone "
              f"{evaluation_replay_ms(pots['eager'], cc, bb, atype):.3f} ms; captures {g.captures} replays "
              f"{g.replays}; energy graphed {e['graphed']:.10f} eager {e['eager']:.10f}", flush=True)
if "--profile" in sys.argv:
    from torch.profiler import ProfilerActivity, profile

    model = make_model(PEER / "inputs", "water", "float32")
    pot = DeepPot(model, graph=False)
    cc, bb = coord[None], box.reshape(1, 9)
    for _ in range(3):
        pot.eval(cc, bb, atype)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            pot.eval(cc, bb, atype)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=40, max_name_column_width=70))
