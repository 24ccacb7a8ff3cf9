"""Run 174: run 173 saw the float32 gradient atom-tile kernel faster at (2, 32, 4) and (8, 8, 4) than at the kept
(4, 16, 4) (4.67 and 4.82 against 4.89 ms, one pass each); here the three again, and T's kept tile against
(2, 32, 4), in three interleaved rounds (run 167's harness: 98,304 atoms of compress_bench.py's water-like box).
    PYTHONPATH=$TREE:$TREE/benchmarks python grad_tiles.py"""
import json
from functools import partial

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles
from deeppot.kernels.precision import float32_products
from deeppot.kernels.reach import find_reach

CANDIDATES = {"grad": [(4, 16, 4), (2, 32, 4), (8, 8, 4)], "t": [(4, 16, 4), (2, 32, 4)]}

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
copy_ms = timed(lambda: spare.copy_(rows), sync)
for round_ in range(3):
    for kernel, candidates in CANDIDATES.items():
        for tile in candidates:
            tiles[kernel] = tile
            try:
                rows = atom_tiles.shared_rows(d, rij, ct, reach, products)["rows"]
                spare = rows.clone()
                call = partial(t_call, rows) if kernel == "t" else partial(grad_call, rows, spare)
                ms = round(timed(call, sync) - (copy_ms if kernel == "grad" else 0.0), 3)
            finally:
                tiles.update(kept)
            print(json.dumps({"round": round_, "kernel": kernel, "tile": tile, "ms": ms}), flush=True)
