"""Run 258: the centres in the order of their neighbour counts (`deeppot.infer.order`), timed in one process on
trained models, with the float32 (f16x3) atom tiles of (4 atoms, 16 slots) and of (8, 8).

Variants: "base" (the atoms' order, the tiles' tops in PyTorch), "tops" (the tops in one kernel,
`reach.TOPS_KERNEL`; every later variant too), "order" (the order made once per neighbour data, as an MD run
between builds and a repeated evaluation use it), "fresh" (the order made again every call, as a call with a new
list pays it), "order_8x8" / "order_t8x8" / "order_g8x8" (the order, both kernels / T / the gradient on (8, 8, 4)
tiles), "base_8x8", and (call 2) "order_gt" / "fresh_gt" (the gradient's tile chosen from the counts,
`atom_tiles.gradient_tile`). Per model and variant: the prebuilt-list call's wall ms (a fresh `DeepPot` each), the
atom-tile kernels' CUDA ms a call, the largest deviation of energy and forces from the first variant's.

Usage (GPU, repository root): python order_probe.py water=.mid/water/model.dp ... --natoms 98304 --rounds 2
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run250"))
from infer_bench import load_frame, replicas_for, replicate
from variant_probe import kernel_ms, prebuilt, wall_ms

from deeppot.infer import deep_pot
from deeppot.kernels import atom_tiles, reach

TILES = {"4x16": {"t": (4, 16, 4), "grad": (4, 16, 4)}, "8x8": {"t": (8, 8, 4), "grad": (8, 8, 4)},
         "t8x8": {"t": (8, 8, 4), "grad": (4, 16, 4)}, "g8x8": {"t": (4, 16, 4), "grad": (8, 8, 4)}}
# (the order, the tiles, `reach.TOPS_KERNEL`, `atom_tiles.GRAD_TILE`: the gradient's tile chosen from the counts,
# call 2)
VARIANTS = {"base": (False, "4x16", False, None), "tops": (False, "4x16", True, None),
            "order": (True, "4x16", True, None), "fresh": (True, "4x16", True, None),
            "order_8x8": (True, "8x8", True, None), "order_t8x8": (True, "t8x8", True, None),
            "order_g8x8": (True, "g8x8", True, None), "base_8x8": (False, "8x8", True, None),
            "order_gt": (True, "4x16", True, (8, 8, 4)), "fresh_gt": (True, "4x16", True, (8, 8, 4))}


def run_variant(system, path, name, frame, ref, calls):
    order, tiles, reach.TOPS_KERNEL, atom_tiles.GRAD_TILE = VARIANTS[name]
    deep_pot.ORDER_MIN_CENTRES = 4096 if order else 1 << 62
    atom_tiles.F16X3_TILES = TILES[tiles]
    ev, flat = prebuilt(path, frame)

    def call():
        if name.startswith("fresh"):
            flat.orders.clear()
        return ev.evaluate_neighbors(flat)

    out = call()
    row = {"system": system, "variant": name, "natoms": len(frame[2]), "products": ev.products,
           "ms": round(wall_ms(call, calls), 3), "kernels": kernel_ms(call, max(1, calls // 4))}
    if ref is not None:
        row["d_energy_rel"] = float((out["energy"] - ref["energy"]).abs().max() / ref["energy"].abs().max())
        row["d_force_rel"] = float((out["force"] - ref["force"]).abs().max() / ref["force"].abs().max())
    print(json.dumps(row), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--natoms", type=int, default=98304)
    ap.add_argument("--data", default=".peer/data")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    args = ap.parse_args()
    for spec in args.models:
        system, path = spec.split("=")
        coord, box, atype = load_frame(Path(args.data), system)
        frame = replicate(coord, box, atype, replicas_for(args.natoms, len(atype)))
        ref = None
        for _ in range(args.rounds):
            for name in args.variants:
                out = run_variant(system, path, name, frame, ref, args.calls)
                ref = out if ref is None else ref


if __name__ == "__main__":
    main()
