"""Run 83+: where one 98,304-atom evaluation spends its time, stage by stage (issues 9, 10).

Each stage function is wrapped by a timer that synchronises before and after, so nested stages count inside
their parents. Water (and copper) supercells of the benchmark frame, fresh weights, prebuilt list.
Usage: PYTHONPATH=$PWD:$PWD/benchmarks python3 stages.py OUT_JSONL [system:precision[:compressed] ...]
"""
import functools
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from infer_bench import frame_min_dist, load_frame, make_model, replicate

import deeppot.infer.evaluate as evaluate
import deeppot.kernels.atom_tiles as atom_tiles
import deeppot.kernels.compressed as compressed
import deeppot.kernels.descriptor as descriptor
from deeppot.infer import Evaluator
from deeppot.io.compress import compress_model
from deeppot.model import analytic

TIMES = defaultdict(float)


def timer(name, fn):
    @functools.wraps(fn)
    def wrapped(*a, **k):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn(*a, **k)
        torch.cuda.synchronize()
        TIMES[name] += time.perf_counter() - t0
        return out
    return wrapped


def patch(module, name, label=None):
    if hasattr(module, name):
        setattr(module, name, timer(label or name, getattr(module, name)))


for cls_name in ("pair_vectors", "neighbor_owner_and_type"):
    patch(evaluate.FlatNeighbors, cls_name)
for name in ("find_reach", "excluded_as_padding", "energy_and_t_bar", "descriptor_t", "pair_grad_from_t_bar"):
    patch(descriptor, name)
for name in ("compressed_descriptor_t", "compressed_pair_grad"):
    patch(compressed, name)
for mod in (atom_tiles, compressed, descriptor):
    patch(mod, "add_tail", "add_tail")
    patch(mod, "tile_tops", "tile_tops")
for name in ("descriptor_from_t", "atomic_energy_and_grad", "t_bar_from_desc_grad", "fit_with_input_grad"):
    patch(analytic, name)
try:  # the kernels of run 84 (absent from older trees)
    import deeppot.kernels.descriptor_matrix as descriptor_matrix
    import deeppot.kernels.pairs as pairs
    patch(pairs, "pair_data")
    for name in ("descriptor_from_t", "t_bar_from_desc_grad"):
        patch(descriptor_matrix, name, "matrix_" + name)
except ImportError:
    pass

data, inputs, out = Path(".peer/data"), Path(".peer/inputs"), Path(sys.argv[1])
cases = sys.argv[2:] or ["water:float32", "water:float32:compressed", "water:float64"]
for case in cases:
    system, precision, *rest = case.split(":")
    model = make_model(inputs, system, precision)
    if rest:
        model.min_nbor_dist.fill_(frame_min_dist(data, system))
        model = compress_model(model)
    ev = Evaluator(model, "cuda")
    ev.scatter = timer("scatter", ev.scatter)
    coord, box, atype = load_frame(data, system)
    c, b, t = replicate(coord, box, atype, 8 if system == "water" else 10)
    natoms = len(t)
    dev = ev.device
    ct = torch.as_tensor(c, dtype=torch.float64, device=dev).reshape(1, natoms, 3)
    tt = torch.as_tensor(t, dtype=torch.int64, device=dev).reshape(1, natoms)
    bt = torch.as_tensor(b, dtype=torch.float64, device=dev).reshape(1, 3, 3)
    flat = ev.neighbors(ct, tt, bt)
    whole = timer("whole", ev.evaluate_neighbors)
    for _ in range(2):
        ev.evaluate_neighbors(flat)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        ev.evaluate_neighbors(flat)
    torch.cuda.synchronize()
    plain_ms = (time.perf_counter() - t0) / 5e-3
    TIMES.clear()
    for _ in range(5):
        res = whole(flat)
    row = {"case": f"{case}:{natoms}", "plain_ms": round(plain_ms, 3), "e": float(res["energy"][0]) / natoms,
           **{k + "_ms": round(v / 5e-3, 3) for k, v in TIMES.items()}}
    print(json.dumps(row), flush=True)
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")
