"""Run 250 call 6: which of copper's fused evaluations is off by 1.2% of the largest force (call 5's (2,32,4) and
(4,32,8) tiles, call 2's HALVES, against the kept (4,16,4))? Each against the PyTorch path (fused=False) on the same
frame; per variant the largest force deviation relative to the largest force, where it is, and that atom's neighbours.

Usage (GPU, repository root): python copper_check.py copper=.mid/copper/model.dp --natoms 108000
"""
import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, replicas_for, replicate

from deeppot.infer import DeepPot
from deeppot.infer.deep_pot import Evaluator
from deeppot.kernels import atom_tiles

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def forces(model, frame, tiles=None, **kw):
    saved = dict(atom_tiles.F16X3_TILES)
    if tiles:
        atom_tiles.F16X3_TILES.update(tiles)
    try:
        ev = Evaluator(model, DEVICE, **kw)
        c, b, t = frame
        flat = ev.neighbors(torch.as_tensor(c, device=DEVICE).reshape(1, -1, 3), torch.as_tensor(t, device=DEVICE)
                            .reshape(1, -1), torch.as_tensor(b, device=DEVICE).reshape(1, 3, 3))
        out = ev.evaluate_neighbors(flat)
        return out["force"][0].double(), out["energy"].double()
    finally:
        atom_tiles.F16X3_TILES.update(saved)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--natoms", type=int, default=108000)
    ap.add_argument("--data", default=".peer/data")
    args = ap.parse_args()
    system, path = args.model.split("=")
    coord, box, atype = load_frame(Path(args.data), system)
    frame = replicate(coord, box, atype, replicas_for(args.natoms, len(atype)))
    model = DeepPot(path, device=DEVICE).evaluator.model
    f_ref, e_ref = forces(model, frame, fused=False)
    variants = {"f16x3 4,16,4": dict(), "f16x3 2,32,4": dict(tiles={"t": (2, 32, 4), "grad": (2, 32, 4)}),
                "tf32x3": dict(products="tf32x3")}
    for name, kw in variants.items():
        f, e = forces(model, frame, **kw)
        dev = (f - f_ref).norm(dim=-1)
        i = int(dev.argmax())
        print(json.dumps({"variant": name, "d_force_rel": float(dev.max() / f_ref.norm(dim=-1).max()),
                          "d_energy_rel": float(((e - e_ref) / e_ref).abs().max()), "atom": i,
                          "force_ref": f_ref[i].tolist(), "force": f[i].tolist(),
                          "n_above_1e-4": int((dev > 1e-4 * f_ref.norm(dim=-1).max()).sum())}), flush=True)


if __name__ == "__main__":
    main()
