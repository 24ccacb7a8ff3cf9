"""Tile sweep of the compressed kernels: T and dE/dr each alone, and the whole evaluation, one JSON line per
(ATOMS, SLOTS, warps) tile (given to both kernels), on neighbour lists in DeePMD's order (each type block by
distance) and, for the kernels alone, with the slots of every block shuffled; the kernels alone also visiting
each block only up to its last neighbour (`_reach` keys, sorted list).

Why the order might matter: every slot reads its table row (6 x M1 coefficients) from cache, and in a
distance-sorted list slot j of neighbouring atoms lies at about the same distance, so a tile of several atoms reads
fewer distinct rows per chunk than one atom does. (Measured in runs 47-49: 3-25% between the orders; the kernels
are bound more by their own instructions than by these reads, benchmarks/table_roofline.py.)

Input: the first water frame of --data replicated to >= --atoms, with environment statistics (davg, dstd) from that
frame as training would set them (or, with --fresh, a fresh model's davg 0, dstd 1, which packs the slots into ~5x fewer
table rows), the model compressed with `deeppot compress`'s defaults for the frame's smallest distance. On a GPU:
    PYTHONPATH=$PWD:$PWD/benchmarks python benchmarks/compress_tiles.py --data .peer/data --inputs .peer/inputs \
        --tiles 1,16,4 8,8,4 > tiles.jsonl
"""

from __future__ import annotations

import argparse
import json

import torch
from compress_bench import timed
from infer_bench import frame_min_dist
from reach_bench import frame_model

from deeppot.infer.deep_pot import Evaluator
from deeppot.kernels import compressed as kernels
from deeppot.kernels.reach import find_reach


def compressed_water(args, precision: str, device) -> tuple[Evaluator, object]:
    """The evaluator of a compressed water model with the frame's statistics, and the supercell's neighbour list."""
    model, flat = frame_model(args, "water", precision, device)
    if args.fresh:  # a fresh model's statistics, as infer_bench's models have
        model.descriptor.davg.zero_()
        model.descriptor.dstd.fill_(1.0)
    model.descriptor.enable_compression(frame_min_dist(args.data, "water"))
    return Evaluator(model, device), flat


def shuffled_blocks(rij: torch.Tensor, sel: list[int]) -> torch.Tensor:
    """rij with the slots of every type block in a random order per atom (the same T: a block's slots share their
    statistics, and padding is a vector beyond rcut wherever it sits)."""
    out, start = rij.clone(), 0
    for width in sel:
        order = torch.rand(rij.shape[0], width, device=rij.device).argsort(dim=1) + start
        out[:, start:start + width] = rij.gather(1, order[..., None].expand(-1, -1, 3))
        start += width
    return out


def sweep(args, precision: str) -> None:
    device = torch.device(args.device)
    ev, flat = compressed_water(args, precision, device)
    d = ev.model.descriptor
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    rij = flat.pair_vectors(0, flat.ncentre, d.rcut).to(d.dtype)
    lists = {"sorted": rij, "shuffled": shuffled_blocks(rij, d.sel)}
    t_bar = torch.randn(flat.ncentre, 4, d.neuron[-1], dtype=d.dtype, device=device)
    reach = find_reach(d, flat.center_type, flat.neighbor_owner_and_type(0, flat.ncentre)[1])
    dtype = getattr(torch, precision)
    for tile in args.tiles:
        atoms, slots, warps = (int(v) for v in tile.split(","))
        kernels.TILES[dtype] = {"t": (atoms, slots, warps), "grad": (atoms, slots, warps)}
        row = {"case": f"water:{precision}:{flat.ncentre}:compressed", "tile": [atoms, slots, warps],
               "statistics": "fresh" if args.fresh else "frame"}
        for order, r in lists.items():
            row[f"t_ms_{order}"] = timed(lambda r=r: kernels.compressed_descriptor_t(d, r, flat.center_type), sync)
            row[f"grad_ms_{order}"] = timed(
                lambda r=r: kernels.compressed_pair_grad(d, r, flat.center_type, t_bar), sync)
        row["t_ms_reach"] = timed(lambda: kernels.compressed_descriptor_t(d, rij, flat.center_type, reach=reach), sync)
        row["grad_ms_reach"] = timed(
            lambda: kernels.compressed_pair_grad(d, rij, flat.center_type, t_bar, reach=reach), sync)
        row["ms_per_step"] = timed(lambda: ev.evaluate_neighbors(flat), sync)
        row["atom_steps_per_s"] = round(flat.ncentre / row["ms_per_step"] * 1e3, 1)
        print(json.dumps(row), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="the benchmark data folder (water/...)")
    p.add_argument("--inputs", required=True, help="the reference input.json folder")
    p.add_argument("--atoms", type=int, default=98304)
    p.add_argument("--precisions", nargs="+", default=["float32", "float64"])
    p.add_argument("--tiles", nargs="+", default=["1,16,4", "4,8,4", "8,8,4", "16,4,4", "32,4,4", "32,2,4"],
                   help="ATOMS,SLOTS,WARPS each")
    p.add_argument("--device", default="cuda", help="cpu: a dry run under TRITON_INTERPRET=1")
    p.add_argument("--fresh", action="store_true", help="a fresh model's statistics (davg 0, dstd 1), not the frame's")
    args = p.parse_args()
    torch.set_grad_enabled(False)
    for precision in args.precisions:
        sweep(args, precision)


if __name__ == "__main__":
    main()
