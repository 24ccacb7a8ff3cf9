"""Run 146: the uncompressed atom-tile kernels with f16x3 products (`atom_tiles.F16X3_TILES`) at several tiles,
alone up to the reach, on 98,304 atoms of compress_bench.py's water-like box; "s" after a gradient tile stacks value
and tangent into one GEMM a layer (`atom_tiles.STACKED`). One JSON line each, with the deviation from the
float32-exact "ieee" kernel relative to its largest value.
    python f16_tiles.py t:4,16,4 grad:4,16,4 grad:8,8,4s ..."""

from __future__ import annotations

import json
import sys

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles
from deeppot.kernels.reach import find_reach


def main() -> None:
    torch.set_grad_enabled(False)
    sync = torch.cuda.synchronize
    model = model_pair("float32")[0]
    ev, flat, rij, t_bar = box_pairs(model, 98304, torch.device("cuda"))
    d, ct = ev.model.descriptor, flat.center_type
    reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
    refs = {"t": atom_tiles.descriptor_t(d, rij, ct, precision="ieee", reach=reach),
            "grad": atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, precision="ieee", reach=reach)}
    for spec in sys.argv[1:]:
        kernel, tile = spec.split(":")
        stacked = tile.endswith("s")
        atom_tiles.F16X3_TILES[kernel] = tuple(int(v) for v in tile.rstrip("s").split(","))
        if stacked:
            atom_tiles.STACKED.add(torch.float32)
        else:
            atom_tiles.STACKED.discard(torch.float32)
        if kernel == "t":
            def call():
                return atom_tiles.descriptor_t(d, rij, ct, precision="f16x3", reach=reach)
        else:
            def call():
                return atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, precision="f16x3", reach=reach)
        try:
            out = call()
            ms = timed(call, sync)
            print(json.dumps({"kernel": kernel, "tile": tile, "ms_reach": round(ms, 3),
                              "dev": float((out - refs[kernel]).abs().max() / refs[kernel].abs().max())}), flush=True)
        except Exception as err:
            print(json.dumps({"kernel": kernel, "tile": tile, "error": str(err)[-300:]}), flush=True)


if __name__ == "__main__":
    main()
