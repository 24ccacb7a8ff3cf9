"""Run 147 probe: what the f16x3 atom-tile kernels spend on splitting operands. The kernels alone at (4,16,4) on
98,304 atoms of compress_bench.py's water-like box with temporary variants of `embedding._mm` (in the probed tree
only, not kept): f16x3; "f16x3nb", B (weights, and G in R^T G) not split; "f16x3na", neither split (three products
all the same); "f16x1", one float16 product. One JSON line each."""

from __future__ import annotations

import json

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
    atom_tiles.TILES[torch.float32] = {"t": (4, 16, 4), "grad": (4, 16, 4)}
    for prec in ("f16x3", "f16x3nb", "f16x3na", "f16x1", "f16x3"):
        t_ms = timed(lambda p=prec: atom_tiles.descriptor_t(d, rij, ct, precision=p, reach=reach), sync)
        g_ms = timed(lambda p=prec: atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, precision=p, reach=reach),
                     sync)
        print(json.dumps({"precision": prec, "t_ms": round(t_ms, 3), "grad_ms": round(g_ms, 3)}), flush=True)


if __name__ == "__main__":
    main()
