"""Run 148 probe: in whichever tree PYTHONPATH gives, the f16x3 atom-tile kernels alone at (4,16,4) on 98,304 atoms of
compress_bench.py's water-like box; this session's tree adds temporary T variants (not kept): "f16x3w" (the
weights' split free, as if split beforehand; R^T G split), "f16x3g" (R^T G in tf32x3). One JSON line each, with the
deviation from the float32-exact "ieee" kernel.
    python variants.py TREE f16x3 [f16x3w f16x3g]"""

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
    atom_tiles.TILES[torch.float32] = {"t": (4, 16, 4), "grad": (4, 16, 4)}
    t_ref = atom_tiles.descriptor_t(d, rij, ct, precision="ieee", reach=reach)
    g_ref = atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, precision="ieee", reach=reach)
    for prec in sys.argv[2:]:
        t = atom_tiles.descriptor_t(d, rij, ct, precision=prec, reach=reach)
        g = atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, precision=prec, reach=reach)
        t_ms = timed(lambda p=prec: atom_tiles.descriptor_t(d, rij, ct, precision=p, reach=reach), sync)
        g_ms = timed(lambda p=prec: atom_tiles.pair_grad_from_t_bar(d, rij, ct, t_bar, precision=p, reach=reach),
                     sync)
        print(json.dumps({"tree": sys.argv[1], "precision": prec, "t_ms": round(t_ms, 3), "grad_ms": round(g_ms, 3),
                          "t_dev": float((t - t_ref).abs().max() / t_ref.abs().max()),
                          "grad_dev": float((g - g_ref).abs().max() / g_ref.abs().max())}), flush=True)


if __name__ == "__main__":
    main()
