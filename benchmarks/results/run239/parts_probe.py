"""Run 239: the atom-tile kernels alone on 98,304 atoms of compress_bench.py's water-like box (run 167's harness),
three rounds of the kept tiles, in the precision given (float64: products "ieee"; float32 with --products), on the
tree in PYTHONPATH: old (c59f948) reads float64 and tf32x3 weights with masked loads in the float32 layout, new
(this tree) reads them made once in the registers' padded layout (`precision.padded_weight`). The outputs are saved
under /tmp by tree tag; when another tree's are there, the largest difference between the trees is printed.
    PYTHONPATH=$TREE:$TREE/benchmarks python parts_probe.py TAG PRECISION [PRODUCTS]"""
import json
import os
import sys
from functools import partial

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles
from deeppot.kernels.precision import float32_products
from deeppot.kernels.reach import find_reach

TAG, PRECISION = sys.argv[1], sys.argv[2]

torch.set_grad_enabled(False)
torch.manual_seed(0)
ev, flat, rij, t_bar = box_pairs(model_pair(PRECISION)[0], 98304, torch.device("cuda"))
d, ct = ev.model.descriptor, flat.center_type
products = sys.argv[3] if len(sys.argv) > 3 else float32_products(ev.model, rij.device)
reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
tiles = atom_tiles.F16X3_TILES if products == "f16x3" else atom_tiles.TILES[rij.dtype]
kept = dict(tiles)
sync = torch.cuda.synchronize


def t_call(rows):
    return atom_tiles.descriptor_t(d, rij, ct, products, reach, rows)


def grad_call(rows, spare):
    return atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, products, reach,
                                           None if rows is None else spare.copy_(rows))


rows = atom_tiles.shared_rows(d, rij, ct, reach, products).get("rows")
spare = None if rows is None else rows.clone()
reference = {"t": t_call(rows), "grad": grad_call(rows, spare)}
for kernel, out in reference.items():
    torch.save(out.cpu(), f"/tmp/run239_{PRECISION}{products}_{TAG}_{kernel}.pt")
    for other in sorted(os.listdir("/tmp")):
        mine = f"run239_{PRECISION}{products}_"
        if other.startswith(mine) and other.endswith(f"_{kernel}.pt") and f"_{TAG}_" not in other:
            theirs = torch.load(f"/tmp/{other}")
            print(json.dumps({"tag": TAG, "kernel": kernel, "against": other,
                              "max_abs_diff": float((out.cpu() - theirs).abs().max()),
                              "max_abs": float(theirs.abs().max())}), flush=True)
copy_ms = 0.0 if rows is None else timed(lambda: spare.copy_(rows), sync)
for _ in range(3):
    for kernel in ("t", "grad"):
        tile = tiles[kernel]
        row = {"tag": TAG, "precision": PRECISION, "products": products, "kernel": kernel, "tile": tile}
        try:
            rows = atom_tiles.shared_rows(d, rij, ct, reach, products).get("rows")
            spare = None if rows is None else rows.clone()
            call = partial(t_call, rows) if kernel == "t" else partial(grad_call, rows, spare)
            out = call()
            row["dev"] = float((out - reference[kernel]).abs().max() / reference[kernel].abs().max())
            row["ms"] = round(timed(call, sync) - (copy_ms if kernel == "grad" else 0.0), 3)
        except Exception as err:  # a tile that does not compile (shared memory, registers) is a result too
            row["error"] = f"{type(err).__name__}: {str(err)[-300:]}"
        finally:
            tiles.update(kept)
        print(json.dumps(row), flush=True)
