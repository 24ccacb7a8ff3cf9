"""Run 257: the float32 evaluation with the stage's folded steps (`stage_probe.py`'s "all") and without ("base")
against a float64 evaluation of the same weights (`io.model_file.cast_model`), on trained models' replicated
frames: whether adding the tail inside the T kernel and the rest change float32's error (run 252's
`accuracy_probe.py`, for the copper frame's small forces).

Usage (GPU, repository root): python accuracy_probe.py water=.mid/water/model.dp ... --natoms 98304
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from infer_bench import load_frame, replicas_for, replicate
from stage_probe import set_flags

from deeppot.infer import DeepPot
from deeppot.io import load_model
from deeppot.io.model_file import cast_model

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--natoms", type=int, default=98304)
    ap.add_argument("--data", default=".peer/data")
    args = ap.parse_args()
    for spec in args.models:
        system, path = spec.split("=")
        coord, box, atype = load_frame(Path(args.data), system)
        c, b, t = replicate(coord, box, atype, replicas_for(args.natoms, len(atype)))
        model = load_model(path)
        e64, f64, v64 = DeepPot(cast_model(model, "float64"), device=DEVICE).eval(c[None], b[None], t)[:3]
        fmax = float(np.abs(f64).max())
        for name in ("base", "all"):
            set_flags(name)
            e, f, v = DeepPot(model, device=DEVICE).eval(c[None], b[None], t)[:3]
            print(json.dumps({"system": system, "natoms": len(t), "variant": name, "max_abs_f64_force": fmax,
                              "energy_rel": float(abs(e - e64).max() / abs(e64).max()),
                              "force_abs": float(np.abs(f - f64).max()),
                              "force_rel": float(np.abs(f - f64).max() / fmax),
                              "virial_rel": float(np.abs(v - v64).max() / np.abs(v64).max())}), flush=True)


if __name__ == "__main__":
    main()
