"""Run 145: the float32 products' schemes against float64 (water, random weights, 41,472 atoms, so both types'
fitting nets take the fused products): f16x3 (the new default), tf32x3 and the tf32 opt-in, each uncompressed and
compressed. JSON lines: energy per atom and force errors against the float64 evaluation of the same model."""
import json
import sys
from pathlib import Path

import numpy as np
import torch

from deeppot.infer import DeepPot
from deeppot.io.compress import compress_model
from deeppot.io.model_file import cast_model
from deeppot.model import EnergyModel

data = Path(sys.argv[1]) / "water" / "data_0"
cfg = json.loads(Path("examples/water/input.json").read_text())["model"]
cfg["descriptor"]["precision"] = cfg["fitting_net"]["precision"] = "float64"
torch.manual_seed(0)
ref = EnergyModel.from_config(cfg)
with torch.no_grad():
    ref.descriptor.davg[..., 0] = 0.1
    ref.descriptor.dstd[...] = 0.7
    ref.min_nbor_dist.fill_(0.8)
coord = np.load(data / "set.000" / "coord.npy")[:1].reshape(1, -1, 3)
box = np.load(data / "set.000" / "box.npy")[:1].reshape(3, 3)
atype = np.loadtxt(data / "type.raw", dtype=np.int64)
reps = 6
shifts = np.array([[i, j, k] for i in range(reps) for j in range(reps) for k in range(reps)]) @ box
coord = (coord[:, None] + shifts[None, :, None]).reshape(1, -1, 3)
cells, atype = (box * reps).reshape(1, 9), np.tile(atype, reps**3)
n = len(atype)
for compressed in (False, True):
    base = compress_model(cast_model(ref, "float64")) if compressed else ref
    e64, f64, v64 = DeepPot(base, "cuda").eval(coord, cells, atype)
    for name, kw in (("f16x3", {}), ("tf32x3", {"products": "tf32x3"}), ("tf32", {"tf32": True})):
        dp = DeepPot(cast_model(base, "float32"), "cuda", **kw)
        e, f, v = dp.eval(coord, cells, atype)
        df = f - f64
        print(json.dumps({"case": f"water:float32:{n}" + (":compressed" if compressed else ""), "products": name,
                          "chosen": dp.evaluator.products, "d_e_per_atom": float(abs(e - e64).max()) / n,
                          "f_max_err": float(abs(df).max()), "f_rms_err": float(np.sqrt((df**2).mean())),
                          "f_rms": float(np.sqrt((f64**2).mean())),
                          "v_max_rel_err": float(abs(v - v64).max() / abs(v64).max())}), flush=True)
