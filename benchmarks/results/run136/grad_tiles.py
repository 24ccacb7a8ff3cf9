"""Run 136: the uncompressed dE/dr_ij atom-tile kernel alone (visiting each block up to its reach) at several tiles,
on the water-like box of compress_bench.py (98,304 atoms), in whichever tree PYTHONPATH gives. One JSON line each.
    python grad_tiles.py TREE_NAME float32:8,8,4 float32:4,16,4 float64:1,16,4 ..."""

from __future__ import annotations

import json
import sys

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles
from deeppot.kernels.reach import find_reach


def main() -> None:
    torch.set_grad_enabled(False)
    tree, specs = sys.argv[1], sys.argv[2:]
    sync = torch.cuda.synchronize
    for precision in dict.fromkeys(s.split(":")[0] for s in specs):
        model = model_pair(precision)[0]
        ev, flat, rij, t_bar = box_pairs(model, 98304, torch.device("cuda"))
        d, ct = ev.model.descriptor, flat.center_type
        reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
        ref = None
        for spec in specs:
            if not spec.startswith(precision + ":"):
                continue
            tile = tuple(int(v) for v in spec.split(":")[1].split(","))
            atom_tiles.TILES[d.dtype]["grad"] = tile
            g = atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, reach=reach)
            ref = g if ref is None else ref
            ms = timed(lambda: atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, reach=reach), sync)  # noqa: B023
            print(json.dumps({"tree": tree, "precision": precision, "tile": tile, "grad_ms_reach": round(ms, 3),
                              "dev": float((g - ref).abs().max() / ref.abs().max())}), flush=True)


if __name__ == "__main__":
    main()
