"""Run 135: whole compressed evaluations (water, 98,304 atoms, the frame's statistics: compress_tiles.py's model)
with the T and dE/dr kernels on separate tiles, two rounds alternating. One JSON line per (round, tiles)."""

from __future__ import annotations

import argparse
import json

import torch
from compress_bench import timed
from compress_tiles import compressed_water

from deeppot.kernels import compressed as kernels

COMBOS = {"float32": [((1, 4, 1), (1, 4, 1)), ((1, 2, 1), (1, 4, 1)), ((1, 2, 1), (2, 4, 1)), ((2, 2, 1), (2, 4, 1))],
          "float64": [((1, 4, 1), (1, 4, 1)), ((1, 2, 1), (1, 4, 1)), ((2, 2, 1), (1, 4, 1))]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--inputs", required=True)
    p.add_argument("--atoms", type=int, default=98304)
    p.add_argument("--device", default="cuda")
    args = p.parse_args()
    torch.set_grad_enabled(False)
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for precision, combos in COMBOS.items():
        ev, flat = compressed_water(args, precision, device)
        ref = ev.evaluate_neighbors(flat)["force"]
        for rnd in range(2):
            for t_tile, g_tile in combos:
                kernels.TILES[getattr(torch, precision)] = {"t": t_tile, "grad": g_tile}
                dev = float((ev.evaluate_neighbors(flat)["force"] - ref).abs().max())
                ms = timed(lambda ev=ev, flat=flat: ev.evaluate_neighbors(flat), sync)
                print(json.dumps({"case": f"water:{precision}:{flat.ncentre}:compressed", "round": rnd,
                                  "t_tile": t_tile, "grad_tile": g_tile, "ms_per_call": round(ms, 3),
                                  "max_force_dev": dev}), flush=True)


if __name__ == "__main__":
    main()
