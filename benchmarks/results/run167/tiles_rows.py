"""Run 167: tiles of the float32 atom-tile kernels now that they read each slot's environment row made once
(`atom_tiles.shared_rows`; fewer registers live, so other tiles may win). Each kernel alone on 98,304 atoms of
compress_bench.py's water-like box, up to the reach, with the products the model gets (f16x3 here); the gradient's
time includes the way back (`back_to_pairs`) and excludes the copy of the rows it overwrites. One JSON line per
tile and kernel, with the largest deviation from the kept tiles' output.
    PYTHONPATH=$TREE:$TREE/benchmarks python tiles_rows.py"""
import json
from functools import partial

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles
from deeppot.kernels.precision import float32_products
from deeppot.kernels.reach import find_reach

CANDIDATES = [(4, 16, 4), (8, 8, 4), (2, 16, 4), (4, 8, 4), (8, 16, 4), (4, 32, 4), (2, 32, 4), (8, 8, 8),
              (4, 16, 8), (16, 4, 4)]

torch.set_grad_enabled(False)
torch.manual_seed(0)
ev, flat, rij, t_bar = box_pairs(model_pair("float32")[0], 98304, torch.device("cuda"))
d, ct = ev.model.descriptor, flat.center_type
products = float32_products(ev.model, rij.device)
reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
tiles = atom_tiles.F16X3_TILES if products == "f16x3" else atom_tiles.TILES[torch.float32]
kept = dict(tiles)
sync = torch.cuda.synchronize


def t_call(rows):
    return atom_tiles.descriptor_t(d, rij, ct, products, reach, rows)


def grad_call(rows, spare):
    return atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, products, reach, spare.copy_(rows))


rows = atom_tiles.shared_rows(d, rij, ct, reach, products)["rows"]
spare = rows.clone()
reference = {"t": t_call(rows), "grad": grad_call(rows, spare)}
copy_ms = timed(lambda: spare.copy_(rows), sync)
for tile in CANDIDATES:
    for kernel in ("t", "grad"):
        tiles[kernel] = tile
        row = {"products": products, "kernel": kernel, "tile": tile}
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
