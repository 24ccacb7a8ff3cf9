"""Tile sweep of the inference kernels with several atoms per program (`deeppot.kernels.atom_tiles`) against the
one-atom kernels (`deeppot.kernels.descriptor`): each kernel alone visiting every slot and visiting each block only
up to its last neighbour (`_reach` keys, `deeppot.kernels.reach`), its largest deviation from the one-atom kernel,
and the whole evaluation with the one-atom kernels and with the fastest tiles. One JSON line per measurement.

Water-like box of benchmarks/compress_bench.py (no data files), on a GPU:
    PYTHONPATH=$PWD:$PWD/benchmarks python benchmarks/atom_tiles_sweep.py --atoms 98304 > tiles.jsonl
"""

from __future__ import annotations

import argparse
import json

import torch
from compress_bench import box_pairs, model_pair, timed

from deeppot.kernels import atom_tiles, descriptor
from deeppot.kernels.reach import find_reach

VARIANTS = {  # (ATOMS, SLOTS, warps); float64 tiles hold twice the registers and shared memory: smaller ones
    "float32": [(4, 16, 4), (2, 16, 4), (8, 8, 4), (4, 8, 4), (4, 32, 4)],
    "float64": [(2, 16, 8), (2, 16, 4), (4, 8, 4), (1, 16, 4), (2, 8, 4), (4, 16, 4), (1, 32, 4), (8, 8, 4)],
}


def deviation(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def kernel_rows(precision: str, d, rij, center_type, t_bar, n: int, reach):
    """Time the one-atom kernels, then each tile variant (one row each)."""
    t_ref = descriptor.one_atom_t(d, rij, center_type)
    g_ref = descriptor.one_atom_pair_grad(d, rij, center_type, t_bar)
    base = {"precision": precision, "natoms": n}
    yield {**base, "kernel": "one_atom", "t_ms": timed(lambda: descriptor.one_atom_t(d, rij, center_type), sync),
           "grad_ms": timed(lambda: descriptor.one_atom_pair_grad(d, rij, center_type, t_bar), sync),
           "t_ms_reach": timed(lambda: descriptor.one_atom_t(d, rij, center_type, reach=reach), sync),
           "grad_ms_reach": timed(lambda: descriptor.one_atom_pair_grad(d, rij, center_type, t_bar, reach=reach),
                                  sync)}
    for atoms, slots, warps in VARIANTS[precision]:
        atom_tiles.TILES[d.dtype] = {"t": (atoms, slots, warps), "grad": (atoms, slots, warps)}
        row = {**base, "kernel": "atom_tiles", "atoms": atoms, "slots": slots, "warps": warps}
        try:
            row["t_dev"] = deviation(atom_tiles.descriptor_t(d, rij, center_type), t_ref)
            row["grad_dev"] = deviation(atom_tiles.pair_grad_from_t_bar(d, rij, center_type, t_bar), g_ref)
            row["t_ms"] = timed(lambda: atom_tiles.descriptor_t(d, rij, center_type), sync)
            row["grad_ms"] = timed(lambda: atom_tiles.pair_grad_from_t_bar(d, rij, center_type, t_bar), sync)
            row["t_ms_reach"] = timed(lambda: atom_tiles.descriptor_t(d, rij, center_type, reach=reach), sync)
            row["grad_ms_reach"] = timed(
                lambda: atom_tiles.pair_grad_from_t_bar(d, rij, center_type, t_bar, reach=reach), sync)
        except Exception as err:  # a tile that does not compile (shared memory, registers) is a result too
            row["error"] = f"{type(err).__name__}: {str(err)[-1500:]}"
        yield row


def sweep(precision: str, natoms: int, device: str) -> None:
    model, _ = model_pair(precision)
    ev, flat, rij, t_bar = box_pairs(model, natoms, device)
    n, d = flat.ncentre, ev.model.descriptor
    reach = find_reach(d, flat.center_type, flat.neighbor_owner_and_type(0, n)[1])
    rows = []
    for row in kernel_rows(precision, d, rij, flat.center_type, t_bar, n, reach):
        rows.append(row)
        print(json.dumps(row), flush=True)
    tiled = [r for r in rows[1:] if "grad_ms" in r]
    fastest = {k: min(tiled, key=lambda r, k=k: r[f"{k}_ms_reach"]) for k in ("t", "grad")}
    atom_tiles.TILES[d.dtype] = {k: (r["atoms"], r["slots"], r["warps"]) for k, r in fastest.items()}
    descriptor.descriptor_t, descriptor.pair_grad_from_t_bar = descriptor.one_atom_t, descriptor.one_atom_pair_grad
    try:
        ms = timed(lambda: ev.evaluate_neighbors(flat), sync)
    finally:
        descriptor.descriptor_t, descriptor.pair_grad_from_t_bar = dispatch
    print(json.dumps({"precision": precision, "natoms": n, "kernel": "whole_one_atom", "whole_ms": ms}), flush=True)
    ms = timed(lambda: ev.evaluate_neighbors(flat), sync)
    print(json.dumps({"precision": precision, "natoms": n, "kernel": "whole_atom_tiles",
                      "tiles": atom_tiles.TILES[d.dtype],
                      "whole_ms": ms, "atom_steps_per_s": n / ms * 1e3}), flush=True)


dispatch = descriptor.descriptor_t, descriptor.pair_grad_from_t_bar

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--atoms", type=int, nargs="+", default=[98304])
    parser.add_argument("--precision", nargs="+", default=["float32"])
    parser.add_argument("--device", default="cuda", help="cpu: a dry run under TRITON_INTERPRET=1")
    parser.add_argument("--variants", type=int, default=None, help="only the first N tile variants")
    parser.add_argument("--tiles", nargs="+", default=None, help="these tiles instead, as ATOMS,SLOTS,WARPS")
    args = parser.parse_args()
    if args.tiles:
        VARIANTS.update({p: [tuple(int(v) for v in t.split(",")) for t in args.tiles] for p in args.precision})
    torch.set_grad_enabled(False)
    for precision in args.precision:
        for natoms in args.atoms:
            del VARIANTS[precision][args.variants or len(VARIANTS[precision]):]
            sweep(precision, natoms, args.device)
