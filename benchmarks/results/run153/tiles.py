"""Run 153: the uncompressed atom-tile kernels at several tiles with the branch-free tanh (run 151), alone up to
the reach, on 98,304 atoms of compress_bench.py's water-like box (seeded as run151/tanh_kernels.py). A spec is
PRECISION:KERNEL:ATOMS,SLOTS,WARPS with "s" (stacked value and tangent GEMMs) or "u" (not) after a gradient tile;
one JSON line each, with the deviation from the first tile's output of that kernel relative to its largest value.
    python tiles.py float64:t:2,16,8 float64:grad:1,16,4s float32:t:4,16,4 ..."""

from __future__ import annotations

import json
import sys
from functools import partial

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles
from deeppot.kernels.precision import float32_products
from deeppot.kernels.reach import find_reach


def setup(precision: str):
    torch.manual_seed(0)
    model = model_pair(precision)[0]
    ev, flat, rij, t_bar = box_pairs(model, 98304, torch.device("cuda"))
    d, ct = ev.model.descriptor, flat.center_type
    products = float32_products(ev.model, rij.device) if precision == "float32" else "ieee"
    reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
    return {"t": partial(atom_tiles.descriptor_t, d, rij, ct, precision=products, reach=reach),
            "grad": partial(atom_tiles.pair_grad_from_t_bar, d, rij, ct, t_bar, precision=products, reach=reach)}


def main() -> None:
    torch.set_grad_enabled(False)
    calls, first = {}, {}
    for spec in sys.argv[1:]:
        precision, kernel, tile = spec.split(":")
        dtype = getattr(torch, precision)
        if precision not in calls:
            calls[precision] = setup(precision)
        tiles = atom_tiles.F16X3_TILES if dtype == torch.float32 else atom_tiles.TILES[dtype]
        tiles[kernel] = tuple(int(v) for v in tile.rstrip("su").split(","))
        (atom_tiles.STACKED.add if tile.endswith("s") else atom_tiles.STACKED.discard)(dtype)
        try:
            out = calls[precision][kernel]()
            ref = first.setdefault((precision, kernel), out)
            ms = timed(calls[precision][kernel], torch.cuda.synchronize)
            print(json.dumps({"precision": precision, "kernel": kernel, "tile": tile, "ms_reach": round(ms, 3),
                              "dev": float((out - ref).abs().max() / ref.abs().max())}), flush=True)
        except Exception as err:
            print(json.dumps({"precision": precision, "kernel": kernel, "tile": tile, "error": str(err)[-300:]}),
                  flush=True)


if __name__ == "__main__":
    main()
