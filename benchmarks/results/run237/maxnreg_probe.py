"""Run 237: the float32 (f16x3) atom-tile kernels alone on 98,304 atoms of compress_bench.py's water-like box (run
236's harness) with ptxas's register cap (`maxnreg`) at a few values: below 171 registers a thread, three 4-warp
programs fit on a multiprocessor instead of two (ptxas on the CPU: T at 168 spills 404 B, the gradient 1,232 B).
One JSON line per kernel and cap, with the largest deviation from the uncapped output.
    PYTHONPATH=$TREE:$TREE/benchmarks python maxnreg_probe.py"""
import json
from functools import partial

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles
from deeppot.kernels.precision import float32_products
from deeppot.kernels.reach import find_reach

CAPS = [None, 232, 200, 168, 128]

torch.set_grad_enabled(False)
torch.manual_seed(0)
ev, flat, rij, t_bar = box_pairs(model_pair("float32")[0], 98304, torch.device("cuda"))
d, ct = ev.model.descriptor, flat.center_type
products = float32_products(ev.model, rij.device)
reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
sync = torch.cuda.synchronize
tiled_args = atom_tiles._tiled_args
cap = {"value": None}


def capped_args(*args, **kwargs):
    tensors, meta, tops = tiled_args(*args, **kwargs)
    if cap["value"] is not None:
        meta["maxnreg"] = cap["value"]
    return tensors, meta, tops


atom_tiles._tiled_args = capped_args


def t_call(rows):
    return atom_tiles.descriptor_t(d, rij, ct, products, reach, rows)


def grad_call(rows, spare):
    return atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, products, reach, spare.copy_(rows))


rows = atom_tiles.shared_rows(d, rij, ct, reach, products)["rows"]
spare = rows.clone()
reference = {"t": t_call(rows), "grad": grad_call(rows, spare)}
copy_ms = timed(lambda: spare.copy_(rows), sync)
for rnd in (1, 2):
    for value in CAPS:
        for kernel in ("t", "grad"):
            cap["value"] = value
            row = {"round": rnd, "kernel": kernel, "maxnreg": value}
            try:
                rows = atom_tiles.shared_rows(d, rij, ct, reach, products)["rows"]
                spare = rows.clone()
                call = partial(t_call, rows) if kernel == "t" else partial(grad_call, rows, spare)
                out = call()
                row["dev"] = float((out - reference[kernel]).abs().max() / reference[kernel].abs().max())
                row["ms"] = round(timed(call, sync) - (copy_ms if kernel == "grad" else 0.0), 3)
            except Exception as err:
                row["error"] = f"{type(err).__name__}: {str(err)[-300:]}"
            finally:
                cap["value"] = None
            print(json.dumps(row), flush=True)
