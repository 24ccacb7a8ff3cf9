"""Run 151: the uncompressed atom-tile kernels alone (T and dE/dr, the default tiles and products: float32 f16x3,
float64), up to the reach, on 98,304 atoms of compress_bench.py's water-like box, seeded so that two trees see the
same weights and inputs; the outputs are saved for a comparison between trees (--compare).
    python tanh_kernels.py TREE_NAME OUT_DIR          # one JSON line per kernel and precision
    python tanh_kernels.py --compare OUT_DIR NEW OLD  # largest difference / largest value, per kernel"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import torch


def measure(tree: str, out: Path) -> None:
    from compress_bench import box_pairs, model_pair, timed

    from deeppot.kernels import atom_tiles
    from deeppot.kernels.precision import float32_products
    from deeppot.kernels.reach import find_reach

    torch.set_grad_enabled(False)
    for precision in ("float32", "float64"):
        torch.manual_seed(0)
        model = model_pair(precision)[0]
        ev, flat, rij, t_bar = box_pairs(model, 98304, torch.device("cuda"))
        d, ct = ev.model.descriptor, flat.center_type
        products = float32_products(ev.model, rij.device) if precision == "float32" else "ieee"
        reach = find_reach(d, ct, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
        calls = {"t": partial(atom_tiles.descriptor_t, d, rij, ct, precision=products, reach=reach),
                 "grad": partial(atom_tiles.pair_grad_from_t_bar, d, rij, ct, t_bar, precision=products, reach=reach)}
        for kernel, call in calls.items():
            torch.save(call().cpu(), out / f"{tree}_{precision}_{kernel}.pt")
            ms = timed(call, torch.cuda.synchronize, 2.0)
            print(json.dumps({"tree": tree, "precision": precision, "products": products, "kernel": kernel,
                              "ms_reach": round(ms, 3)}), flush=True)


def compare(out: Path, new: str, old: str) -> None:
    for precision in ("float32", "float64"):
        for kernel in ("t", "grad"):
            a, b = (torch.load(out / f"{tree}_{precision}_{kernel}.pt") for tree in (new, old))
            print(json.dumps({"precision": precision, "kernel": kernel,
                              "dev": float((a - b).abs().max() / b.abs().max())}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        compare(Path(sys.argv[2]), sys.argv[3], sys.argv[4])
    else:
        measure(sys.argv[1], Path(sys.argv[2]))
