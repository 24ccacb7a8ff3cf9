"""Run 173: the float32 atom-tile kernels reading their embedding weights' float16 parts made once
(`precision.weight_parts(paired=True)`, passed by `env_rows.net_args`) against splitting the weights in every
chunk, each kernel alone on 98,304 atoms of compress_bench.py's water-like box (run 167's harness), at a few tiles.
One JSON line per tile, kernel and choice, with the largest deviation from the kept (split in-kernel) output.
    PYTHONPATH=$TREE:$TREE/benchmarks python tiles_parts.py"""
import json
from functools import partial

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles, env_rows
from deeppot.kernels.precision import float32_products, weight_parts
from deeppot.kernels.reach import find_reach

CANDIDATES = [(4, 16, 4), (8, 8, 4), (2, 16, 4), (4, 8, 4), (2, 32, 4)]

torch.set_grad_enabled(False)
torch.manual_seed(0)
ev, flat, rij, t_bar = box_pairs(model_pair("float32")[0], 98304, torch.device("cuda"))
d, ct = ev.model.descriptor, flat.center_type
products = float32_products(ev.model, rij.device)
reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
tiles = atom_tiles.F16X3_TILES
kept = dict(tiles)
sync = torch.cuda.synchronize


def whole(w, transposed=False, paired=False):
    return w


def t_call(rows):
    return atom_tiles.descriptor_t(d, rij, ct, products, reach, rows)


def grad_call(rows, spare):
    return atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, products, reach, spare.copy_(rows))


env_rows.weight_parts = whole
rows = atom_tiles.shared_rows(d, rij, ct, reach, products)["rows"]
spare = rows.clone()
reference = {"t": t_call(rows), "grad": grad_call(rows, spare)}
copy_ms = timed(lambda: spare.copy_(rows), sync)
for tile in CANDIDATES:
    for kernel in ("t", "grad"):
        for parts in (False, True):
            tiles[kernel] = tile
            env_rows.weight_parts = weight_parts if parts else whole
            row = {"products": products, "kernel": kernel, "tile": tile, "parts": parts}
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
