"""Run 238: the float32 (f16x3) atom-tile kernels alone on 98,304 atoms of compress_bench.py's water-like box (run
167's harness), three rounds of the kept tile, on the tree in PYTHONPATH: old (a6179df) reads W2's and W3's float16
parts and rescales the sum of the low products before the high one joins it; mid chains the three products in units
of 2^-11 in both kernels; new (chain.patch) in T only. The outputs are saved under /tmp by tree tag; when another
tree's are there, the largest difference between the trees is printed.
    PYTHONPATH=$TREE:$TREE/benchmarks python parts_probe.py TAG"""
import json
import os
import sys
from functools import partial

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles
from deeppot.kernels.precision import float32_products
from deeppot.kernels.reach import find_reach

TAG = sys.argv[1]
CANDIDATES = [(4, 16, 4)]

torch.set_grad_enabled(False)
torch.manual_seed(0)
ev, flat, rij, t_bar = box_pairs(model_pair("float32")[0], 98304, torch.device("cuda"))
d, ct = ev.model.descriptor, flat.center_type
products = float32_products(ev.model, rij.device)
reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
tiles = atom_tiles.F16X3_TILES
kept = dict(tiles)
sync = torch.cuda.synchronize


def t_call(rows):
    return atom_tiles.descriptor_t(d, rij, ct, products, reach, rows)


def grad_call(rows, spare):
    return atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, products, reach, spare.copy_(rows))


rows = atom_tiles.shared_rows(d, rij, ct, reach, products)["rows"]
spare = rows.clone()
reference = {"t": t_call(rows), "grad": grad_call(rows, spare)}
for kernel, out in reference.items():
    torch.save(out.cpu(), f"/tmp/run238_{TAG}_{kernel}.pt")
    for other in sorted(os.listdir("/tmp")):
        if other.startswith("run238_") and other.endswith(f"_{kernel}.pt") and f"_{TAG}_" not in other:
            theirs = torch.load(f"/tmp/{other}")
            print(json.dumps({"tag": TAG, "kernel": kernel, "against": other,
                              "max_abs_diff": float((out.cpu() - theirs).abs().max()),
                              "max_abs": float(theirs.abs().max())}), flush=True)
copy_ms = timed(lambda: spare.copy_(rows), sync)
for tile in CANDIDATES * 3:
    for kernel in ("t", "grad"):
        tiles[kernel] = tile
        row = {"tag": TAG, "products": products, "kernel": kernel, "tile": tile}
        try:
            rows = atom_tiles.shared_rows(d, rij, ct, reach, products)["rows"]
            spare = rows.clone()
            call = partial(t_call, rows) if kernel == "t" else partial(grad_call, rows, spare)
            out = call()
            row["dev"] = float((out - reference[kernel]).abs().max() / reference[kernel].abs().max())
            row["ms"] = round(timed(call, sync) - (copy_ms if kernel == "grad" else 0.0), 3)
        except Exception as err:  # a tile that does not compile (shared memory, registers) is a result too
            row["error"] = f"{type(err).__name__}: {str(err)[-300:]}"
        finally:
            tiles.update(kept)
        print(json.dumps(row), flush=True)
