"""Run 252: the float32 atom tiles with and without `atom_tiles.PRESCALED` against a float64 evaluation of the same
model (`io.model_file.cast_model`: the float32 weights exactly, in float64), on trained models' replicated frames.
The copper frame's forces are small (a strained crystal: at most 0.0085 eV/A in the data), sums of large pair terms
that cancel, so float32's rounding shows in them relative to their maximum; this says whether prescaling changes it.

Usage (GPU, repository root): python accuracy_probe.py water=.mid/water/model.dp ... --natoms 13824
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from infer_bench import load_frame, replicas_for, replicate

from deeppot.infer import DeepPot
from deeppot.io import load_model
from deeppot.io.model_file import cast_model
from deeppot.kernels import atom_tiles

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--natoms", type=int, default=13824)
    ap.add_argument("--data", default=".peer/data")
    args = ap.parse_args()
    for spec in args.models:
        system, path = spec.split("=")
        coord, box, atype = load_frame(Path(args.data), system)
        c, b, t = replicate(coord, box, atype, replicas_for(args.natoms, len(atype)))
        model = load_model(path)
        e64, f64 = DeepPot(cast_model(model, "float64"), device=DEVICE).eval(c[None], b[None], t)[:2]
        fmax = float(np.abs(f64).max())
        for prescaled in (False, True):
            atom_tiles.PRESCALED = prescaled
            e, f = DeepPot(model, device=DEVICE).eval(c[None], b[None], t)[:2]
            print(json.dumps({"system": system, "natoms": len(t), "prescaled": prescaled, "max_abs_f64_force": fmax,
                              "energy_rel": float(abs(e - e64).max() / abs(e64).max()),
                              "force_abs": float(np.abs(f - f64).max()),
                              "force_rel": float(np.abs(f - f64).max() / fmax)}), flush=True)


if __name__ == "__main__":
    main()
