"""Run 235: the atom tiles taking the centres sorted by type and reach (`deeppot.kernels.reach.centre_order`)
against taking them as they come (issue 9).
A: the pair stage's kernels alone (reach, shared rows, T with its tail, dE/dr_ij) on a water frame replicated to
   98,304 atoms, float32 (f16x3) and float64, ms (`compress_bench.timed`), and the reach alone.
B: whole graphed `DeepPot.eval` calls, one `DeepPot` captured with the order and one without, calls alternating
   (median ms of 60, or 20 for the largest), and the largest force difference between the two.
Ran on this session's tree with `order.patch` applied (the change measured; not kept, so not in the repository:
the patch reconstructs its code, docstrings shortened). Usage: python order_probe.py"""
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from compress_bench import timed
from infer_bench import load_frame, make_model, replicate

from deeppot.infer import DeepPot, Evaluator
from deeppot.kernels import atom_tiles
from deeppot.kernels import reach as reach_mod

PEER = Path(__file__).resolve().parents[3] / ".peer"
DEV = torch.device("cuda")
coord0, box0, atype0 = load_frame(PEER / "data", "water")


def water(reps):
    c, b, t = replicate(coord0, box0, atype0, reps)
    return c[None], b.reshape(1, 9), t


def kernels_alone(precision):
    ev = Evaluator(make_model(PEER / "inputs", "water", precision), DEV)
    c, b, t = water(8)
    flat = ev.neighbors(torch.from_numpy(c).to(DEV), torch.from_numpy(t)[None].to(DEV),
                        torch.from_numpy(b.reshape(1, 3, 3)).to(DEV))
    d = ev.model.descriptor
    rij = flat.pair_vectors(0, flat.ncentre, ev.model.rcut).to(d.dtype)
    ct, nt = flat.center_type, flat.neighbor_owner_and_type(0, flat.ncentre)[1]
    t_bar = torch.randn(flat.ncentre, 4, d.neuron[-1], dtype=d.dtype, device=DEV)
    products = "f16x3" if precision == "float32" else "ieee"
    for ordered in (False, True, False, True):
        reach_mod.ORDER_MIN_CENTRES = 0 if ordered else 10**9

        def stage():
            reach = reach_mod.find_reach(d, ct, nt, True)
            shared = atom_tiles.shared_rows(d, rij, ct, reach, products)
            t = atom_tiles.descriptor_t(d, rij, ct, products, reach, **shared)
            return t, atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, products, reach, **shared)

        ms = timed(stage, torch.cuda.synchronize)
        reach_ms = timed(lambda: reach_mod.find_reach(d, ct, nt, True), torch.cuda.synchronize)
        t, g = stage()
        walked = reach_mod.tile_tops(d, reach_mod.find_reach(d, ct, nt, True), ct, 4, 0).sum().item()
        print(f"A {precision} ordered={ordered}: stage {ms:.3f} ms, reach {reach_ms:.3f} ms, tops sum {walked}, "
              f"T sum {t.double().abs().sum().item():.6e}, grad sum {g.double().abs().sum().item():.6e}", flush=True)


def whole_calls(precision, reps, calls):
    args = water(reps)
    pots = {}
    for ordered in (False, True):
        reach_mod.ORDER_MIN_CENTRES = 0 if ordered else 10**9
        pots[ordered] = DeepPot(make_model(PEER / "inputs", "water", precision))
        for _ in range(4):
            pots[ordered].eval(*args)
    times = {False: [], True: []}
    for _ in range(calls):
        for ordered in (False, True):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            pots[ordered].eval(*args)
            times[ordered].append((time.perf_counter() - t0) * 1e3)
    f = [pots[o].eval(*args)[1] for o in (False, True)]
    print(f"B {precision} {len(args[2])} atoms: plain {np.median(times[False]):.3f} ms, ordered "
          f"{np.median(times[True]):.3f} ms, largest force difference {np.abs(f[0] - f[1]).max():.3e} "
          f"(largest force {np.abs(f[0]).max():.3e}); captures {pots[False].graphed.captures} / "
          f"{pots[True].graphed.captures}", flush=True)


kernels_alone("float32")
kernels_alone("float64")
whole_calls("float32", 2, 60)
whole_calls("float32", 4, 60)
whole_calls("float32", 8, 20)
whole_calls("float64", 8, 6)
whole_calls("float32", 4, 60)
whole_calls("float32", 8, 20)
